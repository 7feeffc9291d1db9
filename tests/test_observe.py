"""End to end: scripted stories are recorded in the decision log, then read by ``artoo log`` and ``artoo replay``.

Real Prefect server, real tools, the scripted brain over loopback; the log and replay
commands read only the files under ARTOO_HOME/decisions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")

SECRET_KEY = "sk-live-0123456789abcdefSECRET"
COUNT = "the line count of notes.txt is reported"


def change_path_story(artoo_env: Path) -> dict:
    """Round 1 fails environmentally (D=1, P=0, ∇L=0 → change_path); round 2 finds the file → accept."""
    workspace = artoo_env / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text("a\nb\nc\n")
    return scenario(
        TaskSpec=[spec("count_notes", "count the lines in notes.txt")],
        Plan=[plan([subtask("count notes lines", [COUNT])], ["the count is reported"]),
              plan([subtask("find notes.txt and count its lines", [COUNT])], ["the count is reported"])],
        tools=[call("shell", command="wc -l missing/notes.txt"), done("no such file", status="failed"),
               call("shell", command=f"echo key={SECRET_KEY}; wc -l < data/notes.txt"), done("3")],
        AgentVerdict=[agent(verdict(COUNT, False, "environmental", "No such file or directory")),
                      agent(verdict(COUNT, True, evidence="wc printed 3"))],
        TaskVerdict=[task_verdict(verdict("the count is reported", True))],
    )


@pytest.fixture
def recorded(scripted, artoo_env: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """One recorded two-round run (change_path, then accept) whose API key is SECRET_KEY."""
    scripted(change_path_story(artoo_env))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    code, out, _ = run_cli("run", "--json", f"count the lines in notes.txt (my api_key: {SECRET_KEY})")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    return final


def decision_files(artoo_env: Path) -> list[Path]:
    return sorted((artoo_env / "home" / "decisions").glob("*.jsonl"))


def test_the_decision_log_records_calls_tools_verdicts_and_ggs_without_secrets(recorded, artoo_env: Path):
    code, out, _ = run_cli("log", "count_notes", "--json")
    assert code == 0
    records = json.loads(out)["records"]
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "run" and kinds[-1] == "end"
    llm = [r for r in records if r["kind"] == "llm"]
    assert [r["role"] for r in llm].count("R2") == 2 and {"R1", "R3", "R4a", "R4b"} <= {r["role"] for r in llm}
    assert "FailureReport" not in {r["schema"] for r in llm}  # the failure report is asked only on abandon
    plan_call = next(r for r in llm if r["role"] == "R2")
    assert plan_call["request"]["messages"][0]["role"] == "system"  # the full prompt, as sent
    assert plan_call["response"]["choices"][0]["message"]["content"]
    assert all(r["latency_s"] >= 0 and "prompt_tokens" in r for r in llm)
    tools = [r for r in records if r["kind"] == "tool"]
    assert [t["exit_code"] for t in tools] == [1, 0]
    assert tools[0]["scope"] == {"round": 1, "subtask": tools[0]["scope"]["subtask"], "attempt": 1}
    assert "change_set" in tools[0]
    assert [r["role"] for r in records if r["kind"] == "verdict"] == ["R4a", "R4a", "R4b"]
    ggs = [r for r in records if r["kind"] == "ggs"]
    assert [g["state"] for g in ggs] == ["change_path", "accept"]
    text = "".join(p.read_text() for p in decision_files(artoo_env))
    assert SECRET_KEY not in text and "[REDACTED]" in text


def test_artoo_log_reads_as_the_story_of_the_run(recorded):
    code, out, _ = run_cli("log")  # the latest run
    assert code == 0
    # "\n  subtask ": the subtask's own line, not the plan repair's "the only subtask (…)" before it
    order = ["R1 task count_notes", "round 1: plan of 1", "\n  subtask ", "$ shell: wc -l missing/notes.txt",
             "R4a verdicts attempt 1", "FAIL the line count", "GGS ggs task=count_notes round=1",
             "directive=change_path", "round 2: plan of 1", "PASS the line count", "R4b verdicts",
             "directive=accept", "FinalResult: accept after 1 replan(s)"]
    positions = [out.find(marker) for marker in order]
    assert -1 not in positions, dict(zip(order, positions, strict=True))
    assert positions == sorted(positions)
    assert "[system]" not in out  # prompts only with --full
    code, full, _ = run_cli("log", "count_notes", "--full", "--role", "R2")
    assert code == 0 and "[system]" in full and "change_path" in full
    assert "· R2 Plan" in full and "· R3 " not in full and "· R4a " not in full


def test_replay_with_the_recorded_settings_reproduces_every_directive(recorded):
    code, out, _ = run_cli("replay", "count_notes", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["identical"] is True
    assert [(r["recorded"], r["replayed"]) for r in result["rows"]] == [("change_path", "change_path"),
                                                                        ("accept", "accept")]
    assert all(r["replayed_L"] == pytest.approx(r["recorded_L"], abs=1e-12) for r in result["rows"])


def test_replay_under_other_settings_marks_where_it_would_stop(recorded):
    code, out, _ = run_cli("replay", "count_notes", "--set", "ggs.max_replans=0")
    assert code == 0
    assert "replay stops here (abandon)" in out
    assert "not run: the replay stopped at round 1" in out
    assert "would stop at round 1 with abandon" in out
    code, _, err = run_cli("replay", "count_notes", "--set", "ggs.nonsense=1")
    assert code == 2 and "ggs.alpha" in err


def test_log_and_replay_of_an_unknown_task_say_so(artoo_env: Path):
    code, _, err = run_cli("log", "no_such_task")
    assert code == 2 and "no decision log" in err
    code, _, err = run_cli("replay", "no_such_task")
    assert code == 2 and "no decision log" in err
