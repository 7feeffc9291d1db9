"""Law 1 through the Prefect API: a paused run is approved with ``resume_flow_run``.

The flow runs in a thread as a deployment run would; the test plays the person at the
Prefect UI: it finds the paused run, reads the resume form's description (the exact
command), and approves it.  Only then is the file deleted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateName
from prefect.client.schemas.sorting import FlowRunSort

from tests.scenario_kit import deletion_scenario

pytestmark = pytest.mark.usefixtures("prefect_api")


def paused_runs() -> list:
    with get_client(sync_client=True) as client:
        return client.read_flow_runs(flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(name=FlowRunFilterStateName(any_=["Paused"]))),
            limit=10, sort=FlowRunSort.START_TIME_DESC)


def wait_for_pause(thread: threading.Thread, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and thread.is_alive():
        runs = paused_runs()
        if runs:
            return runs[0]
        time.sleep(0.3)
    raise AssertionError("the flow never paused for a Law-1 confirmation")


def test_approved_deletion_runs_only_after_resume(scripted, artoo_env: Path, monkeypatch):
    from prefect.flow_runs import resume_flow_run

    from artoo.flows.task_flow import artoo_task

    monkeypatch.setenv("ARTOO_LAW1_MODE", "pause")
    victim = artoo_env / "workspace" / "old.log"
    victim.parent.mkdir(parents=True)
    victim.write_text("delete me")
    scripted(deletion_scenario())
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(asyncio.run(artoo_task(request="delete old.log"))))
    thread.start()
    paused = wait_for_pause(thread)
    assert victim.exists(), "nothing irreversible may run before the approval"
    with get_client(sync_client=True) as client:
        keyset = paused.state.state_details.run_input_keyset
        description = client.read_flow_run_input(paused.id, keyset["description"]) if keyset else ""
    assert "rm old.log" in description
    resume_flow_run(paused.id, run_input={"approve": True})
    thread.join(timeout=90)
    assert not thread.is_alive()
    assert not victim.exists()
    assert result["final"]["directive"] == "accept"
    assert "[LAW1]" not in result["final"]["summary"]
