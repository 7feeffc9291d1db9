"""A replan that redoes only what failed is judged, and delivered, with what the earlier round validated.

Real ``artoo run --json`` on the real Prefect server; the brain is the scripted OpenAI-compatible
server, the tools are real.  The story asserts what R4b was shown in round 2 and what the user got.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.tasks.roles.meta_validator import KEPT_HEADING
from tests.run_graph import subflow_names
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_replan_redteam import run_json, tool_reply, turns
from tests.test_replan_stories import bodies, prompt

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_round_two_writes_only_the_summary_and_r4b_judges_it_with_round_ones_names(scripted, artoo_env: Path,
                                                                                    monkeypatch):
    """Round 1: ``ls -S srv/*.log | head -3`` names the three largest logs (matched); the writer reads
    "under srv/" as the system folder, writes ``/srv/summary.md`` (refused: outside the workspace) and
    still says it wrote it.  R4a fails it (environmental) → change_path, /srv/summary.md blocked.

    Round 2's plan only writes summary.md from the names it was handed.  R4b judges "the three largest
    logs under srv/ are named" on round 1's validated result, shown as kept; the user gets both.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "srv").mkdir(parents=True)
    for name, size in (("app.log", 900), ("db.log", 700), ("web.log", 500), ("cron.log", 10)):
        (ws / "srv" / name).write_text("x" * size)
    found, wrote = "three log names are printed, largest first", "summary.md names the three largest logs"
    named, exists = "the three largest logs under srv/ are named", "summary.md lists the three largest logs"
    names = "srv/app.log\nsrv/db.log\nsrv/web.log"
    summary = "# largest logs under srv/\n- srv/app.log\n- srv/db.log\n- srv/web.log\n"
    request = "name the three largest logs under srv/ and write them to summary.md"
    server = scripted(scenario(
        TaskSpec=[spec("largest_srv_logs", request)],
        Plan=[plan([subtask("find the three largest logs under srv/", [found], tools=["shell"]),
                    subtask("write summary.md naming the three logs", [wrote], 2, tools=["write_file"])],
                   [named, exists]),
              plan([subtask("write summary.md in the workspace from the names found", [wrote], tools=["write_file"],
                            context="the three largest logs, validated last round: " + names.replace("\n", " "))],
                   [named, exists])],
        tools=[call("shell", command="ls -S srv/*.log | head -3"), done(names),
               call("write_file", path="/srv/summary.md", content=summary),
               done("wrote the summary to /srv/summary.md"),
               call("write_file", path="summary.md", content=summary), done("summary.md written")],
        AgentVerdict=[agent(verdict(found, True, evidence="ls -S printed three names")),
                      agent(verdict(wrote, False, "environmental", "write_file refused /srv/summary.md"),
                            wrong="/srv/summary.md is outside the workspace", todo="write summary.md in the workspace"),
                      agent(verdict(wrote, True, evidence="write_file wrote summary.md"))],
        TaskVerdict=[task_verdict(verdict(named, True, evidence="round 1's validated ls -S output names them"),
                                  verdict(exists, True, evidence="write_file wrote summary.md"),
                                  summary="the three largest logs are named and listed in summary.md")],
    ))
    code, final = run_json(request)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert {n for n in subflow_names() if n.startswith("round-")} == {"round-1 · init", "round-2 · change_path"}
    assert "outside" in tool_reply(turns(server, "write summary.md naming the three logs")[1])  # really refused
    assert names in prompt(bodies(server, "Plan")[1])  # round 2's planner was handed round 1's result

    judged = bodies(server, "TaskVerdict")
    assert len(judged) == 1, "R4b is asked only in the round whose subtasks all matched"
    asked = prompt(judged[0])
    assert f"{KEPT_HEADING}:\n" in asked, "R4b was not shown what round 1 validated"
    kept = asked.split(f"{KEPT_HEADING}:\n", 1)[1]
    assert "[validated in round 1] find the three largest logs under srv/" in kept
    assert "ls -S srv/*.log | head -3 → srv/app.log" in kept  # what the call printed, never the executor's words
    assert "result:" not in kept
    assert "write summary.md" not in kept  # round 1's failed write is not a kept result

    assert final["output"] == {"find the three largest logs under srv/ (validated in round 1)": names,
                               "write summary.md in the workspace from the names found": "summary.md written"}
    assert (ws / "summary.md").read_text() == summary
    assert server.unused() == {}


def test_a_result_kept_from_round_one_outlives_a_second_failed_write(scripted, artoo_env: Path, monkeypatch):
    """Round 1 counts the ERROR lines of srv/app.log (matched) and writes the count to /srv/errors.txt
    (refused).  Round 2 only redoes the write, to /srv/out/errors.txt: refused again.  Round 2 matched
    nothing, yet round 3's planner is still handed round 1's count and R4b in round 3 judges with it:
    kept results live until a later round redoes them, not only for the next round.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "srv").mkdir(parents=True)
    (ws / "srv" / "app.log").write_text("ERROR disk full\nINFO ok\nERROR disk full\nERROR timeout\n")
    counted, wrote = "the number of ERROR lines is printed", "errors.txt holds the count"
    reported, exists = "the ERROR lines of srv/app.log are counted", "errors.txt holds the count"
    request = "count the ERROR lines in srv/app.log and write the number to errors.txt"
    write = [subtask("write the count to errors.txt", [wrote], tools=["write_file"],
                     context="the count, validated in round 1: 3")]
    rewrite = [subtask("write the count to errors.txt in the workspace", [wrote], tools=["write_file"],
                       context="the count, validated in round 1: 3")]  # a plan equal to round 2's would not run
    refused = [agent(verdict(wrote, False, "environmental", f"write_file refused {path}"),
                     wrong=f"{path} is outside the workspace", todo="write errors.txt in the workspace")
               for path in ("/srv/errors.txt", "/srv/out/errors.txt")]
    server = scripted(scenario(
        TaskSpec=[spec("count_errors", request)],
        Plan=[plan([subtask("count the ERROR lines of srv/app.log", [counted], tools=["shell"]),
                    subtask("write the count to errors.txt", [wrote], 2, tools=["write_file"])], [reported, exists]),
              plan(write, [reported, exists]), plan(rewrite, [reported, exists])],
        tools=[call("shell", command="grep -c ERROR srv/app.log"), done("3"),
               call("write_file", path="/srv/errors.txt", content="3\n"), done("wrote 3 to /srv/errors.txt"),
               call("write_file", path="/srv/out/errors.txt", content="3\n"), done("wrote /srv/out/errors.txt"),
               call("write_file", path="errors.txt", content="3\n"), done("errors.txt written")],
        AgentVerdict=[agent(verdict(counted, True, evidence="grep -c printed 3")), *refused,
                      agent(verdict(wrote, True, evidence="write_file wrote errors.txt"))],
        TaskVerdict=[task_verdict(verdict(reported, True, evidence="round 1's grep -c printed 3"),
                                  verdict(exists, True, evidence="write_file wrote errors.txt"))],
    ))
    code, final = run_json(request)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 2)
    plans = bodies(server, "Plan")
    assert len(plans) == 3
    worked = "- Subtask 'count the ERROR lines of srv/app.log': met its criteria with: shell grep -c ERROR"
    assert worked in prompt(plans[1]) and worked in prompt(plans[2])  # still handed over after round 2 failed
    judged = bodies(server, "TaskVerdict")
    assert len(judged) == 1
    kept = prompt(judged[0]).split(f"{KEPT_HEADING}:\n", 1)[-1]
    assert "[validated in round 1] count the ERROR lines of srv/app.log\ntool evidence:\nshell: grep -c ERROR" in kept
    assert final["output"] == {"count the ERROR lines of srv/app.log (validated in round 1)": "3",
                               "write the count to errors.txt in the workspace": "errors.txt written"}
    assert (ws / "errors.txt").read_text() == "3\n"
    assert server.unused() == {}
