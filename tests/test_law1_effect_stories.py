"""Law 1 by effect, end to end: the stories of issues #14 and #13(c) through real runs.

A model writes a script (a new file: allowed) and runs it; the script deletes keep.txt,
a file that existed before the task.  No text judge can see that; the change set can.
Non-interactive, keep.txt survives and the FinalResult says [LAW1]; approved through the
Prefect API (as a person at the UI would), exactly keep.txt goes.  The same for a shell,
a Python, a Perl and a ``make`` variant.  And a task owns what it creates: a deliverable
rejected in round 1 is rewritten in round 2 without any question.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId

from artoo.tasks.tools import overlay, sandbox
from tests.conftest import final_from, run_cli
from tests.run_graph import latest_task_run
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_law1_resume import wait_for_pause

pytestmark = [pytest.mark.usefixtures("prefect_api"),
              pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.overlay_problem() is not None,
                                 reason="Law 1 by effect needs bubblewrap and overlayfs")]

VARIANTS = {
    "bash": ("cleanup.sh", "rm keep.txt\n", "bash cleanup.sh"),
    "python": ("cleanup.py", "import os\nos.remove('keep.txt')\n", "python3 cleanup.py"),
    "perl": ("cleanup.pl", "unlink('keep.txt') or die;\n", "perl cleanup.pl"),
    "make": ("Makefile", "clean:\n\trm -f keep.txt\n", "make clean"),
}
CRITERION = "the workspace is cleaned up"


def cleanup_scenario(variant: str, approved: bool) -> dict:
    name, body, command = VARIANTS[variant]
    queues: dict = {"TaskSpec": [spec("clean_up", "clean up the workspace")],
                    "Plan": [plan([subtask("clean up the workspace", [CRITERION])], ["the workspace is clean"])],
                    "tools": [call("write_file", path=name, content=body), call("shell", command=command)]}
    if approved:
        queues["tools"].append(done("cleaned up"))
        queues["AgentVerdict"] = [agent(verdict(CRITERION, True, evidence="the script ran"))]
        queues["TaskVerdict"] = [task_verdict(verdict("the workspace is clean", True))]
    return scenario(**queues)


def populate(workspace: Path) -> dict[str, bytes]:
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "keep.txt").write_text("keep me")
    (workspace / "notes").mkdir()
    (workspace / "notes" / "a.txt").write_text("a")
    return tree(workspace)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_script_deleting_a_file_is_denied_without_anyone_to_ask(variant: str, scripted, artoo_env: Path,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("ARTOO_LAW1_MODE", "auto")  # no TTY, no deployment → deny
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "0")
    workspace = artoo_env / "workspace"
    before = populate(workspace)
    scripted(cleanup_scenario(variant, approved=False))
    code, out, _ = run_cli("run", "--json", "clean up the workspace")
    final = final_from(out)
    name, body, command = VARIANTS[variant]
    assert (workspace / "keep.txt").read_text() == "keep me"
    assert tree(workspace) == {**before, name: body.encode()}  # only the script the task wrote is new
    assert (code, final["directive"]) == (1, "abandon")
    assert "[LAW1]" in final["summary"] and command in final["summary"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_approved_script_deletes_exactly_keep_txt(variant: str, scripted, artoo_env: Path, monkeypatch) -> None:
    from prefect.flow_runs import resume_flow_run

    from artoo.flows.task_flow import artoo_task

    monkeypatch.setenv("ARTOO_LAW1_MODE", "pause")
    workspace = artoo_env / "workspace"
    before = populate(workspace)
    scripted(cleanup_scenario(variant, approved=True))
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(asyncio.run(artoo_task(request="clean up"))))
    thread.start()
    paused = wait_for_pause(thread)
    assert (workspace / "keep.txt").exists(), "nothing may become real before the approval"
    with get_client(sync_client=True) as client:
        keyset = paused.state.state_details.run_input_keyset
        description = client.read_flow_run_input(paused.id, keyset["description"])
    assert f"deleted {os.path.realpath(workspace)}/keep.txt (7 B)" in description
    top = latest_task_run()
    check_top_run_points_at_the_question(top.id, paused.id)
    resume_flow_run(paused.id, run_input={"approve": True})
    thread.join(timeout=90)
    assert not thread.is_alive()
    name, body, _command = VARIANTS[variant]
    expected = {k: v for k, v in before.items() if k != "keep.txt"}
    assert tree(workspace) == {**expected, name: body.encode()}
    assert result["final"]["directive"] == "accept" and "[LAW1]" not in result["final"]["summary"]


def check_top_run_points_at_the_question(top_id, paused_id) -> None:
    """The run a person watches says it waits, with a link to the nested run's form."""
    link = f"/runs/flow-run/{paused_id}"
    deadline, announced = time.monotonic() + 20, False
    with get_client(sync_client=True) as client:
        while not announced and time.monotonic() < deadline:  # run logs reach the API in batches
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[top_id])))
            announced = any("waiting for your answer" in log.message and link in log.message for log in logs)
            time.sleep(0.3)
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[top_id])))
    assert announced, "the top-level run's log has no line linking to the waiting form"
    waiting = [a for a in artifacts if "waiting for your answer" in str(a.data)]
    assert waiting and link in str(waiting[0].data) and "keep.txt" in str(waiting[0].data)


@pytest.mark.parametrize("tool", ["write_file", "shell"])
def test_rejected_deliverable_is_rewritten_without_a_question(tool: str, scripted, artoo_env: Path) -> None:
    """#13(c): round 1 writes summary.md, R4b rejects; round 2 rewrites the task's own file → accept."""
    sub_c, task_c = "summary.md is written", "the summary states the total"
    rewrite = (call("write_file", path="summary.md", content="total: 3\n") if tool == "write_file"
               else call("shell", command="printf 'total: 3\\n' > summary.md"))
    server = scripted(scenario(
        TaskSpec=[spec("summarise", "summarise the numbers")],
        Plan=[plan([subtask("write summary.md", [sub_c])], [task_c]),
              plan([subtask("rewrite summary.md with the total", [sub_c])], [task_c])],
        tools=[call("write_file", path="summary.md", content="draft\n"), done("written"), rewrite, done("rewritten")],
        AgentVerdict=[agent(verdict(sub_c, True)), agent(verdict(sub_c, True))],
        TaskVerdict=[task_verdict(verdict(task_c, False, "logical", "no total")), task_verdict(verdict(task_c, True))],
    ))
    code, out, _ = run_cli("run", "--json", "summarise the numbers")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    assert "[LAW1]" not in final["summary"]
    assert (artoo_env / "workspace" / "summary.md").read_text() == "total: 3\n"
    assert server.unused() == {}
