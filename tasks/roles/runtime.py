"""Process-local runtime objects a task run needs but Prefect must not serialise.

Flow and task parameters are recorded by the Prefect API, so live objects (the LLM
client, the memory store, the bus, the Law-1 gate) stay in this registry and runs
receive only a ``runtime_id``.  One Runtime serves one ``artoo-task`` run.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artoo.config.settings import Settings
from artoo.tasks.bus.events import Bus


class OrderedWrites:
    """Writes a person reads later (artifacts), kept off the critical path between LLM calls, never lost.

    ``submit`` only queues a job; ``start`` launches the queued jobs, one after another in the
    order submitted (an artifact updated every round keeps its rounds in order).  The role tasks
    call ``start`` as they ask the model: the writes then reach the Prefect server while the run
    waits for the LLM anyway, instead of queueing on the server in front of the next subflow's
    creation.  ``flush`` starts and awaits everything; the run calls it before it ends (its API
    client is still open then).  A job that fails is recorded, never raised into the loop.
    """

    def __init__(self) -> None:
        self._queued: list[tuple[Callable[[], Awaitable[Any]], contextvars.Context]] = []
        self._last: asyncio.Task | None = None
        self.failures: list[str] = []
        self.done = 0

    def submit(self, job: Callable[[], Awaitable[Any]]) -> None:
        """Queue ``job()`` to run after every job submitted before it, in the context it was submitted from
        (Prefect reads the run an artifact belongs to from there)."""
        self._queued.append((job, contextvars.copy_context()))

    def start(self) -> None:
        """Launch the queued jobs in the background of the running loop (in order, one at a time)."""
        loop = asyncio.get_running_loop()
        for job, context in self._queued:
            self._last = loop.create_task(self._run(job, self._last), context=context)
        self._queued.clear()

    async def _run(self, job: Callable[[], Awaitable[Any]], previous: asyncio.Task | None) -> None:
        if previous is not None:
            await previous
        try:
            await job()
            self.done += 1
        except Exception as exc:  # reported by flush's caller; the run itself goes on
            self.failures.append(f"{type(exc).__name__}: {exc}")

    async def flush(self) -> None:
        """Start whatever is queued and wait until every job has finished (or failed)."""
        self.start()
        if self._last is not None:
            await asyncio.shield(self._last)


@dataclass
class Runtime:
    """Everything the roles' tasks need for one task run."""

    settings: Settings
    llm: Any
    """An implementation of artoo.tasks.llm LLM protocol."""
    store: Any | None
    """The MemoryStore, or None when memory is unavailable."""
    bus: Bus
    workspace: Path
    gate: Callable[[Any], Awaitable[bool]]
    """Law-1 confirmation: awaits a PendingAction, True only on an explicit approval."""
    law1_events: list[str] = field(default_factory=list)
    """Every Law-1 decision of the run, e.g. ``approved: rm x`` / ``denied: rm x``."""
    created: set[str] = field(default_factory=set)
    """Real paths this task created (owned): its later steps may change them without a Law-1 question."""
    tool_seconds: float = 0.0
    """Wall time spent inside tools (cost report)."""
    decisions: Any | None = None
    """The run's DecisionLog (artoo.tasks.decisions.log), or None when it is off."""
    law1_waits: list[float] = field(default_factory=list)
    """Seconds each Law-1 question waited for the person: excluded from Ω, reported on its own."""
    served_sops: list[Any] = field(default_factory=list)
    """The SOPRecords this round's calibration served to R2; R7 checks them against the outcome."""
    fed_back: set[str] = field(default_factory=set)
    """Ids of the SOPs already given negative feedback in this task (one piece of evidence per task)."""
    writes: OrderedWrites = field(default_factory=OrderedWrites)
    """Artifacts written in the background, in order; flushed before the run ends."""
    prepared: dict[int, Any] = field(default_factory=dict)
    """Per round number, the inputs the medium loop worked out before creating that round's subflow."""


_REGISTRY: dict[str, Runtime] = {}


def register(runtime: Runtime) -> str:
    """Keep a runtime and return its id."""
    runtime_id = uuid.uuid4().hex
    _REGISTRY[runtime_id] = runtime
    return runtime_id


def get_runtime(runtime_id: str) -> Runtime:
    """The runtime of a live run (KeyError means the run is not in this process)."""
    return _REGISTRY[runtime_id]


def drop(runtime_id: str) -> None:
    """Forget a finished run's runtime."""
    _REGISTRY.pop(runtime_id, None)
