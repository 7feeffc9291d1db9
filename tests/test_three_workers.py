"""Many workers, one memory (#18): three Prefect process workers, one PostgreSQL memory, 15 tasks.

Three real ``prefect worker start`` processes, each with its own ARTOO_HOME, PREFECT_HOME,
workspace and working directory (bench.cluster), share only the session's Prefect server,
one memory database and the LLM endpoint.  Fifteen requests go to
their pool; the scripted LLM answers each with the minimal accepting story.  Then:

* every run completed, and the work really was spread over the three workers;
* every Megram the GGS published (read back from the workers' audit chains) is stored in
  PostgreSQL exactly once, and nothing else is;
* the potentials of every pair equal the single-node (embedded DuckDB) result on the same
  Megrams to 1e-9;
* ``artoo audit verify --home w0 --home w1 --home w2`` holds across the workers.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import psycopg
import pytest

from artoo.bench.cluster import Cluster, stories
from artoo.config.contracts import Megram
from artoo.memory.pg_store import PostgresMemoryStore
from artoo.memory.potentials import from_us
from artoo.memory.store import MemoryStore
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from tests.conftest import run_cli

pytestmark = pytest.mark.slow

TASKS = 15
"""Three workers' worth of five at a time: one worker cannot hold them all, so the work must spread; the
throughput benchmark (python -m artoo.bench.cluster_bench) runs more."""


def published_megram_ids(homes) -> list[str]:
    ids = []
    for home in homes:
        log = home / "audit" / "audit.jsonl"
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["message"] == "megram":
                ids.append(record["payload"]["id"])
    return ids


def stored_megrams(url: str) -> list[Megram]:
    with psycopg.connect(url) as con:
        rows = con.execute("SELECT id, level, created_us, last_recalled_us, space, entity, content, state, "
                           "f, sigma, k, derived_from FROM megrams").fetchall()
    return [Megram(id=i, level=lv, created_at=from_us(c), last_recalled_at=None if r is None else from_us(r),
                   space=s, entity=e, content=ct, state=st, f=f, sigma=sg, k=k, derived_from=list(d))
            for i, lv, c, r, s, e, ct, st, f, sg, k, d in rows]


def test_three_workers_share_one_memory_and_one_audit_history(prefect_api, memory_pg_url, tmp_path,
                                                              monkeypatch):
    PostgresMemoryStore(memory_pg_url).close()  # migrate once before three workers race to
    with ScriptedLLMServer(stories(TASKS)) as llm:
        cluster = Cluster(tmp_path, prefect_api, memory_pg_url, llm.base_url, workers=3, per_worker=5).start()
        try:
            result = cluster.run(TASKS, timeout_s=900)
        finally:
            cluster.stop()
    assert result["states"] == {"COMPLETED": TASKS}, result
    per_worker = cluster.runs_per_worker()
    assert sum(per_worker.values()) == TASKS and all(n > 0 for n in per_worker.values()), per_worker

    homes = [cluster.home(n) for n in range(3)]
    published = published_megram_ids(homes)
    stored = stored_megrams(memory_pg_url)
    assert len(published) >= TASKS  # at least one experience per accepted task
    assert sorted(m.id for m in stored) == sorted(set(published))  # exactly the published ones, once each
    assert len(published) == len(set(published))  # and no chain recorded one twice

    at = datetime.now(UTC)
    shared = PostgresMemoryStore(memory_pg_url)
    single = MemoryStore(tmp_path / "single-node")
    try:
        for m in stored:
            single.write(m)
        single.ingest()
        pairs = sorted({(m.space, m.entity) for m in stored})
        assert pairs
        for space, entity in pairs:
            a, b = single.query_mk(space, entity, at), shared.query_mk(space, entity, at)
            assert b.attention == pytest.approx(a.attention, abs=1e-9, rel=0)
            assert b.decision == pytest.approx(a.decision, abs=1e-9, rel=0)
    finally:
        shared.close()
        single.close()

    monkeypatch.chdir(tmp_path)
    args = [a for h in homes for a in ("--home", str(h))]
    code, out, err = run_cli("audit", "verify", *args)
    assert code == 0, out + err
    assert "3 chain(s) intact and in agreement" in out
    (homes[1] / "audit" / "audit.jsonl").write_bytes(
        (homes[1] / "audit" / "audit.jsonl").read_bytes().replace(b'"print a greeting"', b'"print a farewell"', 1))
    code, out, err = run_cli("audit", "verify", *args)
    assert code == 1 and "is broken" in err
