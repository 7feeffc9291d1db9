"""The audit log's hash chain: tampering of any kind is detected and named; nothing is logged twice.

Logs are real files under ``tmp_path`` written by the real writer (artoo.tasks.audit.log);
tampering edits their bytes the way a person with a text editor would.
"""

from __future__ import annotations

import json
import multiprocessing
import uuid
from pathlib import Path

import pytest

from artoo.tasks.audit.chain import GENESIS, canonical, digest, verify
from artoo.tasks.audit.log import AuditLog, AuditPaths, follow
from artoo.tasks.audit.observe import observation
from tests.conftest import run_cli


def obs(task_seq: int, task_id: str = "t", kind: str = "plan_directive", **payload) -> dict:
    """The fields of one observation, as artoo.tasks.audit.observe produces them."""
    return {"event_id": str(uuid.uuid4()), "occurred": f"2026-01-01T00:00:{task_seq % 60:02d}Z", "task_id": task_id,
            "message": kind, "from_role": "R7", "to_role": "R2", "task_seq": task_seq,
            "payload": {"kind": kind, "note": "abc ünïcode\u2028line", **payload}}


def write_log(home: Path, count: int = 5) -> AuditPaths:
    log = AuditLog(home)
    log.append([obs(i) for i in range(1, count + 1)])
    return log.paths


def lines_of(paths: AuditPaths) -> list[bytes]:
    return paths.log.read_bytes().split(b"\n")[:-1]


def rewrite(paths: AuditPaths, lines: list[bytes]) -> None:
    paths.log.write_bytes(b"".join(line + b"\n" for line in lines))


def edit_byte(lines: list[bytes], n: int, field: str) -> list[bytes]:
    line = lines[n - 1]
    at = line.index(f'"{field}":'.encode()) + len(field) + 4
    swapped = b"1" if line[at:at + 1] != b"1" else b"2"
    lines[n - 1] = line[:at] + swapped + line[at + 1:]
    return lines


def test_a_written_log_verifies_and_chains_from_genesis(tmp_path: Path):
    paths = write_log(tmp_path)
    result = verify(paths.log, paths.head)
    assert (result.ok, result.records, result.first_broken) == (True, 5, None)
    first, second = (json.loads(line) for line in lines_of(paths)[:2])
    assert first["prev_hash"] == GENESIS
    assert second["prev_hash"] == digest(canonical(first))
    assert first["hash"] == digest(canonical({k: v for k, v in first.items() if k != "hash"}))


TAMPERING = [
    ("edit a payload byte", lambda ls: edit_byte(ls, 3, "note"), 3, "edited"),
    ("edit a hash byte", lambda ls: edit_byte(ls, 2, "hash"), 2, "edited"),
    ("edit a prev_hash byte", lambda ls: edit_byte(ls, 4, "prev_hash"), 4, ""),
    ("delete the first line", lambda ls: ls[1:], 1, "prev_hash"),
    ("delete a middle line", lambda ls: ls[:2] + ls[3:], 3, "prev_hash"),
    ("delete the last line", lambda ls: ls[:-1], 5, "deleted"),
    ("swap two lines", lambda ls: [ls[0], ls[2], ls[1], *ls[3:]], 2, "prev_hash"),
    ("move the last line first", lambda ls: [ls[-1], *ls[:-1]], 1, "prev_hash"),
    ("duplicate a line", lambda ls: [*ls[:3], ls[2], *ls[3:]], 4, "prev_hash"),
    ("insert a blank line", lambda ls: [*ls[:2], b"", *ls[2:]], 3, "blank"),
    ("reformat a line", lambda ls: [*ls[:1], json.dumps(json.loads(ls[1]), indent=1).replace("\n", " ").encode(),
                                    *ls[2:]], 2, "canonical"),
]


@pytest.mark.parametrize(("how", "tamper", "broken", "reason"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_tampering_is_detected_at_the_first_broken_record(tmp_path: Path, how, tamper, broken: int, reason: str):
    paths = write_log(tmp_path)
    rewrite(paths, tamper(lines_of(paths)))
    result = verify(paths.log, paths.head)
    assert not result.ok
    assert result.first_broken == broken, result
    assert reason in result.reason


def test_a_torn_tail_is_reported_and_the_next_append_repairs_it(tmp_path: Path):
    paths = write_log(tmp_path, 3)
    with open(paths.log, "ab") as handle:
        handle.write(b'{"seq":4,"half')
    assert verify(paths.log, paths.head).first_broken == 4
    AuditLog(tmp_path).append([obs(4)])
    result = verify(paths.log, paths.head)
    assert (result.ok, result.records) == (True, 4)


def test_duplicates_are_ignored_by_event_id_also_after_a_restart(tmp_path: Path):
    first, second = obs(1), obs(2)
    log = AuditLog(tmp_path)
    assert len(log.append([first, second, first])) == 2
    restarted = AuditLog(tmp_path)  # the seen-id index is rebuilt from the log
    assert [r["task_seq"] for r in restarted.append([second, obs(3), first])] == [3]
    assert verify(log.paths.log, log.paths.head).records == 3


def _append_many(home: str, worker: int, count: int) -> None:
    log = AuditLog(Path(home))
    for i in range(count):
        log.append([obs(i + 1, task_id=f"w{worker}")])


def test_two_writers_in_two_processes_never_interleave(tmp_path: Path):
    ctx = multiprocessing.get_context("spawn")  # forking a process with Prefect threads running is unsafe
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w, 40)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    result = verify(AuditPaths(tmp_path).log, AuditPaths(tmp_path).head)
    assert (result.ok, result.records) == (True, 80)


def test_the_cli_names_the_broken_record(artoo_env: Path):
    paths = write_log(artoo_env / "home", 4)
    assert run_cli("audit", "verify")[0] == 0
    rewrite(paths, edit_byte(lines_of(paths), 3, "note"))
    code, out, err = run_cli("audit", "verify")
    assert code == 1
    assert "record 3" in err and "edited" in err


def test_tail_prints_the_last_records_once(artoo_env: Path):
    write_log(artoo_env / "home", 6)
    code, out, _ = run_cli("audit", "tail", "--once", "--lines", "2")
    assert code == 0
    shown = out.strip().splitlines()
    assert len(shown) == 2 and shown[0].split()[0] == "5" and shown[1].split()[0] == "6"
    code, out, _ = run_cli("audit", "tail", "--once", "--lines", "1", "--json")
    assert json.loads(out)["seq"] == 6


def test_follow_yields_lines_appended_later(tmp_path: Path):
    paths = write_log(tmp_path, 1)
    stream = follow(paths.log, last=1, poll_s=0.01)
    assert json.loads(next(stream))["seq"] == 1
    AuditLog(tmp_path).append([obs(2)])
    assert json.loads(next(stream))["seq"] == 2


def test_observation_reads_the_bus_labels_and_ignores_other_events():
    event = {"id": "e1", "occurred": "2026-01-01T00:00:00Z", "event": "artoo.plan_directive",
             "resource": {"prefect.resource.id": "artoo.task.t1", "prefect.resource.name": "t1",
                          "artoo.from": "R7", "artoo.to": "R2", "artoo.seq": "7", "artoo.run": "run-a"},
             "payload": {"kind": "plan_directive"}}
    assert observation(event) == {"event_id": "e1", "occurred": "2026-01-01T00:00:00Z", "task_id": "t1",
                                  "message": "plan_directive", "from_role": "R7", "to_role": "R2", "task_seq": 7,
                                  "run": "run-a", "payload": {"kind": "plan_directive"}}
    assert observation({**event, "event": "prefect.flow-run.Completed"}) is None
    unlabelled = observation({**event, "resource": {"prefect.resource.id": "artoo.task.t2", "artoo.seq": "x"}})
    assert (unlabelled["task_id"], unlabelled["from_role"], unlabelled["task_seq"], unlabelled["run"]) == (
        "t2", "", 0, "")  # an event from before runs were labelled
