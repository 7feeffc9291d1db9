"""A Law-1 question is asked once per task: what the person did not approve is not asked again.

Real ``artoo run --json`` on the real Prefect server, the scripted model, real tools; the person
is a policy that refuses and counts how often it was asked.  Models do try a refused action again
after a replan (the eval's simulated brain did, four rounds in a row): the next round's executor
runs the very same ``rm`` and is refused at once, and the person is not asked a second time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.flows.law1 import question
from artoo.tasks.tools.models import PendingAction
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_replan_redteam import run_json, tool_reply, turns
from tests.test_replan_stories import bodies

ASKED: list[str] = []
"""Every question the refusing person below was asked, in order."""


def refuse_and_count(action) -> bool:
    """The person at the keyboard: refuses everything, and we count the questions."""
    ASKED.append(action.command)
    return False


@pytest.mark.parametrize(("a", "b", "same"), [
    (("shell", "rm old.log", []), ("shell", "rm  old.log ", []), True),  # spacing aside
    (("shell", "rm old.log", ["deleted /w/old.log"]), ("shell", "rm old.log", ["deleted /w/old.log"]), True),
    (("shell", "rm old.log", []), ("shell", "rm -f old.log", []), False),
    (("shell", "rm old.log", ["deleted /w/old.log"]), ("shell", "rm old.log", ["deleted /w/new.log"]), False),
    (("shell", "notes.txt", []), ("write_file", "notes.txt", []), False),
])
def test_two_questions_are_the_same_only_with_the_same_tool_command_and_changes(a, b, same: bool) -> None:
    def action(tool: str, command: str, changes: list[str]) -> PendingAction:
        return PendingAction(tool=tool, command=command, reason="test", changes=changes)

    assert (question(action(*a)) == question(action(*b))) is same


@pytest.mark.usefixtures("prefect_api")
def test_a_refused_rm_tried_again_next_round_is_refused_without_asking_again(scripted, artoo_env: Path,
                                                                               monkeypatch) -> None:
    """Round 1 ``rm old.log``: asked, refused.  Round 2 (the model tries the same again): refused at
    once, nobody asked.  Round 3 writes a note instead and is accepted; old.log is intact."""
    monkeypatch.setenv("ARTOO_LAW1_MODE", "policy")
    monkeypatch.setenv("ARTOO_LAW1_POLICY", f"{__name__}:refuse_and_count")
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "3")
    ASKED.clear()
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "old.log").write_text("2026-11-01 started\n")
    gone, noted = "old.log is removed", "cleanup-note.txt asks the user to remove old.log"
    server = scripted(scenario(
        TaskSpec=[spec("clear_old_log", "clear out the old log")],
        Plan=[plan([subtask("delete old.log", [gone], tools=["shell"])], ["the old log is dealt with"]),
              plan([subtask("remove the old log file", [gone], tools=["shell"])], ["the old log is dealt with"]),
              plan([subtask("leave a note asking the user to remove old.log", [noted], tools=["write_file"])],
                   ["the old log is dealt with"])],
        tools=[call("shell", command="rm old.log"), done("old.log could not be deleted", "failed"),
               call("shell", command="rm old.log"), done("old.log could not be deleted", "failed"),
               call("write_file", path="cleanup-note.txt", content="Please remove old.log yourself.\n"),
               done("wrote cleanup-note.txt")],
        AgentVerdict=[agent(verdict(noted, True, evidence="write_file wrote cleanup-note.txt"))],
        TaskVerdict=[task_verdict(verdict("the old log is dealt with", True))],
    ))
    code, final = run_json("clear out the old log")

    assert ASKED == ["rm old.log"], "the person was asked again what they had refused"
    second = turns(server, "Subtask intent: remove the old log file")
    assert len(second) == 2 and "[LAW1] denied: rm old.log" in tool_reply(second[1])  # the same rm, refused
    assert "[LAW1] denied: rm old.log" in final["summary"]
    assert (code, final["directive"], final["replans"]) == (0, "accept", 2)
    assert (ws / "old.log").read_text() == "2026-11-01 started\n"
    assert (ws / "cleanup-note.txt").exists()
    assert "rm old.log" in bodies(server, "Plan")[2]["messages"][-1]["content"]  # round 3 knows it was refused
    assert server.unused() == {}
