"""Throughput of artoo on a work pool: tasks per minute at 1, 2 and 3 workers, and where the limit lies.

    python -m artoo.bench.cluster_bench [--tasks-per-worker 4] [--latency 1.5] [--workers 1,2,3]

One Postgres-backed ``prefect server start`` and one PostgreSQL memory (artoo.servers.local),
the scripted LLM at ``--latency`` seconds per call (six calls per accepted task: a 9 s LLM
critical path at 1.5 s), and for each worker count a fresh pool of that many
``prefect worker start`` processes (bench.cluster), each running one flow at a time.  Per
configuration it prints tasks per minute against the LLM-bound ideal and, per run, where the
time went: waiting in the queue (submission → the worker's process starts the flow), inside
the flow, and of that the LLM's share; the worker-slot seconds per task (workers × wall /
tasks: beyond the flow's own time, that is spawning and starting each flow-run process); and
the cores each process tree kept busy over the run (bench.cpu: the workers with their
flow-run subprocesses, the Prefect server, each PostgreSQL, this process with the scripted
LLM, the whole machine), which says where the limit lies.  Nothing asserts;
bench/README.md records the numbers and reads them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from artoo.bench.cluster import CALLS_PER_TASK, Cluster, stories
from artoo.bench.cpu import machine_busy_s, postmaster_pid, tree_cpu_s


async def _timings(run_ids: list[str]) -> list[tuple[float, float]]:
    """(queued s: expected start → flow start, flow s: start → end) of each completed run."""
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        runs = await asyncio.gather(*(client.read_flow_run(i) for i in run_ids))
    return [((r.start_time - r.expected_start_time).total_seconds(), (r.end_time - r.start_time).total_seconds())
            for r in runs if r.start_time and r.end_time and r.expected_start_time]


def measure(root: Path, api_url: str, memory_base: str, latency: float, workers: int, tasks: int,
            watch: dict[str, list[int]]) -> dict:
    """One configuration: a fresh memory database and pool, ``tasks`` requests at once.

    ``watch`` names the process trees besides the workers whose CPU is accounted over the run.
    """
    import psycopg

    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    name = f"bench_{workers}w"
    with psycopg.connect(f"{memory_base}/prefect", autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {name}")
        con.execute(f"CREATE DATABASE {name}")
    with ScriptedLLMServer(stories(tasks, latency)) as llm:
        cluster = Cluster(root / name, api_url, f"{memory_base}/{name}", llm.base_url, workers=workers).start()
        try:
            roots = {"workers": [p.pid for p in cluster.processes], **watch}
            before, busy_before, own_before = tree_cpu_s(roots), machine_busy_s(), os.times()
            result = cluster.run(tasks, timeout_s=60 * tasks)
            after, busy_after, own_after = tree_cpu_s(roots), machine_busy_s(), os.times()
        finally:
            cluster.stop()
    timings = asyncio.run(_timings(result["run_ids"]))
    queued = [q for q, _ in timings]
    inside = [f for _, f in timings]
    wall = result["wall_s"]
    cores = {k: (after[k] - before[k]) / wall for k in roots}
    cores["bench + LLM"] = (own_after.user + own_after.system - own_before.user - own_before.system) / wall
    cores["machine"] = (busy_after[0] - busy_before[0]) / wall
    completed = result["states"].get("COMPLETED", 0)
    return {"workers": workers, "tasks": tasks, "completed": completed,
            "wall_s": wall, "tasks_per_min": result["tasks_per_min"],
            "ideal_per_min": workers * 60.0 / (CALLS_PER_TASK * latency),
            "queued_median_s": statistics.median(queued) if queued else None,
            "flow_median_s": statistics.median(inside) if inside else None,
            "llm_s": CALLS_PER_TASK * latency, "cores": cores,
            "slot_s": workers * wall / max(completed, 1),  # a worker's time per task, in the flow or not
            "worker_cpu_per_task_s": cores["workers"] * wall / max(completed, 1)}


COMPONENTS = ("workers", "prefect server", "server's postgres", "memory postgres", "bench + LLM", "machine")


def table(rows: list[dict]) -> str:
    """The printed result: throughput against the LLM-bound ideal, then cores busy per component."""
    lines = ["| workers | tasks | completed | wall s | tasks/min | LLM-bound ideal | median queued s | "
             "median flow s | LLM s per task | worker-slot s per task |", "|---" * 10 + "|"]
    for r in rows:
        lines.append(f"| {r['workers']} | {r['tasks']} | {r['completed']} | {r['wall_s']:.1f} | "
                     f"{r['tasks_per_min']:.2f} | {r['ideal_per_min']:.2f} | {r['queued_median_s'] or 0:.1f} | "
                     f"{r['flow_median_s'] or 0:.1f} | {r['llm_s']:.1f} | {r['slot_s']:.1f} |")
    lines += ["", "| workers | " + " | ".join(f"{c} (cores)" for c in COMPONENTS) + " | worker CPU s per task |",
              "|---" * (len(COMPONENTS) + 2) + "|"]
    for r in rows:
        cells = " | ".join(f"{r['cores'].get(c, 0.0):.2f}" for c in COMPONENTS)
        lines.append(f"| {r['workers']} | {cells} | {r['worker_cpu_per_task_s']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Start the server and memory, measure each worker count, print the table."""
    from artoo.servers.local import Postgres, start_local

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks-per-worker", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.5, help="seconds per scripted LLM call")
    parser.add_argument("--workers", default="1,2,3")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="artoo-bench-cluster-"))
    root.chmod(0o755)
    os.environ.setdefault("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL", "0.5")
    server, database = start_local(root / "server")
    memory = Postgres(root / "memory-pg").start()
    os.environ["PREFECT_API_URL"] = server.api_url
    watch = {"prefect server": [server.process.pid],
             "server's postgres": [p for p in [database and postmaster_pid(database.data_dir)] if p],
             "memory postgres": [p for p in [postmaster_pid(memory.data_dir)] if p]}
    rows = []
    try:
        for workers in (int(w) for w in args.workers.split(",")):
            rows.append(measure(root, server.api_url, f"postgresql://prefect@127.0.0.1:{memory.port}",
                                args.latency, workers, workers * args.tasks_per_worker, watch))
            print(table(rows[-1:]), flush=True)
    finally:
        server.stop()
        memory.stop()
        if database:
            database.stop()
    print(table(rows))
    print(f"(cpu cores: {os.cpu_count()}, load average at the end: {os.getloadavg()[0]:.1f})")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
