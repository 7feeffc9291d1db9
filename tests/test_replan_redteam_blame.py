"""Red-team stories for the replan (#13), part 5: blame on the failures real models meet.

A ``find`` over a tree meets folders it may not read and exits 1; a model guesses where the
user's script lives and ``node`` cannot find it.  In both, what the error lines name decides what
the next round may touch: the walk's unreadable corners are noise (the next ``find`` may prune
them by name), an operand that could not be read at all is blocked, and the missing script is
blocked while the deliverable it was to write stays free.  Each story asserts what round 2 was
shown and allowed (the MUST NOT set, the re-asked plan, what the toolbox ran) and what memory kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.memory.store import MemoryStore
from artoo.tasks.tools import overlay, sandbox
from tests.scenario_kit import agent, call, done, megrams_against, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_replan_redteam import run_json, tool_reply, turns
from tests.test_replan_stories import bodies, must_not, prompt

pytestmark = [pytest.mark.usefixtures("prefect_api"),
              pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.overlay_problem() is not None,
                                 reason="the stories run shell commands on a copy-on-write view (bubblewrap, "
                                        "overlayfs), which also makes a mode-000 folder unreadable to root")]


def remembered(home: Path, *paths: Path) -> list[int]:
    """How many shell Megrams memory holds against each path, whichever access they blame (#26)."""
    with MemoryStore(home) as store:
        return [len(megrams_against(store, p)) for p in paths]


def test_a_find_that_met_an_unreadable_folder_may_prune_it_next_round(scripted, artoo_env: Path, monkeypatch):
    """"List the .conf files in projects/ and backup/ into confs.txt".  ``find projects backup -name
    '*.conf' > confs.txt`` prints what it found, then "find: 'projects/vault': Permission denied" and
    "find: 'backup': Permission denied", exit 1; R4a fails it (environmental) → change_path.

    backup/, an operand that could not be read at all, is blocked (the planner resends it once and
    is re-asked); projects/vault, a corner of the walk, is only noted.  So round 2's ``find projects
    -path projects/vault -prune …`` is accepted and runs, and memory holds nothing against the vault.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    for folder in ("projects/app", "projects/db", "projects/vault", "backup"):
        (ws / folder).mkdir(parents=True)
    for conf in ("projects/app/app.conf", "projects/db/db.conf", "projects/vault/keys.conf", "backup/old.conf"):
        (ws / conf).write_text("x=1\n")
    c = "confs.txt lists the .conf files that can be read"
    first = "find projects backup -name '*.conf' > confs.txt"
    pruned = "find projects -path projects/vault -prune -o -name '*.conf' -print > confs.txt"
    server = scripted(scenario(
        TaskSpec=[spec("list_confs", "list the .conf files in projects/ and backup/ into confs.txt")],
        Plan=[plan([subtask("list the .conf files into confs.txt", [c], context=first, tools=["shell"])],
                   ["confs.txt exists"]),
              plan([subtask("list the .conf files, skipping the unreadable folder", [c], tools=["shell"],
                            context="find projects/ backup/ -path projects/vault -prune -o -name '*.conf' -print "
                                    "> confs.txt")],
                   ["confs.txt exists"]),
              plan([subtask("list the readable .conf files", [c], tools=["shell"],
                            context=f"{pruned} (projects/vault is unreadable: prune it)")], ["confs.txt exists"])],
        tools=[call("shell", command=first), done("confs.txt lists the .conf files"),
               call("shell", command=pruned), done("confs.txt lists projects/app/app.conf and projects/db/db.conf")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "find exited 1: Permission denied on projects/vault "
                                                               "and backup"),
                            wrong="find could not read backup/ at all", todo="list what can be read"),
                      agent(verdict(c, True, evidence="find exited 0"))],
        TaskVerdict=[task_verdict(verdict("confs.txt exists", True))],
    ))
    locked = [ws / "projects" / "vault", ws / "backup"]
    for folder in locked:
        folder.chmod(0o000)
    try:
        code, final = run_json("list the .conf files in projects/ and backup/ into confs.txt")
    finally:
        for folder in locked:
            folder.chmod(0o755)
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    judged = prompt(bodies(server, "AgentVerdict")[0])  # the validator saw what find said, unfiltered
    assert "Permission denied" in judged and "projects/vault" in judged and "[exit code 1]" in judged
    second, reasked = (prompt(b) for b in bodies(server, "Plan")[1:])
    assert must_not(second) == f" none\nBlocked targets:\n  - {ws / 'backup'}"
    assert f"Not blocked: find skipped 1 unreadable path under {ws / 'projects'}, {ws / 'backup'}" in second
    assert "projects/vault’: Permission denied" in second  # the planner still sees what find said
    assert f"reuses blocked target '{ws / 'backup'}'" in reasked
    reply = tool_reply(turns(server, "list the readable .conf files")[1])
    assert "refused" not in reply and "[exit code 0]" in reply and "LAW1" not in reply
    assert sorted((ws / "confs.txt").read_text().split()) == ["projects/app/app.conf", "projects/db/db.conf"]
    assert remembered(artoo_env / "home", ws / "projects" / "vault", ws / "backup", ws / "confs.txt") == [0, 1, 0]
    assert server.unused() == {}


SUMMARISER = """const fs = require('fs');
const path = require('path');
const out = process.argv[process.argv.indexOf('--out') + 1];
const rows = fs.readFileSync('sales.csv', 'utf8').trim().split('\\n').slice(1);
const total = rows.reduce((sum, row) => sum + Number(row.split(',')[1]), 0);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, `# Sales\\n${rows.length} sales, ${total} in total\\n`);
"""


def test_a_guessed_script_path_blocks_the_script_and_leaves_the_report_writable(scripted, artoo_env: Path,
                                                                                monkeypatch):
    """"Summarise sales.csv into reports/summary.md with our summariser".  The model guesses
    ``node tools/summarise.js --out reports/summary.md``; node says "Cannot find module
    '…/tools/summarise.js'" (exit 1) → R4a environmental → change_path.

    Only tools/summarise.js is blocked: the planner's first answer runs it again and is re-asked;
    its second looks for the script and writes reports/summary.md (naming the deliverable is fine),
    the executor finds scripts/summarise.js and runs it.  Memory blames the guess, not the report.
    """
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    ws = artoo_env / "workspace"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "summarise.js").write_text(SUMMARISER)
    (ws / "sales.csv").write_text("item,amount\npears,5\napples,3\n")
    c = "reports/summary.md summarises sales.csv"
    guess = "node tools/summarise.js --out reports/summary.md"
    found = "node scripts/summarise.js --out reports/summary.md"
    server = scripted(scenario(
        TaskSpec=[spec("sales_summary", "summarise sales.csv into reports/summary.md with our summariser script")],
        Plan=[plan([subtask("run the summariser on sales.csv", [c], context=guess, tools=["shell"])],
                   ["the summary exists"]),
              plan([subtask("run the summariser again", [c], context=f"mkdir -p reports && {guess}",
                            tools=["shell"])], ["the summary exists"]),
              plan([subtask("find the summariser and write the summary", [c], tools=["shell"],
                            context="the script is not at tools/summarise.js: find summarise.js in the workspace "
                                    "and run it with --out reports/summary.md")], ["the summary exists"])],
        tools=[call("shell", command=guess), done("tools/summarise.js does not exist", status="failed"),
               call("shell", command="find . -name 'summarise*'"), call("shell", command=found),
               done("reports/summary.md written by scripts/summarise.js")],
        AgentVerdict=[agent(verdict(c, False, "environmental", "node: Cannot find module tools/summarise.js"),
                            wrong="the summariser is not at tools/summarise.js", todo="find the script and run it"),
                      agent(verdict(c, True, evidence="node exited 0"))],
        TaskVerdict=[task_verdict(verdict("the summary exists", True))],
    ))
    code, final = run_json("summarise sales.csv into reports/summary.md with our summariser script")
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    script = ws / "tools" / "summarise.js"
    second, reasked = (prompt(b) for b in bodies(server, "Plan")[1:])
    assert must_not(second) == f" none\nBlocked targets:\n  - {script}"
    assert "Cannot find module" in second  # the planner sees why
    assert f"reuses blocked target '{script}'" in reasked
    search, ran = (tool_reply(b) for b in turns(server, "find the summariser and write the summary")[1:])
    assert "./scripts/summarise.js" in search and "[exit code 0]" in ran and "refused" not in ran
    assert (ws / "reports" / "summary.md").read_text() == "# Sales\n2 sales, 8 in total\n"
    assert remembered(artoo_env / "home", script, ws / "reports" / "summary.md") == [1, 0]
    assert server.unused() == {}
