"""Checks that code runs (artoo.tasks.checks): how a check's run becomes a verdict, table-driven.

The execution table runs real commands under the real bubblewrap (CI installs it): a check must only read (a write
is refused and changes nothing), has no network, is bounded by a timeout, and its exit code means what
``decide`` says.  The comparison and contradiction tables are pure.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from artoo.config.contracts import REFERENCE_CRITERION, Criterion
from artoo.tasks.checks import tree
from artoo.tasks.checks.contradict import claims, contradictions
from artoo.tasks.checks.decide import acts, from_predicate, verdict_of
from artoo.tasks.checks.evaluate import Snapshot, check_criteria, existed_before, take_snapshot
from artoo.tasks.checks.run import Confined, Ran, run_confined, run_reference
from artoo.tasks.tools import sandbox

BWRAP = sandbox.find_bwrap()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"bubblewrap cannot run here: {sandbox.bwrap_problem()}")


def folder(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


LOGS = {"a.log": "ERROR disk\n", "b.log": "ok\n", "c.log": "ERROR net\nok\n", "notes.txt": "keep\n"}


@needs_bwrap
@pytest.mark.parametrize("command, exit_code, status", [
    ("test -f a.log", 0, "met"),
    ("test -f missing.txt", 1, "unmet"),
    ("grep -q 'ERROR net' c.log", 0, "met"),
    ("[ -f a.log", 2, "broken"),             # a syntax error: the check tests nothing
    ("grep -q x nowhere.txt", 2, "unmet"),   # the file it reads is missing: a fact about the folder
    ("grep -q --no-such-flag x a.log", 2, "broken"),  # grep's usage error
    ("./not-executable.sh", 126, "broken"),
    ("no_such_program --flag", 127, "broken"),
    ("cmp a.log b.log", 1, "unmet"),
])
def test_a_read_only_check_s_exit_code_is_its_outcome(tmp_path, command, exit_code, status):
    ws = folder(tmp_path, {**LOGS, "not-executable.sh": "echo hi\n"})
    ran = asyncio.run(run_confined(command, ws, Confined(BWRAP, timeout_s=5)))
    assert (ran.exit_code, from_predicate("c", ran).status) == (exit_code, status)


@needs_bwrap
def test_a_check_that_writes_is_refused_and_changes_nothing(tmp_path):
    ws = folder(tmp_path, LOGS)
    before = tree.state(ws)
    ran = asyncio.run(run_confined("grep -l ERROR *.log > out.txt; rm notes.txt", ws, Confined(BWRAP, timeout_s=5)))
    assert ran.wrote and "Read-only file system" in ran.output
    assert tree.state(ws) == before and not (ws / "out.txt").exists()


@needs_bwrap
def test_a_check_has_no_network_and_a_timeout(tmp_path):
    ws = folder(tmp_path, LOGS)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        ran = asyncio.run(run_confined(f"exec 3<>/dev/tcp/127.0.0.1/{port}", ws, Confined(BWRAP, timeout_s=5)))
    finally:
        server.close()
    assert ran.exit_code != 0 and from_predicate("c", ran).status == "unmet"  # loopback of its own: nobody there
    slow = asyncio.run(run_confined("sleep 30", ws, Confined(BWRAP, timeout_s=0.5)))
    assert slow.timed_out and from_predicate("c", slow).status == "broken"


def ran(exit_code: int | None, output: str = "", timed_out: bool = False, wrote: bool = False) -> Ran:
    return Ran(command="cmd", exit_code=exit_code, output=output, timed_out=timed_out, wrote=wrote)


@pytest.mark.parametrize("after, before, reference, status", [
    (ran(0), None, None, "met"),
    (ran(0), ran(1), None, "met"),
    (ran(0), ran(0), None, "judge"),  # passes on the folder as it was too: it cannot tell the work from no work
    (ran(1, "differ"), None, None, "unmet"),
    (ran(1, "differ"), None, ran(0), "unmet"),  # the reference run's result passes it: the work is wrong
    (ran(1, "differ"), None, ran(1), "broken"),  # fails on the reference's result too: the test is suspect
    (ran(3), None, None, "unmet"),
    (ran(2, "syntax error"), None, None, "broken"),
    (ran(2, "grep: out.txt: No such file or directory"), None, None, "unmet"),
    (ran(126), None, None, "broken"),
    (ran(127), None, None, "broken"),
    (ran(137), None, None, "broken"),
    (ran(None, timed_out=True), None, None, "broken"),
])
def test_from_predicate(after, before, reference, status):
    outcome = from_predicate("crit", after, before, reference)
    assert outcome.status == status
    verdict = verdict_of(outcome)
    assert (verdict is None) is (status in ("judge", "broken"))
    if verdict is not None:
        assert verdict.by == "check" and verdict.verdict == ("pass" if status == "met" else "fail")


def pc(path: str, change: str = "created", text: str = "x\n", node: str = "file") -> tree.PathChange:
    """A change as ``tree.changes`` records it, from the file's text (written and read by the real code)."""
    if node != "file" or change == "deleted":
        return tree.PathChange(path=path, change=change, node=node)
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "f").write_text(text)
        entry = tree.state(Path(scratch))["f"]
    return tree.PathChange(path=path, change=change, node=node, size=entry.size, digest=entry.digest,
                           head=entry.head, loose=entry.loose, tokens=entry.tokens)


@pytest.mark.parametrize("reference, executor, outcome", [
    ([pc("out.txt", text="a.log\nc.log\n")], [pc("out.txt", text="a.log\nc.log\n")], "agree"),
    ([pc("out.txt", text="a.log\nc.log\n")], [pc("out.txt", text="a.log c.log")], "agree"),  # spacing aside
    ([pc("out.txt", text="a.log\nc.log\n")], [pc("out.txt", text="a.log\nb.log\nc.log\n")], "values"),
    ([pc("n.txt", text="9\n")], [pc("n.txt", text="3\n")], "values"),
    ([pc("sizes.txt", text="3 a.txt\n5 b.txt\n")], [pc("sizes.txt", text="a.txt: 3\nb.txt: 5\n")], "layout"),
    ([pc("sorted.txt", text="ann\nbob\n")], [pc("sorted.txt", text="bob\nann\n")], "layout"),
    ([pc("emails.txt", text="ann@x.org\n")], [pc("emails.txt", text='"ann@x.org"\n')], "values"),  # jq without -r
    ([pc("s.json", text='{"debug": false}\n')], [pc("s.json", text='{\n  "debug":false\n}')], "layout"),
    ([pc("backup", node="dir"), pc("backup/a.csv")], [pc("backup", node="file", text="")], "paths"),  # a file
    ([pc("archive", node="dir"), pc("archive/x.bak"), pc("x.bak", "deleted")],
     [pc("archive", node="dir"), pc("archive/x.bak")], "paths"),  # copied, not moved
    ([pc("hits", node="dir"), pc("hits/a.log")], [pc("hits", node="dir"), pc("hits/a.log"), pc("hits/b.log")],
     "paths"),  # an extra file among the deliverables
    ([pc("report.md")], [pc("report.md"), pc("scratch.txt")], "agree"),  # a scratch file beside them: noted
    ([pc("report.md")], [pc("report.md"), pc("notes.txt", "modified")], "paths"),  # a file it had no business in
])
def test_compare(reference, executor, outcome):
    got = tree.compare(reference, executor)
    assert got.outcome == outcome
    if outcome != "agree":
        assert tree.side_by_side(got)


@needs_bwrap
@pytest.mark.parametrize("executor_command, status", [
    ("grep -l ERROR *.log > out.txt", "met"),
    ("ls *.log > out.txt", "unmet"),          # every name, not the matching ones: other words in the file
    ("grep -l ERROR *.log | sort -r > out.txt", "judge"),  # the same names in another order: for the judge
    ("grep -l ERROR *.log > found.txt", "unmet"),  # the wrong file
])
def test_a_reference_run_on_a_copy_decides_by_comparing_change_sets(tmp_path, executor_command, status):
    import subprocess

    ws = folder(tmp_path, LOGS)
    confined = Confined(BWRAP, timeout_s=5)
    before = asyncio.run(take_snapshot(ws, confined))
    try:
        subprocess.run(["bash", "-c", executor_command], cwd=ws, check=True)
        reference = Criterion(criterion=REFERENCE_CRITERION, check="grep -l ERROR *.log > out.txt")
        (outcome,) = asyncio.run(check_criteria([reference], ws, before, confined))
    finally:
        before.close()
    assert outcome.status == status and outcome.form == "reference"
    if status != "met":
        assert "out.txt" in outcome.evidence
    assert (ws / "notes.txt").read_text() == "keep\n"


@needs_bwrap
def test_an_empty_file_agreeing_with_an_empty_reference_is_for_the_judge(tmp_path):
    """A real run: the reference (``ls logs/ | grep -l ERROR > e.txt``) wrote an empty file, and an executor trying
    command after command wrote the same empty file: they agree on nothing."""
    import subprocess

    ws = folder(tmp_path, LOGS)
    confined = Confined(BWRAP, timeout_s=5)
    before = asyncio.run(take_snapshot(ws, confined))
    try:
        subprocess.run(["bash", "-c", "ls | grep -E 'ERROR' > e.txt"], cwd=ws, check=False)
        reference = Criterion(criterion=REFERENCE_CRITERION, check="ls | grep -l ERROR > e.txt")
        (outcome,) = asyncio.run(check_criteria([reference], ws, before, confined))
    finally:
        before.close()
    assert (ws / "e.txt").read_text() == "" and outcome.status == "judge" and "nothing" in outcome.reason


@pytest.mark.parametrize(("check", "action"), [
    ("test -d backup && cmp a.csv backup/a.csv", False),
    ("grep -q ERROR a.log > /dev/null", False),
    ("sort -c names.txt", False),
    ("find . -name '*.csv' -exec cp {} backup/ \\;", True),  # what the 1.5B model wrote as a "test"
    ("mkdir -p backup && cp *.csv backup/", True),
    ("test -f x && echo ok > y", True),
])
def test_a_check_that_may_change_files_is_an_action(check, action):
    assert acts(check) is action


@needs_bwrap
def test_an_action_that_fails_before_it_writes_is_run_on_a_copy_not_counted_unmet(tmp_path):
    """The real model's check ``test -d backup && find … -exec cp {} backup/ …`` failed on the read-only view with
    exit 1 before writing anything, and was counted unmet on every attempt of a right result."""
    ws = folder(tmp_path, {"a.csv": "1\n", "b.csv": "2\n"})
    confined = Confined(BWRAP, timeout_s=5)
    before = asyncio.run(take_snapshot(ws, confined))
    try:
        (ws / "backup").mkdir()
        for name in ("a.csv", "b.csv"):
            (ws / "backup" / name).write_text((ws / name).read_text())
        criterion = Criterion(criterion="the csv files are copied into backup",
                              check="mkdir backup && cp *.csv backup/")  # fails read-only: backup exists
        (outcome,) = asyncio.run(check_criteria([criterion], ws, before, confined))
    finally:
        before.close()
    assert (outcome.status, outcome.form) == ("met", "reference")


@needs_bwrap
def test_a_check_that_writes_is_run_as_a_reference_on_the_paths_it_wrote(tmp_path):
    ws = folder(tmp_path, LOGS)
    confined = Confined(BWRAP, timeout_s=5)
    before = asyncio.run(take_snapshot(ws, confined))
    try:
        (ws / "count.txt").write_text("2\n")
        criterion = Criterion(criterion="count.txt holds how many logs have errors",
                              check="grep -l ERROR *.log | wc -l > count.txt")
        (right,) = asyncio.run(check_criteria([criterion], ws, before, confined))
        (ws / "count.txt").write_text("3\n")
        (wrong,) = asyncio.run(check_criteria([criterion], ws, Snapshot(before.path), confined))
    finally:
        before.close()
    assert (right.status, wrong.status) == ("met", "unmet")  # 3 where the reference counts 2


@needs_bwrap
def test_a_reference_that_answers_by_printing_is_met_by_the_same_answer(tmp_path):
    ws = folder(tmp_path, LOGS)
    confined = Confined(BWRAP, timeout_s=5)
    before = asyncio.run(take_snapshot(ws, confined))
    try:
        reference = Criterion(criterion=REFERENCE_CRITERION, check="grep -l ERROR *.log | wc -l")
        (said,) = asyncio.run(check_criteria([reference], ws, before, confined, ["There are 2 such logs."]))
        (other,) = asyncio.run(check_criteria([reference], ws, before, confined, ["There are 3 such logs."]))
    finally:
        before.close()
    assert (said.status, other.status) == ("met", "judge")


@needs_bwrap
def test_a_reference_run_never_touches_the_folder(tmp_path):
    ws = folder(tmp_path, LOGS)
    confined = Confined(BWRAP, timeout_s=5)
    before = asyncio.run(take_snapshot(ws, confined))
    try:
        ref = asyncio.run(run_reference("rm -f *.log && echo gone > log.txt", ws, before.path, confined))
    finally:
        before.close()
    assert sorted(c.line() for c in ref.changes) == [
        "created log.txt (5 bytes)", "deleted a.log", "deleted b.log", "deleted c.log"]
    assert sorted(p.name for p in ws.iterdir()) == ["a.log", "b.log", "c.log", "notes.txt"]


def test_no_copy_of_a_folder_past_the_bounds(tmp_path):
    ws = folder(tmp_path, {f"f{i}.txt": "x" for i in range(20)})
    snap = asyncio.run(take_snapshot(ws, Confined("bwrap-assumed", max_files=5)))
    assert snap.path is None and "5 entries" in snap.note
    assert existed_before(["f1.txt"], ws, snap) is None


def test_existed_before_reads_the_copy(tmp_path):
    ws = folder(tmp_path, {"old.log": "x"})
    snap = asyncio.run(take_snapshot(ws, Confined("bwrap-assumed")))
    try:
        (ws / "old.log").unlink()
        assert existed_before(["old.log", "new.txt", str(ws / "old.log")], ws, snap) == {"old.log", str(ws / "old.log")}
    finally:
        snap.close()


@pytest.mark.parametrize("command, expected", [
    ("test -d backup", [("exists", "backup")]),
    ("[ ! -e backup ]", [("absent", "backup")]),
    ("! test -f ./x.tmp", [("absent", "x.tmp")]),
    ('test -z "$(ls -A backup)"', [("empty", "backup")]),
    ('[ -n "$(ls backup/)" ]', [("holds", "backup")]),
    ("cmp a.csv backup/a.csv", [("exists", "a.csv"), ("exists", "backup/a.csv"), ("exists", "backup"),
                                ("holds", "backup")]),
    ("test -s out.txt && grep -q ERROR out.txt", [("exists", "out.txt"), ("holds", "out.txt")]),
    ("wc -l *.txt", []),
])
def test_claims(command, expected):
    assert claims(command) == expected


@pytest.mark.parametrize("checks, contradict", [
    (['test -d backup && test -z "$(ls -A backup)"', "cmp a.csv backup/a.csv"], True),  # empty, yet holds a copy
    (["test -f old.log", "! test -e old.log"], True),
    (["test -d backup", "cmp a.csv backup/a.csv"], False),
    (["test -f out.txt", "grep -q ERROR out.txt"], False),
    (["", "test -f x"], False),
])
def test_contradictions(checks, contradict):
    criteria = [Criterion(criterion=f"c{i}", check=c) for i, c in enumerate(checks)]
    assert bool(contradictions(criteria)) is contradict


@pytest.mark.parametrize("command, misused", [
    ("test -d backup && find backup -name '*.csv' | wc -l == $(find . -name '*.csv' | wc -l)", True),  # real R2
    ("ls backup/*.csv | wc -l -eq 3", True),
    ('[ "$(ls backup | wc -l)" -eq 3 ]', False),
    ("test $(wc -l < out.txt) == 3", False),
    ("grep -q '==' notes.md", False),  # grep's pattern may be anything
])
def test_a_comparison_outside_test_is_a_broken_check(command, misused):
    from artoo.tasks.checks.decide import misused_comparison

    assert (misused_comparison(command) is not None) is misused


def test_split_by_checks_decides_what_checks_decided_and_leaves_the_rest_to_the_judge():
    from artoo.tasks.checks.decide import CheckOutcome, split_by_checks

    criteria = [Criterion(criterion=REFERENCE_CRITERION, check="grep -l ERROR *.log > e.txt"),
                Criterion(criterion="e.txt lists them", mode="verifiable"),  # no check: the reference covers it
                Criterion(criterion="e.txt reads well", mode="plausible"),  # judged, whatever agreed
                Criterion(criterion="e.txt is sorted", check="sort -c e.txt"),
                Criterion(criterion="e.txt names a.log", check="grep -qx a.log e.txt")]
    outcomes = [CheckOutcome(criterion=REFERENCE_CRITERION, command="grep …", status="met", form="reference",
                             reason="agree"),
                CheckOutcome(criterion="e.txt is sorted", command="sort -c e.txt", status="broken",
                             reason="exit 2"),
                CheckOutcome(criterion="e.txt names a.log", command="grep -qx a.log e.txt", status="unmet",
                             reason="exit 1")]
    decided, pending, notes = split_by_checks(criteria, outcomes)
    # the broken check beside the agreeing runs is dropped, never a judge's veto; a failing check still rejects
    assert set(decided) == {REFERENCE_CRITERION, "e.txt lists them", "e.txt is sorted", "e.txt names a.log"}
    assert all(v.by == "check" and v.verdict == "pass" for c, v in decided.items() if c != "e.txt names a.log")
    assert decided["e.txt names a.log"].verdict == "fail"
    assert [c.criterion for c in pending] == ["e.txt reads well"]
    assert notes == {}
    # without the agreeing runs, the broken check's criterion is the judge's, with what the check found
    decided, pending, notes = split_by_checks(criteria, outcomes[1:])
    assert [c.criterion for c in pending] == [REFERENCE_CRITERION, "e.txt lists them", "e.txt reads well",
                                              "e.txt is sorted"]
    assert set(notes) == {"e.txt is sorted"} and "could not run" in notes["e.txt is sorted"]
