"""``artoo serve``'s stop path against a flow-run process that misses the runner's SIGTERM.

Prefect's runner sends a run's process one SIGTERM and a SIGKILL 30 s later; an async flow's
process can miss that one signal (asyncio swallows the ``TerminationSignal`` Prefect's bridge
raises inside another task or a socket callback: the cause of a control-room test that once
waited 30 s for ``artoo serve`` to stop).  serve repeats the SIGTERM while the process lives,
so the run is cancelled by its own engine within seconds instead of killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.e2e.helpers import REPO, api, child_env, stop, wait_for
from tests.e2e.missed_sigterm import DEPLOYMENT

pytestmark = pytest.mark.e2e

PREFECT_SIGKILL_S = 30.0
"""Prefect's grace between the runner's SIGTERM and its SIGKILL (CancellationManager.cancel)."""


def test_a_run_that_misses_the_first_sigterm_is_cancelled_by_the_next_one_not_killed(e2e_server, tmp_path):
    from prefect.exceptions import ObjectNotFound

    env = child_env(e2e_server.api_url, tmp_path / "home", PYTHONPATH=str(REPO),
                    PREFECT_HOME=str(tmp_path / "prefect-client"))
    log = tmp_path / "serve.log"
    serve = subprocess.Popen([sys.executable, "-m", "tests.e2e.missed_sigterm"], env=env, cwd=str(REPO),
                             stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)

    def deployment():
        assert serve.poll() is None, f"the runner exited early:\n{log.read_text()[-3000:]}"
        try:
            return client.read_deployment_by_name(DEPLOYMENT)
        except ObjectNotFound:
            return None

    try:
        with api(e2e_server.api_url) as client:
            busy = tmp_path / "busy"
            run = client.create_flow_run_from_deployment(wait_for(deployment, 60, "the deployment").id,
                                                         parameters={"busy_file": str(busy)})
            wait_for(busy.exists, 60, "the run's busy task to start")
            # stopped well before Prefect's SIGKILL: the run's own engine ended it, on a repeated SIGTERM
            code = stop(serve, timeout_s=PREFECT_SIGKILL_S - 10)
            state = client.read_flow_run(run.id).state
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
    output = log.read_text()
    assert code == 0, output[-3000:]
    assert state.is_cancelled(), output[-3000:]
    assert "sending SIGTERM again" in output and "Flow run was cancelled." in output, output[-3000:]
