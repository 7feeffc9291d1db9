"""MemoryStore on real DuckDB files: SQL potentials vs the reference, the spool, ingest."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import random
import uuid
from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from artoo.config.contracts import Megram
from artoo.config.errors import ConfigurationError
from artoo.config.settings import MemoryParams
from artoo.memory.potentials import action_for, reference_potentials
from artoo.memory.schema import LATEST_VERSION
from artoo.memory.spool import encode_megram
from artoo.memory.store import MemoryStore

NOW = datetime.now(UTC)
PAIRS = [("intent:a_b_c", "env:local"), ("tool:shell", "path:/tmp/x"), ("tool:shell", "path:/tmp/y")]


def mk(
    i: int | str = 0,
    *,
    space="intent:a_b_c",
    entity="env:local",
    level="M",
    f=0.8,
    sigma=1.0,
    k=0.05,
    days_ago=0.0,
) -> Megram:
    return Megram(
        id=f"m-{i}",
        level=level,
        created_at=NOW - timedelta(days=days_ago),
        space=space,
        entity=entity,
        content=f"event {i}",
        state="success",
        f=f,
        sigma=sigma,
        k=k,
    )


def random_megram(rng: random.Random) -> Megram:
    space, entity = rng.choice(PAIRS)
    level = rng.choice("MMMKKC")
    created = NOW - timedelta(days=rng.uniform(0, 60), microseconds=rng.randrange(10**6))
    recalled = created + timedelta(days=rng.uniform(0, 5)) if rng.random() < 0.3 else None
    return Megram(
        id=str(uuid.UUID(int=rng.getrandbits(128))),
        level=level,
        created_at=created,
        last_recalled_at=recalled,
        space=space,
        entity=entity,
        content="x",
        state="s",
        f=rng.uniform(0, 1),
        sigma=rng.choice([-1.0, 0.0, 0.5, 1.0, rng.uniform(-1, 1)]),
        k=0.0 if level == "C" else rng.choice([0.05, 0.2, 0.5]),
    )


def stored(store: MemoryStore) -> dict[str, tuple]:
    with store.exclusive() as con:
        rows = con.execute("SELECT id, level, last_recalled_at, sigma, k FROM megrams").fetchall()
    return {r[0]: r[1:] for r in rows}


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path, reader_idle_s=0.05)
    yield s
    s.close()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("pending", ["none", "all", "half"])
def test_sql_potentials_agree_with_reference(tmp_path, seed, pending):
    rng = random.Random(seed)
    megrams = [random_megram(rng) for _ in range(rng.randint(30, 150))]
    params = MemoryParams()
    store = MemoryStore(tmp_path, params, reader_idle_s=0.05)
    split = {"none": len(megrams), "all": 0, "half": len(megrams) // 2}[pending]
    for m in megrams[:split]:
        store.write(m)
    assert store.ingest() == split
    for m in megrams[split:]:
        store.write(m)
    for shift in (0.0, 3.5, 45.0, 400.0, -20.0):
        at = NOW + timedelta(days=shift)
        listed = {(s, e): p for s, e, p in store.pairs_with_space_prefix("tool:", at)}
        for space, entity in PAIRS + [("intent:unknown", "env:local")]:
            attention, decision = reference_potentials(
                [m for m in megrams if (m.space, m.entity) == (space, entity)], at
            )
            got = store.query_mk(space, entity, at)
            assert got.attention == pytest.approx(attention, rel=1e-9, abs=1e-12)
            assert got.decision == pytest.approx(decision, rel=1e-9, abs=1e-12)
            assert got.action == action_for(attention, decision, params)
            if space.startswith("tool:"):
                assert listed[(space, entity)].attention == pytest.approx(attention, rel=1e-9, abs=1e-12)
                assert listed[(space, entity)].decision == pytest.approx(decision, rel=1e-9, abs=1e-12)
    store.close()


def test_written_megram_is_visible_at_once_and_counted_once_after_ingest(store):
    store.write(mk(1, f=0.9))
    before = store.query_mk("intent:a_b_c", "env:local", NOW)
    assert before.attention == pytest.approx(0.9)
    assert store.ingest() == 1
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(0.9)
    assert store.ingest() == 0


def test_same_megram_written_twice_is_stored_once(store):
    store.write(mk(1))
    store.write(mk(1))
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(0.8)
    assert store.ingest() == 1
    store.write(mk(1))
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(0.8)
    assert store.ingest() == 0
    assert list(stored(store)) == ["m-1"]


def test_batch_mixing_new_stored_and_repeated_ids_inserts_each_new_id_once(store):
    store.write(mk(1))
    store.write(mk(2, space="tool:shell", entity="path:/tmp/x"))
    assert store.ingest() == 2
    for i in (1, 3, 3, 2, 4):  # 1 and 2 are stored, 3 comes twice in the batch, 4 is new
        store.write(mk(i) if i != 2 else mk(2, space="tool:shell", entity="path:/tmp/x"))
    assert store.ingest() == 2
    assert sorted(stored(store)) == ["m-1", "m-2", "m-3", "m-4"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"f": float("nan")}, "f is not a finite number"),
        ({"sigma": float("inf")}, "sigma is not a finite number"),
        ({"id": ""}, "empty id"),
        ({"space": ""}, "empty space"),
    ],
)
def test_write_refuses_bad_megrams(store, change, message):
    with pytest.raises(ValueError, match=message):
        store.write(mk(1).model_copy(update=change))
    assert store.stats()["pending"]["megrams"] == 0


def test_closed_spool_is_deleted_after_ingest_and_reingest_inserts_nothing(tmp_path):
    writer = MemoryStore(tmp_path)
    for i in range(5):
        writer.write(mk(i))
    spools = list(writer.spool_dir.glob("*.jsonl"))
    saved = {p.name: p.read_bytes() for p in spools}
    writer.close()
    other = MemoryStore(tmp_path)
    assert other.ingest() == 5
    assert list(other.spool_dir.glob("*.jsonl")) == []
    for name, data in saved.items():  # a crash between commit and delete leaves the file behind
        (other.spool_dir / name).write_bytes(data)
    assert other.ingest() == 0
    assert list(other.spool_dir.glob("*.jsonl")) == []
    for name, data in saved.items():  # even under a name the offsets never saw: ids deduplicate
        (other.spool_dir / f"copy-{name}").write_bytes(data)
    assert other.ingest() == 0
    assert sorted(stored(other)) == [f"m-{i}" for i in range(5)]
    other.close()


def test_live_writer_spool_is_kept_and_its_partial_line_waits(store):
    path = store.spool_dir / "1-live-00001.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_EX)
    line = encode_megram(mk(2))
    os.write(fd, encode_megram(mk(1)) + line[:30])
    assert store.ingest() == 1
    assert path.exists()
    os.write(fd, line[30:])
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(1.6)
    os.close(fd)
    assert store.ingest() == 1
    assert not path.exists()
    assert sorted(stored(store)) == ["m-1", "m-2"]


def test_torn_last_line_of_a_killed_writer_is_skipped_and_logged(store, caplog):
    data = b"".join(encode_megram(mk(i)) for i in range(3)) + encode_megram(mk(99))[:45]
    (store.spool_dir / "4242-dead-00001.jsonl").write_bytes(data)
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(2.4)
    with caplog.at_level(logging.WARNING, logger="artoo.memory"):
        assert store.ingest() == 3
    assert "torn last line" in caplog.text
    assert sorted(stored(store)) == ["m-0", "m-1", "m-2"]
    assert list(store.spool_dir.glob("*.jsonl")) == []


def test_invalid_lines_are_quarantined_not_lost(store, caplog):
    bad_level = encode_megram(mk(5)).replace(b'"level":"M"', b'"level":"X"')
    data = encode_megram(mk(1)) + b"this is not json\n" + bad_level + encode_megram(mk(2))
    (store.spool_dir / "77-dead-00001.jsonl").write_bytes(data)
    with caplog.at_level(logging.ERROR, logger="artoo.memory"):
        assert store.ingest() == 2
    assert "quarantined 2" in caplog.text
    quarantined = [json.loads(line) for line in store.quarantine_path.read_text().splitlines()]
    assert [(q["file"], q["reason"]) for q in quarantined] == [
        ("77-dead-00001.jsonl", "not valid JSON"),
        ("77-dead-00001.jsonl", "bad level"),
    ]
    assert quarantined[0]["line"] == "this is not json"
    assert json.loads(quarantined[1]["line"])["id"] == "m-5"
    assert store.stats()["quarantined_lines"] == 2
    assert sorted(stored(store)) == ["m-1", "m-2"]


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        (b'{"op":"r","id":"x","space":"a","entity":"b","created_at":1,"f":"oops"}', "f has the wrong type"),
        (b'{"op":"r","id":"x","created_at":1}', "missing space"),
        (b'{"op":"m","id":"x","created_at":1,"bogus":1}', "unknown fields ['bogus']"),
        (b'{"op":"x","id":"x","space":"a","entity":"b","created_at":1}', "unknown op"),
        (
            encode_megram(mk(7)).rstrip().replace(b'"created_at":', b'"created_at":9' + b"9" * 25),
            "unreadable",
        ),
        (encode_megram(mk(8)).rstrip().replace(b'"f":0.8', b'"f":NaN'), "f is not a finite number"),
    ],
)
def test_each_kind_of_bad_line_is_quarantined_with_its_reason(store, bad_line, reason):
    data = encode_megram(mk(1)) + bad_line + b"\n" + encode_megram(mk(2))
    (store.spool_dir / "78-dead-00001.jsonl").write_bytes(data)
    assert store.ingest() == 2
    (record,) = [json.loads(line) for line in store.quarantine_path.read_text().splitlines()]
    assert record["reason"].startswith(reason) and record["line"] == bad_line.decode()
    assert sorted(stored(store)) == ["m-1", "m-2"]


def test_query_c_records_a_recall_applied_at_ingest(store):
    store.write(mk("rule", level="C", k=0.0))
    store.ingest()
    assert stored(store)["m-rule"][1] is None
    assert [r.id for r in store.query_c("intent:a_b_c", "env:local", recall=False)] == ["m-rule"]
    store.ingest()
    assert stored(store)["m-rule"][1] is None
    sops = store.query_c("intent:a_b_c", "env:local")
    assert [(s.id, s.sigma, s.content) for s in sops] == [("m-rule", 1.0, "event rule")]
    store.ingest()
    recalled = stored(store)["m-rule"][1]
    assert recalled is not None and abs(recalled.replace(tzinfo=UTC) - datetime.now(UTC)) < timedelta(
        minutes=1
    )


def test_pending_c_megram_is_served_by_query_c(store):
    store.write(mk("fresh", level="C", k=0.0, sigma=-1.0))
    assert [(s.id, s.sigma) for s in store.query_c("intent:a_b_c", "env:local")] == [("m-fresh", -1.0)]
    assert store.query_c("intent:a_b_c", "tool:other") == []


def test_negative_feedback_appends_and_never_mutates_the_rule(store):
    store.write(mk("rule", level="C", k=0.0, sigma=1.0))
    store.ingest()
    feedback = store.record_negative_feedback("m-rule", "the rule broke the build")
    assert (feedback.space, feedback.entity, feedback.level) == ("intent:a_b_c", "env:local", "M")
    assert feedback.sigma < 0 and "m-rule" in feedback.content
    assert store.query_mk("intent:a_b_c", "env:local").decision < 0
    store.ingest()
    assert stored(store)["m-rule"][0] == "C" and stored(store)["m-rule"][2] == 1.0
    with pytest.raises(ValueError, match="no Megram"):
        store.record_negative_feedback("missing", "x")


def test_stats_count_levels_and_pending(store):
    for i, level in enumerate("MMKC"):
        store.write(mk(i, level=level))
    store.ingest()
    store.write(mk(9))
    stats = store.stats()
    assert stats["levels"] == {"M": 2, "K": 1, "C": 1, "T": 0}
    assert stats["total"] == 4
    assert stats["pending"]["megrams"] == 1 and stats["pending"]["files"] == 1
    assert stats["db_bytes"] > 0 and stats["schema_version"] == LATEST_VERSION


def test_migrations_are_recorded_once(tmp_path):
    MemoryStore(tmp_path).ingest()
    MemoryStore(tmp_path).ingest()
    con = duckdb.connect(str(tmp_path / "memory" / "memory.duckdb"), read_only=True)
    versions = con.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    con.close()
    assert [v for (v,) in versions] == list(range(1, LATEST_VERSION + 1))


def test_database_from_a_newer_artoo_is_refused(tmp_path):
    MemoryStore(tmp_path).ingest()
    con = duckdb.connect(str(tmp_path / "memory" / "memory.duckdb"))
    con.execute("INSERT INTO schema_version VALUES (999, 'from the future', now()::TIMESTAMP)")
    con.close()
    with pytest.raises(ConfigurationError, match="newer"):
        MemoryStore(tmp_path).query_mk("intent:a_b_c", "env:local")


def test_spools_rotate_and_rotated_files_are_retired(tmp_path):
    store = MemoryStore(tmp_path, rotate_bytes=1000)
    for i in range(30):
        store.write(mk(i))
    assert len(list(store.spool_dir.glob("*.jsonl"))) > 3
    assert store.ingest() == 30
    assert len(list(store.spool_dir.glob("*.jsonl"))) == 1  # only the file still open for appends
    store.close()


def test_compaction_keeps_rows_and_answers(store):
    rng = random.Random(7)
    megrams = [random_megram(rng) for _ in range(300)]
    for m in megrams:
        store.write(m)
    store.ingest()
    before = [store.query_mk(s, e, NOW) for s, e in PAIRS]
    assert store.compact(force=True) is True
    assert store.compact() is False
    after = [store.query_mk(s, e, NOW) for s, e in PAIRS]
    assert [(p.attention, p.decision) for p in after] == [
        (pytest.approx(p.attention, rel=1e-12), pytest.approx(p.decision, rel=1e-12)) for p in before
    ]
    assert sorted(stored(store)) == sorted(m.id for m in megrams)
