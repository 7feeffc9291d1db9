"""Self-correction on realistic failures (#13), told end to end through ``artoo run --json``.

Stories the way real models fail: multi-step plans, a user's file beside a failing write, a
failure that skips the steps after it, a person who says no, a person who takes their time.
Each asserts what the NEXT round was allowed to do (the tools offered, the MUST NOT lines,
the blocked targets the planner was shown) from the requests the scripted endpoint received,
not only the final status.  Before #13 every one of these failed.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.run_graph import subflow_names
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")


def bodies(server, schema: str) -> list[dict]:
    return [r["body"] for r in server.requests if r["schema"] == schema]


def prompt(body: dict) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def must_not(prompt_text: str) -> str:
    """The MUST NOT section of a planner prompt."""
    return prompt_text.split("MUST NOT set:\nBlocked tools:", 1)[1].split("\n\n", 1)[0]


def offered(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def test_a_users_file_stays_usable_and_the_planner_sees_the_failed_call(scripted, artoo_env: Path):
    """(a)+(i) Round 1 reads notes.txt (fine), then writes where it may not → change_path.

    Only the write's target is blocked: round 2 may read notes.txt (its plan names it and is
    accepted at once) and the planner sees the failed call, its output and R4a's advice.
    """
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "notes.txt").write_text("alpha: ship on friday\nbeta: call the bank\n")
    outside = "/srv/team-reports/summary.md"
    wrote = "summary.md holds a two-line summary of notes.txt"
    wrong, todo = f"{outside} is outside the folders artoo may write", "write summary.md inside the workspace"
    server = scripted(scenario(
        TaskSpec=[spec("summarise_notes", "summarise my notes.txt into summary.md")],
        Plan=[plan([subtask("read notes.txt and write the summary", [wrote], tools=["read_file", "write_file"],
                            context=f"read notes.txt; write the summary to {outside}")], ["the summary exists"]),
              plan([subtask("read notes.txt and write summary.md in the workspace", [wrote],
                            context="read notes.txt, write summary.md", tools=["read_file", "write_file"])],
                   ["the summary exists"])],
        tools=[call("read_file", path="notes.txt"),
               call("write_file", path=outside, content="- ship friday\n- call bank\n"),
               done("could not write the summary", status="failed"),
               call("read_file", path="notes.txt"),
               call("write_file", path="summary.md", content="- ship friday\n- call bank\n"),
               done("summary.md written")],
        AgentVerdict=[agent(verdict(wrote, False, "environmental", "write_file refused"), wrong=wrong, todo=todo),
                      agent(verdict(wrote, True, evidence="write_file wrote summary.md"))],
        TaskVerdict=[task_verdict(verdict("the summary exists", True))],
    ))
    code, out, _ = run_cli("run", "--json", "summarise my notes.txt into summary.md")
    final = final_from(out)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert (ws / "summary.md").read_text().startswith("- ship friday")
    plans = bodies(server, "Plan")
    assert len(plans) == 2  # the round-2 plan naming notes.txt was accepted, no re-ask
    second = prompt(plans[1])
    blocked = must_not(second)
    assert outside in blocked and "notes.txt" not in blocked
    # (i) the evidence: the failed call, its output (fenced), the validator's advice
    assert f"Tool call: write_file {outside} — failed (environmental)" in second
    assert "Tool call: read_file notes.txt — ok" in second
    assert "outside the allowed roots" in second and "UNTRUSTED:write_file output" in second
    assert wrong in second and todo in second
    round_two_read = bodies(server, "tools")[4]  # the turn after round 2's read_file
    assert "ship on friday" in json.dumps(round_two_read["messages"][-1])


def test_an_environmental_failure_that_skips_later_steps_changes_path_and_keeps_shell(scripted, artoo_env: Path):
    """(b) Group 1's shell step hits a missing log; groups 2's three steps never run.

    Skipped steps are unmet in D but no evidence in P: P = 0 → change_path, nothing blocks
    ``shell``, and round 2's executor is offered it.
    """
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    (ws / "logs" / "app.log").write_text("ERROR disk full\nINFO ok\nERROR disk full\n")
    got, counted, top, report = ("the error lines are printed", "the errors are counted",
                                 "the most common error is named", "report.md exists")
    later = [subtask("count the errors", [counted], 2), subtask("name the top error", [top], 2),
             subtask("write report.md", [report], 2)]
    server = scripted(scenario(
        TaskSpec=[spec("log_errors", "report the errors in the app log")],
        Plan=[plan([subtask("collect the error lines", [got], tools=["shell"]), *later], ["errors reported"]),
              plan([subtask("collect the error lines from logs/app.log", [got], tools=["shell"])],
                   ["errors reported"])],
        tools=[call("shell", command="grep ERROR /var/log/artoo-app/app.log"),
               done("the log is not there", status="failed"),
               call("shell", command="grep ERROR logs/app.log"), done("ERROR disk full x2")],
        AgentVerdict=[agent(verdict(got, False, "environmental", "No such file or directory"),
                            wrong="/var/log/artoo-app/app.log does not exist", todo="look in the workspace"),
                      agent(verdict(got, True))],
        TaskVerdict=[task_verdict(verdict("errors reported", True))],
    ))
    code, out, _ = run_cli("run", "--json", "report the errors in the app log")
    final = final_from(out)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert {"round-1 · init", "round-2 · change_path"} <= subflow_names(final["task_id"])
    second = prompt(bodies(server, "Plan")[1])
    assert must_not(second).startswith(" none\n")  # no blocked tools
    assert "/var/log/artoo-app/app.log" in must_not(second)
    assert "'count the errors': not run" in second
    assert "shell" in offered(bodies(server, "tools")[2])  # round 2's first executor turn


def test_a_law1_denial_is_a_constraint_not_a_failed_target(scripted, artoo_env: Path):
    """Round 1 would overwrite the user's report.md; nobody is there to say yes → denied.

    The planner is told what was refused and why; report.md is not a blocked target, and
    round 2 writes a new file instead.
    """
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "report.md").write_text("the user's report\n")
    written = "the weekly figures are written to a markdown file"
    server = scripted(scenario(
        TaskSpec=[spec("weekly_report", "write the weekly figures as markdown")],
        Plan=[plan([subtask("write report.md", [written], tools=["write_file"])], ["figures written"]),
              plan([subtask("write report-weekly.md", [written], tools=["write_file"])], ["figures written"])],
        tools=[call("write_file", path="report.md", content="# week\n3 sales\n"),
               done("the user did not approve overwriting report.md", status="failed"),
               call("write_file", path="report-weekly.md", content="# week\n3 sales\n"), done("written")],
        AgentVerdict=[agent(verdict(written, True))],
        TaskVerdict=[task_verdict(verdict("figures written", True))],
    ))
    code, out, _ = run_cli("run", "--json", "write the weekly figures as markdown")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    assert (ws / "report.md").read_text() == "the user's report\n"
    assert (ws / "report-weekly.md").exists()
    second = prompt(bodies(server, "Plan")[1])
    assert "report.md" not in must_not(second)
    assert "The user REFUSED" in second and f"write_file report.md — [LAW1] denied: write_file {ws / 'report.md'}" \
        in second


ARTOO = str(Path(sys.executable).with_name("artoo"))
QUESTION = b"Approve? [y/N]"


def run_with_slow_answer(args: list[str], answer: bytes, after_s: float) -> tuple[int, str]:
    """A real ``artoo`` process whose Law-1 question is answered ``after_s`` seconds after it is asked."""
    proc = subprocess.Popen([ARTOO, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        asked, deadline = b"", time.monotonic() + 120
        while QUESTION not in asked and time.monotonic() < deadline and proc.poll() is None:
            if select.select([proc.stderr], [], [], 0.5)[0]:
                asked += os.read(proc.stderr.fileno(), 65536)
        assert QUESTION in asked, asked[-2000:].decode(errors="replace")
        time.sleep(after_s)  # the person thinks it over
        out, _ = proc.communicate(answer, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out.decode()


@pytest.mark.slow  # a real artoo process and a 10-second wait
def test_a_slow_law1_yes_does_not_turn_an_accept_into_an_abandon(scripted, artoo_env: Path, monkeypatch):
    """(e) Ω = elapsed / budget here (w₂ = 1), so a wait as long as the budget would abandon.

    The person answers "y" after WAIT_S = the whole time budget: counted, Ω ≥ 1 ≥ θ → abandon.
    The wait is the person's time, so Ω measures only the agent's and the round is accepted.
    """
    wait_s = 10.0
    monkeypatch.setenv("ARTOO_LAW1_MODE", "console")
    monkeypatch.setenv("ARTOO_GGS__W2", "1.0")
    monkeypatch.setenv("ARTOO_GGS__TIME_BUDGET_MS", str(int(wait_s * 1000)))
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "report.md").write_text("old figures\n")
    written = "report.md holds this week's figures"
    scripted(scenario(
        TaskSpec=[spec("update_report", "update report.md with this week's figures")],
        Plan=[plan([subtask("rewrite report.md", [written], tools=["write_file"])], ["report updated"])],
        tools=[call("write_file", path="report.md", content="# week\n3 sales\n"), done("report.md rewritten")],
        AgentVerdict=[agent(verdict(written, True))],
        TaskVerdict=[task_verdict(verdict("report updated", True))],
    ))
    code, out = run_with_slow_answer(["run", "--json", "update report.md"], b"y\n", wait_s)
    final = final_from(out)
    assert (ws / "report.md").read_text() == "# week\n3 sales\n"  # the approved overwrite ran
    assert (code, final["directive"], final["replans"]) == (0, "accept", 0)
    assert final["loss"]["Omega"] < 0.8  # counted, the wait alone would make Ω = 1
