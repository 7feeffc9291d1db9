"""The spec's invariants, enforced in code and checked end to end through ``artoo run --json``.

What the scripted endpoint *received* is the evidence: the tool list offered to the
executor, the tool results fed back, the planner's re-ask, the perceiver's history.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artoo.config.contracts import TaskSpec
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")


def bodies(server, schema: str) -> list[dict]:
    return [r["body"] for r in server.requests if r["schema"] == schema]


def offered_tools(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def logical_round_with_shell(crit: str) -> dict:
    """Round-1 pieces: the executor uses locate and fails logically → break_symmetry blocks locate (the shell
    would keep: a failed shell step blocks its method, tests/test_methods.py)."""
    return {"plan": plan([subtask("list the reports", [crit])], ["the reports are listed"]),
            "tools": [call("locate", query="reports"), done("wrong listing", status="failed")],
            "verdict": agent(verdict(crit, False, "logical", "listed the wrong folder"))}


def test_blocked_tool_is_not_offered_and_a_violating_plan_is_re_asked_once(scripted, artoo_env: Path):
    crit = "the reports are listed"
    first = logical_round_with_shell(crit)
    violating = plan([subtask("list the reports again", [crit], tools=["locate"])], ["the reports are listed"])
    compliant = plan([subtask("find the reports with glob", [crit])], ["the reports are listed"])
    server = scripted(scenario(
        TaskSpec=[spec("list_reports", "list the reports")],
        Plan=[first["plan"], violating, compliant],
        tools=[*first["tools"], call("glob", pattern="*.md"), done("a.md")],
        AgentVerdict=[first["verdict"], agent(verdict(crit, True))],
        TaskVerdict=[task_verdict(verdict("the reports are listed", True))],
    ))
    code, out, _ = run_cli("run", "--json", "list the reports")
    final = final_from(out)
    assert (code, final["directive"], final["prev_directive"]) == (0, "accept", "break_symmetry")
    plans = bodies(server, "Plan")
    assert len(plans) == 3
    assert "locate" in json.dumps(plans[2]["messages"])  # the re-ask names the violation
    tool_turns = bodies(server, "tools")
    assert "locate" in offered_tools(tool_turns[0])
    assert "locate" not in offered_tools(tool_turns[-1]) and "glob" in offered_tools(tool_turns[-1])


def test_a_plan_declaring_a_blocked_tool_twice_runs_without_it(scripted, artoo_env: Path, monkeypatch):
    """The invariant "a plan cannot reuse a blocked tool" holds by repair after the one re-ask: the tool is
    struck from the re-asked plan (logged), the round runs, and the executor is never offered it.  (Before
    #25 the round failed here, and a small model lost every round this way.)"""
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "1")
    crit = "the reports are listed"
    first = logical_round_with_shell(crit)
    violating = plan([subtask("list the reports again", [crit], tools=["locate"])], ["the reports are listed"])
    server = scripted(scenario(
        TaskSpec=[spec("list_reports", "list the reports")],
        Plan=[first["plan"], violating, violating],
        tools=[*first["tools"], done("cannot list them", status="failed")],
        AgentVerdict=[first["verdict"], agent(verdict(crit, False, "logical"))],
    ))
    code, out, _ = run_cli("run", "--json", "list the reports")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (1, "abandon", 1)
    assert len(bodies(server, "Plan")) == 3
    tool_turns = bodies(server, "tools")
    assert len(tool_turns) == 3 and "locate" not in offered_tools(tool_turns[-1])  # round 2 ran, without locate
    records = [json.loads(line) for path in (artoo_env / "home" / "decisions").rglob("*.jsonl")
               for line in path.read_text().splitlines()]
    assert [r["round"] for r in records if r.get("kind") == "plan_repair"] == [2]


def test_a_blocked_target_is_refused_with_an_explanation(scripted, artoo_env: Path, monkeypatch):
    """change_path blocks the failed input; the executor reusing it is refused and told why."""
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "1")  # round 2 is the last one
    crit = "the notes are counted"
    server = scripted(scenario(
        TaskSpec=[spec("count_notes", "count the notes")],
        Plan=[plan([subtask("count notes", [crit])], ["the count is reported"]),
              plan([subtask("count notes elsewhere", [crit])], ["the count is reported"])],
        tools=[call("read_file", path="missing/notes.txt"), done("missing", status="failed"),
               call("read_file", path="missing/notes.txt"), done("still blocked", status="failed")],
        AgentVerdict=[agent(verdict(crit, False, "environmental", "No such file")),
                      agent(verdict(crit, False, "environmental", "refused"))],
    ))
    code, out, _ = run_cli("run", "--json", "count the notes")
    final = final_from(out)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (1, "abandon", 1, "change_path")
    round_two = bodies(server, "tools")[3]
    fed_back = json.dumps(round_two["messages"][-1])
    assert "missing/notes.txt" in fed_back and "block" in fed_back.lower()


def test_taskspec_never_carries_success_criteria():
    with pytest.raises(ValueError):
        TaskSpec(task_id="t", intent="x", success_criteria=["anything"])


def test_session_context_carries_the_previous_run(scripted, artoo_env: Path):
    crit = "hello printed"
    one_run = dict(Plan=[plan([subtask("print hello", [crit])], ["done"])],
                   tools=[call("shell", command="echo hello"), done("hello")],
                   AgentVerdict=[agent(verdict(crit, True))], TaskVerdict=[task_verdict(verdict("done", True))])
    server = scripted(scenario(TaskSpec=[spec("hello", "say hello"), spec("hello_again", "say hello again")],
                               **{k: v * 2 for k, v in one_run.items()}))
    assert run_cli("run", "--json", "say hello")[0] == 0
    assert run_cli("run", "--json", "do it again")[0] == 0
    second = json.dumps(bodies(server, "TaskSpec")[1]["messages"])
    assert "say hello" in second and "do it again" in second
