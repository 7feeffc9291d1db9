"""Many writers, one memory: PostgreSQL (artoo's shared store) and DuckLake, measured side by side.

Why this exists: the multi-writer memory is chosen by measurement, not by taste.  The two
candidates run the same workload here, each in its own process: single-writer durable
writes (the GGS writes one Megram at a time), three processes writing the *same* ids at once
(exactly-once under concurrency), and point potentials queries on one pair.

DuckLake cannot run inside artoo's own environment: ``duckdb-extension-ducklake`` 1.5.5 needs
exactly ``duckdb`` 1.5.5 and artoo pins the duckdb its users' memory files were written by.
So the DuckLake side runs in a throwaway virtualenv (``ARTOO_DUCKLAKE_PYTHON``, default
/tmp/ducklake-venv/bin/python, with duckdb==1.5.5, duckdb-extension-ducklake==1.5.5 and
duckdb-extension-postgres-scanner==1.5.5) and this file is also its worker script: it
imports nothing of artoo in ``--backend ducklake`` mode.  DuckLake's catalog lives in the
same private PostgreSQL cluster, its Parquet data files in a shared directory.

    python -m artoo.bench.memory_backends                                  # the side-by-side table
    python bench/memory_backends.py --backend ducklake --pg DSN --data DIR   # one side, JSON
"""

from __future__ import annotations

import argparse
import glob
import json
import multiprocessing
import os
import statistics
import sys
import time

WRITES = 300
CONCURRENT = 3
QUERIES = 100
NOW_US = 1_780_000_000_000_000
_MK = """SELECT coalesce(sum(abs(f) * w), 0.0), coalesce(sum(sigma * f * w), 0.0) FROM (
    SELECT f, sigma, exp(-k * (greatest(0, {at} - coalesce(last_recalled_us, created_us)) / 86400000000.0)) AS w
    FROM {table} WHERE space = {space} AND entity = {entity} AND level IN ('M', 'K')) AS t"""


def rows(n: int, prefix: str = "m") -> list[tuple]:
    """n Megram rows over 10 pairs (id, level, created_us, recalled, space, entity, content, state, f, σ, k)."""
    return [(f"{prefix}{i}", "M", NOW_US - i * 60_000_000, None, f"tool:tool{i % 10}", "env:local", f"event {i}",
             "accept", 0.5 + (i % 5) / 10, 1.0 if i % 3 else -1.0, 0.05) for i in range(n)]


# ── DuckLake side (runs in the side venv: duckdb 1.5.5 only) ─────────────────────────────────

def _lake(pg: str, data: str):
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for module in ("duckdb_extension_ducklake", "duckdb_extension_postgres_scanner"):
        folder = os.path.dirname(__import__(module).__file__)
        con.execute(f"LOAD '{glob.glob(folder + '/extensions/*/*.duckdb_extension')[0]}'")
    con.execute(f"ATTACH 'ducklake:postgres:{pg}' AS lake (DATA_PATH '{data}')")
    con.execute("""CREATE TABLE IF NOT EXISTS lake.megrams (id VARCHAR, level VARCHAR, created_us BIGINT,
        last_recalled_us BIGINT, space VARCHAR, entity VARCHAR, content VARCHAR, state VARCHAR,
        f DOUBLE, sigma DOUBLE, k DOUBLE)""")
    return con


def _lake_write(con, row: tuple) -> None:
    # DuckLake has no primary key: exactly-once must be an anti-join insert, retried on a commit conflict
    for attempt in range(20):
        try:
            con.execute("INSERT INTO lake.megrams SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
                        "WHERE NOT EXISTS (SELECT 1 FROM lake.megrams WHERE id = ?)", [*row, row[0]])
            return
        except Exception:  # a conflicting concurrent commit: try again
            time.sleep(0.01 * (attempt + 1))
    raise RuntimeError("gave up after 20 conflicting commits")


def _lake_worker(pg: str, data: str, batch: list[tuple]) -> None:
    con = _lake(pg, data)
    for row in batch:
        _lake_write(con, row)


# ── PostgreSQL side (artoo's PostgresMemoryStore) ─────────────────────────────────────────────

def _megram(row: tuple):
    from artoo.config.contracts import Megram
    from artoo.memory.potentials import from_us

    i, level, created, _, space, entity, content, state, f, sigma, k = row
    return Megram(id=i, level=level, created_at=from_us(created), space=space, entity=entity, content=content,
                  state=state, f=f, sigma=sigma, k=k)


def _pg_worker(pg: str, data: str, batch: list[tuple]) -> None:
    from artoo.memory.pg_store import PostgresMemoryStore

    with PostgresMemoryStore(pg) as store:
        for row in batch:
            store.write(_megram(row))


# ── one side's measurements ───────────────────────────────────────────────────────────────────

def measure(backend: str, pg: str, data: str) -> dict:
    """Writes/s, exactly-once under 3 concurrent writers, point-query latency; JSON-ready."""
    worker = _lake_worker if backend == "ducklake" else _pg_worker
    started = time.perf_counter()
    worker(pg, data, rows(WRITES))
    write_s = time.perf_counter() - started
    shared = rows(WRITES, prefix="c")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(pg, data, shared[n * 37:] + shared[:n * 37])) for n in range(CONCURRENT)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    concurrent_s = time.perf_counter() - started
    if backend == "ducklake":
        con = _lake(pg, data)
        total, distinct = con.execute("SELECT count(*), count(DISTINCT id) FROM lake.megrams").fetchone()
        mk = _MK.format(at=NOW_US, table="lake.megrams", space="?", entity="?")
        query = lambda: con.execute(mk, ["tool:tool3", "env:local"]).fetchone()  # noqa: E731
        files = len(glob.glob(os.path.join(data, "**", "*.parquet"), recursive=True))
    else:
        import psycopg

        from artoo.memory.pg_store import PostgresMemoryStore, libpq_url

        with psycopg.connect(libpq_url(pg)) as raw:
            total, distinct = raw.execute("SELECT count(*), count(DISTINCT id) FROM megrams").fetchone()
        store = PostgresMemoryStore(pg)
        query = lambda: store.query_mk("tool:tool3", "env:local")  # noqa: E731
        files = 0
    query()
    latencies = []
    for _ in range(QUERIES):
        begin = time.perf_counter()
        query()
        latencies.append((time.perf_counter() - begin) * 1000)
    return {"backend": backend, "writes_per_s": WRITES / write_s,
            "concurrent_writes_per_s": CONCURRENT * WRITES / concurrent_s,
            "rows": total, "distinct_ids": distinct, "expected_ids": 2 * WRITES,
            "query_ms_median": statistics.median(latencies), "data_files": files}


# ── the driver: one private PostgreSQL, both sides, one table ─────────────────────────────────

def side_by_side(root, ducklake_python: str | None = None) -> list[dict]:
    """Start a private PostgreSQL, run both sides in their own processes, return their results."""
    import subprocess
    from pathlib import Path

    import psycopg

    from artoo.servers.local import Postgres

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    database = Postgres(root / "postgres").start()
    base = f"postgresql://prefect@127.0.0.1:{database.port}"
    try:
        with psycopg.connect(f"{base}/prefect", autocommit=True) as con:
            con.execute("CREATE DATABASE shared_memory")
            con.execute("CREATE DATABASE lake_catalog")
        sides = [(sys.executable, "postgres", f"{base}/shared_memory"),
                 (ducklake_python or os.environ.get("ARTOO_DUCKLAKE_PYTHON", "/tmp/ducklake-venv/bin/python"),
                  "ducklake", f"dbname=lake_catalog host=127.0.0.1 port={database.port} user=prefect")]
        results = []
        for python, backend, url in sides:
            data = root / f"{backend}-data"
            data.mkdir(exist_ok=True)
            done = subprocess.run([python, __file__, "--backend", backend, "--pg", url, "--data", str(data)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                results.append({"backend": backend, "error": (done.stderr or done.stdout).strip()[-400:]})
            else:
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        return results
    finally:
        database.stop()


def table(results: list[dict]) -> str:
    """The printed comparison."""
    lines = ["| backend | writes/s (1 writer) | writes/s (3 writers, same ids) | rows / distinct / expected "
             "| potentials query median ms | data files |", "|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['backend']} | error: {r['error']} | | | | |")
            continue
        lines.append(f"| {r['backend']} | {r['writes_per_s']:.0f} | {r['concurrent_writes_per_s']:.0f} | "
                     f"{r['rows']} / {r['distinct_ids']} / {r['expected_ids']} | {r['query_ms_median']:.2f} | "
                     f"{r['data_files']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["postgres", "ducklake"], help="run one side only and print JSON")
    parser.add_argument("--pg", help="PostgreSQL URL (postgres) or libpq DSN (ducklake catalog), with --backend")
    parser.add_argument("--data", help="DuckLake data directory, with --backend")
    parser.add_argument("--root", default="/tmp/artoo-bench-memory-backends", help="scratch directory (driver)")
    parser.add_argument("--ducklake-python", default=None, help="the side venv's python (driver)")
    args = parser.parse_args()
    if args.backend:
        print(json.dumps(measure(args.backend, args.pg, args.data)))
    else:
        import shutil

        shutil.rmtree(args.root, ignore_errors=True)
        found = side_by_side(args.root, args.ducklake_python)
        print(table(found))
        print(json.dumps(found))
