"""A flow whose process misses the runner's SIGTERM, served through ``artoo serve``'s own stop path.

Prefect's SIGTERM bridge raises ``TerminationSignal`` in whatever Python code the child's main
thread is running; when that is an asyncio task other than the flow's (or a socket transport's
callback), asyncio keeps the exception in that task and the flow runs on.  A busy background task
reproduced that nearly every time, but not always: on a loaded machine the loop sometimes sat in
``select`` and the first SIGTERM cancelled the flow.  So the flow holds the loop's thread in its own
frame and swallows the first ``TerminationSignal`` there, as such a task would: the miss is certain,
and the second SIGTERM, with the runner's "cancel" intent still set, cancels the run.
``python -m tests.e2e.missed_sigterm`` serves this flow with ``serve_until_stopped``, the function
``artoo serve`` runs (tests/e2e/test_serve_stop.py).
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow
from prefect.exceptions import TerminationSignal

DEPLOYMENT = "misses-first-sigterm/missed"


@flow(name="misses-first-sigterm", persist_result=False)
async def misses_first_sigterm(busy_file: str, run_for_s: float = 120.0) -> None:
    """Hold the loop's thread for ``run_for_s`` (``busy_file`` says it has started), missing one SIGTERM."""
    Path(busy_file).write_text("busy")
    end, missed = time.monotonic() + run_for_s, False
    while True:
        try:
            if time.monotonic() >= end:
                return
            time.sleep(0.05)  # blocking on purpose: the signal's handler runs in this frame
        except TerminationSignal:
            if missed:
                raise
            missed = True


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
