"""A flow whose process misses the runner's SIGTERM, served through ``artoo serve``'s own stop path.

Prefect's SIGTERM bridge raises ``TerminationSignal`` in whatever Python code the child's main
thread is running; when that is an asyncio task other than the flow's (or a socket transport's
callback), asyncio keeps the exception in that task and the flow runs on.  ``_busy`` is such a
task, holding the loop the way a busy event stream or HTTP exchange does, so the first SIGTERM
lands in it nearly every time.  ``python -m tests.e2e.missed_sigterm`` serves this flow with
``serve_until_stopped``, the function ``artoo serve`` runs (tests/e2e/test_serve_stop.py).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from prefect import flow

DEPLOYMENT = "misses-first-sigterm/missed"


async def _busy() -> None:
    """Keep the loop's thread in this task's Python code, yielding every 50 ms."""
    while True:
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            pass
        await asyncio.sleep(0)


@flow(name="misses-first-sigterm", persist_result=False)
async def misses_first_sigterm(busy_file: str, run_for_s: float = 120.0) -> None:
    """Sleep ``run_for_s`` while a busy background task takes the loop (``busy_file`` says it has started)."""
    busy = asyncio.create_task(_busy())
    await asyncio.sleep(0.2)
    Path(busy_file).write_text("busy")
    try:
        await asyncio.sleep(run_for_s)
    finally:
        busy.cancel()


def main() -> None:
    from prefect.deployments.runner import EntrypointType
    from prefect.runner import Runner

    from artoo.flows.deployments import serve_until_stopped
    from tests.e2e.missed_sigterm import misses_first_sigterm as served  # its module's name, not __main__

    runner = Runner(name="missed-sigterm", query_seconds=1.0)
    runner.add_deployment(served.to_deployment(name="missed", entrypoint_type=EntrypointType.MODULE_PATH))
    serve_until_stopped(runner)


if __name__ == "__main__":
    main()
