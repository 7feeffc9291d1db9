"""Red-team stories for the replan (#13), part 3: half-done rounds, claimed successes, repeated plans.

A round rarely fails whole.  Group 1 finds what group 2 needs and group 2 botches the write;
a model says "backup.tgz written" over a ``tar`` that exited 2; a planner sends back the very
plan the rules just rejected; a person refuses an ``rm`` and then approves the move they asked
for, once a move into a missing folder has taught the next plan to create it.  Each story asserts
what the NEXT round was shown and allowed (the prompt, the MUST NOT set, the tools offered, what
the toolbox ran) and what memory kept.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from artoo.memory.store import MemoryStore
from artoo.memory.tags import path_entity
from artoo.tasks.tools import overlay, sandbox
from tests.conftest import final_from
from tests.run_graph import subflow_names
from tests.scenario_kit import agent, call, done, megrams_against, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_replan_redteam import run_json, tool_reply, turns
from tests.test_replan_stories import bodies, must_not, offered, prompt

pytestmark = pytest.mark.usefixtures("prefect_api")
needs_overlay = pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.overlay_problem() is not None,
                                   reason="the story commits a shell command's change set (bubblewrap, overlayfs)")


@needs_overlay
def test_a_claimed_backup_over_a_failed_tar_blames_the_missing_folder_not_the_users_notes(scripted, artoo_env: Path,
                                                                                          monkeypatch):
    """``tar czf backup.tgz notes.txt photos`` exits 2 ("tar: photos: Cannot stat"), yet the model
    says "backup.tgz written with the notes and the photos".  R4a is shown the exit code beside the
    claim and fails it (environmental) → D = 1, P = 0 → change_path.

    Only ``photos`` (the bare folder name the error names) is blocked: not the user's notes.txt, not
    the deliverable backup.tgz, so round 2's ``tar czf backup.tgz notes.txt Pictures`` is accepted at
    once and runs, and memory holds nothing against notes.txt or backup.tgz.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "Pictures").mkdir(parents=True)
    (ws / "notes.txt").write_text("meeting at ten\n")
    (ws / "Pictures" / "cat.jpg").write_text("not really a jpeg\n")
    c, claim = "backup.tgz holds notes.txt and the photos", "backup.tgz written with the notes and the photos"
    server = scripted(scenario(
        TaskSpec=[spec("backup_notes", "back up notes.txt and my photos folder into backup.tgz")],
        Plan=[plan([subtask("archive notes.txt and photos", [c], context="tar czf backup.tgz notes.txt photos",
                            tools=["shell"])], ["the backup exists"]),
              plan([subtask("archive notes.txt and Pictures", [c], context="tar czf backup.tgz notes.txt Pictures",
                            tools=["shell"])], ["the backup exists"])],
        tools=[call("shell", command="tar czf backup.tgz notes.txt photos"), done(claim),
               call("shell", command="tar czf backup.tgz notes.txt Pictures"), done("backup.tgz written")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "tar: photos: Cannot stat, exit code 2"),
                            wrong="there is no photos folder", todo="archive the folder the photos are in"),
                      agent(verdict(c, True, evidence="tar exited 0"))],
        TaskVerdict=[task_verdict(verdict("the backup exists", True))],
    ))
    code, final = run_json("back up notes.txt and my photos folder into backup.tgz")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    judged = prompt(bodies(server, "AgentVerdict")[0])  # the claim, and the ground truth beside it
    assert claim not in judged and "Cannot stat" in judged and "[exit code 2]" in judged  # calls, never the claim
    plans = bodies(server, "Plan")
    assert len(plans) == 2, "round 2's plan naming notes.txt and backup.tgz was accepted at once"
    assert must_not(prompt(plans[1])) == f" none\nBlocked targets:\n  - {ws / 'photos'}"
    reply = tool_reply(turns(server, "archive notes.txt and Pictures")[1])
    assert "refused" not in reply and "[exit code 0]" in reply and "LAW1" not in reply
    with tarfile.open(ws / "backup.tgz") as archive:
        assert sorted(archive.getnames()) == ["Pictures", "Pictures/cat.jpg", "notes.txt"]
    assert (ws / "notes.txt").read_text() == "meeting at ten\n"
    with MemoryStore(artoo_env / "home") as store:
        kept = {name: len(megrams_against(store, ws / name))
                for name in ("notes.txt", "backup.tgz", "photos")}
    assert kept == {"notes.txt": 0, "backup.tgz": 0, "photos": 1}
    assert server.unused() == {}


def test_group_one_found_the_logs_so_round_two_only_redoes_the_botched_summary(scripted, artoo_env: Path,
                                                                                monkeypatch):
    """Group 1 finds the three largest logs (matched); group 2 writes the summary with write_file to
    summary.md instead of reports/summary.md, and R4a says so (logical) → D = 1/2, P = 1, ∇L = 0 →
    break_symmetry: write_file is blocked, shell (group 1's tool, which worked) is not.

    Round 2's planner is shown group 1's result (the three names), so a plan that only redoes the
    summary, with shell, handing it those names, is accepted at once; nothing of group 1 is blocked.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    for name, size in (("a.log", 10), ("b.log", 400), ("c.log", 300), ("d.log", 200)):
        (ws / "logs" / name).write_text("x" * size)
    found, wrote = "three log names are printed, largest first", "reports/summary.md names the three largest logs"
    largest = "logs/b.log\nlogs/c.log\nlogs/d.log"
    summary = "# largest logs\n- logs/b.log\n- logs/c.log\n- logs/d.log\n"
    server = scripted(scenario(
        TaskSpec=[spec("largest_logs", "summarise the three largest logs into reports/summary.md")],
        Plan=[plan([subtask("find the three largest logs", [found], tools=["shell"]),
                    subtask("write the summary", [wrote], 2, tools=["write_file"])], ["the summary exists"]),
              plan([subtask("write reports/summary.md with shell", [wrote], tools=["shell"],
                            context="the three largest logs, found last round: logs/b.log logs/c.log logs/d.log")],
                   ["the summary exists"])],
        tools=[call("shell", command="ls -S logs/*.log | head -3"), done(largest),
               call("write_file", path="summary.md", content=summary), done("summary written"),
               call("shell", command="mkdir -p reports && printf '# largest logs\\n- logs/b.log\\n- logs/c.log\\n"
                                     "- logs/d.log\\n' > reports/summary.md"), done("reports/summary.md written")],
        AgentVerdict=[agent(verdict(found, True, evidence="ls -S printed three names")),
                      agent(verdict(wrote, False, "logical", "write_file wrote summary.md, not reports/summary.md"),
                            wrong="the summary is at the wrong path", todo="write reports/summary.md"),
                      agent(verdict(wrote, True, evidence="printf exited 0"))],
        TaskVerdict=[task_verdict(verdict("the summary exists", True))],
    ))
    code, final = run_json("summarise the three largest logs into reports/summary.md")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "break_symmetry")
    plans = bodies(server, "Plan")
    assert len(plans) == 2, "the plan redoing only the summary was accepted at once"
    second = prompt(plans[1])
    assert "REPLAN DIRECTIVE from the controller: break_symmetry" in second and "D=0.500 P=1.000" in second
    assert must_not(second) == " write_file\nBlocked targets:\n  - none"
    assert "a tool that worked for another step stays usable" in second  # shell did: the directive says so
    worked = second.split("- Subtask 'find the three largest logs': met its criteria with: ", 1)[1]
    assert worked.startswith("shell ls -S logs/*.log | head -3.") and largest in worked.split("- Subtask", 1)[0]
    redo = turns(server, "write reports/summary.md with shell")
    assert "shell" in offered(redo[0]) and "write_file" not in offered(redo[0])
    assert "[exit code 0]" in tool_reply(redo[1])
    assert (ws / "reports" / "summary.md").read_text() == summary
    assert server.unused() == {}


def test_a_planner_that_resends_the_rejected_plan_is_stopped_by_the_budget_and_told_honestly(scripted,
                                                                                             artoo_env: Path):
    """Round 1: ``wc -l /srv/logz/app.log`` → No such file → change_path, the path blocked.  The
    planner then sends the identical plan every time (it ignores the directive): each is re-asked
    once, rejected again, and the round fails without running anything: D = 1, P = 1 (a logical
    failure of the plan), ∇L > ε → change_approach, then a plateau → break_symmetry, then the replan
    budget abandons.  Nothing rejected reaches a tool, memory counts the one real failure once, and
    the abandon names the user's unmet criterion (not only "produce a valid plan") and the blocked path.
    """
    c, typo = "the log's line count is printed", "/srv/logz/app.log"
    same = plan([subtask("count the log lines", [c], context=f"wc -l {typo}", tools=["shell"])], ["counted"])
    server = scripted(scenario(
        TaskSpec=[spec("count_log", "count the app log lines")],
        Plan=[same] * 7,
        tools=[call("shell", command=f"wc -l {typo}"), done("no such file", status="failed")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "No such file or directory"))],
        FailureReport=[{"answer": {"achieved": "nothing", "blocked_by": "the plan", "try_next": []}}],
    ))
    code, final = run_json("count the app log lines")
    assert (code, final["directive"], final["replans"]) == (1, "abandon", 3)
    assert {"round-2 · change_path", "round-3 · change_approach", "round-4 · break_symmetry"} <= subflow_names(
        final["task_id"])
    plans = [prompt(b) for b in bodies(server, "Plan")]
    assert len(plans) == 7 and all(f"subtask 1 reuses blocked target '{typo}'" in p for p in plans[2::2])
    assert len(bodies(server, "tools")) == 2  # round 1's two turns: nothing rejected ever reached a tool
    summary = final["summary"]
    assert "the replan budget is spent (3 of 3" in summary and f"reuses blocked target '{typo}'" in summary
    assert c in summary.split("still unmet: ", 1)[1]  # the user's goal, not only "produce a valid plan"
    assert f"Resolve the unmet criterion: {c}" in final["next_steps"]
    assert f"Check these inputs, which failed for environmental reasons: {typo} (read)" in final["next_steps"]
    with MemoryStore(artoo_env / "home") as store:  # one failure, one Megram: the rejected rounds ran nothing
        assert len(store.recent("tool:shell", path_entity(typo, "read"), limit=5)) == 1  # a missing input: read
    assert server.unused() == {}


ARTOO = str(Path(sys.executable).with_name("artoo"))
QUESTION = b"Approve? [y/N]"


def answer_in_turn(args: list[str], answers: list[bytes]) -> tuple[int, str, list[str]]:
    """A real ``artoo`` process whose Law-1 questions a person answers one by one: (exit code, stdout, questions)."""
    proc = subprocess.Popen([ARTOO, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ))
    asked, questions = b"", []
    try:
        for answer in answers:
            deadline = time.monotonic() + 120
            while asked.count(QUESTION) <= len(questions) and time.monotonic() < deadline and proc.poll() is None:
                if select.select([proc.stderr], [], [], 0.5)[0]:
                    asked += os.read(proc.stderr.fileno(), 65536)
            assert asked.count(QUESTION) > len(questions), asked[-2000:].decode(errors="replace")
            questions.append(asked.rsplit(QUESTION, 1)[0][-1500:].decode(errors="replace"))
            proc.stdin.write(answer)
            proc.stdin.flush()
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out.decode(), questions


@needs_overlay
@pytest.mark.slow  # a real artoo process a person answers twice
def test_a_refused_rm_leaves_the_move_allowed_and_a_move_into_a_missing_folder_blocks_nothing(scripted,
                                                                                             artoo_env: Path,
                                                                                             monkeypatch):
    """"Make room: move the 2023 logs into archive/".  Round 1 deletes them instead (``rm``): the person
    says no → denied, nothing deleted → change_path.  Round 2 may move them (the refusal is a constraint
    on ``rm``, no blocked target, no memory), but ``mv logs/2023-*.log archive/`` fails: archive/ does not
    exist ("mv: target 'archive/': No such file or directory") → change_path with nothing blocked (it
    was blocked, and round 3's plan re-asked, until error_lines read that wording), so round 3's ``mkdir -p
    archive/ && mv …`` is accepted at once; the person says yes to the move and the task is accepted.
    """
    monkeypatch.setenv("ARTOO_LAW1_MODE", "console")
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    for name in ("2023-01.log", "2023-02.log", "2024-01.log"):
        (ws / "logs" / name).write_text(f"{name}\n")
    c, moved = "the 2023 logs are in archive/ and gone from logs/", "mv logs/2023-*.log archive/"
    server = scripted(scenario(
        TaskSpec=[spec("archive_logs", "make room: move the 2023 logs into archive/")],
        Plan=[plan([subtask("delete the 2023 logs", [c], context="rm logs/2023-*.log", tools=["shell"])], ["room"]),
              plan([subtask("move the 2023 logs", [c], context=moved, tools=["shell"])], ["room"]),
              plan([subtask("create archive/ and move the 2023 logs", [c], context=f"mkdir -p archive/ && {moved}",
                            tools=["shell"])], ["room"])],
        tools=[call("shell", command="rm logs/2023-*.log"), done("the user said no", status="failed"),
               call("shell", command=moved), done("archive/ is missing", status="failed"),
               call("shell", command=f"mkdir -p archive/ && {moved}"), done("moved")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "mv: target 'archive/': No such file"),
                            wrong="archive/ does not exist", todo="create archive/ first"),
                      agent(verdict(c, True, evidence="the change set renamed both logs into archive/"))],
        TaskVerdict=[task_verdict(verdict("room", True))],
    ))
    code, out, questions = answer_in_turn(["run", "--json", "make room: move the 2023 logs into archive/"],
                                          [b"n\n", b"y\n"])
    final = final_from(out)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 2, "change_path")
    assert "deleted" in questions[0] and "renamed" in questions[1] and "archive/2023-01.log" in questions[1]
    assert sorted(p.name for p in (ws / "archive").iterdir()) == ["2023-01.log", "2023-02.log"]
    assert [p.name for p in (ws / "logs").iterdir()] == ["2024-01.log"]
    second, third = (prompt(b) for b in bodies(server, "Plan")[1:])
    assert "The user REFUSED" in second and "shell rm logs/2023-*.log — [LAW1] denied" in second
    assert must_not(second) == must_not(third) == " none\nBlocked targets:\n  - none"
    assert "mv: target 'archive/': No such file or directory" in third  # the planner sees why
    assert len(bodies(server, "Plan")) == 3 and server.unused() == {}
    with MemoryStore(artoo_env / "home") as store:  # neither the "no" nor the missing folder is a failed target
        assert [megrams_against(store, ws / p) for p in
                ("archive", "logs/2023-*.log", "logs/2023-01.log")] == [[]] * 3


def test_a_cd_into_the_missing_report_folder_lets_the_next_round_create_it(scripted, artoo_env: Path, monkeypatch):
    """``cd reports && grep -c ERROR ../app.log > summary.md`` → "cd: reports: No such file or directory".
    The command writes, so it would have written into reports/: a folder to create, not a failed target.
    Round 2's plan naming ``reports/`` is accepted at once and makes reports/summary.md; the user's
    app.log is neither blocked nor remembered against.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "app.log").write_text("ERROR a\nok\nERROR b\n")
    c = "reports/summary.md holds the ERROR count"
    fixed = "mkdir -p reports/ && grep -c ERROR app.log > reports/summary.md"
    server = scripted(scenario(
        TaskSpec=[spec("error_count", "count the ERROR lines of app.log into reports/summary.md")],
        Plan=[plan([subtask("count into reports/summary.md", [c], tools=["shell"])], ["the summary exists"]),
              plan([subtask("create reports/ and count into it", [c], context=fixed, tools=["shell"])],
                   ["the summary exists"])],
        tools=[call("shell", command="cd reports && grep -c ERROR ../app.log > summary.md"),
               done("could not enter reports", status="failed"), call("shell", command=fixed), done("2")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "cd: reports: No such file or directory")),
                      agent(verdict(c, True))],
        TaskVerdict=[task_verdict(verdict("the summary exists", True))],
    ))
    code, final = run_json("count the ERROR lines of app.log into reports/summary.md")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    plans = bodies(server, "Plan")
    assert len(plans) == 2 and must_not(prompt(plans[1])) == " none\nBlocked targets:\n  - none"
    assert "cd: reports: No such file or directory" in prompt(plans[1])
    assert "[exit code 0]" in tool_reply(turns(server, "create reports/ and count into it")[1])
    assert (ws / "reports" / "summary.md").read_text() == "2\n"
    with MemoryStore(artoo_env / "home") as store:
        assert [megrams_against(store, ws / p) for p in ("reports", "app.log")] == [[]] * 2
    assert server.unused() == {}


@needs_overlay
def test_sorting_the_users_csv_onto_itself_is_refused_and_the_next_round_reads_it_again(scripted, artoo_env: Path):
    """``sort -t, -k2 -n data.csv > data.csv``: bash empties data.csv before sort reads it, so the change
    set says the user's file shrank to 0 B; nobody is there to approve → denied, discarded.  data.csv is
    intact, is no blocked target and has no Megram: round 2's ``… data.csv > sorted.csv`` runs at once.
    """
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    rows = "name,qty\npears,5\napples,3\n"
    (ws / "data.csv").write_text(rows)
    c = "the rows are sorted by quantity"
    server = scripted(scenario(
        TaskSpec=[spec("sort_csv", "sort data.csv by quantity")],
        Plan=[plan([subtask("sort data.csv in place", [c], tools=["shell"])], ["sorted"]),
              plan([subtask("sort data.csv into sorted.csv", [c], tools=["shell"])], ["sorted"])],
        tools=[call("shell", command="sort -t, -k2 -n data.csv > data.csv"), done("sorted in place"),
               call("shell", command="sort -t, -k2 -n data.csv > sorted.csv"), done("sorted.csv written")],
        AgentVerdict=[agent(verdict(c, True, evidence="sorted.csv holds the rows"))],
        TaskVerdict=[task_verdict(verdict("sorted", True))],
    ))
    code, final = run_json("sort data.csv by quantity")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert (ws / "data.csv").read_text() == rows
    assert (ws / "sorted.csv").read_text() == "name,qty\napples,3\npears,5\n"
    second = prompt(bodies(server, "Plan")[1])
    assert must_not(second) == " none\nBlocked targets:\n  - none"
    assert "The user REFUSED" in second and "sort -t, -k2 -n data.csv > data.csv — [LAW1] denied" in second
    reply = tool_reply(turns(server, "sort data.csv into sorted.csv")[1])
    assert "[changes committed]" in reply and "LAW1" not in reply
    with MemoryStore(artoo_env / "home") as store:
        assert megrams_against(store, ws / "data.csv") == []
    assert server.unused() == {}


@needs_overlay
def test_a_report_claimed_over_a_pipeline_that_read_nothing_blocks_the_missing_log_not_the_report(
        scripted, artoo_env: Path, monkeypatch):
    """``grep ERROR /var/log/artoo-app/app.log | sort | uniq -c > report.md`` exits 0 (the pipeline's last
    command), prints "No such file or directory" and leaves report.md empty; the model says "report.md
    written".  R4a sees the error beside the exit code and fails it (environmental) → change_path.
    No call failed, so the error lines of the call that "worked" are the evidence: the missing log is
    blocked, report.md is not, and round 2 rewrites it from the workspace log without a question.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    (ws / "logs" / "app.log").write_text("ERROR disk\nINFO up\nERROR disk\nERROR net\n")
    c, gone = "report.md counts each ERROR message", "/var/log/artoo-app/app.log"
    server = scripted(scenario(
        TaskSpec=[spec("error_report", "count each ERROR message of the app log into report.md")],
        Plan=[plan([subtask("count the errors into report.md", [c], context=f"the log is {gone}", tools=["shell"])],
                   ["the report exists"]),
              plan([subtask("count the workspace log's errors into report.md", [c], tools=["shell"],
                            context="grep ERROR logs/app.log | sort | uniq -c > report.md")], ["the report exists"])],
        tools=[call("shell", command=f"grep ERROR {gone} | sort | uniq -c > report.md"),
               done("report.md written with the error counts"),
               call("shell", command="grep ERROR logs/app.log | sort | uniq -c > report.md"), done("written")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "grep: No such file or directory; report.md is empty"),
                            wrong=f"{gone} does not exist", todo="count the log in the workspace"),
                      agent(verdict(c, True))],
        TaskVerdict=[task_verdict(verdict("the report exists", True))],
    ))
    code, final = run_json("count each ERROR message of the app log into report.md")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    judged = prompt(bodies(server, "AgentVerdict")[0])
    assert "report.md written with the error counts" not in judged and "No such file or directory" in judged
    assert "[exit code 0]" in judged
    plans = bodies(server, "Plan")
    assert len(plans) == 2 and must_not(prompt(plans[1])) == f" none\nBlocked targets:\n  - {gone}"
    reply = tool_reply(turns(server, "count the workspace log's errors")[1])
    assert "[exit code 0]" in reply and "LAW1" not in reply and "refused" not in reply
    assert " ".join((ws / "report.md").read_text().split()) == "2 ERROR disk 1 ERROR net"
    with MemoryStore(artoo_env / "home") as store:
        kept = [len(megrams_against(store, p)) for p in (gone, ws / "report.md")]
    assert kept == [1, 0]  # the missing log: never the report
    assert server.unused() == {}


@needs_overlay
def test_sed_in_place_on_a_read_only_folder_leaves_the_users_file_readable(scripted, artoo_env: Path, monkeypatch):
    """``sed -i 's/bob/Robert/' shared/todo.txt`` where shared/ is read-only: sed cannot make its temp file
    ("couldn't open temporary file shared/sedXXXXXX: Permission denied").  That temp file is what failed:
    the user's todo.txt is no blocked target (before, both sed's words were: round 2 could not even read
    it), so round 2's ``sed … shared/todo.txt > todo.txt`` is accepted at once and writes the copy.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "shared").mkdir(parents=True)
    (ws / "shared" / "todo.txt").write_text("buy milk\ncall bob\n")
    (ws / "shared").chmod(0o555)
    c = "a todo list says Robert instead of bob"
    copy = "sed 's/bob/Robert/' shared/todo.txt > todo.txt"
    server = scripted(scenario(
        TaskSpec=[spec("fix_todo", "replace bob with Robert in shared/todo.txt")],
        Plan=[plan([subtask("edit shared/todo.txt in place", [c], tools=["shell"])], ["fixed"]),
              plan([subtask("write the changed copy todo.txt", [c], context=copy, tools=["shell"])], ["fixed"])],
        tools=[call("shell", command="sed -i 's/bob/Robert/' shared/todo.txt"), done("shared/ is read-only", "failed"),
               call("shell", command=copy), done("todo.txt written")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "Permission denied"), wrong="shared/ is read-only",
                            todo="write a changed copy in the workspace"),
                      agent(verdict(c, True))],
        TaskVerdict=[task_verdict(verdict("fixed", True))],
    ))
    try:
        code, final = run_json("replace bob with Robert in shared/todo.txt")
    finally:
        (ws / "shared").chmod(0o755)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    plans = bodies(server, "Plan")
    assert len(plans) == 2, "round 2's plan reading shared/todo.txt was accepted at once"
    blocked = must_not(prompt(plans[1])).split("Blocked targets:\n", 1)[1]
    assert blocked.startswith(f"  - {ws / 'shared' / 'sed'}") and "todo.txt" not in blocked
    assert "[exit code 0]" in tool_reply(turns(server, "write the changed copy")[1])
    assert (ws / "todo.txt").read_text() == "buy milk\ncall Robert\n"
    assert (ws / "shared" / "todo.txt").read_text() == "buy milk\ncall bob\n"
    with MemoryStore(artoo_env / "home") as store:
        assert megrams_against(store, ws / "shared" / "todo.txt") == []
    assert server.unused() == {}
