"""The shared PostgreSQL Megram store against the embedded DuckDB store, on the same Megrams.

Table-driven: every case writes the same Megrams to both backends (DuckDB both spooled and
ingested) and compares potentials (to 1e-9, and to the Python reference), pair listings,
C rules, and a whole Dreamer pass.  Plus the many-writers property: every Megram id stored
exactly once however many writers write it.  Real PostgreSQL (a private cluster per session,
one database per test), real DuckDB files under tmp_path.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from artoo.config.contracts import Megram
from artoo.config.errors import ConfigurationError
from artoo.config.protocol import Consolidation
from artoo.config.settings import MemoryParams
from artoo.memory.backends import open_store
from artoo.memory.dreamer import dream
from artoo.memory.pg_store import PostgresMemoryStore, libpq_url, redact
from artoo.memory.potentials import reference_potentials
from artoo.memory.store import MemoryStore

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
TOL = 1e-9


def mg(i: int, space: str = "tool:shell", entity: str = "env:local", *, level: str = "M", days: float = 1.0,
       f: float = 0.8, sigma: float = 1.0, k: float = 0.05, recalled: float | None = None) -> Megram:
    return Megram(id=f"m{i}-{space}-{entity}", level=level, created_at=NOW - timedelta(days=days),
                  last_recalled_at=None if recalled is None else NOW - timedelta(days=recalled),
                  space=space, entity=entity, content=f"event {i}", state="accept", f=f, sigma=sigma, k=k)


CASES = {
    "empty pair": [],
    "one fresh success": [mg(1, days=0)],
    "mixed signs and decays": [mg(i, f=0.1 * (i % 9) - 0.4, sigma=(-1.0) ** i, k=0.01 * i, days=0.7 * i)
                               for i in range(1, 40)],
    "recalled rule and K level": [mg(1, level="K", k=0.05, days=90, recalled=2),
                                  mg(2, level="C", k=0.0, days=30, sigma=-1.0), mg(3, days=5, f=-0.6)],
    "created after the query time": [mg(1, days=-2), mg(2, days=3, sigma=-1.0)],
    "many pairs under one prefix": [mg(i, space=f"tool:t{i % 4}", entity=f"env:e{i % 3}", days=i / 3,
                                       sigma=1.0 if i % 5 else -1.0) for i in range(60)]
                                   + [mg(99, space="intent:other")],
    "tiny and huge ages": [mg(1, days=1e-6, f=0.3), mg(2, days=3650, k=0.001, f=-0.9), mg(3, days=0.5, k=2.0)],
}


@pytest.fixture
def pg(memory_pg_url: str):
    store = PostgresMemoryStore(memory_pg_url)
    yield store
    store.close()


def both(tmp_path, pg: PostgresMemoryStore, megrams: list[Megram], *, ingest: bool) -> MemoryStore:
    duck = MemoryStore(tmp_path, reader_idle_s=0.05)
    for m in megrams:
        duck.write(m)
        pg.write(m)
    if ingest:
        duck.ingest()
    return duck


def pairs_of(megrams: list[Megram]) -> set[tuple[str, str]]:
    return {(m.space, m.entity) for m in megrams} | {("tool:shell", "env:local")}


@pytest.mark.parametrize("ingest", [True, False], ids=["ingested", "spooled"])
@pytest.mark.parametrize("case", list(CASES))
def test_potentials_equal_the_single_node_result(tmp_path, pg, case, ingest):
    megrams = CASES[case]
    duck = both(tmp_path, pg, megrams, ingest=ingest)
    try:
        for space, entity in sorted(pairs_of(megrams)):
            for at in (NOW, NOW + timedelta(days=17)):
                single, shared = duck.query_mk(space, entity, at), pg.query_mk(space, entity, at)
                ref = reference_potentials([m for m in megrams if (m.space, m.entity) == (space, entity)], at)
                assert shared.attention == pytest.approx(single.attention, abs=TOL, rel=0)
                assert shared.decision == pytest.approx(single.decision, abs=TOL, rel=0)
                assert (shared.attention, shared.decision) == pytest.approx(ref, abs=TOL, rel=0)
                assert shared.action == single.action
        for prefix in ("tool:", "intent:", "nothing:"):
            single_pairs = duck.pairs_with_space_prefix(prefix, NOW)
            shared_pairs = pg.pairs_with_space_prefix(prefix, NOW)
            assert [(s, e) for s, e, _ in shared_pairs] == [(s, e) for s, e, _ in single_pairs]
            for (_, _, a), (_, _, b) in zip(single_pairs, shared_pairs, strict=True):
                assert (b.attention, b.decision) == pytest.approx((a.attention, a.decision), abs=TOL, rel=0)
        for space, entity in pairs_of(megrams):
            assert pg.query_c(space, entity, recall=False) == duck.query_c(space, entity, recall=False)
    finally:
        duck.close()


def test_a_megram_written_by_many_writers_is_stored_once(memory_pg_url):
    megrams = [mg(i, days=i / 10) for i in range(200)]
    stores = [PostgresMemoryStore(memory_pg_url) for _ in range(4)]

    def writer(store: PostgresMemoryStore, offset: int) -> None:
        for m in megrams[offset:] + megrams[:offset]:  # every writer writes every Megram, from another start
            store.write(m)

    threads = [threading.Thread(target=writer, args=(s, 50 * n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with psycopg.connect(memory_pg_url) as con:
        assert con.execute("SELECT count(*), count(DISTINCT id) FROM megrams").fetchone() == (200, 200)
    assert stores[0].stats()["total"] == 200
    expected = reference_potentials(megrams, NOW)
    got = stores[3].query_mk("tool:shell", "env:local", NOW)
    assert (got.attention, got.decision) == pytest.approx(expected, abs=TOL, rel=0)
    for s in stores:
        s.close()


class Distiller:
    """Answers what it is asked, deterministically (the same rule text in both backends)."""

    def __call__(self, space, entity, kind, megrams):
        return Consolidation(kind=kind, content=f"{kind} for {space} from {len(megrams)}")


def dream_seed() -> list[Megram]:
    good = [mg(i, space="tool:good", days=0.1 * i, f=0.9) for i in range(8)]
    bad = [mg(i, space="tool:bad", days=0.1 * i, f=0.9, sigma=-1.0) for i in range(8)]
    stale = [mg(i, space="tool:stale", days=200, f=0.5) for i in range(5)]
    broke = [mg(1, space="tool:broke", level="C", k=0.0, sigma=1.0, days=3),
             *[mg(i, space="tool:broke", days=0.5, sigma=-1.0) for i in range(2, 5)]]
    return good + bad + stale + broke


def test_a_dreamer_pass_does_the_same_in_both_backends(tmp_path, pg):
    duck = both(tmp_path, pg, dream_seed(), ingest=False)
    try:
        single, shared = dream(duck, NOW, Distiller()), dream(pg, NOW, Distiller())
        assert (shared.deleted, shared.demoted, shared.promoted) == (single.deleted, single.demoted, single.promoted)
        assert (single.deleted, single.demoted, single.promoted) == (5, 1, 2)
        assert sorted(shared.deleted_ids) == sorted(single.deleted_ids)
        assert shared.demoted_ids == single.demoted_ids
        for space in ("tool:good", "tool:bad", "tool:stale", "tool:broke"):
            a, b = duck.query_mk(space, "env:local", NOW), pg.query_mk(space, "env:local", NOW)
            assert (b.attention, b.decision) == pytest.approx((a.attention, a.decision), abs=TOL, rel=0)
            assert [(r.content, r.sigma) for r in pg.query_c(space, "env:local", recall=False)] == \
                   [(r.content, r.sigma) for r in duck.query_c(space, "env:local", recall=False)]
        with psycopg.connect(pg.url) as con:
            ops = dict(con.execute("SELECT op, count(*) FROM memory_ops GROUP BY op").fetchall())
        assert ops == {"forget": 5, "demote": 1, "promote": 2}
        again = dream(pg, NOW, Distiller())
        assert (again.deleted, again.demoted, again.promoted) == (0, 0, 0)
    finally:
        duck.close()


def test_a_pass_that_fails_writes_nothing_back(pg):
    for m in dream_seed():
        pg.write(m)
    with pytest.raises(RuntimeError, match="boom"), pg.exclusive() as con:
        con.execute("DELETE FROM megrams")
        raise RuntimeError("boom")
    assert pg.stats()["total"] == len(dream_seed())


def test_recall_resets_the_decay_clock_and_feedback_lands_on_the_pair(pg):
    rule = mg(1, level="C", k=0.0, days=10)
    pg.write(rule)
    [record] = pg.query_c(rule.space, rule.entity)
    with psycopg.connect(pg.url) as con:
        recalled = con.execute("SELECT last_recalled_us FROM megrams WHERE id = %s", [rule.id]).fetchone()[0]
    assert recalled is not None
    feedback = pg.record_negative_feedback(record.id, "it broke the build")
    assert (feedback.space, feedback.entity, feedback.sigma) == (rule.space, rule.entity, -1.0)
    assert pg.query_mk(rule.space, rule.entity).decision < 0
    with pytest.raises(ValueError, match="no Megram"):
        pg.record_negative_feedback("missing", "x")


def test_export_from_postgres_imports_into_duckdb_identically(tmp_path, pg):
    for m in CASES["mixed signs and decays"]:
        pg.write(m)
    assert pg.export_parquet(tmp_path / "mem.parquet") == 39
    with MemoryStore(tmp_path / "home") as duck:
        assert duck.import_parquet(tmp_path / "mem.parquet") == 39
        a, b = duck.query_mk("tool:shell", "env:local", NOW), pg.query_mk("tool:shell", "env:local", NOW)
        assert (b.attention, b.decision) == pytest.approx((a.attention, a.decision), abs=TOL, rel=0)
    assert pg.import_parquet(tmp_path / "mem.parquet") == 0  # every id already there


@pytest.mark.parametrize(("url", "problem"), [
    ("", "postgres_url is empty"),
    ("mysql://x@h/db", "must be a postgresql:// URL"),
    ("postgresql://nobody@127.0.0.1:1/none", "cannot reach the memory database"),
])
def test_bad_settings_are_configuration_errors(url, problem):
    with pytest.raises(ConfigurationError, match=problem):
        PostgresMemoryStore(url)


@pytest.mark.parametrize(("url", "expected"), [
    ("postgresql+asyncpg://prefect@h:5/p", "postgresql://prefect@h:5/p"),
    ("postgres://u:pw@h/db", "postgresql://u:pw@h/db"),
])
def test_urls_pasted_from_prefect_settings_work(url, expected):
    assert libpq_url(url) == expected
    assert "pw" not in redact(url)


def test_the_setting_picks_the_backend(tmp_path, memory_pg_url):
    with open_store(tmp_path, MemoryParams()) as embedded:
        assert isinstance(embedded, MemoryStore)
    with open_store(tmp_path, MemoryParams(backend="postgres", postgres_url=memory_pg_url)) as shared:
        assert isinstance(shared, PostgresMemoryStore) and shared.stats()["backend"] == "postgres"


def test_both_backends_are_the_memory_service_the_flows_use(tmp_path, pg):
    """#27: one Protocol; a method one backend lacks used to fail only where a flow called it."""
    from artoo.memory.backends import MemoryService

    duck = MemoryStore(tmp_path, reader_idle_s=0.05)
    try:
        assert isinstance(duck, MemoryService) and isinstance(pg, MemoryService)
    finally:
        duck.close()


def test_a_planner_is_calibrated_the_same_from_either_backend(tmp_path, pg):
    """The PostgreSQL store had no ``recent`` nor ``query_c_prefix``: on a cluster every calibration failed
    ("memory calibration unavailable") and planners saw no memory at all."""
    from artoo.memory.calibration import calibrate_from_store
    from artoo.memory.tags import intent_space, path_entity

    intent = "count the lines of notes.txt"

    def now(i: int, space: str, entity: str = "env:local", level: str = "M", sigma: float = 1.0) -> Megram:
        """A Megram written a minute ago: calibration reads memory at the wall clock."""
        return mg(i, space=space, entity=entity, level=level, sigma=sigma, f=0.85, k=0.0 if level == "C" else 0.05,
                  days=(NOW - datetime.now(UTC)).total_seconds() / 86400 + 1 / 1440)

    write_failed = path_entity("/w/data.csv", "write")
    megrams = [now(1, intent_space(intent)), now(2, intent_space(intent)),
               now(3, "tool:shell", write_failed, sigma=-1.0), now(5, "tool:shell", write_failed, sigma=-1.0),
               now(4, "tool:shell", path_entity("/w/logs"), level="C")]
    duck = both(tmp_path, pg, megrams, ingest=True)
    try:
        single, shared = (calibrate_from_store(s, intent, [], []) for s in (duck, pg))
    finally:
        duck.close()
    assert shared.prompt_block() == single.prompt_block()
    assert shared.must_not_pairs == {("shell", "/w/data.csv", "write")}
    assert [s.id for s in shared.tool_sops] == [megrams[-1].id]
    assert "last time: " in shared.prompt_block()  # the intent's newest episode quoted (``recent``)
