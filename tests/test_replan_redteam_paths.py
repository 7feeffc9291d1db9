"""Red-team stories for the replan (#13), part 2: how models write the same path, and how they talk.

A blocked target is one normalised path: ``data/raw/``, ``./data/raw`` and ``<workspace>/data/raw``
are the same one, and a plan that would use any of them is re-asked, a call that uses one is
refused.  But a plan that names a blocked path only to say it is wrong ("not at /srv/logz/app.log")
does not use it and must pass.  Commands run as written: a ``find -maxdepth 1`` stays depth-limited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict
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
