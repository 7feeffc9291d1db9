"""R6 as the ``auditor`` flow: read every ``artoo.*`` event, chain it into the audit log, report.

Reading is catch-up plus live: a subscription to the server's event stream (prefix
``artoo.``) is opened first, then the events API is read from the saved checkpoint
(latest ``occurred`` observed, minus a look-back) in ascending order, and the same
catch-up runs again every ``SWEEP_EVERY_S`` and whenever the stream drops, so a restart
or a dropped connection loses nothing the server received.  Duplicates are dropped by
event id (artoo.tasks.audit.log keeps the index).  An AuditReport is published every
``report_every_s`` as the ``audit-report`` markdown artifact, in the run log and in
``reports.jsonl``; ``artoo audit`` answers from the log at once and leaves a request
file that a running auditor turns into an on-demand artifact within a second.

The Auditor only reads: it never publishes on the bus and never opens the memory store.
``observe_run`` is the embedded default for ``artoo run`` without a Prefect server: after
the task flow returns it drains Prefect's EventsWorker and reads the task's events back
from the API until every message the bus published is in the log (bounded wait).  What was
published is keyed by (task_id, run), so a second run of the same task in this process (or
anywhere else) cannot satisfy the wait with its own, identically numbered messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact
from prefect.client.orchestration import get_client
from prefect.events.filters import (
    EventFilter,
    EventNameFilter,
    EventOccurredFilter,
    EventOrder,
    EventResourceFilter,
)
from prefect.logging import get_run_logger

from artoo.config.compat import drain_events
from artoo.config.settings import load_settings
from artoo.tasks.audit.anomalies import AuditParams
from artoo.tasks.audit.log import AuditLog, load_checkpoint, save_checkpoint
from artoo.tasks.audit.observe import observation
from artoo.tasks.audit.persist import publish_report
from artoo.tasks.audit.report import render_markdown
from artoo.tasks.audit.stats import short_run
from artoo.tasks.bus.events import EVENT_PREFIX, task_resource

LOOKBACK = timedelta(minutes=2)
SWEEP_EVERY_S = 30.0
PAGE_SIZE = 50
POLL_S = 0.1
"""The embedded pass re-reads the run's events this often until all are in (one cheap filtered read)."""
REPORT_ARTIFACT_KEY = "audit-report"
FLUSH_ENV = "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL"


def artoo_filter(since: datetime | None = None, task_id: str | None = None) -> EventFilter:
    """Every ``artoo.*`` event since ``since`` (Prefect's default horizon when None), oldest first."""
    occurred = EventOccurredFilter(until=datetime.now(UTC) + timedelta(days=1))
    if since is not None:
        occurred.since = since
    return EventFilter(occurred=occurred, event=EventNameFilter(prefix=[EVENT_PREFIX]), order=EventOrder.ASC,
                       resource=EventResourceFilter(id=[task_resource(task_id)]) if task_id else None)


async def read_pages(flt: EventFilter, client: Any = None) -> AsyncIterator[list[dict[str, Any]]]:
    """The events matching ``flt`` from the events API, page by page, as JSON data (on ``client`` if given)."""
    async with contextlib.nullcontext(client) if client is not None else get_client() as client:
        page = await client.read_events(filter=flt, limit=PAGE_SIZE)
        while True:
            yield [e.model_dump(mode="json") for e in page.events]
            if not page.next_page:
                return
            page = await client.read_events_page(str(page.next_page))


def record_events(log: AuditLog, events: list[dict[str, Any]], checkpoint: bool) -> list[dict[str, Any]]:
    """Append the artoo events not yet in the log; optionally move the checkpoint to the latest one."""
    observed = [o for o in (observation(e) for e in events) if o is not None]
    new = log.append(observed)
    if checkpoint and observed:
        latest = max(datetime.fromisoformat(str(o["occurred"]).replace("Z", "+00:00")) for o in observed)
        save_checkpoint(log.paths, latest)
    return new


async def catch_up(log: AuditLog, since: datetime | None = None) -> int:
    """Read the events API from the checkpoint (or ``since`` before the first one); returns records added."""
    checkpoint = load_checkpoint(log.paths)
    start = checkpoint - LOOKBACK if checkpoint is not None else since
    added = 0
    async for batch in read_pages(artoo_filter(start)):
        added += len(record_events(log, batch, checkpoint=True))
    return added


@dataclass
class AuditorLoop:
    """The live loop: subscription, periodic sweeps and reports, bounded by ``run_for_s``."""

    log: AuditLog
    report_every_s: float
    params: AuditParams
    observed: int = 0
    reports: int = 0
    _queue: asyncio.Queue = field(default_factory=lambda: asyncio.Queue(maxsize=10_000))
    _connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, run_for_s: float | None, since: datetime | None) -> None:
        """Catch up, then follow the stream until ``run_for_s`` elapses (forever when None)."""
        logger = get_run_logger()
        if run_for_s is not None and run_for_s <= 0:
            self.observed += await catch_up(self.log, since)
            return
        deadline = None if run_for_s is None else time.monotonic() + run_for_s
        self.log.paths.request.unlink(missing_ok=True)  # a request made while no auditor ran is stale
        pump = asyncio.create_task(self._pump())
        try:
            await self._wait_connected(pump)
            self.observed += await catch_up(self.log, since)
            next_report = time.monotonic() + self.report_every_s
            next_sweep = time.monotonic() + SWEEP_EVERY_S
            while deadline is None or time.monotonic() < deadline:
                due = min(next_report, next_sweep, deadline if deadline is not None else float("inf"))
                await self._take(max(0.05, min(due - time.monotonic(), 1.0)))
                if pump.done():
                    logger.warning("event stream ended (%s); catching up and resubscribing", _why(pump))
                    self._connected.clear()
                    pump = asyncio.create_task(self._pump())
                    await self._wait_connected(pump)
                    next_sweep = time.monotonic()
                if time.monotonic() >= next_sweep:
                    await self._sweep(since)
                    next_sweep = time.monotonic() + SWEEP_EVERY_S
                if time.monotonic() >= next_report:
                    await self.report("periodic")
                    next_report = max(next_report + self.report_every_s, time.monotonic())
                if self.log.paths.request.exists():  # `artoo audit` asked: publish an on-demand artifact too
                    self.log.paths.request.unlink(missing_ok=True)
                    await self.report("on-demand")
        finally:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            await self._take(0)

    async def _sweep(self, since: datetime | None) -> None:
        """Catch up again; a server that is briefly unreachable is retried at the next sweep."""
        try:
            self.observed += await catch_up(self.log, since)
        except Exception as exc:
            get_run_logger().warning("catch-up failed, retrying in %.0f s: %s", SWEEP_EVERY_S, exc)

    async def _pump(self) -> None:
        from prefect.events.clients import get_events_subscriber

        flt = EventFilter(event=EventNameFilter(prefix=[EVENT_PREFIX]))
        async with get_events_subscriber(filter=flt, reconnect_on_clean_close=True) as subscriber:
            self._connected.set()
            async for event in subscriber:
                await self._queue.put(event.model_dump(mode="json"))

    async def _wait_connected(self, pump: asyncio.Task) -> None:
        waiter = asyncio.create_task(self._connected.wait())
        await asyncio.wait({waiter, pump}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()

    async def _take(self, timeout: float) -> None:
        """Wait up to ``timeout`` for events, then record every queued one."""
        batch: list[dict[str, Any]] = []
        if timeout > 0:
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), timeout))
            except TimeoutError:
                return
        while not self._queue.empty():
            batch.append(self._queue.get_nowait())
        if batch:
            self.observed += len(record_events(self.log, batch, checkpoint=True))

    async def report(self, trigger: Literal["periodic", "on-demand"]) -> None:
        """Publish a report: reports.jsonl, the run log and the ``audit-report`` artifact."""
        report = publish_report(self.log.paths, trigger, self.params)
        self.reports += 1
        get_run_logger().info("audit report (%s): %d task(s), %d correction(s), anomalies: %s", trigger,
                              report.tasks_observed, report.total_corrections,
                              "; ".join(report.anomalies + report.boundary_violations + report.drift_alerts)
                              or "none")
        await acreate_markdown_artifact(key=REPORT_ARTIFACT_KEY, markdown=render_markdown(report, datetime.now(UTC)),
                                        description="The Auditor's latest report to the operator.")


def _why(task: asyncio.Task) -> str:
    if task.cancelled():
        return "cancelled"
    exc = task.exception()
    return f"{type(exc).__name__}: {exc}" if exc else "closed"


@flow(name="auditor", log_prints=False, persist_result=False)
async def auditor(run_for_s: float | None = None, report_every_s: float = 300.0,
                  since: datetime | None = None) -> dict[str, int]:
    """Observe every artoo.* event into the audit log and report every ``report_every_s``."""
    if report_every_s <= 0:
        raise ValueError(f"report_every_s must be positive, got {report_every_s}")
    settings = load_settings()
    loop = AuditorLoop(AuditLog(settings.home_dir), report_every_s, AuditParams(epsilon=settings.ggs.epsilon))
    await loop.run(run_for_s, since)
    loop.log.sync()
    get_run_logger().info("observed %d new message(s); %d report(s); %d record(s) in the log",
                          loop.observed, loop.reports, loop.log.count)
    return {"observed": loop.observed, "reports": loop.reports, "records": loop.log.count}


RunKey = tuple[str, str]
"""(task_id, run): the messages one run published for one task."""


class PublishedTap:
    """A bus tap remembering what this process published: (task_id, run) → sequence numbers."""

    def __init__(self) -> None:
        self.runs: dict[RunKey, set[int]] = {}
        self._lock = threading.Lock()

    def __call__(self, record: dict[str, Any]) -> None:
        resource = record.get("resource") or {}
        key = (str(resource.get("prefect.resource.name", "")), str(resource.get("artoo.run", "")))
        with self._lock:
            self.runs.setdefault(key, set()).add(int(resource.get("artoo.seq", 0)))

    @property
    def published(self) -> dict[str, set[int]]:
        """task_id → sequence numbers of every run (for callers that start one run per task)."""
        with self._lock:
            merged: dict[str, set[int]] = {}
            for (task_id, _), seqs in self.runs.items():
                merged.setdefault(task_id, set()).update(seqs)
            return merged


def split_key(key: str | RunKey) -> tuple[str, str | None]:
    """(task_id, run) from a key of ``observe_run``; a bare task_id means any run (None)."""
    return key if isinstance(key, tuple) else (key, None)


def describe_key(key: str | RunKey) -> str:
    """``task_id [run 1a2b3c4d]`` (or the bare task_id) for a person."""
    task_id, run = split_key(key)
    return f"{task_id} [run {short_run(run)}]" if run else task_id


@dataclass(frozen=True)
class EmbeddedPass:
    """What the embedded pass did: records added, and per (task_id, run) the sequence numbers never delivered."""

    appended: int
    missing: dict[str | RunKey, list[int]]
    error: str | None = None

    @property
    def complete(self) -> bool:
        """Every published message reached the audit log."""
        return not self.missing and self.error is None


def observe_run(published: Mapping[str | RunKey, set[int]], started: datetime,
                wait_s: float = 20.0) -> EmbeddedPass:
    """Drain the EventsWorker, then read each task's events back into the audit log (at most ``wait_s``).

    ``published`` maps (task_id, run) — or a bare task_id, for any run — to the sequence numbers to wait for.
    """
    deadline = time.monotonic() + wait_s
    try:
        drain_events(timeout=wait_s / 2)
        return asyncio.run(_await_published(published, started - timedelta(seconds=5), deadline))
    except Exception as exc:  # the audit must never turn a finished run into a failure
        return EmbeddedPass(0, {k: sorted(s) for k, s in published.items()}, f"{type(exc).__name__}: {exc}")


async def audit_own_run(published: Mapping[str | RunKey, set[int]], started: datetime,
                        wait_s: float = 15.0) -> EmbeddedPass:
    """observe_run from inside a running flow (its event loop): this run's messages into this home's log.

    A worker runs ``artoo-task`` with its own ARTOO_HOME, so each worker's chain holds the runs it
    executed (``artoo audit verify --home A --home B …`` checks them together).
    """
    deadline = time.monotonic() + wait_s
    try:
        await asyncio.to_thread(drain_events, timeout=wait_s / 2)
        return await _await_published(published, started - timedelta(seconds=5), deadline)
    except Exception as exc:  # the audit must never turn a finished run into a failure
        return EmbeddedPass(0, {k: sorted(s) for k, s in published.items()}, f"{type(exc).__name__}: {exc}")


async def _await_published(published: Mapping[str | RunKey, set[int]], since: datetime,
                           deadline: float) -> EmbeddedPass:
    log = AuditLog(load_settings().home_dir)
    async with get_client() as client:  # one client (and connection) for every poll
        return await _poll_published(log, client, published, since, deadline)


async def _poll_published(log: AuditLog, client: Any, published: Mapping[str | RunKey, set[int]],
                          since: datetime, deadline: float) -> EmbeddedPass:
    appended = 0
    missing = {key: set(seqs) for key, seqs in published.items() if seqs}
    while True:
        for task_id in sorted({split_key(key)[0] for key in missing}):
            observed: list[dict[str, Any]] = []
            async for batch in read_pages(artoo_filter(since, task_id), client):
                appended += len(record_events(log, batch, checkpoint=False))
                observed += [o for o in (observation(e) for e in batch) if o is not None]
            for key in [k for k in missing if split_key(k)[0] == task_id]:
                run = split_key(key)[1]
                missing[key] -= {o["task_seq"] for o in observed if run is None or o["run"] == run}
                if not missing[key]:
                    del missing[key]
        if not missing or time.monotonic() >= deadline:
            return EmbeddedPass(appended, {k: sorted(s) for k, s in missing.items()})
        await asyncio.sleep(POLL_S)
