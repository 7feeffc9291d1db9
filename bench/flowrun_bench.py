"""Benchmark 4: what one empty subflow run and one empty task run cost, ours against Prefect's defaults.

Every round and every subtask of artoo is a subflow run and every role call a task run,
so their fixed cost sits on the critical path between LLM calls.  This measures it in
isolation: empty bodies, called from a parent flow, each candidate in turn, the first
call of each dropped (it registers the flow).  The candidates vary one thing at a time:

* configuration: ours (``validate_parameters=False, log_prints=False, persist_result=False``,
  a named run; tasks ``cache_policy=NO_CACHE, retries=0, persist_result=False``) against a
  bare ``@flow`` / ``@task``;
* heartbeats: Prefect's default (a flow-run heartbeat every 180 s) against off
  (``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` = None);
* sync against async.

No target is set for these figures; they explain the orchestration overhead.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from artoo.bench.env import prefect_mode, stderr_to
from artoo.bench.report import Figure, Section, fmt, table
from artoo.bench.runs import median
from artoo.config import compat

OURS_FLOW = {"validate_parameters": False, "log_prints": False, "persist_result": False}
OURS_TASK = {"cache_policy": NO_CACHE, "retries": 0, "persist_result": False}


@flow(name="bench-empty-ours", **OURS_FLOW)
async def _flow_ours_async(x: str) -> str:
    return x


@flow(name="bench-empty-ours-sync", **OURS_FLOW)
def _flow_ours_sync(x: str) -> str:
    return x


@flow(name="bench-empty-default")
async def _flow_default_async(x: str) -> str:
    return x


@flow(name="bench-empty-default-sync")
def _flow_default_sync(x: str) -> str:
    return x


@task(name="bench-empty-task-ours", **OURS_TASK)
async def _task_ours_async(x: str) -> str:
    return x


@task(name="bench-empty-task-ours-sync", **OURS_TASK)
def _task_ours_sync(x: str) -> str:
    return x


@task(name="bench-empty-task-default")
async def _task_default_async(x: str) -> str:
    return x


@task(name="bench-empty-task-default-sync")
def _task_default_sync(x: str) -> str:
    return x


@dataclass(frozen=True)
class Candidate:
    """One way of running an empty unit of work."""

    label: str
    kind: str
    call: Callable
    heartbeats: bool = True
    shipped: bool = False
    """This is how artoo runs its own subflows/tasks."""

    @property
    def sync(self) -> bool:
        """A sync function (Prefect runs it inline, blocking the parent's event loop)."""
        return ", sync" in self.label


def _named(f):
    """Named as artoo names its rounds and subtasks (``compat.named``: Prefect creates, then renames)."""
    return compat.named(f, "bench · empty")


CANDIDATES = [
    Candidate("ours, async, heartbeats on (as shipped)", "subflow", _named(_flow_ours_async), True, True),
    Candidate("ours, async, heartbeats off", "subflow", _named(_flow_ours_async), False),
    Candidate("ours, sync, heartbeats on", "subflow", _named(_flow_ours_sync), True),
    Candidate("ours, sync, heartbeats off", "subflow", _named(_flow_ours_sync), False),
    Candidate("Prefect default, async, heartbeats on", "subflow", _flow_default_async, True),
    Candidate("Prefect default, async, heartbeats off", "subflow", _flow_default_async, False),
    Candidate("Prefect default, sync, heartbeats on", "subflow", _flow_default_sync, True),
    Candidate("Prefect default, sync, heartbeats off", "subflow", _flow_default_sync, False),
    Candidate("ours, async (as shipped)", "task", _task_ours_async, True, True),
    Candidate("ours, sync", "task", _task_ours_sync),
    Candidate("Prefect default, async", "task", _task_default_async),
    Candidate("Prefect default, sync", "task", _task_default_sync),
]
STALL_S = 1.5
"""A call this slow waited on something (the SQLite lock back-off is 2 s; a sync heartbeat join ~1 s)."""
BASELINE = {"subflow": "Prefect default, async, heartbeats on", "task": "Prefect default, async"}


async def _call(candidate: Candidate) -> float:
    heartbeats = (contextlib.nullcontext() if candidate.heartbeats
                  else temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}))
    with heartbeats:
        started = time.perf_counter()
        result = candidate.call("x")
        if hasattr(result, "__await__"):
            await result
        return time.perf_counter() - started


@flow(name="bench-parent", **OURS_FLOW)
async def _parent(calls: int, drop_first: bool) -> dict[str, list[float]]:
    """Call every candidate ``calls`` times (plus a dropped first call when ``drop_first``).

    Async candidates run as one group and sync ones as another, each group's order
    shuffled every round.  On the ephemeral SQLite server a subflow started right after
    a *sync* task run meets "database is locked" (HTTP 503) and the client's 2-second
    back-off nearly every time; with a fixed order that stall landed on one candidate and
    made it look 20 times slower.  artoo runs no sync tasks, so its own candidates are
    measured among async neighbours only.
    """
    times: dict[str, list[float]] = {_key(c): [] for c in CANDIDATES}
    shuffle = random.Random(7)  # seeded: the same orders every time, a different one every round
    for group in ([c for c in CANDIDATES if not c.sync], [c for c in CANDIDATES if c.sync]):
        for round_no in range(calls + int(drop_first)):
            for candidate in shuffle.sample(group, len(group)):
                elapsed = await _call(candidate)
                if round_no or not drop_first:
                    times[_key(candidate)].append(elapsed)
    return times


def _key(candidate: Candidate) -> str:
    return f"{candidate.kind}: {candidate.label}"


def measure(calls: int, modes: dict[str, str | None], log: Path,
            drop_first: bool = True) -> dict[str, dict[str, list[float]]]:
    """Per mode, per candidate, the seconds each call took (Prefect's console output goes to ``log``)."""
    import asyncio

    out = {}
    for mode, api_url in modes.items():
        with prefect_mode(api_url), stderr_to(log):
            out[mode] = asyncio.run(_parent(calls, drop_first))
    return out


def section(times: dict[str, dict[str, list[float]]]) -> Section:
    """The per-flow-run overhead table and figures (median ms per call; ratio to Prefect's default async)."""
    result = Section("flow_runs", "per-flow-run overhead")
    modes = list(times)
    grid = table("one empty subflow / task run, median ms per call (ratio to Prefect's default async; "
                 f"stalls = calls over {STALL_S} s)",
                 ["candidate", *[f"{m} ms" for m in modes], *[f"{m} ratio" for m in modes],
                  *[f"{m} stalls" for m in modes]])
    for c in CANDIDATES:
        key, base = _key(c), f"{c.kind}: {BASELINE[c.kind]}"
        ms = {m: median(times[m][key]) * 1000 for m in modes}
        ratio = {m: ms[m] / (median(times[m][base]) * 1000) for m in modes}
        stalls = {m: f"{sum(t > STALL_S for t in times[m][key])}/{len(times[m][key])}" for m in modes}
        grid.add_row(key, *[fmt(ms[m], 1) for m in modes], *[fmt(ratio[m]) for m in modes],
                     *[stalls[m] for m in modes])
        for m in modes:
            slug = key.replace(": ", ".").replace(", ", ".").replace(" ", "_").replace("(", "").replace(")", "")
            result.figures.append(Figure(f"flow_runs.{m}.{slug}", f"{key} · {m}", ms[m], "ms", None, None,
                                         f"{len(times[m][key])} call(s)"))
    result.tables.append(grid)
    result.details = {m: {k: [round(v * 1000, 2) for v in vs] for k, vs in per.items()} for m, per in times.items()}
    return result
