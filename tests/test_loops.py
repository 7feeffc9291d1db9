"""End-to-end scenarios of ``artoo run --json``: real Prefect harness, real tools, scripted brain.

Each test scripts the brain's answers and asserts on what artoo did: the FinalResult's
directive, the rounds the run graph shows, the requests the LLM endpoint saw, and the
files on disk.  The GGS's numbers for each story are worked out in the test docstrings.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.conftest import final_from, run_cli
from tests.run_graph import artifact_versions, flow_runs_named, latest_task_run, subflow_names
from tests.scenario_kit import (
    agent,
    call,
    change_path_scenario,
    crit,
    deletion_scenario,
    done,
    plan,
    requests_by_schema,
    scenario,
    spec,
    subtask,
    task_verdict,
    verdict,
)

pytestmark = pytest.mark.usefixtures("prefect_api")


def run_json(request: str) -> tuple[int, dict, str]:
    code, out, err = run_cli("run", "--json", request)
    return code, final_from(out), err


def test_first_round_accept_makes_exactly_the_minimum_llm_calls(scripted, artoo_env: Path):
    server = scripted(scenario(
        TaskSpec=[spec("say_hello", "say hello")],
        Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])],
        tools=[call("shell", command="echo hello"), done("hello")],
        AgentVerdict=[agent(verdict("the output contains hello", True, evidence="shell printed hello"))],
        TaskVerdict=[task_verdict(verdict("hello was printed", True))],
    ))
    code, final, _ = run_json("say hello")
    assert (code, final["directive"], final["replans"]) == (0, "accept", 0)
    assert final["loss"]["D"] == 0.0
    counts = requests_by_schema(server)
    assert {k: counts.get(k) for k in ("TaskSpec", "Plan", "AgentVerdict", "TaskVerdict")} == {
        "TaskSpec": 1, "Plan": 1, "AgentVerdict": 1, "TaskVerdict": 1}
    assert counts["tools"] == 2  # one turn that called the tool, one that answered
    assert server.unused() == {}


def test_environmental_failure_changes_path_then_accepts(scripted, artoo_env: Path):
    """Round 1: D=1, P=0 (environmental), ∇L=0 → change_path; round 2 finds the file → accept."""
    server = scripted(change_path_scenario(artoo_env / "workspace"))
    code, final, _ = run_json("count the lines in notes.txt")
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    assert final["prev_directive"] == "change_path"
    plans = [r["body"] for r in server.requests if r["schema"] == "Plan"]
    second_prompt = str(plans[1]["messages"])
    assert "change_path" in second_prompt and "wc -l missing/notes.txt" in second_prompt  # blocked target named
    names = subflow_names(final["task_id"])
    assert {"round-1 · init", "round-2 · change_path"} <= names
    assert any(n.startswith("subtask-2.1 · find notes.txt") for n in names)
    [round_2] = flow_runs_named(final["task_id"], "round-2")
    brief = round_2.parameters["brief"]  # the round's one input, as the Prefect UI shows it: plain JSON
    assert (brief["round_no"], brief["directive"]["directive"], brief["spec"]["task_id"]) == (
        2, "change_path", final["task_id"])
    assert "missing/notes.txt" in json.dumps(brief["directive"]["blocked_targets"])


def test_logical_plateau_breaks_symmetry_until_the_replan_budget_is_spent(scripted, artoo_env: Path, prefect_api):
    """Every round fails logically with no tool used: D=1, P=1, |∇L| < ε → break_symmetry x3, then abandon.

    The GGS's artifacts are written in the background: every round's version lands, in round order.
    """
    crit = "the answer is 42"
    rounds = 4  # 1 + maxReplans
    server = scripted(scenario(
        TaskSpec=[spec("find_answer", "find the answer")],
        Plan=[plan([subtask(f"attempt {i}", [crit])], ["the answer is reported"]) for i in range(rounds)],
        tools=[done("I cannot", status="failed") for _ in range(rounds)],
        AgentVerdict=[agent(verdict(crit, False, "logical")) for _ in range(rounds)],
        FailureReport=[{"answer": {"achieved": "nothing usable yet", "blocked_by": "no method found the answer",
                                   "try_next": ["say where the answer is written down"]}}],
    ))
    code, final, _ = run_json("find the answer")
    assert (code, final["directive"], final["replans"]) == (1, "abandon", 3)
    assert "Achieved: nothing usable yet" in final["summary"] and "Blocked by: no method" in final["summary"]
    assert final["next_steps"] == ["say where the answer is written down"]  # the report's, not the template's
    assert requests_by_schema(server)["FailureReport"] == 1 and server.unused() == {}
    assert final["prev_directive"] == "break_symmetry"
    names = subflow_names(final["task_id"])
    assert {"round-1 · init", "round-2 · break_symmetry", "round-3 · break_symmetry",
            "round-4 · break_symmetry"} <= names
    assert requests_by_schema(server).get("TaskVerdict") is None  # R4b never called: every round had a failure
    assert final["next_steps"], "an abandon must say what to try next"
    run_id = latest_task_run().id
    tables = artifact_versions(prefect_api, "ggs-find-answer", run_id)
    rows = [json.loads(t["data"]) if isinstance(t["data"], str) else t["data"] for t in tables]
    assert [len(r) for r in rows] == [1, 2, 3, 4]  # one version per round, each a row longer
    written_by = [httpx.get(f"{prefect_api}/task_runs/{t['task_run_id']}", timeout=10).json()["name"] for t in tables]
    assert written_by == [f"R7 · GGS round {n}" for n in range(1, rounds + 1)]  # each under its round's GGS task
    assert len(artifact_versions(prefect_api, "loss-find-answer", run_id)) == rounds
    (report,) = artifact_versions(prefect_api, "final-find-answer", run_id)
    assert "abandoned" in report["data"]


def test_worsening_twice_trips_the_law2_kill_switch(scripted, artoo_env: Path):
    """L: 0.30 → 0.62 → 0.94 (∇L = +0.32 twice > ε) → abandon in round 3, before the replan budget ends."""
    a, b = "criterion a holds", "criterion b holds"
    two = [a, b]
    server = scripted(scenario(
        TaskSpec=[spec("diverge", "do the diverging thing")],
        Plan=[plan([subtask("try one", two)], ["done"]), plan([subtask("try two", two)], ["done"]),
              plan([subtask("try three", two)], ["done"])],
        tools=[done("partial", status="failed") for _ in range(3)],
        AgentVerdict=[agent(verdict(a, True), verdict(b, False, "environmental")),
                      agent(verdict(a, True), verdict(b, False, "logical")),
                      agent(verdict(a, False, "logical"), verdict(b, False, "logical"))],
    ))
    code, final, _ = run_json("do the diverging thing")
    assert (code, final["directive"], final["replans"]) == (1, "abandon", 2)
    assert "Law" in final["summary"] and "2" in final["summary"]
    assert final["grad_l"] > 0.1
    assert server.unused() == {}


def test_task_level_rejection_replans_instead_of_success(scripted, artoo_env: Path):
    """All subtasks match but R4b rejects the task criterion: D = 1/2 > δ → replan, then accept."""
    sub_c, task_c = "the file list is printed", "the list is sorted by size"
    server = scripted(scenario(
        TaskSpec=[spec("list_files", "list files by size")],
        Plan=[plan([subtask("list files", [sub_c])], [task_c]),
              plan([subtask("list files sorted", [sub_c])], [task_c])],
        tools=[call("shell", command="ls"), done("a b"), call("shell", command="ls -S"), done("b a")],
        AgentVerdict=[agent(verdict(sub_c, True)), agent(verdict(sub_c, True))],
        TaskVerdict=[task_verdict(verdict(task_c, False, "logical", "not sorted")),
                     task_verdict(verdict(task_c, True))],
    ))
    code, final, _ = run_json("list files by size")
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    assert final["prev_directive"] not in ("success", "init")
    assert requests_by_schema(server)["TaskVerdict"] == 2


def test_one_of_four_criteria_failing_is_success(scripted, artoo_env: Path):
    """3 subtask criteria pass, 1 judged (plausible) task criterion fails: D = 1/4 = 0.25 ≤ δ = 0.3 → success.
    (A failed verifiable criterion is never forgiven within δ: tests/test_ggs.py.)"""
    c = ["has a title", "has a date", "has a body"]
    scripted(scenario(
        TaskSpec=[spec("write_note", "write a note")],
        Plan=[plan([subtask("write note.md", c)], [crit("the note reads well", "plausible")])],
        tools=[call("write_file", path="note.md", content="# t\n2026-11-22\nbody\n"), done("written")],
        AgentVerdict=[agent(*(verdict(x, True) for x in c))],
        TaskVerdict=[task_verdict(verdict("the note reads well", False, "logical"))],
    ))
    code, final, _ = run_json("write a note")
    assert (code, final["directive"], final["replans"]) == (0, "success", 0)
    assert final["loss"]["D"] == pytest.approx(0.25)


def test_parallel_subtasks_overlap_in_time(scripted, artoo_env: Path):
    """Two subtasks of one sequence group run concurrently: their subflow runs overlap."""
    ca, cb = "alpha printed", "beta printed"
    scripted(scenario(
        TaskSpec=[spec("two_things", "do two things")],
        Plan=[plan([subtask("print alpha", [ca]), subtask("print beta", [cb])], ["both printed"])],
        tools=[call("shell", match="print alpha", latency_s=0.6, command="echo alpha"),
               call("shell", match="print beta", latency_s=0.6, command="echo beta"),
               done("alpha", match="print alpha", latency_s=0.6), done("beta", match="print beta", latency_s=0.6)],
        AgentVerdict=[agent(verdict(ca, True), match="print alpha"), agent(verdict(cb, True), match="print beta")],
        TaskVerdict=[task_verdict(verdict("both printed", True))],
    ))
    code, final, _ = run_json("do two things")
    assert (code, final["directive"]) == (0, "accept")
    runs = flow_runs_named(final["task_id"], "subtask-1.")
    assert len(runs) == 2
    (s1, e1), (s2, e2) = [(r.start_time, r.end_time) for r in runs]
    assert s1 < e2 and s2 < e1, f"subtask runs did not overlap: {runs}"


def test_deleting_a_file_is_denied_without_anyone_to_ask(scripted, artoo_env: Path, monkeypatch):
    """Non-interactive: the Law-1 gate denies, the file stays, and [LAW1] is in the summary."""
    monkeypatch.setenv("ARTOO_LAW1_MODE", "auto")  # no TTY, no deployment → deny
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "0")
    victim = artoo_env / "workspace" / "old.log"
    victim.parent.mkdir(parents=True)
    victim.write_text("keep me")
    scripted(deletion_scenario(approved=False))
    code, final, _ = run_json("delete old.log")
    assert victim.read_text() == "keep me"
    assert (code, final["directive"]) == (1, "abandon")
    assert "[LAW1]" in final["summary"] and "rm old.log" in final["summary"]
