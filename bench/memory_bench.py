"""MKCT memory benchmark: query_mk vs a naive Python loop, write(), ingest, a Dreamer pass.

    python -m artoo.bench.memory_bench [--sizes 1e5,1e6,1e7] [--quick] [--json] [--dir DIR]

For each size a fresh store is bulk-loaded in SQL (``range()``, clustered by tag as
compaction leaves it; ~100 Megrams per tag pair, mixed f, k and σ).  The data is in the
steady state a Dreamer on its 5-minute timer keeps: every M/K Megram still above the
forgetting threshold except ~1 % that became due since the last pass.  The machine is
shared, so the load average is printed with the figures.  Targets are printed beside each
figure; nothing here asserts, this is a report.  ``run(sizes, quick)`` returns the same data
for ``artoo bench``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from artoo.config.contracts import Megram
from artoo.config.protocol import Consolidation
from artoo.memory.dreamer import dream
from artoo.memory.potentials import US_PER_DAY, now_us
from artoo.memory.schema import tag_key
from artoo.memory.store import MemoryStore

TARGETS = {
    "query_mk_p50_ms@1e7": ("query_mk p50 at 10⁷", "< 5 ms"),
    "write_p50_us": ("write() latency", "< 100 µs"),
    "ingest_per_s": ("ingest throughput", "≥ 200k/s"),
    "dream_s@1e7": ("dream pass at 10⁷", "< 10 s"),
}


def _pairs(count: int) -> pa.Table:
    spaces = [f"intent:task_{i}" if i % 3 else f"tool:tool_{i % 50}" for i in range(count)]
    entities = ["env:local" if i % 3 else f"path:/work/file_{i}" for i in range(count)]
    return pa.table(
        {
            "p": pa.array(range(count), pa.int64()),
            "space": spaces,
            "entity": entities,
            "tag": pa.array([tag_key(s, e) for s, e in zip(spaces, entities, strict=True)], pa.int64()),
        }
    )


GC = 0.1
_BULK = """
INSERT INTO megrams
WITH base AS (
    SELECT CASE WHEN i % 1000 = 0 THEN 'C' WHEN i % 10 = 0 THEN 'K' ELSE 'M' END AS level,
           0.1 + 0.9 * random() AS f,
           [1.0, 1.0, 1.0, -1.0, -1.0, 0.0, 0.5][1 + CAST(floor(7 * random()) AS INT)] AS sigma,
           [0.05, 0.05, 0.05, 0.2, 0.5][1 + CAST(floor(5 * random()) AS INT)] AS k0,
           p.space, p.entity, p.tag
    FROM range({n}) r(i) JOIN pair_table p ON p.p = CAST(hash(i) % {pairs} AS BIGINT)),
aged AS (
    SELECT *, CASE WHEN level = 'C' THEN 0.0 ELSE k0 END AS k,
           CASE WHEN level = 'C' THEN 60 * random() ELSE 1.01 * random() * ln(f / $gc) / k0 END AS age
    FROM base)
SELECT uuid()::VARCHAR, level, make_timestamp($now - CAST(age * {day} AS BIGINT)), NULL, space, entity,
       'bench event', 'success', f, sigma, k, []::VARCHAR[], tag
FROM aged ORDER BY tag
"""
"""Steady-state rows: each M/K Megram's age is drawn below the age at which it would be
forgotten (ln(f/gc)/k days), stretched by 1 % so about 1 % are due at the next pass."""


def build(home: Path, n: int) -> tuple[MemoryStore, pa.Table, float]:
    """A store holding ``n`` synthetic Megrams, generated in SQL; returns (store, pairs, seconds)."""
    started = time.perf_counter()
    store = MemoryStore(home, reader_idle_s=5.0)
    pairs = _pairs(max(1000, n // 100))
    with store.exclusive() as con:
        con.register("pair_table", pairs)
        con.execute(_BULK.format(n=n, pairs=pairs.num_rows, day=US_PER_DAY), {"now": now_us(), "gc": GC})
        con.unregister("pair_table")
    return store, pairs, time.perf_counter() - started


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


def bench_query(store: MemoryStore, pairs: pa.Table, count: int) -> dict:
    rng = random.Random(1)
    picks = [
        (pairs["space"][i].as_py(), pairs["entity"][i].as_py())
        for i in (rng.randrange(pairs.num_rows) for _ in range(count))
    ]
    for space, entity in picks[:10]:
        store.query_mk(space, entity)
    samples = []
    for space, entity in picks:
        t = time.perf_counter()
        store.query_mk(space, entity)
        samples.append((time.perf_counter() - t) * 1e3)
    p50, p99 = _percentiles(samples)
    return {"p50_ms": p50, "p99_ms": p99, "queries": count}


def bench_naive(store: MemoryStore, pairs: pa.Table, count: int) -> dict:
    """The same potentials by a plain Python loop over every row held in memory."""
    with store.exclusive() as con:
        rows = con.execute(
            "SELECT space, entity, level, f, sigma, k, "
            "epoch_us(coalesce(last_recalled_at, created_at)) FROM megrams"
        ).fetchall()
    rng = random.Random(2)
    samples = []
    for _ in range(count):
        i = rng.randrange(pairs.num_rows)
        space, entity = pairs["space"][i].as_py(), pairs["entity"][i].as_py()
        t = time.perf_counter()
        at, attention, decision = now_us(), 0.0, 0.0
        for s, e, level, f, sigma, k, ref in rows:
            if s == space and e == entity and level in ("M", "K"):
                w = math.exp(-k * (max(0, at - ref) / US_PER_DAY))
                attention += abs(f) * w
                decision += sigma * f * w
        samples.append((time.perf_counter() - t) * 1e3)
    p50, p99 = _percentiles(samples)
    return {"p50_ms": p50, "p99_ms": p99, "queries": count}


def bench_write(store: MemoryStore, count: int) -> dict:
    now = datetime.now(UTC)
    megrams = [
        Megram(
            id=str(uuid.uuid4()),
            created_at=now,
            space=f"intent:fresh_{i % 500}",
            entity="env:local",
            content="a fresh event of the benchmark",
            state="success",
            f=0.8,
            sigma=1.0,
            k=0.05,
        )
        for i in range(count)
    ]
    samples = []
    started = time.perf_counter()
    for m in megrams:
        t = time.perf_counter_ns()
        store.write(m)
        samples.append((time.perf_counter_ns() - t) / 1e3)
    elapsed = time.perf_counter() - started
    p50, p99 = _percentiles(samples)
    return {"p50_us": p50, "p99_us": p99, "per_s": count / elapsed, "megrams": count}


def bench_ingest(store: MemoryStore) -> dict:
    started, cpu = time.perf_counter(), time.process_time()
    inserted = store.ingest()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "megrams": inserted,
        "seconds": elapsed,
        "per_s": inserted / elapsed if elapsed else 0.0,
        "cpu_seconds": cpu,
        "per_cpu_s": inserted / cpu if cpu else 0.0,
    }


def _distil(space: str, entity: str, kind: str, megrams: list[Megram]) -> Consolidation:
    return Consolidation(kind=kind, content=f"{kind} for {space} from {len(megrams)} megrams")


def bench_dream(store: MemoryStore) -> dict:
    report = dream(store, distil=_distil)
    return {
        "seconds": report.seconds,
        "deleted": report.deleted,
        "demoted": report.demoted,
        "promoted": report.promoted,
        "eligible": report.consolidation_eligible,
        "compacted": report.compacted,
    }


def run_size(n: int, quick: bool, root: Path) -> dict:
    """Every measurement for one store size."""
    home = Path(tempfile.mkdtemp(prefix=f"memory-{n}-", dir=root))
    try:
        store, pairs, build_s = build(home, n)
        out: dict = {"size": n, "build_s": build_s, "pairs": pairs.num_rows}
        out["query_mk"] = bench_query(store, pairs, 200 if quick else 1000)
        naive_queries = 1 if n >= 10**7 else (3 if quick or n >= 10**6 else 20)
        out["naive"] = bench_naive(store, pairs, naive_queries)
        out["write"] = bench_write(store, 20_000 if quick else 100_000)
        out["ingest"] = bench_ingest(store)
        out["query_mk_after_ingest"] = bench_query(store, pairs, 200)
        out["dream"] = bench_dream(store)
        out["db_mb"] = store.stats()["db_bytes"] / 1e6
        store.close()
        return out
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run(sizes: list[int], quick: bool = False, root: Path | None = None) -> dict:
    """Run the benchmark for each size; returns a JSON-ready document with the targets."""
    root = Path(root or tempfile.gettempdir())
    results = [run_size(n, quick, root) for n in sizes]
    verdicts = {}
    by_size = {r["size"]: r for r in results}
    if 10**7 in by_size:
        verdicts["query_mk_p50_ms@1e7"] = by_size[10**7]["query_mk"]["p50_ms"] < 5
        verdicts["dream_s@1e7"] = by_size[10**7]["dream"]["seconds"] < 10
    verdicts["write_p50_us"] = all(r["write"]["p50_us"] < 100 for r in results)
    verdicts["ingest_per_s"] = all(r["ingest"]["per_s"] >= 200_000 for r in results)
    return {
        "quick": quick,
        "load_average": os.getloadavg(),
        "results": results,
        "targets": {
            k: {"what": TARGETS[k][0], "target": TARGETS[k][1], "met": v} for k, v in verdicts.items()
        },
    }


def _print(doc: dict) -> None:
    def mark(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print("load average at the end: " + ", ".join(f"{x:.2f}" for x in doc["load_average"]))
    header = f"{'size':>10} {'metric':<28} {'value':>14}  {'target':<10} verdict"
    print(header)
    print("-" * len(header))
    for r in doc["results"]:
        n = r["size"]
        big = n >= 10**7
        lines = [
            ("bulk load (SQL)", f"{r['build_s']:.1f} s", "", None),
            (
                "query_mk p50",
                f"{r['query_mk']['p50_ms']:.2f} ms",
                "< 5 ms" if big else "",
                r["query_mk"]["p50_ms"] < 5 if big else None,
            ),
            ("query_mk p99", f"{r['query_mk']['p99_ms']:.2f} ms", "", None),
            ("naive Python loop p50", f"{r['naive']['p50_ms']:.1f} ms", "", None),
            ("  speed-up", f"{r['naive']['p50_ms'] / r['query_mk']['p50_ms']:.0f}x", "", None),
            ("write() p50", f"{r['write']['p50_us']:.1f} µs", "< 100 µs", r["write"]["p50_us"] < 100),
            ("write() p99", f"{r['write']['p99_us']:.1f} µs", "", None),
            ("write throughput", f"{r['write']['per_s']:,.0f}/s", "", None),
            (
                "ingest throughput",
                f"{r['ingest']['per_s']:,.0f}/s",
                "≥ 200k/s",
                r["ingest"]["per_s"] >= 200_000,
            ),
            ("  per CPU-second (all threads)", f"{r['ingest']['per_cpu_s']:,.0f}/s", "", None),
            ("query_mk p50 after ingest", f"{r['query_mk_after_ingest']['p50_ms']:.2f} ms", "", None),
            (
                "dream pass",
                f"{r['dream']['seconds']:.2f} s",
                "< 10 s" if big else "",
                r["dream"]["seconds"] < 10 if big else None,
            ),
            ("  forgotten/promoted", f"{r['dream']['deleted']:,}/{r['dream']['promoted']}", "", None),
            ("database file", f"{r['db_mb']:.0f} MB", "", None),
        ]
        for name, value, target, ok in lines:
            print(f"{n:>10.0e} {name:<28} {value:>14}  {target:<10} {'' if ok is None else mark(ok)}")
        print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1e5,1e6,1e7", help="comma-separated store sizes (default 1e5,1e6,1e7)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer samples and a smaller write batch")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to build the stores (default: temp dir)"
    )
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    doc = run(sizes, args.quick, args.dir)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        _print(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
