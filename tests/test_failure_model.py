"""The failure model (#13): targets, attribution, four outcomes, P without skips, Ω without Law-1 waits.

Pure rules, table-driven; the end-to-end stories are in tests/test_replan_stories.py.
"""

from __future__ import annotations

import os

import pytest

from artoo.config.contracts import CriterionVerdict, ReplanRequest, SubTaskOutcome, ToolCall
from artoo.config.settings import GGSParams
from artoo.tasks.blame.access import attributed_blocks
from artoo.tasks.blame.failure import (
    blamed_tools,
    call_targets,
    command_paths,
    outcome_counts,
    refusals,
    text_targets,
)
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.maths import agent_elapsed_ms, distance, implausibility
from artoo.tasks.roles.planner import directive_block, evidence_block
from artoo.tasks.roles.prompting import FENCE_OPEN

WS = "/ws"
HOME_N = os.path.expanduser("~/a/n.txt")


@pytest.mark.parametrize(("command", "paths"), [
    ("wc -l missing/notes.txt", ["missing/notes.txt"]),
    ("grep -c ERROR /var/log/app.log > hits.txt", ["/var/log/app.log", "hits.txt"]),
    ("cat a.txt|sort>out.csv", ["a.txt", "out.csv"]),
    ("cat a.txt | sort > out.csv 2>/dev/null", ["a.txt", "out.csv"]),
    ("ls -la ~/Documents && echo done", ["~/Documents"]),
    ("find /srv -maxdepth 1 -name '*.log'", ["/srv"]),  # a -name pattern is no path
    ("curl -s https://example.com/x.json", []),
    ("echo 3.5 VAR=a/b $DIR/x", []),  # a variable other than HOME: its value is unknown
    ("cat $HOME/x", ["$HOME/x"]),  # the home folder: call_targets resolves it as ~
    ("python3 script.py --out=r.md", ["script.py"]),
    ("echo 'unbalanced", []),
    # read by Law 1's bash grammar: one shell reader for both
    ("wc -l < data/notes.txt", ["data/notes.txt"]),
    ("ls data/raw/ 2>&1 | head", ["data/raw/"]),
    ("VAR=1 wc -l a.txt", ["a.txt"]),
    ("echo $(cat x.txt) y.md", ["y.md", "x.txt"]),  # the substitution's own paths, not its text
    ("cat <<EOF > o.md\nsee /etc/x.txt\nEOF", ["o.md"]),  # a here-document's body is data
    ("wc -l 'notes.txt' \\\n  \"out dir/r.md\"", ["notes.txt", "out dir/r.md"]),  # quotes and a line continuation
    ("", []),
])
def test_command_paths(command, paths):
    assert command_paths(command) == paths


@pytest.mark.parametrize(("tool", "value", "targets"), [
    ("read_file", "notes.txt", ["/ws/notes.txt"]),
    ("write_file", "out/../out/r.md", ["/ws/out/r.md"]),
    ("read_file", "/etc/hosts", ["/etc/hosts"]),
    ("shell", "wc -l missing/notes.txt", ["/ws/missing/notes.txt"]),
    ("shell", "echo hello", []),
    ("search", "  python release date ", ["python release date"]),
    ("glob", "", []),
    # the home folder however it is written: one target
    ("shell", "wc -l ~/a/n.txt", [HOME_N]),
    ("shell", 'wc -l "$HOME/a/n.txt"', [HOME_N]),
    ("shell", "wc -l ${HOME}/a/./n.txt", [HOME_N]),
    ("read_file", "$HOME/a/n.txt", [HOME_N]),
    ("shell", "echo $HOMEDIR/a/n.txt", []),  # another variable: unknown, no target
])
def test_call_targets(tool, value, targets):
    assert call_targets(tool, value, WS) == targets


@pytest.mark.parametrize(("text", "expected"), [
    ("Read notes.txt, then write `out/summary.md`.", {"/ws/notes.txt", "/ws/out/summary.md"}),
    ("Search the log for errors", set()),
    ("write it to /srv/reports/summary.md (the team folder)", {"/srv/reports/summary.md"}),
    ("see https://example.com/a.html", set()),
    # a path named only to rule it out is not used (models say so once a target is blocked)
    ("The log is not at /srv/logz/app.log (that path does not exist); count logs/app.log.", {"/ws/logs/app.log"}),
    ("count logs/app.log instead of /srv/logz/app.log", {"/ws/logs/app.log"}),
    ("/srv/logz/app.log is missing, so read logs/app.log", {"/ws/logs/app.log"}),
    ("do not write to /etc/motd; write out/motd.txt", {"/ws/out/motd.txt"}),
    # ... but a ruling-out word in another clause, or far away, does not spare a path
    ("if it does not exist, create out/report.md", {"/ws/out/report.md"}),
    ("write /ws/a.md, not the draft", {"/ws/a.md"}),
    ("never mind the old plan and just read the file /srv/logz/app.log", {"/srv/logz/app.log"}),
    ("count $HOME/a/n.txt", {HOME_N}),
])
def test_text_targets(text, expected):
    assert text_targets(text, WS) == expected


def call(tool, value, ok=True, cls=None, output="", denied=False, targets=None) -> ToolCall:
    return ToolCall(tool=tool, input=value, ok=ok, failure_class=cls, output=output, denied=denied,
                    targets=call_targets(tool, value, WS) if targets is None else targets)


def outcome(kind="failed", cls="environmental", calls=(), legacy=(), n=1, what="") -> SubTaskOutcome:
    status = "matched" if kind == "matched" else "failed"
    verdict = "pass" if kind == "matched" else "fail"
    verdicts = [CriterionVerdict(criterion=f"c{i}", verdict=verdict, failure_class=None if kind == "matched" else cls)
                for i in range(n)]
    return SubTaskOutcome(subtask_id=f"s-{kind}-{what}", parent_task_id="t", status=status, outcome=kind,
                          failure_class=None if kind == "matched" else cls, criteria_verdicts=verdicts,
                          calls=list(calls), tool_calls=list(legacy), intent=what or kind)


def shell_fail(command: str, output: str) -> ToolCall:
    """A shell command that failed environmentally, with the error its tool printed."""
    return call("shell", command, ok=False, cls="environmental", output=output + "\n[exit code 1]")


READ_OK = call("read_file", "notes.txt", output="alpha")
WRITE_DENIED_ROOT = call("write_file", "/srv/r/summary.md", ok=False, cls="environmental",
                         output="write_file refused: /srv/r/summary.md is outside the allowed roots")
GREP_EXIT_2 = call("shell", "grep -c ERROR /srv/app.log > hits.txt", ok=False, cls="logical",
                   output="grep: /srv/app.log: No such file or directory\n[exit code 2]")
LAW1_NO = call("write_file", "report.md", ok=False, cls="environmental", denied=True,
               output="[LAW1] denied: write_file /ws/report.md\nThe user did not approve this irreversible "
                      "action (overwrites an existing file). Nothing was changed.")


@pytest.mark.parametrize(("outcomes", "blocked"), [
    # (a) the user's file read fine beside the failing write: only the write's target
    ([outcome(calls=[READ_OK, WRITE_DENIED_ROOT])], [("/srv/r/summary.md", "write_file")]),
    # no call classified environmental: the last failed call, and only the path its error names
    ([outcome(calls=[READ_OK, GREP_EXIT_2])], [("/srv/app.log", "shell")]),
    # a logical failure blocks no target; a matched subtask none either
    ([outcome(cls="logical", calls=[WRITE_DENIED_ROOT]), outcome("matched", calls=[READ_OK])], []),
    # skipped and denied subtasks blame nothing (a Law-1 "no" is a constraint, not a failed target)
    ([outcome("skipped"), outcome("denied", calls=[LAW1_NO])], []),
    ([outcome(calls=[READ_OK, LAW1_NO])], []),
    # a program that is not installed blames no path (the folder did nothing wrong), nor does sh's wording
    ([outcome(calls=[call("shell", "tree /system", ok=False, cls="environmental",
                          output="bash: line 1: tree: command not found\n[exit code 127]")])], []),
    ([outcome(calls=[call("shell", "rename 's/a/b/' /system/x.txt", ok=False, cls="environmental",
                          output="sh: 1: rename: not found\n[exit code 127]")])], []),
    # ... but a missing FILE still blames the file (the word "found" alone proves nothing)
    ([outcome(calls=[call("shell", "cat /system/notes.txt", ok=False, cls="environmental",
                          output="cat: /system/notes.txt: No such file or directory\n[exit code 1]")])],
     [("/system/notes.txt", "shell")]),
    ([outcome(calls=[call("shell", "grep 'not found' /system/app.log", ok=False, cls="environmental",
                          output="grep: /system/app.log: Permission denied\n[exit code 2]")])],
     [("/system/app.log", "shell")]),
    # the error names a path under the command's target: that path, not the whole folder
    ([outcome(calls=[call("shell", "find /system -type d -empty -exec rm -r {} \\;", ok=False, cls="environmental",
                          output="find: '/system/a/b': No such file or directory\n[exit code 1]")])],
     [("/system/a/b", "shell")]),
    ([outcome(calls=[call("shell", "ls -l /srv/data", ok=False, cls="environmental",
                          output="ls: cannot open directory '/srv/data/private': Permission denied\n[exit code 2]")])],
     [("/srv/data/private", "shell")]),
    ([outcome(calls=[call("shell", "echo done > /srv/r/out.txt", ok=False, cls="environmental",
                          output="bash: line 1: /srv/r/out.txt: Permission denied\n[exit code 1]")])],
     [("/srv/r/out.txt", "shell")]),
    # the errors name only paths that are no target of the call: those failed, the call's own targets did not
    ([outcome(calls=[call("shell", "python3 /ws/run.py", ok=False, cls="environmental",
                          output="cat: /etc/app.conf: Permission denied\n[exit code 1]")])],
     [("/etc/app.conf", "shell")]),
    ([outcome(calls=[shell_fail("tar czf backup.tgz notes.txt photos",
                                "tar: photos: Cannot stat: No such file or directory\n"
                                "tar: Exiting with failure status due to previous errors")])],
     [("/ws/photos", "shell")]),  # not the user's notes.txt, not the deliverable backup.tgz
    ([outcome(calls=[shell_fail("sed -i 's/bob/Robert/' /home/u/Documents/todo.txt", "sed: couldn't open "
                                "temporary file /home/u/Documents/sedDtvZbs: Read-only file system")])],
     [("/home/u/Documents/sedDtvZbs", "shell")]),  # the user's todo.txt stays readable
    ([outcome(calls=[shell_fail("xargs du -h < largest.txt > reports/sizes.md",
                                "du: cannot access 'logs/gone.log': No such file or directory")])],
     [("/ws/logs/gone.log", "shell")]),  # not group 1's largest.txt, not the deliverable
    ([outcome(calls=[shell_fail("cd /srv/logz && grep -c ERROR /ws/app.log",
                                "bash: line 1: cd: /srv/logz: No such file or directory")])],
     [("/srv/logz", "shell")]),  # not the user's app.log
    ([outcome(calls=[shell_fail("cd reports && grep -c ERROR /ws/app.log > summary.md",
                                "bash: line 1: cd: reports: No such file or directory")])], []),  # make it
    # … unless it cannot be placed (no word says where the command ran), or a script could not open it (a
    # missing input, or an output into a missing folder: the words do not say, and it may be the deliverable)
    ([outcome(calls=[shell_fail("grep -rn TODO src docs", "grep: docs: No such file or directory")])], []),
    ([outcome(calls=[shell_fail("python3 make_report.py", "FileNotFoundError: [Errno 2] No such file or "
                                "directory: 'reports/summary.md'")])], []),
    ([outcome(calls=[shell_fail("wc -l logs/*.log", "wc: logs/b.log: Permission denied\n  3 logs/a.log")])],
     [("/ws/logs/b.log", "shell")]),  # the file the glob reached, not the whole glob
    ([outcome(calls=[shell_fail("mkdir -p logs && mv logs/old.log archive/",
                                "mv: cannot move 'logs/old.log' to 'archive/': Not a directory")])], []),
    # a user's file beside a failing write, the way real commands fail: only the path the error names
    ([outcome(calls=[shell_fail("cp notes.txt /srv/b/notes.txt",
                                "cp: cannot create regular file '/srv/b/notes.txt': Permission denied")])],
     [("/srv/b/notes.txt", "shell")]),
    ([outcome(calls=[shell_fail("mv draft.md /srv/r/final.md",
                                "mv: cannot move 'draft.md' to '/srv/r/final.md': Permission denied")])],
     [("/srv/r/final.md", "shell")]),
    ([outcome(calls=[shell_fail("mv draft.md reports/final.md",
                                "mv: cannot stat 'draft.md': No such file or directory")])],
     [("/ws/draft.md", "shell")]),
    ([outcome(calls=[shell_fail("head -n 5 logs/app.log logs/db.log",
                                "==> logs/app.log <==\nboot\nhead: cannot open 'logs/db.log' for reading: "
                                "No such file or directory")])], [("/ws/logs/db.log", "shell")]),
    ([outcome(calls=[shell_fail("wc -l data/names.txt report/names.txt",
                                "  3 data/names.txt\nwc: report/names.txt: No such file or directory\n  3 total")])],
     [("/ws/report/names.txt", "shell")]),
    ([outcome(calls=[shell_fail("python3 analyze.py data.csv > out.txt",
                                'Traceback (most recent call last):\n  File "/ws/analyze.py", line 3, in <module>\n'
                                "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'")])],
     [("/ws/data.csv", "shell")]),  # the user's script, named in the traceback, stays usable
    # no call failed (a pipeline exits with its last command): the error lines of the calls that worked
    ([outcome(calls=[call("shell", "grep ERROR /var/log/x.log | sort > report.md",
                          output="grep: /var/log/x.log: No such file or directory\n[exit code 0]")])],
     [("/var/log/x.log", "shell")]),  # never the (empty) report
    ([outcome(calls=[READ_OK, call("shell", "wc -l notes.txt", output="2 notes.txt\n[exit code 0]")])], []),  # none
    ([outcome(calls=[call("read_file", "auth.log", output="cp: cannot stat '/home/u/notes.txt': Permission denied")])],
     []),  # a file's content is data, not the tool's own error
    # a write whose folder is missing blames nothing: the next plan makes the folder and writes the same path
    ([outcome(calls=[shell_fail("cp notes.txt backup/notes.txt",
                                "cp: cannot create regular file 'backup/notes.txt': No such file or directory")])], []),
    ([outcome(calls=[shell_fail("grep -c ERROR app.log > reports/summary.md",
                                "bash: line 1: reports/summary.md: No such file or directory")])], []),
    ([outcome(calls=[shell_fail("sort names.txt | tee out/sorted.txt",
                                "tee: out/sorted.txt: No such file or directory")])], []),
    # ... but a missing input read by redirection is blamed, and a refused write still is
    ([outcome(calls=[shell_fail("sort < in.txt > out.txt", "bash: line 1: in.txt: No such file or directory")])],
     [("/ws/in.txt", "shell")]),
    ([outcome(calls=[shell_fail("echo x >> notes/todo.txt", "bash: line 1: notes/todo.txt: Permission denied")])],
     [("/ws/notes/todo.txt", "shell")]),
    # an outcome of the spec's shape (evidence strings only): its last call
    ([outcome(legacy=["read_file: notes.txt → alpha", "shell: curl http://h → timeout"])],
     [("curl http://h", "shell")]),
])
def test_attributed_targets(outcomes, blocked):
    assert [(b.target, tool) for b, tool in attributed_blocks(outcomes)] == blocked


HEAD_OK = call("shell", "head -2 data.csv", output="id,v")
GLOB_OK = call("glob", "*.csv", output="data.csv")


@pytest.mark.parametrize(("outcomes", "logical_only", "tools"), [
    # a claim without evidence: the failing step's tools
    ([outcome(cls="logical", calls=[HEAD_OK]), outcome("matched", calls=[READ_OK])], False, ["shell"]),
    # the failing step read the same file the matched step read: read_file did its job, only glob is blamed
    ([outcome(cls="logical", calls=[GLOB_OK, READ_OK]), outcome("matched", calls=[READ_OK])], False, ["glob"]),
    # every tool the failing step used also worked for a matched step: nothing to block
    ([outcome(cls="logical", calls=[READ_OK]), outcome("matched", calls=[READ_OK])], False, []),
    # change_approach: the logical failure's tools, not the environmental one's
    ([outcome(cls="logical", calls=[GLOB_OK]), outcome(calls=[GREP_EXIT_2], what="e")], True, ["glob"]),
    ([outcome(cls="logical", calls=[GLOB_OK]), outcome(calls=[GREP_EXIT_2], what="e")], False, ["glob", "shell"]),
    # skipped and denied subtasks ran nothing to blame; legacy evidence lines name their tools
    ([outcome("skipped"), outcome("denied", calls=[LAW1_NO])], False, []),
    ([outcome(cls="logical", legacy=["shell: ls → a", "glob: *.md → none", "shell: wc → 0"])], False,
     ["shell", "glob"]),
])
def test_blamed_tools_spare_the_tools_that_matched(outcomes, logical_only, tools):
    assert blamed_tools(outcomes, logical_only) == tools


@pytest.mark.parametrize(("worked_before", "tools"), [
    ((), ["shell", "glob"]),
    (["shell"], ["glob"]),  # t17 of #25: shell matched in round 1
    (["shell", "glob", "read_file"], []),
])
def test_blamed_tools_spare_the_tools_that_matched_in_earlier_rounds(worked_before, tools):
    failed = outcome(cls="logical", legacy=["shell: wc -l *.txt → 9 total", "glob: *.txt → a.txt"])
    assert blamed_tools([failed], True, worked_before) == tools


def test_refusals_say_what_was_refused_and_why():
    said = refusals([outcome("denied", calls=[LAW1_NO]), outcome(calls=[WRITE_DENIED_ROOT])])
    assert len(said) == 1 and said[0].startswith("write_file report.md — [LAW1] denied")
    assert "overwrites an existing file" in said[0]


@pytest.mark.parametrize(("outcomes", "counts", "D", "P"), [
    # (b) one environmental failure, three skipped after it: D counts all four, P only the real one
    ([outcome(), *(outcome("skipped", "logical", what=str(i)) for i in range(3))],
     {"matched": 0, "failed": 1, "skipped": 3, "denied": 0}, 1.0, 0.0),
    ([outcome("matched"), outcome(cls="logical"), outcome("skipped", "logical")],
     {"matched": 1, "failed": 1, "skipped": 1, "denied": 0}, 2 / 3, 1.0),
    ([outcome("denied"), outcome("matched", n=3)], {"matched": 1, "failed": 0, "skipped": 0, "denied": 1},
     0.25, 0.0),
])
def test_four_outcomes_in_d_and_p(outcomes, counts, D, P):
    assert outcome_counts(outcomes) == counts
    assert distance(outcomes, []) == pytest.approx(D)
    assert implausibility(outcomes, []) == pytest.approx(P)


def test_skipped_subtasks_no_longer_turn_an_environmental_failure_into_break_symmetry():
    rr = ReplanRequest(task_id="t", failed_outcomes=[outcome(calls=[GREP_EXIT_2]),
                                                     *(outcome("skipped", "logical", what=str(i)) for i in range(3))])
    decision = GGSController("t", "count errors", GGSParams()).evaluate(rr, 1000)
    assert decision.state == "change_path" and decision.directive.blocked_tools == []
    assert "matched=0 failed=1 skipped=3 denied=0" in decision.log_line
    assert "Subtasks: matched=0 failed=1 skipped=3 denied=0." in decision.directive.rationale


@pytest.mark.parametrize(("elapsed", "paused", "agent"), [
    (1000.0, 0.0, 1000.0), (610_000.0, 600_000.0, 10_000.0), (5.0, 9.0, 0.0),
])
def test_agent_elapsed_excludes_the_pause(elapsed, paused, agent):
    assert agent_elapsed_ms(elapsed, paused) == agent


@pytest.mark.parametrize("paused", [-1.0, float("nan")])
def test_a_bad_pause_is_refused(paused):
    with pytest.raises(ValueError, match="paused_ms"):
        agent_elapsed_ms(10.0, paused)


@pytest.mark.parametrize("agent_ms", [0.0, 20_000.0, 60_000.0])
def test_a_ten_minute_approval_wait_does_not_change_the_directive(agent_ms):
    """(e) Same round, same agent time: the directive is the same with or without a 10-minute wait."""
    ten_minutes = 600_000.0
    params = GGSParams()  # time_budget 300 s: counted, the wait alone would be 0.8 of w2's share
    rr = ReplanRequest(task_id="t", failed_outcomes=[outcome(calls=[READ_OK, WRITE_DENIED_ROOT])])
    plain = GGSController("t", "x", params).evaluate(rr, agent_ms)
    waited = GGSController("t", "x", params).evaluate(rr, agent_ms + ten_minutes, paused_ms=ten_minutes)
    counted = GGSController("t", "x", params).evaluate(rr, agent_ms + ten_minutes)
    assert (waited.state, waited.loss) == (plain.state, plain.loss) and waited.state == "change_path"
    assert "law1_wait=600.0s (not in Ω)" in waited.log_line
    assert counted.loss.Omega > plain.loss.Omega  # what the bug did: the person's time in Ω


def test_evidence_block_quotes_calls_output_and_advice_fenced():
    failed = outcome(calls=[READ_OK, WRITE_DENIED_ROOT], what="write the summary").model_copy(update={
        "what_was_wrong": "/srv/r is outside the allowed roots", "what_to_do": "write summary.md in the workspace"})
    text = evidence_block([failed, outcome("skipped", what="mail it"), outcome("matched", what="fine")])
    assert "Tool call: write_file /srv/r/summary.md — failed (environmental)" in text
    assert "Tool call: read_file notes.txt — ok" in text
    assert "outside the allowed roots" in text and "write summary.md in the workspace" in text
    assert "'mail it': not run" in text and "'fine'" not in text
    assert text.count(FENCE_OPEN) == 3  # two outputs and the advice, each fenced


def test_evidence_block_names_what_worked_first_with_its_result_not_its_calls_output():
    worked = outcome("matched", calls=[READ_OK], what="read notes.txt").model_copy(
        update={"output": "the notes say: ship on friday " + "y" * 900})
    text = evidence_block([outcome(calls=[WRITE_DENIED_ROOT], what="write the summary")], [worked])
    assert text.startswith("- Subtask 'read notes.txt': met its criteria with: read_file notes.txt. "
                           "Keep this step's method and targets.\n  Its result (pass it to the steps")
    assert "alpha" not in text  # a matched call's raw output is not quoted (only failures are evidence) …
    assert f"{FENCE_OPEN}result of read notes.txt" in text and "ship on friday" in text  # … its result is
    assert "y" * 400 not in text  # capped
    assert "Tool call: write_file /srv/r/summary.md — failed (environmental)" in text
    assert evidence_block([], [outcome("matched", what="fine")]) == (
        "- Subtask 'fine': met its criteria with: no tool call. Keep this step's method and targets.")


def test_evidence_block_caps_long_output():
    long = call("shell", "cat big.log", ok=False, cls="environmental", output="x" * 5000)
    assert len(evidence_block([outcome(calls=[long])])) < 1500


def test_directive_block_states_law1_refusals():
    rr = ReplanRequest(task_id="t", failed_outcomes=[outcome("denied", calls=[LAW1_NO])])
    decision = GGSController("t", "x", GGSParams()).evaluate(rr, 0)
    assert decision.directive.blocked_targets == [] and decision.directive.refused
    assert (decision.state, decision.directive.failure_class) == ("change_path", "environmental")
    text = directive_block(decision.directive)
    assert "REFUSED" in text and "write_file report.md" in text and "write a new file" in text


def test_an_abandon_after_a_refusal_says_what_was_refused():
    rr = ReplanRequest(task_id="t", failed_outcomes=[outcome("denied", calls=[LAW1_NO])])
    final = GGSController("t", "x", GGSParams(max_replans=0)).evaluate(rr, 0).final
    assert final is not None and final.directive == "abandon"
    assert any(step.startswith("You refused (Law 1): write_file report.md") for step in final.next_steps)
