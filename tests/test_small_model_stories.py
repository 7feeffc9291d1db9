"""What Qwen2.5-Coder-1.5B did in the real runs of #25 (llama-server, runs t1–t3), told through
``artoo run --json`` on the scripted server: plans repaired before they run, and a claim without a tool
call that the model itself passed as R4a, failed by code.

Run t1: step 1 "find all .txt files" carried "The file 'totals.md' exists", which only step 2 can make
true, so every attempt of step 1 failed and step 2 never ran; later the planner declared a blocked tool
in its plan and its re-ask.  Run t3: no tool called, R4a and R4b passed the executor's claim, artoo
accepted a task whose totals.md was never written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")

EXISTS = "The file 'totals.md' exists at the root of the working folder."
HOLDS = "The file 'totals.md' contains the total number of lines from all .txt files in the current folder."
FIND = "Find all .txt files in the current folder."
COUNT = "Count the lines of each .txt file found in the previous step."
OWN = f"the output reports what this step found or did: {FIND}"


def test_the_task_criterion_on_step_one_moves_to_the_step_that_writes_the_file(scripted, artoo_env: Path):
    workspace = artoo_env / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    for name, text in (("a.txt", "1\n2\n3\n"), ("b.txt", "1\n")):
        (workspace / name).write_text(text)
    server = scripted(scenario(
        TaskSpec=[spec("count_lines", "count the lines of every .txt file and write the totals to totals.md")],
        Plan=[plan([subtask(FIND, [EXISTS], 1, tools=["glob"]), subtask(COUNT, [HOLDS], 2, tools=["shell"])],
                   [EXISTS, HOLDS])],
        tools=[call("glob", pattern="*.txt"), done("a.txt b.txt"),
               call("shell", command="wc -l *.txt > totals.md"), done("totals.md written")],
        AgentVerdict=[agent(verdict(OWN, True, evidence="glob listed a.txt and b.txt")),
                      agent(verdict(HOLDS, True, evidence="wc wrote totals.md"),
                            verdict(EXISTS, True, evidence="wc wrote totals.md"))],
        TaskVerdict=[task_verdict(verdict(EXISTS, True), verdict(HOLDS, True))],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(workspace),
                             "count the lines of every .txt file and write the totals to totals.md")
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept"), err[-2000:]
    judged = [str(r["body"]["messages"][-1]["content"]) for r in server.requests if r["schema"] == "AgentVerdict"]
    assert OWN in judged[0] and "totals.md" not in judged[0].split(FIND, 1)[-1]
    assert EXISTS in judged[1] and HOLDS in judged[1]
    shown_now = judged[1].split("Files the criteria name, as they are now", 1)[1]  # read by code, not claimed
    assert "totals.md: exists, " in shown_now and "4 total" in shown_now
    turns = [json.dumps(r["body"]["messages"]) for r in server.requests if r["schema"] == "tools"]
    checklists = [t.split("The files these name, as they are now:", 1)[1][:200] for t in turns if "these name" in t]
    assert len(checklists) == 1 and checklists[0].startswith("\\n- totals.md: exists, 24 bytes, 3 lines")
    assert "4 total" in (workspace / "totals.md").read_text()
    records = [json.loads(line) for path in (artoo_env / "home" / "decisions").rglob("*.jsonl")
               for line in path.read_text().splitlines()]
    repairs = [r for r in records if r.get("kind") == "plan_repair"]
    assert len(repairs) == 1 and "moved to the last step" in repairs[0]["note"] and repairs[0]["round"] == 1
    code, shown, _ = run_cli("log")
    assert code == 0 and "R2 plan repaired (round 1)" in shown
    assert server.unused() == {}


def test_a_blocked_tool_declared_again_after_the_re_ask_is_struck_and_the_round_runs(scripted, artoo_env: Path):
    """Round 1's glob step fails on its approach, so round 2 may not use glob; the planner lists glob in its
    plan and again in the re-ask (what the 1.5B model did in run t1).  The tool is struck, the round runs."""
    c = "the .txt files are listed"
    again = plan([subtask("list the .txt files", [c], tools=["glob", "shell"])], ["the files were listed"])
    server = scripted(scenario(
        TaskSpec=[spec("list_txt", "list the .txt files")],
        Plan=[plan([subtask("find the .txt files", [c], tools=["glob"])], ["the files were listed"]), again, again],
        tools=[call("glob", pattern="*.txt"), done("none found", status="failed"),
               call("shell", command="ls *.txt || true"), done("a.txt")],
        AgentVerdict=[agent(verdict(c, False, "logical")), agent(verdict(c, True, evidence="ls listed a.txt"))],
        TaskVerdict=[task_verdict(verdict("the files were listed", True))],
        FailureReport=[{"answer": {"achieved": "nothing", "blocked_by": "glob", "try_next": ["use ls"]}}],
    ))
    code, out, err = run_cli("run", "--json", "list the .txt files")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1), err[-3000:]
    offered = [[t["function"]["name"] for t in r["body"].get("tools", [])] for r in server.requests
               if r["schema"] == "tools"]
    assert "glob" in offered[0] and "glob" not in offered[-1]  # blocked in round 2: never offered
    records = [json.loads(line) for path in (artoo_env / "home" / "decisions").rglob("*.jsonl")
               for line in path.read_text().splitlines()]
    (repair,) = [r for r in records if r.get("kind") == "plan_repair" and "blocked tool" in r["note"]]
    assert repair["round"] == 2 and "declared blocked tool(s) glob again after the re-ask" in repair["note"]


def test_a_file_claimed_without_any_tool_call_is_not_accepted(scripted, artoo_env: Path, monkeypatch):
    """Run t3's last round, answer for answer: R3 claims totals.md, calls nothing; R4a passes it anyway."""
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "0")
    claim = "The file 'totals.md' exists and contains the total number of lines of all .txt files in the folder."
    exists = "The file 'totals.md' exists in the working folder."
    server = scripted(scenario(
        TaskSpec=[spec("count_lines", "count the lines of every .txt file and write the totals to totals.md")],
        Plan=[plan([subtask("Count the lines of every .txt file and write the totals to totals.md", [exists])],
                   [exists])],
        tools=[done(claim)] * 3,
        AgentVerdict=[agent(verdict(exists, True, evidence=claim))] * 3,
        TaskVerdict=[task_verdict(verdict(exists, True, evidence=claim))],
    ))
    code, out, err = run_cli("run", "--json", "count the lines of every .txt file and write the totals to totals.md")
    final = final_from(out)
    assert (code, final["directive"]) == (1, "abandon"), err[-2000:]
    # attempts 1 and 2 judged and failed; attempt 2 repeated attempt 1 (no call, the same verdicts), so no third
    assert [r["schema"] for r in server.requests].count("AgentVerdict") == 2
    retry = [r for r in server.requests if r["schema"] == "tools"][1]["body"]["messages"][-1]["content"]
    assert "no tool was called: a claim about totals.md is not evidence" in retry
    assert [r["schema"] for r in server.requests].count("TaskVerdict") == 0


def test_an_invented_deadline_never_reaches_the_planner(scripted, artoo_env: Path):
    """fs3's first eval task as the 1.5B model perceived it (#25): a deadline the request never set."""
    request = "list the files in this folder modified 30 days ago"
    invented = spec("find_files", request)
    invented["answer"]["constraints"]["deadline"] = "2023-04-15T12:00:00Z"
    c = "the files are listed"
    server = scripted(scenario(
        TaskSpec=[invented],
        Plan=[plan([subtask("list the files", [c], tools=["shell"])], [c])],
        tools=[call("shell", command="find . -mtime 30"), done("none")],
        AgentVerdict=[agent(verdict(c, True, evidence="find printed nothing"))],
        TaskVerdict=[task_verdict(verdict(c, True, evidence="find printed nothing"))],
    ))
    code, out, err = run_cli("run", "--json", request)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-2000:]
    (planned,) = [json.dumps(r["body"]["messages"]) for r in server.requests if r["schema"] == "Plan"]
    assert "Deadline: not stated" in planned and "2023-04-15" not in planned
    code, shown, _ = run_cli("log")
    assert "R1 answer repaired: deadline 2023-04-15T12:00:00Z dropped" in shown
