"""Process-local runtime objects a task run needs but Prefect must not serialise.

Flow and task parameters are recorded by the Prefect API, so live objects (the LLM
client, the memory store, the bus, the Law-1 gate) stay in this registry and runs
receive only a ``runtime_id``.  One Runtime serves one ``artoo-task`` run, in two parts:
``RunDeps``, what the run was given and only reads (frozen), and ``RunRecord``, what the
run accumulates as it goes (mutable).  Kept apart so a reader sees at the type which
state a task may change, and that no task swaps a dependency under another.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from artoo.config.contracts import SOPRecord
from artoo.config.settings import Settings
from artoo.tasks.bus.events import Bus

if TYPE_CHECKING:  # types only: the real modules cost start-up time (the LLM client imports openai)
    from artoo.memory.backends import MemoryService
    from artoo.tasks.checks.evaluate import Ballot, Snapshot
    from artoo.tasks.checks.run import Confined
    from artoo.tasks.decisions.log import DecisionLog
    from artoo.tasks.llm.base import LLM
    from artoo.tasks.plan.inputs import RoundInputs
    from artoo.tasks.tools.models import Gate


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


@dataclass(frozen=True)
class RunDeps:
    """What a run is given when it starts and only reads: the same objects for every task of the run."""

    settings: Settings
    """The settings the run started with."""
    llm: LLM
    """The model every role asks (artoo.tasks.llm.LLM)."""
    store: MemoryService | None
    """The MKCT memory, or None when it is unavailable (the run plans without it)."""
    bus: Bus
    """Where every inter-role message is published; the one dependency R1's answer decides (``with_bus``)."""
    workspace: Path
    """The folder the run's new files are written to."""
    gate: Gate
    """Law-1 confirmation (artoo.tasks.tools.models.Gate): awaits a PendingAction, True only on an explicit approval."""
    decisions: DecisionLog
    """The run's decision log (``artoo log``, ``artoo replay``); ``decisions.enabled`` off makes it write nothing."""
    writes: OrderedWrites = field(default_factory=OrderedWrites)
    """Artifacts written in the background, in order; flushed before the run ends (a queue, so mutable
    inside, but the run keeps the same one throughout)."""


@dataclass
class RunRecord:
    """What a run accumulates as its tasks go: Law-1 answers, what it created, time, memory's evidence."""

    law1_events: list[str] = field(default_factory=list)
    """Every Law-1 decision of the run, e.g. ``approved: rm x`` / ``denied: rm x``."""
    created: set[str] = field(default_factory=set)
    """Real paths this task created (owned): its later steps may change them without a Law-1 question."""
    tool_seconds: float = 0.0
    """Wall time spent inside tools (cost report)."""
    law1_waits: list[float] = field(default_factory=list)
    """Seconds each Law-1 question waited for the person: excluded from Ω, reported on its own."""
    served_sops: list[SOPRecord] = field(default_factory=list)
    """The SOPRecords this round's calibration served to R2; R7 checks them against the outcome."""
    fed_back: set[str] = field(default_factory=set)
    """Ids of the SOPs already given negative feedback in this task (one piece of evidence per task)."""
    printed: list[str] = field(default_factory=list)
    """Every tool call of the run as code recorded it (``tool: input → output``), in order: where a reference run
    that answered by printing looks for its answer."""
    prepared: dict[int, RoundInputs] = field(default_factory=dict)
    """Per round number, the inputs the medium loop worked out before creating that round's subflow."""
    confined: Confined | None = None
    """How checks are confined here (None until the run starts: no check runs)."""
    before: Snapshot | None = None
    """The folder as it was before the task: what the plan's reference run starts from."""
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    """Per subtask id, the folder as it was before its sequence group: what its criteria's checks start from."""
    plans: dict[str, int] = field(default_factory=dict)
    """Each plan dispatched in this task (as its JSON), with the round that ran it: a repeat is not run again."""
    ballot: Ballot | None = None
    """The task's votes on the whole request, once drawn (None when checks cannot run, or before)."""
    no_votes: bool = False
    """The endpoint gave none of the task's first votes: the task goes on without votes, and asks for none again."""
    check_defects: list[str] = field(default_factory=list)
    """Checks of this round's plan that could not run (a plan defect): told to the planner on the next round."""


@dataclass(frozen=True)
class Runtime:
    """Everything the roles' tasks need for one task run: its fixed dependencies and its record.

    Frozen too: a task changes the record's contents, never which deps or record the run has; the
    one exchange (the bus, once R1 names the task) re-registers the run (``with_bus``).
    """

    deps: RunDeps
    """What the run was given; read only."""
    record: RunRecord
    """What the run accumulates; changed in place by its tasks."""


_REGISTRY: dict[str, Runtime] = {}


def register(runtime: Runtime) -> str:
    """Keep a runtime and return its id."""
    runtime_id = uuid.uuid4().hex
    _REGISTRY[runtime_id] = runtime
    return runtime_id


def get_runtime(runtime_id: str) -> Runtime:
    """The runtime of a live run (KeyError means the run is not in this process)."""
    return _REGISTRY[runtime_id]


def with_bus(runtime_id: str, bus: Bus) -> Runtime:
    """Give a live run a new bus, keep everything else, and return the runtime now registered.

    A bus publishes under one task id, and R1's TaskSpec names the task only after the run began
    (until then its bus says ``pending``).  Every task looks the runtime up by id when it starts,
    so each one from here on publishes under the task's id; a Runtime held from before shares the
    same record and other deps, only its bus is the old one.
    """
    old = _REGISTRY[runtime_id]
    _REGISTRY[runtime_id] = new = Runtime(replace(old.deps, bus=bus), old.record)
    return new


def drop(runtime_id: str) -> None:
    """Forget a finished run's runtime."""
    _REGISTRY.pop(runtime_id, None)
