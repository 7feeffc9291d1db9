"""Two runs of one task_id are two conversations: the bus labels each run, the Auditor keys by it.

The perceiver names the task, so a scheduled run and a manual run of the same request share a
task_id and their sequence numbers interleave (1, 1, 2, 2, …).  The pure cases fold scripted
records exactly as the Auditor folds its log; the compatibility cases read a log and a
statistics file written by the writer from before runs were labelled (their bytes are kept
here verbatim); the last cases publish through real ``Bus`` objects as real Prefect events and
run the real Auditor flow against the session's server.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from artoo.tasks.audit.chain import canonical, digest, line_of, seal, verify
from artoo.tasks.audit.log import AuditLog, AuditPaths
from artoo.tasks.audit.persist import load_state, publish_report
from artoo.tasks.audit.report import anomaly_names, build_report, describe, render_markdown
from artoo.tasks.audit.stats import StatsState, fold, reset_window, touched
from artoo.tasks.bus.events import Bus, add_tap, remove_tap
from tests.test_audit_stats import CLEAN, ROUTE, T0, Stream

RUN_A, RUN_B, RUN_C = (f"{c * 8}-{c * 4}-4{c * 3}-8{c * 3}-{c * 12}" for c in "abc")
SEVEN = list(range(1, len(CLEAN) + 1))


def interleave(*streams: Stream) -> Stream:
    """One stream taking a record from each given stream in turn (audit seq and time follow that order)."""
    queues = [list(s.records) for s in streams]
    merged = Stream()
    while any(queues):
        for queue in (q for q in queues if q):
            n = len(merged.records)
            merged.records.append({**queue.pop(0), "seq": n + 1,
                                   "occurred": datetime.fromtimestamp(T0.timestamp() + n, UTC).isoformat()})
    return merged


def run(run_id: str, seqs: list[int] | None = None) -> Stream:
    """A clean conversation of task ``same`` published by run ``run_id`` ("" = unlabelled)."""
    return Stream().add(CLEAN, task="same", seqs=seqs, run=run_id)


CASES = [
    ("two runs interleaved are two conversations", interleave(run(RUN_A), run(RUN_B)),
     [(RUN_A, SEVEN), (RUN_B, SEVEN)], set()),
    ("three runs interleaved are three", interleave(run(RUN_A), run(RUN_B), run(RUN_C)),
     [(RUN_A, SEVEN), (RUN_B, SEVEN), (RUN_C, SEVEN)], set()),
    ("a gap inside one run is still a bus gap", interleave(run(RUN_A, [1, 2, 3, 4, 6, 7, 8]), run(RUN_B)),
     [(RUN_A, [1, 2, 3, 4, 6, 7, 8]), (RUN_B, SEVEN)], {"bus_gap"}),
    ("a number twice inside one run is still a bus gap", interleave(run(RUN_A), run(RUN_B, [1, 2, 3, 3, 4, 5, 6])),
     [(RUN_A, SEVEN), (RUN_B, [1, 2, 3, 3, 4, 5, 6])], {"bus_gap"}),
    ("a labelled run beside an unlabelled one of the same task", interleave(run(""), run(RUN_A)),
     [("", SEVEN), (RUN_A, SEVEN)], set()),
    ("unlabelled runs one after the other: a new conversation at sequence 1, as before",
     Stream().add(CLEAN, task="same").add(CLEAN, task="same"), [("", SEVEN), ("", SEVEN)], set()),
    ("unlabelled runs interleaved still merge (what the run label is for)", interleave(run(""), run("")),
     [("", [1]), ("", [1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7])], {"bus_gap"}),
    ("one run id restarting at sequence 1 (a retried flow run) is a new conversation",
     Stream().add(CLEAN, task="same", run=RUN_A).add(CLEAN, task="same", run=RUN_A),
     [(RUN_A, SEVEN), (RUN_A, SEVEN)], set()),
]


@pytest.mark.parametrize(("story", "stream", "conversations", "anomalies"), CASES, ids=[c[0] for c in CASES])
def test_conversations_are_keyed_by_task_and_run(story, stream: Stream, conversations, anomalies: set[str]):
    state = stream.state()
    assert [(c.run, [e.task_seq for e in c.ordered()]) for c in touched(state)] == conversations
    report = build_report(state, "on-demand")
    assert report.tasks_observed == len(conversations)
    assert anomaly_names(report) == anomalies


def test_an_anomaly_names_the_run_it_belongs_to():
    report = build_report(interleave(run(RUN_A), run(RUN_B, [1, 2, 3, 4, 6, 7, 8])).state(), "on-demand")
    assert report.anomalies == ["bus_gap: task same: missing sequence number(s): 5 [run bbbbbbbb]"]


def test_each_gap_trend_and_its_markdown_row_carry_the_run():
    report = build_report(interleave(run(RUN_A), run(""), run(RUN_B)).state(), "on-demand")
    assert [(g.task_id, g.run) for g in report.gap_trends] == [("same", "aaaaaaaa"), ("same", ""), ("same", "bbbbbbbb")]
    table = render_markdown(report).split("## Gap trends\n")[1].splitlines()
    assert table == ["| task | run | trend |", "|---|---|---|", "| `same` | `aaaaaaaa` | stable |",
                     "| `same` | — | stable |", "| `same` | `bbbbbbbb` | stable |"]


def test_a_window_reset_keeps_a_running_run_and_forgets_finished_ones():
    records = interleave(run(RUN_A), run(RUN_B)).records
    first, rest = records[:9], records[9:]  # run A has sent 1..5, run B 1..4 when the window closes
    state = StatsState(window_start=T0)
    for record in first:
        fold(state, record)
    reset_window(state, T0)
    for record in rest:
        fold(state, record)
    report = build_report(state, "on-demand")
    assert (report.tasks_observed, report.anomalies) == (2, [])  # no false gap across the reset
    assert sorted(state.run_keys["same"]) == [RUN_A, RUN_B]
    reset_window(state, T0)
    reset_window(state, T0)
    assert (state.conversations, state.run_keys, state.open_keys) == ({}, {}, {})


# Written by the audit writer before runs were labelled (git b84205c), byte for byte.
OLD_LOG = (
    b'{"event_id":"old-1","from_role":"R1","hash":"0434b0c90638f0fad942ba9dc37490d8178d33925287d13c9e3bfc992d2ed3ad",'
    b'"message":"task_spec","occurred":"2026-01-01T00:00:01Z","payload":{"kind":"task_spec"},"prev_hash":"'
    + b"0" * 64 + b'","seq":1,"task_id":"old_task","task_seq":1,"to_role":"R2"}\n'
    b'{"event_id":"old-2","from_role":"R2","hash":"c9450b21db6fa517f419295f12880ae6356c54151c92caf3dda4c37d1484b9a0",'
    b'"message":"dispatch_manifest","occurred":"2026-01-01T00:00:02Z","payload":{"kind":"dispatch_manifest"},'
    b'"prev_hash":"ef8d5ce1c8db75f5953bbb8dfe7c805e9524b0cd30b1835295030e3536d5058a","seq":2,"task_id":"old_task",'
    b'"task_seq":2,"to_role":"R4b"}\n'
)
OLD_HEAD = '{"records": 2, "link": "918729da13cb6e945f4386314d2ffc5abdde8599743a7c5ccb4bebef5de73501"}'
OLD_STATS = (
    '{"version":1,"window_start":"2026-01-01T12:00:00Z","window_seq":0,"through_seq":2,"through_offset":687,'
    '"through_link":"918729da13cb6e945f4386314d2ffc5abdde8599743a7c5ccb4bebef5de73501","conversations":'
    '{"old_task#1":{"key":"old_task#1","task_id":"old_task","entries":[{"seq":1,"task_seq":1,"at":1767225601.0,'
    '"kind":"task_spec","frm":"R1","to":"R2","facts":{}},{"seq":2,"task_seq":2,"at":1767225602.0,'
    '"kind":"dispatch_manifest","frm":"R2","to":"R4b","facts":{}}],"idle_windows":0}},'
    '"open_keys":{"old_task":"old_task#1"},"next_key":2,"history":[],"unreadable":[]}'
)


def old_files(home: Path) -> AuditPaths:
    paths = AuditPaths(home)
    paths.dir.mkdir(parents=True)
    paths.log.write_bytes(OLD_LOG)
    paths.head.write_text(OLD_HEAD)
    paths.stats.write_text(OLD_STATS)
    return paths


def observed(task_seq: int, run_id: str, kind: str = "task_spec") -> dict:
    frm, to = ROUTE[kind]
    return {"event_id": str(uuid.uuid4()), "occurred": f"2026-01-01T00:01:{task_seq:02d}Z", "task_id": "old_task",
            "message": kind, "from_role": frm, "to_role": to, "task_seq": task_seq, "run": run_id,
            "payload": {"kind": kind}}


def test_an_unlabelled_observation_is_sealed_exactly_as_the_old_writer_sealed_it():
    old = json.loads(OLD_LOG.splitlines()[0])
    fields = {k: old[k] for k in ("event_id", "occurred", "task_id", "message", "from_role", "to_role", "task_seq",
                                  "payload")}
    assert line_of(seal({**fields, "run": ""}, 1, old["prev_hash"])) == OLD_LOG.splitlines(keepends=True)[0]
    assert seal({**fields, "run": RUN_A}, 1, old["prev_hash"])["run"] == RUN_A


def test_an_old_log_and_state_keep_working_and_new_runs_chain_onto_them(tmp_path: Path):
    paths = old_files(tmp_path)
    assert verify(paths.log, paths.head).ok
    assert load_state(paths) is not None  # the old statistics file still loads (new fields default)
    new = AuditLog(tmp_path).append([observed(1, RUN_A), observed(1, RUN_B), observed(2, RUN_A, "dispatch_manifest"),
                                     observed(2, RUN_B, "dispatch_manifest")])
    assert [r["run"] for r in new] == [RUN_A, RUN_B, RUN_A, RUN_B]
    assert paths.log.read_bytes().startswith(OLD_LOG)
    result = verify(paths.log, paths.head)
    assert (result.ok, result.records) == (True, 6)
    report = publish_report(paths, "on-demand", now=T0)
    assert (report.tasks_observed, report.anomalies) == (3, [])  # the old conversation and the two runs
    state = load_state(paths)
    assert sorted((c.key, c.run) for c in state.conversations.values()) == [
        ("old_task#1", ""), ("old_task#2", RUN_A), ("old_task#3", RUN_B)]
    assert "[run bbbbbbbb] #2 dispatch_manifest" in describe(paths.log.read_bytes().splitlines()[-1])


@pytest.mark.parametrize("bad", [5, ""])
def test_verify_refuses_a_run_field_that_is_not_a_non_empty_string(tmp_path: Path, bad):
    paths = old_files(tmp_path)
    record = json.loads(OLD_LOG.splitlines()[0])
    body = {k: v for k, v in record.items() if k != "hash"} | {"run": bad}
    forged = {**body, "hash": digest(canonical(body))}  # a consistent hash: only the field itself is wrong
    paths.log.write_bytes(line_of(forged) + OLD_LOG.splitlines(keepends=True)[1])
    result = verify(paths.log)
    assert (result.ok, result.first_broken) == (False, 1)
    assert result.reason == "run is not a non-empty string"


class Message(BaseModel):
    """A bus message of any kind (the Auditor reads kind, roles, sequence, run and a few payload fields)."""

    model_config = ConfigDict(extra="allow")
    kind: str


def publish_interleaved(buses: list[Bus]) -> None:
    for kind, payload in CLEAN:
        for bus in buses:
            bus.publish(Message(kind=kind, **payload), *ROUTE[kind])


def test_the_bus_labels_each_run_and_the_tap_keeps_runs_apart():
    from artoo.flows.auditor import PublishedTap

    seen: list[dict] = []
    tap = PublishedTap()
    buses = [Bus("same", sink=seen.append, emit=False, run_id=RUN_A), Bus("same", emit=False, run_id=RUN_B)]
    add_tap(tap)
    try:
        publish_interleaved(buses)
    finally:
        remove_tap(tap)
    assert {r["resource"]["artoo.run"] for r in seen} == {RUN_A}
    assert {k: sorted(s) for k, s in tap.runs.items()} == {("same", RUN_A): SEVEN, ("same", RUN_B): SEVEN}
    assert {k: sorted(s) for k, s in tap.published.items()} == {"same": SEVEN}
    fresh = {Bus("x", emit=False).run_id for _ in range(2)}  # outside any flow run: a fresh uuid4 hex each
    assert len(fresh) == 2 and all(len(r) == 32 and int(r, 16) >= 0 for r in fresh)


def test_a_bus_made_inside_a_flow_run_carries_that_flow_run_id(prefect_api: str):
    from prefect import flow

    @flow(name="bus-run-id", persist_result=False)
    def make_bus() -> str:
        return Bus("inside", emit=False).run_id

    state = make_bus(return_state=True)
    assert state.result() == str(state.state_details.flow_run_id)


def test_two_concurrent_runs_of_one_task_are_two_conversations_on_a_real_server(prefect_api: str, artoo_env: Path):
    from artoo.flows.auditor import observe_run
    from tests.test_audit_flow import audit_records, flush, report, run_auditor, wait_for_server

    task_id, runs = f"twice_{uuid.uuid4().hex[:8]}", [uuid.uuid4().hex, uuid.uuid4().hex]
    start = datetime.now(UTC) - timedelta(seconds=1)
    publish_interleaved([Bus(task_id, run_id=r) for r in runs])
    flush()
    assert len(wait_for_server(start, 2 * len(CLEAN), task_id)) == 2 * len(CLEAN)
    run_auditor(run_for_s=0, since=start)
    records = audit_records(artoo_env / "home", task_id)
    assert sorted((r["run"], r["task_seq"]) for r in records) == sorted((r, s) for r in runs for s in SEVEN)
    current = report()
    assert [g["task_id"] for g in current["gap_trends"]].count(task_id) == 2
    assert [a for a in current["anomalies"] if task_id in a] == []
    # The embedded pass waits per (task_id, run): another run's identical numbers never stand in.
    assert observe_run({(task_id, runs[0]): set(SEVEN)}, start).complete
    other = observe_run({(task_id, "never-published"): {1}}, start, wait_s=1.0)
    assert other.missing == {(task_id, "never-published"): [1]}
