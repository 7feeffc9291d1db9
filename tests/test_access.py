"""The access-aware rules (#26), table by table: how a call uses its targets, which access a failure
refused, and what a target blocked for one access still allows (toolbox, plan rules, memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.config.contracts import BlockedTarget, PlanDirective, SubTaskOutcome
from artoo.config.protocol import PlanAnswer
from artoo.memory.calibration import calibrate
from artoo.memory.tags import entity_target, path_entity
from artoo.tasks.blame.access import access_blocked, attributed_blocks, call_accesses
from artoo.tasks.plan.rules import validate_plan
from artoo.tasks.tools import Blocks
from tests.test_failure_model import outcome, shell_fail
from tests.test_memory_calibration import IGNORE, pot
from tests.test_tools import make_box, run

WS = "/ws"


@pytest.mark.parametrize(("tool", "value", "expected"), [
    ("read_file", "data.csv", {"/ws/data.csv": {"read"}}),
    ("write_file", "out/r.md", {"/ws/out/r.md": {"write"}}),
    ("glob", "logs/*.log", {"/ws/logs/*.log": {"read"}}),
    ("search", "duckdb wal", {"duckdb wal": {"all"}}),  # a query: no access can be told
    ("shell", "sort -o data.csv data.csv", {"/ws/data.csv": {"read", "write"}}),
    ("shell", "sort data.csv > data.sorted.csv", {"/ws/data.csv": {"read"}, "/ws/data.sorted.csv": {"write"}}),
    ("shell", "cat a.txt | tee b.txt >> log.txt", {"/ws/a.txt": {"read"}, "/ws/b.txt": {"write"},
                                                   "/ws/log.txt": {"write"}}),
    ("shell", "rm -f old.log", {"/ws/old.log": {"delete"}}),
    ("shell", "cp notes.txt /srv/b/notes.txt", {"/ws/notes.txt": {"read"}, "/srv/b/notes.txt": {"write"}}),
    ("shell", "./build.sh --out dist/app.tgz", {"/ws/build.sh": {"execute"}, "/ws/dist/app.tgz": {"write"}}),
    ("shell", "sed -i 's/a/b/' conf.ini", {"/ws/conf.ini": {"read", "write"}}),
    ("shell", "wc -l < in.txt", {"/ws/in.txt": {"read"}}),
    ("shell", "curl --output=page.html https://example.com", {"/ws/page.html": {"write"}}),
    ("shell", "echo $(cat ver.txt) > v.md", {"/ws/ver.txt": {"read"}, "/ws/v.md": {"write"}}),
    ("shell", "python3 fix.py data.csv", {"/ws/fix.py": {"read"}, "/ws/data.csv": {"all"}}),  # the script decides
])
def test_how_a_call_uses_its_targets(tool, value, expected):
    assert {t: set(a) for t, a in call_accesses(tool, value, WS).items()} == expected


def _failed(command: str, output: str) -> SubTaskOutcome:
    return outcome(calls=[shell_fail(command, output)])


@pytest.mark.parametrize(("command", "output", "blamed"), [
    # real wordings (GNU coreutils and bash 5, captured in the sandbox)
    ("sort -o data.csv data.csv", "sort: open failed: data.csv: Permission denied", [("/ws/data.csv", "write")]),
    ("sort -o data.csv data.csv", "sort: cannot read: data.csv: No such file or directory",
     [("/ws/data.csv", "read")]),
    ("echo x >> notes/todo.txt", "bash: line 1: notes/todo.txt: Permission denied", [("/ws/notes/todo.txt", "write")]),
    ("head -n 5 logs/db.log", "head: cannot open 'logs/db.log' for reading: No such file or directory",
     [("/ws/logs/db.log", "read")]),
    ("wc -l logs/*.log", "wc: logs/b.log: Permission denied\n  3 logs/a.log", [("/ws/logs/b.log", "read")]),
    ("cp notes.txt /srv/b/notes.txt", "cp: cannot create regular file '/srv/b/notes.txt': Permission denied",
     [("/srv/b/notes.txt", "write")]),
    ("rm -f /srv/keep.log", "rm: cannot remove '/srv/keep.log': Read-only file system", [("/srv/keep.log", "delete")]),
    ("sort -o data.csv data.csv", "sort: data.csv: Input/output error", [("/ws/data.csv", "all")]),  # can't tell
    ("python3 fix.py data.csv", "PermissionError: [Errno 13] Permission denied: 'data.csv'",
     [("/ws/data.csv", "all")]),
])
def test_a_failure_blames_the_access_that_failed(command, output, blamed):
    found = attributed_blocks([_failed(command, output)])
    assert [(b.target, b.access) for b, _ in found] == blamed


@pytest.mark.parametrize(("blocked", "used", "refused"), [
    ({"write"}, {"read"}, False),  # the write failed: reading is fine
    ({"write"}, {"read", "write"}, True),  # sort -o data.csv data.csv again
    ({"read"}, {"write"}, False),  # a missing input may be created
    ({"all"}, {"read"}, True),  # a blame from before #26: every use
    ({"delete"}, {"all"}, True),  # a call whose use cannot be told (a query)
    (set(), {"write"}, False),
])
def test_what_a_target_blocked_one_way_still_allows(blocked, used, refused):
    assert access_blocked(blocked, used) is refused


def _plan(intent: str) -> PlanAnswer:
    return PlanAnswer.model_validate({"subtasks": [{"intent": intent, "context": "", "sequence": 1, "tools": ["shell"],
                                                    "success_criteria": [{"criterion": "done"}]}],
                                      "task_criteria": [{"criterion": "done"}]})


@pytest.mark.parametrize(("blocked", "pairs", "problems"), [
    ([BlockedTarget(target="/ws/data.csv", access="write")], [], 0),  # the toolbox refuses the write itself
    ([BlockedTarget(target="/ws/data.csv", access="read")], [], 1),
    ([BlockedTarget(target="/ws/data.csv")], [], 1),
    ([], [("shell", "/ws/data.csv", "write")], 0),
    ([], [("shell", "/ws/data.csv", "all")], 1),
    ([], [("shell", "/ws/data.csv")], 1),  # a pair as written before #26
])
def test_plan_rules_reject_only_a_target_no_use_of_which_is_allowed(blocked, pairs, problems):
    calibration = calibrate("x", [], IGNORE, [], [], blocked)
    found = validate_plan(_plan("sort data.csv into data.sorted.csv"), set(), calibration.must_not_targets,
                          workspace=WS, must_not_pairs=pairs)
    assert len(found) == problems


def test_a_one_way_block_is_told_to_the_planner_not_hidden():
    calibration = calibrate("x", [], IGNORE, [], [], [BlockedTarget(target="/ws/data.csv", access="write")])
    assert calibration.must_not_targets == set()
    assert calibration.must_not_access == {("/ws/data.csv", "write")}
    assert "write '/ws/data.csv' again" in calibration.prompt_block()
    assert "reading it is fine" in calibration.prompt_block()


@pytest.mark.parametrize(("target", "access", "entity"), [
    ("/w/data.csv", "all", "path:/w/data.csv"),  # the spelling every Megram before #26 has
    ("/w/data.csv", "write", "write:/w/data.csv"),
    ("/w/run.sh", "execute", "execute:/w/run.sh"),
    ("curl http://h", "all", "path:curl http://h"),
])
def test_pair_entities_round_trip_and_old_ones_mean_every_access(target, access, entity):
    assert path_entity(target, access) == entity
    assert entity_target(entity) == (target, access)


def test_a_directive_from_before_the_contract_change_reads_as_every_access():
    old = {"task_id": "t", "loss": {"D": 1.0, "P": 0.0, "Omega": 0.1, "L": 0.6}, "directive": "change_path",
           "blocked_targets": ["/w/data.csv"]}
    directive = PlanDirective.model_validate(old)
    assert directive.blocked_targets == [BlockedTarget(target="/w/data.csv", access="all")]
    assert PlanDirective.model_validate_json(directive.model_dump_json()) == directive


def test_tool_memory_pairs_keep_their_access(tmp_path):
    memory = [("tool:shell", path_entity("/ws/data.csv", "write"), pot(0.9, -0.9))]
    calibration = calibrate("x", [], IGNORE, memory, [], [])
    assert calibration.must_not_pairs == {("shell", "/ws/data.csv", "write")}


@pytest.mark.parametrize(("name", "arguments", "refused"), [
    ("read_file", {"path": "data.csv"}, False),  # the write failed: reading it is fine
    ("shell", {"command": "sort data.csv > data.sorted.csv"}, False),  # read it, write a new file
    ("write_file", {"path": "data.csv", "content": "x"}, True),
    ("shell", {"command": "sort -o data.csv data.csv"}, True),  # the same write again
    ("shell", {"command": "echo x >> data.csv"}, True),
])
def test_the_toolbox_refuses_a_target_blocked_for_writing_only_for_writing(tmp_path: Path, name: str,
                                                                          arguments: dict, refused: bool) -> None:
    """#26: a write refused on the user's file blocks that access, never reading it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.csv").write_text("b\na\n")
    box = make_box(tmp_path, ws, blocks=Blocks(targets=(BlockedTarget(target="data.csv", access="write"),),
                                               pairs=frozenset({("shell", str(ws / "data.csv"), "delete")})))
    # memory's pair: deleting only
    result = run(box.call(name, arguments))
    assert result.ok is not refused, result.output
    if refused:
        assert "blocked for write" in result.output and "read it, write a new file" in result.output
    assert (ws / "data.csv").read_text() == "b\na\n"
