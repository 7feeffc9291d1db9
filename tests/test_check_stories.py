"""Checks that code runs, told through ``artoo run --json`` on the scripted server: a model's pass never stands
against a check, and a broken check is the plan's defect (votes on the whole request: tests/test_vote_stories.py).

The folder is the one the everyday "list the logs with ERROR" task starts from; the wrong result is the one the
1.5B model wrote in its real try (every name, not the matching ones) and both its validators passed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, crit, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")

REQUEST = "list the log files that contain ERROR into errors.txt"
LOGS = {"a.log": "ERROR disk full\n", "b.log": "all good\n", "c.log": "ok\nERROR net down\n"}
RIGHT = "grep -l ERROR *.log > errors.txt"
WRONG = "ls *.log > errors.txt"
INTENT = "Write the names of the .log files that contain ERROR into errors.txt"
LISTS = "errors.txt lists the log files that contain ERROR"
EXACT = ("errors.txt names exactly the logs that contain ERROR",
         "grep -qx a.log errors.txt && grep -qx c.log errors.txt && ! grep -qx b.log errors.txt")
READABLE = "errors.txt is easy to read"


def logs_folder(artoo_env: Path) -> Path:
    folder = artoo_env / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in LOGS.items():
        (folder / name).write_text(text)
    return folder


def decisions(artoo_env: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((artoo_env / "home" / "decisions").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]


def schemas(server) -> list[str]:
    return [r["schema"] for r in server.requests if r["status"] == 200]


@pytest.mark.parametrize("checks", [True, False])
def test_a_wrong_file_both_validators_pass_is_failed_by_its_check_and_the_replan_fixes_it(
        scripted, artoo_env, monkeypatch, checks):
    """R4a and R4b pass every criterion they are asked about, the wrong errors.txt included.  With checks, the
    task criterion's check fails round 1, the GGS replans, round 2 writes the right file and the task is accepted
    only then; with checks off the same answers accept the wrong file (the story fails without the check)."""
    monkeypatch.setenv("ARTOO_CHECKS__ENABLED", "true" if checks else "false")
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    folder = logs_folder(artoo_env)
    round_plan = plan([subtask(INTENT, [LISTS], tools=["shell"])], [crit(EXACT[0], check=EXACT[1]),
                                                                    crit(READABLE, "plausible")])
    redo_plan = plan([subtask(INTENT + ", only those with ERROR", [LISTS], tools=["shell"])],
                     [crit(EXACT[0], check=EXACT[1]), crit(READABLE, "plausible")])  # a repeated plan is not run
    passes_all = task_verdict(verdict(EXACT[0], True, evidence="errors.txt: a.log b.log c.log"),
                              verdict(READABLE, True, evidence="one name per line"))
    server = scripted(scenario(
        TaskSpec=[spec("list_error_logs", REQUEST)],
        Plan=[round_plan, redo_plan],
        tools=[call("shell", command=WRONG), done("errors.txt lists the logs"),
               call("shell", command=RIGHT), done("errors.txt lists the logs with ERROR")],
        AgentVerdict=[agent(verdict(LISTS, True, evidence="a.log b.log c.log")),
                      agent(verdict(LISTS, True, evidence="a.log c.log"))],
        TaskVerdict=[passes_all, passes_all],
        FailureReport=[{"answer": {"achieved": "-", "blocked_by": "-", "try_next": []}}],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    if not checks:  # the model's word alone: the wrong file is accepted
        assert (code, final["directive"]) == (0, "accept"), err[-2000:]
        assert (folder / "errors.txt").read_text().split() == ["a.log", "b.log", "c.log"]
        return
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1), err[-2000:]
    assert (folder / "errors.txt").read_text().split() == ["a.log", "c.log"]
    records = decisions(artoo_env)
    checked = [(r["label"], r["status"]) for r in records if r.get("kind") == "check"]
    assert checked == [("round 1", "unmet"), ("round 2", "met")]
    asked = [r for r in server.requests if r["schema"] == "TaskVerdict"]
    assert len(asked) == 2 and all(EXACT[0] not in json.dumps(r["body"]["messages"]) for r in asked)
    ggs = [r for r in records if r.get("kind") == "ggs"]
    assert ggs and EXACT[0] in json.dumps(ggs[0])  # the directed correction names the failed check's criterion


def test_a_broken_check_is_said_judged_by_the_model_with_its_error_and_the_run_goes_on(scripted, artoo_env):
    folder = logs_folder(artoo_env)
    broken = "grep -q --no-such-option ERROR errors.txt"
    the_plan = plan([subtask(INTENT, [crit(LISTS, check=broken)], tools=["shell"])], [crit(READABLE, "plausible")])
    server = scripted(scenario(
        TaskSpec=[spec("list_error_logs", REQUEST)], Plan=[the_plan],
        tools=[call("shell", command=RIGHT), done("errors.txt lists the logs with ERROR")],
        AgentVerdict=[agent(verdict(LISTS, True, evidence="a.log c.log"))],
        TaskVerdict=[task_verdict(verdict(READABLE, True, evidence="one name per line"))],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-2000:]
    (record,) = [r for r in decisions(artoo_env) if r.get("kind") == "check"]
    assert (record["status"], record["command"]) == ("broken", broken) and "exit 2" in record["reason"]
    (judged,) = [json.dumps(r["body"]["messages"]) for r in server.requests if r["schema"] == "AgentVerdict"]
    assert "could not run" in judged and "exit 2" in judged
    code, shown, _ = run_cli("log")
    assert code == 0 and "could not run" in shown
