"""Background writes (artoo.tasks.runtime.OrderedWrites): off the critical path, in order, never lost."""

from __future__ import annotations

import asyncio

from artoo.tasks.runtime import OrderedWrites


def test_jobs_run_in_submission_order_and_flush_waits_for_all():
    done: list[int] = []

    async def write(n: int, delay: float) -> None:
        await asyncio.sleep(delay)
        done.append(n)

    async def story() -> tuple[list[int], list[int]]:
        writes = OrderedWrites()
        for n, delay in ((1, 0.05), (2, 0.0), (3, 0.02)):  # a later, faster write never overtakes an earlier one
            writes.submit(lambda n=n, delay=delay: write(n, delay))
        before = list(done)  # submit returns at once: nothing waited for yet
        await writes.flush()
        return before, list(done)

    before, after = asyncio.run(story())
    assert (before, after) == ([], [1, 2, 3])


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
        await writes.flush()
        await writes.flush()  # flushing twice, or with nothing pending, is fine
        return writes

    writes = asyncio.run(story())
    assert (done, writes.done, writes.failures) == (["written"], 1, ["ConnectionError: server went away"])


def test_flush_with_nothing_submitted_returns():
    asyncio.run(OrderedWrites().flush())
