"""Red-team stories for the replan (#13), part 2: how models write the same path, and how they talk.

A blocked target is one normalised path: ``data/raw/``, ``./data/raw`` and ``<workspace>/data/raw``
are the same one, and a plan that would use any of them is re-asked, a call that uses one is
refused.  But a plan that names a blocked path only to say it is wrong ("not at /srv/logz/app.log")
does not use it and must pass.  Commands run as written: a ``find -maxdepth 1`` stays depth-limited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.memory.store import MemoryStore
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, megrams_against, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_replan_redteam import tool_reply, turns
from tests.test_replan_stories import bodies, must_not, prompt

pytestmark = pytest.mark.usefixtures("prefect_api")


def run_json(request: str) -> tuple[int, dict]:
    code, out, _ = run_cli("run", "--json", request)
    return code, final_from(out)


def test_a_plan_that_names_the_blocked_path_only_to_rule_it_out_is_accepted(scripted, artoo_env: Path):
    """Round 1: ``wc -l /srv/logz/app.log`` → No such file → change_path, /srv/logz/app.log blocked.

    Round 2's plan says, as models do, "the log is not at /srv/logz/app.log": it does not use the
    path, so it is accepted at once (no re-ask), and its real target logs/app.log is counted.
    """
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    (ws / "logs" / "app.log").write_text("a\nb\nc\n")
    c, typo = "the log's line count is printed", "/srv/logz/app.log"
    server = scripted(scenario(
        TaskSpec=[spec("count_log", "count the app log lines")],
        Plan=[plan([subtask("count the log lines", [c], context=f"the log is {typo}", tools=["shell"])], ["counted"]),
              plan([subtask("count the workspace log", [c], tools=["shell"],
                            context=f"The log is not at {typo} (that path does not exist); "
                                    "count logs/app.log instead of it.")], ["counted"])],
        tools=[call("shell", command=f"wc -l {typo}"), done("no such file", status="failed"),
               call("shell", command="wc -l < logs/app.log"), done("3")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "No such file or directory")), agent(verdict(c, True))],
        TaskVerdict=[task_verdict(verdict("counted", True))],
    ))
    code, final = run_json("count the app log lines")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    plans = bodies(server, "Plan")
    assert len(plans) == 2, prompt(plans[-1])[-600:]
    assert typo in must_not(prompt(plans[1]))
    assert "3" in tool_reply(turns(server, "count the workspace log")[1])
    assert server.unused() == {}


def test_the_same_folder_written_three_ways_is_one_blocked_target_and_find_keeps_its_depth(scripted,
                                                                                            artoo_env: Path):
    """Round 1: ``find data/raw/ -maxdepth 1 -name '*.csv'`` → No such file → change_path.

    The blocked target is <workspace>/data/raw: round 2's plan naming ``./data/raw`` is re-asked; the
    executor's absolute ``find <workspace>/data/raw`` is refused by the toolbox; ``find . -maxdepth 1``
    runs as written (a.csv at the top, not sub/b.csv below it).
    """
    ws = artoo_env / "workspace"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.csv").write_text("1\n")
    (ws / "sub" / "b.csv").write_text("2\n")
    c, blocked = "the top-level csv files are listed", str(ws / "data" / "raw")
    server = scripted(scenario(
        TaskSpec=[spec("list_csv", "list the csv files at the top of the data folder")],
        Plan=[plan([subtask("list the csv files", [c], context="look in data/raw/", tools=["shell"])], ["listed"]),
              plan([subtask("list the csv files in ./data/raw", [c], tools=["shell"])], ["listed"]),
              plan([subtask("list the top-level csv files of the workspace", [c], tools=["shell"])], ["listed"])],
        tools=[call("shell", command="find data/raw/ -maxdepth 1 -name '*.csv'"), done("none", status="failed"),
               call("shell", command=f"find {blocked} -maxdepth 1 -name '*.csv'"),
               call("shell", command="find . -maxdepth 1 -name '*.csv'"), done("./a.csv")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "find: 'data/raw/': No such file or directory")),
                      agent(verdict(c, True))],
        TaskVerdict=[task_verdict(verdict("listed", True))],
    ))
    code, final = run_json("list the csv files at the top of the data folder")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    plans = [prompt(b) for b in bodies(server, "Plan")]
    assert len(plans) == 3 and must_not(plans[1]).endswith(f"Blocked targets:\n  - {blocked}")
    assert f"subtask 1 reuses blocked target '{blocked}'" in plans[2]
    executor = turns(server, "list the top-level csv files")
    assert f"involves '{blocked}', a target the GGS blocked" in tool_reply(executor[1])
    listed = tool_reply(executor[2])
    assert "./a.csv" in listed and "b.csv" not in listed and "[exit code 0]" in listed
    assert server.unused() == {}


def test_the_home_folder_written_as_tilde_and_as_home_variable_is_one_blocked_target(scripted, artoo_env: Path):
    """Round 1: ``wc -l ~/<missing>/notes.txt`` → No such file → change_path, <home>/<missing>/notes.txt blocked.

    Models spell the home folder ``~``, ``$HOME`` and ``${HOME}``: round 2's plan naming
    ``$HOME/<missing>/notes.txt`` is re-asked, and the executor's ``wc -l "${HOME}/…"`` is refused.
    """
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "notes.txt").write_text("a\nb\n")
    missing = "artoo-redteam-no-such-dir/notes.txt"
    blocked = str(Path.home() / missing)
    assert not Path(blocked).exists()
    c = "the notes' line count is printed"
    server = scripted(scenario(
        TaskSpec=[spec("count_notes", "count my notes")],
        Plan=[plan([subtask("count the notes", [c], context=f"the notes are ~/{missing}", tools=["shell"])],
                   ["counted"]),
              plan([subtask("count the notes again", [c], context=f"count $HOME/{missing}", tools=["shell"])],
                   ["counted"]),
              plan([subtask("count the workspace notes", [c], context="count notes.txt", tools=["shell"])],
                   ["counted"])],
        tools=[call("shell", command=f"wc -l ~/{missing}"), done("no such file", status="failed"),
               call("shell", command=f'wc -l "${{HOME}}/{missing}"'), call("shell", command="wc -l < notes.txt"),
               done("2")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "No such file or directory")), agent(verdict(c, True))],
        TaskVerdict=[task_verdict(verdict("counted", True))],
    ))
    code, final = run_json("count my notes")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    plans = [prompt(b) for b in bodies(server, "Plan")]
    assert len(plans) == 3 and must_not(plans[1]).endswith(f"Blocked targets:\n  - {blocked}")
    assert f"subtask 1 reuses blocked target '{blocked}'" in plans[2]
    executor = turns(server, "count the workspace notes")
    assert f"involves '{blocked}', a target the GGS blocked" in tool_reply(executor[1])
    assert "2" in tool_reply(executor[2])
    assert server.unused() == {}


def test_a_refusal_and_a_missing_file_in_one_group_block_only_the_missing_file(scripted, artoo_env: Path):
    """Group 1 in parallel: overwrite the user's report.md (Law 1: nobody to ask → denied) ‖
    ``cat /srv/exports/q3.csv`` (No such file).  D = 1, P = 0 (the denial is no evidence, the
    missing file is environmental) → change_path.  Round 2's planner sees the refusal as a
    constraint and only the missing file as a blocked target; writing report-q3.md and reading
    the workspace copy is accepted with no question.
    """
    ws = artoo_env / "workspace"
    (ws / "exports").mkdir(parents=True)
    (ws / "report.md").write_text("the user's report\n")
    (ws / "exports" / "q3.csv").write_text("q3,9\n")
    wrote, read = "the figures are written to a markdown file", "the q3 figures are printed"
    gone = "/srv/exports/q3.csv"
    server = scripted(scenario(
        TaskSpec=[spec("q3_report", "write the q3 figures into a report")],
        Plan=[plan([subtask("write report.md", [wrote], tools=["write_file"]),
                    subtask("print the q3 export", [read], context=f"it is {gone}", tools=["shell"])], ["reported"]),
              plan([subtask("write report-q3.md", [wrote], tools=["write_file"]),
                    subtask("print the workspace q3 export", [read], context="exports/q3.csv", tools=["shell"])],
                   ["reported"])],
        tools=[call("write_file", match="write report.md", path="report.md", content="q3: 9\n"),
               call("shell", match="print the q3 export", command=f"cat {gone}"),
               done("the user did not approve", status="failed", match="write report.md"),
               done("the export is missing", status="failed", match="print the q3 export"),
               call("write_file", match="write report-q3.md", path="report-q3.md", content="q3: 9\n"),
               call("shell", match="print the workspace q3", command="cat exports/q3.csv"),
               done("written", match="write report-q3.md"), done("q3,9", match="print the workspace q3")],
        AgentVerdict=[agent(verdict(read, False, "environmental", "No such file or directory"),
                            match="print the q3 export"),
                      agent(verdict(wrote, True), match="write report-q3.md"),
                      agent(verdict(read, True), match="print the workspace q3")],
        TaskVerdict=[task_verdict(verdict("reported", True))],
    ))
    code, final = run_json("write the q3 figures into a report")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert (ws / "report.md").read_text() == "the user's report\n" and (ws / "report-q3.md").read_text() == "q3: 9\n"
    second = prompt(bodies(server, "Plan")[1])
    assert "D=1.000 P=0.000" in second and "Failure class: environmental" in second
    assert must_not(second) == f" none\nBlocked targets:\n  - {gone}"
    assert f"  - write_file report.md — [LAW1] denied: write_file {ws / 'report.md'}" in second
    assert final["summary"].count("denied: ") == 1  # round 2 asked nothing
    assert server.unused() == {}


def test_a_report_written_into_a_missing_folder_is_written_there_next_round(scripted, artoo_env: Path):
    """Group 1 in parallel: read the user's app.log (fine) ‖ ``grep -c ERROR app.log >
    reports/summary.md``, which fails because ``reports/`` does not exist yet (bash: "No such file
    or directory", exactly as for a missing input).  The failing path is the deliverable the user
    asked for: blocking it would make the task impossible.  A write into a missing folder blames
    nothing, so round 2's plan naming reports/summary.md is accepted at once, its command runs,
    and the user's app.log is unchanged.
    """
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "app.log").write_text("ok\nERROR disk\nok\nERROR net\n")
    seen, saved = "the log's lines are printed", "reports/summary.md holds the ERROR count"
    out = "reports/summary.md"
    server = scripted(scenario(
        TaskSpec=[spec("error_summary", "count the ERROR lines of app.log into reports/summary.md")],
        Plan=[plan([subtask("read app.log", [seen], tools=["read_file"]),
                    subtask(f"write the ERROR count to {out}", [saved], tools=["shell"])], ["the summary exists"]),
              plan([subtask(f"create reports/ and write the ERROR count to {out}", [saved], tools=["shell"])],
                   ["the summary exists"])],
        tools=[call("read_file", match="read app.log", path="app.log"),
               call("shell", match="write the ERROR count", command=f"grep -c ERROR app.log > {out}"),
               done("4 lines", match="read app.log"),
               done("could not write the summary", status="failed", match="write the ERROR count"),
               call("shell", match="create reports/", command=f"mkdir -p reports && grep -c ERROR app.log > {out}"),
               done("written", match="create reports/")],
        AgentVerdict=[agent(verdict(seen, True), match="read app.log"),
                      agent(verdict(saved, False, "environmental", "No such file or directory"),
                            wrong="reports/ does not exist", todo="create the folder first",
                            match="write the ERROR count"),
                      agent(verdict(saved, True), match="create reports/")],
        TaskVerdict=[task_verdict(verdict("the summary exists", True))],
    ))
    code, final = run_json("count the ERROR lines of app.log into reports/summary.md")
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    plans = bodies(server, "Plan")
    assert len(plans) == 2, "round 2's plan naming the deliverable was accepted at once"
    second = prompt(plans[1])
    assert must_not(second) == " none\nBlocked targets:\n  - none"
    assert "reports/summary.md: No such file or directory" in second  # the planner sees why it failed
    reply = tool_reply(turns(server, "create reports/")[1])
    assert "refused" not in reply and "[exit code 0]" in reply
    assert (ws / out).read_text() == "2\n" and (ws / "app.log").read_text() == "ok\nERROR disk\nok\nERROR net\n"
    assert server.unused() == {}
    with MemoryStore(artoo_env / "home") as store:  # nor does memory hold the deliverable against later tasks
        assert [megrams_against(store, ws / p) for p in (out, "reports", "app.log")] == [[]] * 3
