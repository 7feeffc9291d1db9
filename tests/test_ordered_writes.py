"""Background writes (artoo.tasks.roles.runtime.OrderedWrites): off the critical path, in order, never lost."""

from __future__ import annotations

import asyncio
import contextvars

from artoo.tasks.roles.runtime import OrderedWrites

WHERE: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="nowhere")


def test_queued_jobs_wait_for_start_then_run_in_order_in_the_context_they_were_submitted_from():
    done: list[tuple[int, str]] = []

    async def write(n: int, delay: float) -> None:
        await asyncio.sleep(delay)
        done.append((n, WHERE.get()))

    async def story() -> tuple[list, list, list]:
        writes = OrderedWrites()
        for n, delay in ((1, 0.05), (2, 0.0), (3, 0.02)):  # a later, faster write never overtakes an earlier one
            WHERE.set(f"round {n}")  # as the GGS task of round n submits its artifacts
            writes.submit(lambda n=n, delay=delay: write(n, delay))
        await asyncio.sleep(0.1)
        queued = list(done)  # nothing runs before start: no write competes with the next subflow's creation
        WHERE.set("the planner's task")
        writes.start()
        started = list(done)  # start returns at once
        await writes.flush()
        return queued, started, list(done)

    queued, started, after = asyncio.run(story())
    assert (queued, started) == ([], [])
    assert after == [(1, "round 1"), (2, "round 2"), (3, "round 3")]


def test_a_failed_job_is_recorded_and_the_next_ones_still_run():
    done: list[str] = []

    async def fail() -> None:
        raise ConnectionError("server went away")

    async def write() -> None:
        done.append("written")

    async def story() -> OrderedWrites:
        writes = OrderedWrites()
        writes.submit(fail)
        writes.submit(write)
        await writes.flush()  # flush starts what is still queued
        await writes.flush()  # flushing twice, or with nothing pending, is fine
        return writes

    writes = asyncio.run(story())
    assert (done, writes.done, writes.failures) == (["written"], 1, ["ConnectionError: server went away"])


def test_flush_with_nothing_submitted_returns():
    asyncio.run(OrderedWrites().flush())
