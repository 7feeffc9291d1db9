"""Load: 20 concurrent ``artoo-task`` runs against one local Prefect server (PostgreSQL-backed).

The runs share one ARTOO_HOME, as one person's runs do: one memory store written by 20
runs at once, one audit log.  Every run must reach a FinalResult, every Megram must be
stored exactly once, and the Auditor must log every message every run published.  The
p95 run time is printed (a number to watch, not an assertion: speed targets live in bench/).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from artoo.memory.store import MemoryStore
from artoo.tasks.audit.chain import verify
from artoo.tasks.audit.log import AuditPaths, iter_records
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.slow]

RUNS = 20
HELLO = "the output contains hello"


def load_scenario() -> dict:
    """One TaskSpec per run (its own task_id); every later answer is shared and repeats."""
    return scenario(
        TaskSpec=[{**spec(f"load_{i:02d}", f"say hello number {i:02d}"), "match": f"load run {i:02d}"}
                  for i in range(RUNS)],
        Plan=[{**plan([subtask("print hello", [HELLO])], ["hello was printed"]), "repeat": True}],
        tools=[{**done("hello"), "match": "tool shell status: ok", "repeat": True},  # second turn: answer
               {**call("shell", command="echo hello"), "repeat": True}],              # first turn: act
        AgentVerdict=[{**agent(verdict(HELLO, True)), "repeat": True}],
        TaskVerdict=[{**task_verdict(verdict("hello was printed", True)), "repeat": True}],
    )


async def timed_runs(workspace: Path) -> list[tuple[dict, float]]:
    from artoo.flows.task_flow import artoo_task

    async def one(i: int) -> tuple[dict, float]:
        started = time.perf_counter()
        document = await artoo_task(request=f"load run {i:02d}: say hello", workspace=str(workspace / f"{i:02d}"))
        return document, time.perf_counter() - started

    return await asyncio.gather(*(one(i) for i in range(RUNS)))


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def test_twenty_concurrent_runs_all_finish_store_once_and_are_all_audited(scripted, artoo_env: Path, capsys):
    from artoo.flows.auditor import PublishedTap, observe_run
    from artoo.tasks.bus.events import add_tap, remove_tap

    scripted(load_scenario())
    published, started = PublishedTap(), datetime.now(UTC)
    add_tap(published)
    wall = time.perf_counter()
    try:
        results = asyncio.run(timed_runs(artoo_env / "workspace"))
    finally:
        remove_tap(published)
    wall = time.perf_counter() - wall

    finals = [document["final"] for document, _ in results]
    assert [f["directive"] for f in finals] == ["accept"] * RUNS
    tasks = {f"load_{i:02d}" for i in range(RUNS)}
    assert {f["task_id"] for f in finals} == tasks

    home = artoo_env / "home"
    store = MemoryStore(home)
    store.ingest()
    store.close()
    con = duckdb.connect(str(home / "memory" / "memory.duckdb"), read_only=True)
    rows = con.execute("SELECT id, content FROM megrams").fetchall()
    con.close()
    assert max(Counter(i for i, _ in rows).values()) == 1  # no Megram stored twice
    for n in range(RUNS):  # and each run's final Megram is there, exactly once
        assert sum(f"say hello number {n:02d}" in content for _, content in rows) == 1

    audit = observe_run({t: s for t, s in published.published.items() if t in tasks}, started, wait_s=90)
    assert audit.complete, f"the Auditor is missing messages: {audit.missing} {audit.error or ''}"
    paths = AuditPaths(home)
    assert verify(paths.log, paths.head).ok
    logged = Counter((r["task_id"], r["task_seq"]) for _, r, _ in iter_records(paths.log) if r)
    for task in tasks:
        seqs = {seq for (t, seq), n in logged.items() if t == task and n == 1}
        assert seqs == published.published[task], f"{task}: the audit log does not hold each message once"

    times = sorted(seconds for _, seconds in results)
    with capsys.disabled():
        print(f"\nload: {RUNS} concurrent artoo-task runs in {wall:.1f} s wall; run time "
              f"median {statistics.median(times):.1f} s, p95 {p95(times):.1f} s, max {times[-1]:.1f} s")
