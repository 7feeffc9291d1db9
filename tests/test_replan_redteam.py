"""A red team for the replan (#13): failures combined the way real models produce them.

Each story runs ``artoo run --json`` on the scripted endpoint and asserts what the NEXT round
was allowed to do — the tools offered to the executor, the MUST NOT set and directive the
planner was shown, what the toolbox refused or let through — as well as the final result.
Multi-step plans with parallel groups, a user's file beside a failing call, a model that
claims success without evidence twice, memory left by other tasks, a Law-1 denial in the
middle of a plan, a deliverable rewritten by ``sed -i``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from artoo.config.contracts import Megram
from artoo.memory.store import MemoryStore
from artoo.memory.tags import ENV_LOCAL, episode_content, intent_space
from artoo.tasks.tools import overlay, sandbox
from tests.conftest import final_from, run_cli
from tests.run_graph import subflow_names
from tests.scenario_kit import agent, call, done, megrams_against, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_replan_stories import bodies, must_not, offered, prompt

pytestmark = pytest.mark.usefixtures("prefect_api")


def run_json(request: str) -> tuple[int, dict]:
    code, out, _ = run_cli("run", "--json", request)
    return code, final_from(out)


def turns(server, needle: str) -> list[dict]:
    """The executor requests whose prompt contains ``needle`` (one subtask's turns, in order)."""
    return [b for b in bodies(server, "tools") if needle in prompt(b)]


def tool_reply(body: dict) -> str:
    """What the tool returned to the executor: the newest tool message of a request."""
    replies = [m for m in body["messages"] if m.get("role") == "tool"]
    return str(replies[-1]["content"]) if replies else ""


def blocked_tools_line(prompt_text: str) -> str:
    """The tools after ``Blocked tools:`` in the MUST NOT set."""
    return prompt_text.split("MUST NOT set:\nBlocked tools:", 1)[1].split("\n", 1)[0].strip()


def test_a_path_typo_beside_a_users_file_blocks_only_the_typo(scripted, artoo_env: Path):
    """Group 1: read data.csv (ok) ‖ ``wc -l /srv/logz/app.log`` (No such file); group 2 skipped.

    D = 2/3 (the log step and the skipped report are unmet), P = 0 (the only evidence is
    environmental; skipped is none), ∇L = 0 → change_path.  Round 2 may read data.csv, may
    name and run ``/srv/logs/app.log`` (one letter away from the blocked path), is offered
    shell, and only ``/srv/logz/app.log`` is blocked — in the prompt and in the toolbox.
    """
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    (ws / "data.csv").write_text("name,qty\napples,3\npears,5\n")
    (ws / "logs" / "app.log").write_text("boot\nready\nstop\n")
    rows, count, report = "the rows of data.csv are printed", "the log's line count is a number", "report.md exists"
    typo, near = "/srv/logz/app.log", "/srv/logs/app.log"
    server = scripted(scenario(
        TaskSpec=[spec("log_and_data", "report the data rows and the app log size")],
        Plan=[plan([subtask("read data.csv", [rows], tools=["read_file"]),
                    subtask("count the app log lines", [count], context=f"the log is {typo}", tools=["shell"]),
                    subtask("write report.md", [report], 2, tools=["write_file"])], ["the report is written"]),
              plan([subtask("read data.csv again", [rows], tools=["read_file"]),
                    subtask(f"count the lines of {near}", [count], tools=["shell"],
                            context="if it is missing there, count the workspace copy logs/app.log"),
                    subtask("write report.md", [report], 2, tools=["write_file"])], ["the report is written"])],
        tools=[call("read_file", match="read data.csv", path="data.csv"),
               call("shell", match="count the app log", command=f"wc -l {typo}"),
               done("apples,3 pears,5", match="read data.csv"),
               done("the log is not there", status="failed", match="count the app log"),
               call("read_file", match="read data.csv again", path="data.csv"),
               call("shell", match=f"lines of {near}", command=f"wc -l {near} 2>/dev/null || wc -l < logs/app.log"),
               done("apples,3 pears,5", match="read data.csv again"),
               done("3", match=f"lines of {near}"),
               call("write_file", match="write report.md", path="report.md", content="2 rows, 3 log lines\n"),
               done("report.md written", match="write report.md")],
        AgentVerdict=[agent(verdict(rows, True), match="read data.csv"),
                      agent(verdict(count, False, "environmental", "wc: No such file or directory"),
                            wrong=f"{typo} does not exist", todo="check the path", match="count the app log"),
                      agent(verdict(rows, True), match="read data.csv again"),
                      agent(verdict(count, True), match=f"lines of {near}"),
                      agent(verdict(report, True), match="write report.md")],
        TaskVerdict=[task_verdict(verdict("the report is written", True))],
    ))
    code, final = run_json("report the data rows and the app log size")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    plans = bodies(server, "Plan")
    assert len(plans) == 2, "the round-2 plan naming data.csv and the near-miss path was accepted at once"
    second = prompt(plans[1])
    assert "REPLAN DIRECTIVE from the controller: change_path" in second and "D=0.667 P=0.000" in second
    assert blocked_tools_line(second) == "none"
    assert must_not(second).split("Blocked targets:\n", 1)[1] == f"  - {typo}"
    assert "'write report.md': not run" in second
    # what worked is named as worked (nothing blames it), so round 2 keeps reading data.csv as it did
    assert "- Subtask 'read data.csv': met its criteria with: read_file data.csv." in second
    read_again, count_near = turns(server, "read data.csv again"), turns(server, f"lines of {near}")
    assert {"read_file", "shell"} <= offered(count_near[0]) and {"read_file", "shell"} <= offered(read_again[0])
    assert "pears,5" in tool_reply(read_again[1])  # the user's file is still readable
    reply = tool_reply(count_near[1])
    assert "refused" not in reply and "[exit code 0]" in reply and "3" in reply
    assert (ws / "report.md").read_text() == "2 rows, 3 log lines\n"
    assert server.unused() == {}


def test_success_claimed_without_evidence_twice_blocks_only_the_failing_steps_tools(scripted, artoo_env: Path,
                                                                                     monkeypatch):
    """A model claims a row count its tool output never showed; R4a says so (logical), twice.

    Round 1: header ‖ count (shell ``head``, claims 42) → D = 1/2, P = 1, ∇L = 0 → break_symmetry
    (cell 14), blocked_tools = [shell:head]: the method that failed, never the shell (the matched header step's
    read_file stays).  Round 2:
    Ω = w₁·1/3 = 0.2, L = 0.6·0.5 + 0.3·0.8·1 + 0.4·0.2 = 0.62, ∇L ≈ +0.02 < ε → break_symmetry
    again; the count step used glob and read_file, but read_file is also the tool the header step
    matched with, so only glob is blocked.  Round 3 counts with shell → accept.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    monkeypatch.setenv("ARTOO_GGS__MAX_CALLS", "60")  # three rounds of two steps: the story is Ω's other terms
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "data.csv").write_text("id,v\n1,a\n2,b\n3,c\n4,d\n")
    head, rows = "the header of data.csv is printed", "the number of data rows is printed"
    header = subtask("print the header of data.csv", [head], tools=["read_file"])
    claims = "there are no rows shown, only a claim"
    server = scripted(scenario(
        TaskSpec=[spec("csv_rows", "count the rows of data.csv")],
        Plan=[plan([header, subtask("count rows with head", [rows], tools=["shell"])], ["the count is given"]),
              plan([header, subtask("count rows by listing and reading", [rows], tools=["glob", "read_file"])],
                   ["the count is given"]),
              plan([header, subtask("count rows with tail and wc", [rows], tools=["shell"])],
                   ["the count is given"])],
        tools=[call("read_file", match="print the header", path="data.csv"),
               call("shell", match="count rows with head", command="head -2 data.csv"),
               done("id,v", match="print the header"), done("data.csv has 42 rows", match="count rows with head"),
               call("read_file", match="print the header", path="data.csv"),
               call("glob", match="count rows by listing", pattern="*.csv"),
               done("id,v", match="print the header"),
               call("read_file", match="count rows by listing", path="data.csv"),
               done("data.csv has 42 rows", match="count rows by listing"),
               call("read_file", match="print the header", path="data.csv"),
               call("shell", match="count rows with tail", command="tail -n +2 data.csv | wc -l"),
               done("id,v", match="print the header"), done("4", match="count rows with tail")],
        AgentVerdict=[agent(verdict(head, True), match="print the header"),
                      agent(verdict(rows, False, "logical", claims), match="count rows with head"),
                      agent(verdict(head, True), match="print the header"),
                      agent(verdict(rows, False, "logical", claims), match="count rows by listing"),
                      agent(verdict(head, True), match="print the header"),
                      agent(verdict(rows, True, evidence="wc printed 4"), match="count rows with tail")],
        TaskVerdict=[task_verdict(verdict("the count is given", True))],
    ))
    code, final = run_json("count the rows of data.csv")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 2, "break_symmetry")
    assert {"round-1 · init", "round-2 · break_symmetry", "round-3 · break_symmetry"} <= subflow_names(final["task_id"])
    second, third = (prompt(b) for b in bodies(server, "Plan")[1:3])
    assert "REPLAN DIRECTIVE from the controller: break_symmetry" in second and "D=0.500 P=1.000" in second
    assert "Previous directive: break_symmetry" in third and "D=0.500 P=1.000 Omega=0.2" in third
    grad = float(third.split("gradL=", 1)[1].split()[0])
    assert 0 < grad < 0.1  # a plateau: the table's cell 14 again, not change_approach
    assert blocked_tools_line(second) == "shell:head"
    assert blocked_tools_line(third) == "glob", "read_file is the matched header step's tool"
    header_turns = turns(server, "print the header")
    assert "shell" in offered(header_turns[2]) and "read_file" in offered(header_turns[2])  # round 2: the shell stays
    assert {"read_file", "shell"} <= offered(header_turns[4]) and "glob" not in offered(header_turns[4])  # round 3
    assert server.unused() == {}


def seed(home: Path, *megrams: Megram) -> None:
    with MemoryStore(home) as store:
        for m in megrams:
            store.write(m)


def failed_megram(space: str, entity: str, state: str, content: str) -> Megram:
    return Megram(id=uuid.uuid4().hex, created_at=datetime.now(UTC), space=space, entity=entity, content=content,
                  state=state, f=0.95, sigma=-1.0, k=0.05)


def memory_lines(prompt_text: str) -> list[str]:
    """The MUST NOT lines of the memory block (between its heading and the next section)."""
    if "MUST NOT (hard constraints" not in prompt_text:
        return []
    block = prompt_text.split("MUST NOT (hard constraints", 1)[1].split("\n\n", 1)[0]
    return [line for line in block.splitlines()[1:] if line.startswith("- ")]


def test_memory_from_other_tasks_restricts_shell_only_on_its_own_path(scripted, artoo_env: Path):
    """Three tasks failed with shell on logs/app.log (Avoid), and a backup task was abandoned (Avoid).

    A fresh task on notes.txt is offered shell, its plan declaring shell is accepted at once, and
    no MUST NOT line restricts shell except on that other path; the backup task's failure is not
    this task's.  A task on the same log gets "use the tool 'shell' on '<log>'": its plan that
    declares shell on ``logs/app.log`` (relative; memory holds the absolute path) is re-asked,
    the re-asked read_file plan runs, and the executor's own shell call on the log is refused
    while read_file on it works.
    """
    ws = artoo_env / "workspace"
    (ws / "logs").mkdir(parents=True)
    (ws / "notes.txt").write_text("a\nb\n")
    (ws / "logs" / "app.log").write_text("x\ny\nz\n")
    log = str(ws / "logs" / "app.log")
    backup = "back up the photos to the nas"
    seed(artoo_env / "home",
         *(failed_megram("tool:shell", f"path:{log}", "change_approach", f"change_approach: shell on {log} failed")
           for _ in range(3)),
         *(failed_megram(intent_space(backup), ENV_LOCAL, "abandon",
                         episode_content("abandon", backup, ["r1 shell: rsync -a ~/Pictures nas: → refused"],
                                         "Abandoned: the nas was unreachable.")) for _ in range(2)))
    c = "the line count is printed"
    notes = scripted(scenario(
        TaskSpec=[spec("count_notes", "count the lines of notes.txt")],
        Plan=[plan([subtask("count notes.txt lines", [c], context="wc -l notes.txt", tools=["shell"])], ["counted"])],
        tools=[call("shell", command="wc -l notes.txt"), done("2")],
        AgentVerdict=[agent(verdict(c, True))], TaskVerdict=[task_verdict(verdict("counted", True))],
    ))
    code, final = run_json("count the lines of notes.txt")
    assert (code, final["directive"], final["replans"]) == (0, "accept", 0)
    first = prompt(bodies(notes, "Plan")[0])
    assert len(bodies(notes, "Plan")) == 1 and blocked_tools_line(first) == "none"
    assert "Tools that must not appear" not in first and "rsync" not in first and backup not in first
    shell_lines = [line for line in memory_lines(first) if "shell" in line]
    assert shell_lines and all(f"'{log}'" in line for line in shell_lines), shell_lines
    assert all("shell" in offered(b) for b in bodies(notes, "tools"))

    same = scripted(scenario(
        TaskSpec=[spec("count_log", "count the lines of the app log")],
        Plan=[plan([subtask("count the log lines", [c], context="wc -l logs/app.log", tools=["shell"])], ["counted"]),
              plan([subtask("read logs/app.log and count its lines", [c], tools=["read_file"])], ["counted"])],
        tools=[call("shell", command="wc -l logs/app.log"), call("read_file", path="logs/app.log"), done("3")],
        AgentVerdict=[agent(verdict(c, True))], TaskVerdict=[task_verdict(verdict("counted", True))],
    ))
    code, final = run_json("count the lines of the app log")
    assert (code, final["directive"], final["replans"]) == (0, "accept", 0)
    plans = [prompt(b) for b in bodies(same, "Plan")]
    assert len(plans) == 2 and f"use the tool 'shell' on '{log}'" in "\n".join(memory_lines(plans[0]))
    assert f"uses 'shell' on '{log}', which memory says failed" in plans[1]  # the relative path matched
    executor = bodies(same, "tools")
    assert "shell" in offered(executor[0])  # the tool stays; only that tool on that target is refused
    assert f"memory says shell on '{log}' failed before" in tool_reply(executor[1])
    assert "x\ny\nz" in tool_reply(executor[2])


needs_overlay = pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.overlay_problem() is not None,
                                   reason="Law 1 by effect needs bubblewrap and overlayfs")


@needs_overlay
def test_a_script_deleting_a_users_file_mid_plan_is_refused_and_the_next_round_writes_anew(scripted,
                                                                                           artoo_env: Path):
    """Group 1 writes tidy.sh (a new file: fine); group 2 runs it and it deletes notes/old.txt, which
    the user had before the task: the change set asks, nobody is there → denied, discarded; group 3
    is skipped.  D = 2/3, P = 0 (denied and skipped are no evidence) → change_path.

    The planner is told what was refused; notes/old.txt is no blocked target and no memory is
    written against it; round 2 writes sort.sh and runs it, its change set (a new sorted.txt)
    commits with no question.
    """
    ws = artoo_env / "workspace"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "old.txt").write_text("the user's old notes\n")
    (ws / "input.txt").write_text("pear\napple\n")
    script, ran, shown = "the script file exists", "sorted.txt holds the sorted lines", "the sorted lines are printed"
    steps = {1: ("write tidy.sh", "write sort.sh"), 2: ("run tidy.sh", "run sort.sh"), 3: ("show sorted.txt",) * 2}

    def plan_of(r: int) -> dict:
        tools = {1: "write_file", 2: "shell", 3: "read_file"}
        return plan([subtask(steps[s][r], [c], s, tools=[tools[s]]) for s, c in ((1, script), (2, ran), (3, shown))],
                    ["the sorted input is shown"])

    server = scripted(scenario(
        TaskSpec=[spec("tidy_input", "sort input.txt into sorted.txt")],
        Plan=[plan_of(0), plan_of(1)],
        tools=[call("write_file", path="tidy.sh", content="sort input.txt > sorted.txt\nrm notes/old.txt\n"),
               done("tidy.sh written"), call("shell", command="bash tidy.sh"),
               done("the user did not approve", status="failed"),
               call("write_file", path="sort.sh", content="sort input.txt > sorted.txt\n"), done("sort.sh written"),
               call("shell", command="bash sort.sh"), done("sorted"),
               call("read_file", path="sorted.txt"), done("apple pear")],
        AgentVerdict=[agent(verdict(script, True)), agent(verdict(script, True)), agent(verdict(ran, True)),
                      agent(verdict(shown, True))],
        TaskVerdict=[task_verdict(verdict("the sorted input is shown", True))],
    ))
    code, final = run_json("sort input.txt into sorted.txt")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert (ws / "notes" / "old.txt").read_text() == "the user's old notes\n"
    assert (ws / "sorted.txt").read_text() == "apple\npear\n"
    second = prompt(bodies(server, "Plan")[1])
    assert "REPLAN DIRECTIVE from the controller: change_path" in second and "D=0.667 P=0.000" in second
    assert must_not(second) == " none\nBlocked targets:\n  - none"
    assert "The user REFUSED" in second and "  - shell bash tidy.sh — [LAW1] denied: bash tidy.sh" in second
    assert "'show sorted.txt': not run" in second
    run_sort = turns(server, "run sort.sh")
    assert "shell" in offered(run_sort[0])
    reply = tool_reply(run_sort[1])
    assert "[changes committed]" in reply and "sorted.txt" in reply and "LAW1" not in reply
    assert final["summary"].count("denied: ") == 1  # round 1's refusal only: round 2 asked nothing
    with MemoryStore(artoo_env / "home") as store:
        assert megrams_against(store, ws / 'notes' / 'old.txt') == []


@needs_overlay
def test_a_deliverable_made_by_shell_is_fixed_with_sed_in_place_without_a_question(scripted, artoo_env: Path):
    """Round 1 makes out/summary.md with ``mkdir -p`` and a redirect; R4b rejects the task criterion.

    D = 1/2, P = 1 (a logical task verdict), ∇L = 0 → break_symmetry, but no subtask failed, so no
    tool is blocked: round 2 is offered shell and rewrites its own file with ``sed -i`` (a temp file
    renamed over it) — the change set touches only what the task created, so it commits quietly.
    """
    sub_c, task_c = "out/summary.md is written", "the summary states the total"
    server = scripted(scenario(
        TaskSpec=[spec("summarise", "summarise the numbers")],
        Plan=[plan([subtask("write out/summary.md", [sub_c], tools=["shell"])], [task_c]),
              plan([subtask("fix the total in out/summary.md", [sub_c], tools=["shell"])], [task_c])],
        tools=[call("shell", command="mkdir -p out && printf 'title\\ntotal: ?\\n' > out/summary.md"),
               done("written"), call("shell", command="sed -i 's/^total: .*/total: 3/' out/summary.md"),
               done("rewritten")],
        AgentVerdict=[agent(verdict(sub_c, True)), agent(verdict(sub_c, True))],
        TaskVerdict=[task_verdict(verdict(task_c, False, "logical", "the total is a question mark")),
                     task_verdict(verdict(task_c, True))],
    ))
    code, final = run_json("summarise the numbers")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "break_symmetry")
    assert "[LAW1]" not in final["summary"]
    assert (artoo_env / "workspace" / "out" / "summary.md").read_text() == "title\ntotal: 3\n"
    assert sorted(p.name for p in (artoo_env / "workspace").rglob("*")) == ["out", "summary.md"]  # no sed temp
    second = prompt(bodies(server, "Plan")[1])
    assert blocked_tools_line(second) == "none" and must_not(second).endswith("Blocked targets:\n  - none")
    executor = bodies(server, "tools")
    assert "shell" in offered(executor[2])
    reply = tool_reply(executor[3])
    assert "[changes committed]" in reply and "LAW1" not in reply
    assert len(bodies(server, "Plan")) == 2 and server.unused() == {}
