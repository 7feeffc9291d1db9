"""Votes decide, told through ``artoo run --json`` on the scripted server: the executor's work is one vote among
independent commands for the request, each run on its own copy of the folder and grouped by what it changes.

The folder and the commands are those of the real try that made this rule: asked to add up the amount column of
expenses.csv, the 1.5B model's executor summed column 3 (right, 24.75), while the one reference it was compared
with summed column 2, the item names, and wrote 0; the run then copied the reference and accepted a total of 0.
"""

from __future__ import annotations

import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.scenario_kit import call, command, crit, done, plan, scenario, spec, subtask
from tests.test_check_stories import decisions, schemas

pytestmark = pytest.mark.usefixtures("prefect_api")


@pytest.fixture(autouse=True)
def votes_on(monkeypatch):
    """The suite draws no votes by default (tests/conftest.py): these stories are about them."""
    monkeypatch.setenv("ARTOO_CHECKS__REFERENCE_CALL", "true")

REQUEST = "add up the amount column of expenses.csv and write the total to total.txt"
CSV = "date,item,amount\n2026-01-02,coffee,3.50\n2026-01-03,books,12.25\n2026-01-04,lunch,9.00\n"
RIGHT = "awk -F, 'NR>1 {s += $3} END {print s}' expenses.csv > total.txt"
RIGHT_TOO = "tail -n +2 expenses.csv | cut -d, -f3 | paste -sd+ | bc > total.txt"
RIGHT_AGAIN = "awk -F, 'NR > 1 { t += $3 } END { print t }' expenses.csv > total.txt"
WRONG = "awk -F, 'NR>1 {s += $2} END {print s}' expenses.csv > total.txt"
HOLDS = "total.txt holds the sum of the amount column"
SPEC = spec("sum_expenses", "Add up the amount column of expenses.csv and write the total to total.txt")


def expenses(artoo_env: Path) -> Path:
    folder = artoo_env / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "expenses.csv").write_text(CSV)
    return folder


def approve(action) -> bool:
    """The person's yes to every Law-1 question (the stories that need one)."""
    return True


def one_step(criteria: list) -> dict:
    return plan([subtask("sum the amount column of expenses.csv into total.txt", criteria, tools=["shell"])], [])


def test_the_executor_right_the_first_vote_wrong_two_more_agree_accepted_with_no_judge(scripted, artoo_env,
                                                                                       monkeypatch):
    """Three votes: one sums the item names (0), two sum the amounts.  With the executor's work the right group
    has three votes, the quorum: accepted, the executor's total.txt stands, and no validator is asked.  With two
    framings the votes take turns at them."""
    monkeypatch.setenv("ARTOO_CHECKS__VOTE_FRAMINGS", '["shell", "python"]')
    folder = expenses(artoo_env)
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[one_step([HOLDS])],
        Vote=[command(WRONG), command(RIGHT_TOO), command(RIGHT_AGAIN)],
        tools=[call("shell", command=RIGHT), done("the total is 20.75")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept"), err[-3000:]
    assert (folder / "total.txt").read_text().strip() == "24.75"
    assert "AgentVerdict" not in schemas(server) and "TaskVerdict" not in schemas(server)
    assert schemas(server).count("Vote") == 3
    asked = [json.dumps(r["body"]["messages"]) for r in server.requests if r["schema"] == "Vote"]
    assert sum("python3 -c" in text for text in asked) == 1  # shell, Python, shell: framings in turn
    checked = [r for r in decisions(artoo_env) if r.get("kind") == "check" and r.get("form") == "reference"]
    assert checked and checked[-1]["status"] == "met" and "3 of 4 counted votes agree" in checked[-1]["reason"]
    # code, not a model, says what is on disk: the file as read, never the executor's "20.75"
    assert "total.txt" in final["summary"] and "24.75" in final["summary"] and "20.75" not in final["summary"]
    assert "Decided by votes" in final["summary"]


def test_the_executor_wrong_and_three_votes_agree_their_change_set_is_laid_and_accepted(scripted, artoo_env):
    """The executor copies the wrong column; three votes sum the right one.  Their change set is what the task
    delivers, laid on the folder (a new file: Law 1 asks nothing); no role runs the winning command."""
    folder = expenses(artoo_env)
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[one_step([HOLDS])],
        Vote=[command(RIGHT), command(RIGHT_TOO), command(RIGHT_AGAIN)],
        tools=[call("shell", command=WRONG), done("the total is 0")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept"), err[-3000:]
    assert (folder / "total.txt").read_text().strip() == "24.75"
    laid = [r for r in decisions(artoo_env) if r.get("kind") == "votes_laid"]
    assert len(laid) == 1 and any("total.txt" in line for line in laid[0]["changes"])
    executed = [json.dumps(r["body"]) for r in server.requests if r["schema"] == "tools"]
    assert executed and all(RIGHT_TOO not in text for text in executed)  # no role was shown a vote's command


def test_votes_that_all_differ_end_unsure_with_the_alternatives_and_the_folder_as_it_was(
        scripted, artoo_env, monkeypatch):
    """Every vote sums something else: two more are drawn, they differ too, and the budget of votes is spent: the
    task ends unsure, with its own exit code, each alternative in the result, and the executor's file taken back."""
    monkeypatch.setenv("ARTOO_CHECKS__VOTES_MAX", "5")
    folder = expenses(artoo_env)
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[one_step([HOLDS])],
        Vote=[command(WRONG), command("wc -l < expenses.csv > total.txt"), command("echo 12.25 > total.txt"),
              command("head -c 3 expenses.csv > total.txt"), command("echo 9 > total.txt")],
        tools=[call("shell", command=RIGHT), done("the total is 24.75")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert (code, final["directive"]) == (3, "unsure"), err[-3000:]
    assert schemas(server).count("Vote") == 5  # three, then two more while none decided
    assert sorted(p.name for p in folder.iterdir()) == ["expenses.csv"]
    alternatives = final["output"]["alternatives"]
    assert len(alternatives) == 6 and all(a["votes"] == 1 for a in alternatives)
    assert any("the executor's work" in a["by"] for a in alternatives)
    assert "Unsure" in final["summary"] and "as you left it" in final["summary"]
    assert "AgentVerdict" not in schemas(server) and "TaskVerdict" not in schemas(server)
    assert "FailureReport" not in schemas(server)


def test_a_broken_check_beside_an_agreeing_quorum_is_dropped_not_judged(scripted, artoo_env):
    """The plan's check of the criterion is malformed (exit 2); the votes agree with the executor, so the
    criterion is decided by them and no validator is asked to veto it."""
    folder = expenses(artoo_env)
    broken = "grep -q --no-such-option 24 total.txt"
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[one_step([crit(HOLDS, check=broken)])],
        Vote=[command(RIGHT_TOO), command(RIGHT_AGAIN), command(WRONG)],
        tools=[call("shell", command=RIGHT), done("the total is 24.75")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-3000:]
    assert "AgentVerdict" not in schemas(server) and "TaskVerdict" not in schemas(server)
    statuses = [r["status"] for r in decisions(artoo_env) if r.get("kind") == "check" and r["command"] == broken]
    assert statuses and set(statuses) == {"broken"}


def test_an_agreeing_quorum_ends_the_attempt_after_the_call_that_met_it(scripted, artoo_env):
    """The plan's check passes before the work too (it cannot tell), but once the executor's first call leaves what
    the votes agree on, the step is decided by the step's own rule: the executor is not asked for another turn."""
    folder = expenses(artoo_env)
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[one_step([crit(HOLDS, check="test -f expenses.csv")])],
        Vote=[command(RIGHT_TOO), command(RIGHT_AGAIN), command(WRONG)],
        tools=[call("shell", command=RIGHT), call("shell", command="cat total.txt"), done("the total is 24.75")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-3000:]
    assert schemas(server).count("tools") == 1  # one turn: the call that met the quorum, no "is it done?"
    assert "AgentVerdict" not in schemas(server)


def test_an_endpoint_that_gives_no_vote_leaves_the_task_to_its_checks_never_unsure(scripted, artoo_env):
    """Every vote request fails (the endpoint has no answer for it): the task is decided without votes, by its own
    check, and the votes are not asked for again."""
    folder = expenses(artoo_env)
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[one_step([crit(HOLDS, check="grep -qx 24.75 total.txt")])],
        tools=[call("shell", command=RIGHT), done("the total is 24.75")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-3000:]
    assert "no vote could be drawn" in err
    order = [r["schema"] for r in server.requests]
    assert "Vote" in order and "tools" in order
    assert max(i for i, name in enumerate(order) if name == "Vote") < order.index("tools")  # none drawn later


def test_votes_that_differ_only_in_form_are_one_group(scripted, artoo_env):
    """Two votes write the list under reports/, one beside the data, one sorts it another way: one group with the
    executor's work."""
    folder = artoo_env / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("b.log", "a.log", "c.txt"):
        (folder / name).write_text("x\n")
    request = "list the .log files into logs.txt"
    server = scripted(scenario(
        TaskSpec=[spec("list_logs", request)],
        Plan=[plan([subtask("list the .log files into logs.txt", ["logs.txt lists the .log files"],
                            tools=["shell"])], [])],
        Vote=[command("mkdir -p reports && ls *.log > reports/logs.txt"), command("ls -r *.log > logs.txt"),
              command("ls *.txt > logs.txt")],
        tools=[call("shell", command="ls *.log > logs.txt"), done("listed")],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), request)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-3000:]
    assert (folder / "logs.txt").read_text().split() == ["a.log", "b.log"]
    assert not (folder / "reports").exists()
    (checked,) = [r for r in decisions(artoo_env) if r.get("kind") == "check" and r.get("form") == "reference"][-1:]
    assert "3 of 4 counted votes agree" in checked["reason"]
    assert "AgentVerdict" not in schemas(server)


def test_chmod_and_tar_agree_by_mode_and_by_members(scripted, artoo_env, monkeypatch):
    """A mode change is a change, and two archives of the same files made at different moments agree (the person
    approves the mode change: files that existed before the task)."""
    monkeypatch.setenv("ARTOO_LAW1_MODE", "policy")
    monkeypatch.setenv("ARTOO_LAW1_POLICY", f"{__name__}:approve")
    folder = artoo_env / "workspace"
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "logs").mkdir()
    for name in ("a.sh", "b.sh"):
        (folder / "scripts" / name).write_text("#!/bin/sh\necho hi\n")
        os.chmod(folder / "scripts" / name, 0o644)
    (folder / "logs" / "app.log").write_text("started\n")
    request = "make every .sh file in scripts executable and pack the logs folder into logs.tar.gz"
    server = scripted(scenario(
        TaskSpec=[spec("chmod_and_pack", request)],
        Plan=[plan([subtask(request, ["the scripts are executable", "logs.tar.gz holds the logs folder"],
                            tools=["shell"])], [])],
        Vote=[command("chmod +x scripts/*.sh && tar czf logs.tar.gz logs"),
              command("sleep 1.1; find scripts -name '*.sh' -exec chmod 755 {} + ; tar -czf logs.tar.gz logs"),
              command("chmod a+x scripts/a.sh scripts/b.sh; tar -cf - logs | gzip > logs.tar.gz")],
        tools=[call("shell", command="sleep 1.1; chmod u+x,g+x,o+x scripts/*.sh; tar -zcf logs.tar.gz logs"),
               done("done")],
    ))
    started = time.time()
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), request)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-3000:]
    assert all(os.stat(folder / "scripts" / n).st_mode & 0o111 == 0o111 for n in ("a.sh", "b.sh"))
    with tarfile.open(folder / "logs.tar.gz") as archive:
        assert "logs/app.log" in archive.getnames()
    (checked,) = [r for r in decisions(artoo_env) if r.get("kind") == "check" and r.get("form") == "reference"][-1:]
    assert "4 of 4 counted votes agree" in checked["reason"], checked
    assert "AgentVerdict" not in schemas(server) and time.time() - started < 120


def test_a_plan_equal_to_an_earlier_rounds_is_not_dispatched_again(scripted, artoo_env, monkeypatch):
    """Round 1's executor fails; the planner answers the replan with the very same plan, which is not run again:
    no executor call is spent on it, and the log says why."""
    monkeypatch.setenv("ARTOO_CHECKS__REFERENCE_CALL", "false")
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "1")
    folder = expenses(artoo_env)
    same = one_step([HOLDS])
    server = scripted(scenario(
        TaskSpec=[SPEC], Plan=[same, same],
        tools=[call("shell", command="awk -F, '{s+=$9} END {print s}' missing.csv > total.txt"),
               done("missing.csv is not there", status="failed")],
        AgentVerdict=[{"answer": {"verdicts": [{"criterion": HOLDS, "verdict": "fail", "failure_class": "logical",
                                                "evidence": "total.txt is empty"}],
                                  "what_was_wrong": "wrong file", "what_to_do": "read expenses.csv"}}],
        FailureReport=[{"answer": {"achieved": "-", "blocked_by": "-", "try_next": []}}],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    assert (code, final_from(out)["directive"]) == (1, "abandon"), err[-3000:]
    assert schemas(server).count("Plan") == 2 and schemas(server).count("tools") == 2  # round 1's turns only
    (repeated,) = [r for r in decisions(artoo_env) if r.get("kind") == "plan_repeated"]
    assert (repeated["round"], repeated["earlier"]) == (2, 1)
