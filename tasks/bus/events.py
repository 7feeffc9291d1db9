"""The observable bus: the one publish point every inter-role message passes through.

Each message becomes one Prefect event named ``artoo.<kind>`` on the resource
``artoo.task.<task_id>``, labelled with its from/to roles and a per-task monotonically
increasing sequence number (the Auditor detects gaps with it) and the id of the run that
published it (``artoo.run``): the perceiver names the task, so two runs of the same request
started together (a scheduled run and a manual one) share a task_id and their sequence
numbers interleave; the run label is what tells the Auditor they are two conversations.
Publishing never blocks:
Prefect's EventsWorker queues the event and a background thread ships it, so a slow
or absent subscriber costs the publisher nothing.  The flow run and task run that
published it are attached as related resources by Prefect from the run context.
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

EVENT_PREFIX = "artoo."
MAX_PAYLOAD_CHARS = 200_000

# (message kind, from role, to role) pairs the spec connects; anything else is a boundary violation.
ROUTES: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("task_spec", "R1", "R2"),
        ("memory_query", "R2", "R5"),
        ("dispatch_manifest", "R2", "R4b"),
        ("subtask", "R2", "R3"),
        ("execution_result", "R3", "R4a"),
        ("correction_signal", "R4a", "R3"),
        ("subtask_outcome", "R4a", "R4b"),
        ("outcome_summary", "R4b", "R7"),
        ("replan_request", "R4b", "R7"),
        ("plan_directive", "R7", "R2"),
        ("final_result", "R7", "user"),
        ("megram", "R7", "R5"),
    }
)

Sink = Callable[[dict[str, Any]], None]

_TAPS: list[Sink] = []
"""Process-local read-only taps (the CLI's live progress); a failing tap is dropped silently."""


def add_tap(tap: Sink) -> None:
    """Observe every message published in this process."""
    _TAPS.append(tap)


def remove_tap(tap: Sink) -> None:
    """Stop observing."""
    if tap in _TAPS:
        _TAPS.remove(tap)


def task_resource(task_id: str) -> str:
    """The Prefect resource id of a task's conversation."""
    return f"artoo.task.{task_id}"


def current_run_id() -> str:
    """The Prefect flow run this code runs in (flow or task run context), else a fresh uuid4 hex."""
    from prefect.runtime import flow_run

    return str(flow_run.id or uuid.uuid4().hex)


def event_name(kind: str) -> str:
    """``artoo.<kind>`` for a message kind."""
    return f"{EVENT_PREFIX}{kind}"


def without_nul(value: Any) -> Any:
    """``value`` with every NUL character replaced by U+FFFD.

    PostgreSQL (behind a Prefect server) cannot store U+0000 in text or JSON, so an event
    carrying one (a tool printed a NUL byte) would be dropped by the server, and the Auditor
    would never see that message.
    """
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    return value


def bounded_payload(message: BaseModel) -> dict[str, Any]:
    """The message as JSON data, shortened (and marked) if it would exceed the event size limit."""
    data = message.model_dump(mode="json")
    text = json.dumps(data, default=str)
    if "\\u0000" in text:
        data = without_nul(data)
        text = json.dumps(data, default=str)
    if len(text) <= MAX_PAYLOAD_CHARS:
        return data
    half = MAX_PAYLOAD_CHARS // 2
    return {"kind": data.get("kind"), "truncated": True, "original_chars": len(text),
            "head": text[:half], "tail": text[-half:]}


class Bus:
    """One run's publish point for one task; thread-safe, never blocking."""

    def __init__(self, task_id: str, sink: Sink | None = None, emit: bool = True, run_id: str | None = None) -> None:
        self.task_id = task_id
        self.run_id = run_id or current_run_id()
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self._sink = sink
        self._emit = emit
        self.published: int = 0

    def publish(self, message: BaseModel, from_role: str, to_role: str, subtask_id: str | None = None):
        """Publish one message and hand it back, so call sites read ``x = bus.publish(x, …)``."""
        kind = getattr(message, "kind", type(message).__name__.lower())
        with self._lock:
            seq = next(self._seq)
            self.published += 1
        resource = {
            "prefect.resource.id": task_resource(self.task_id),
            "prefect.resource.name": self.task_id,
            "artoo.from": from_role,
            "artoo.to": to_role,
            "artoo.seq": str(seq),
            "artoo.run": self.run_id,
        }
        related = []
        if subtask_id:
            related.append({"prefect.resource.id": f"artoo.subtask.{subtask_id}", "prefect.resource.role": "subtask"})
        payload = bounded_payload(message)
        if self._emit:
            _emit(event_name(kind), resource, related, payload)
        record = {"event": event_name(kind), "resource": resource, "related": related, "payload": payload}
        for tap in [self._sink, *_TAPS]:
            if tap is None:
                continue
            try:
                tap(record)
            except Exception:  # an observer must never disturb the publisher
                continue
        return message


def _emit(name: str, resource: dict, related: list, payload: dict) -> None:
    from prefect.events import emit_event

    emit_event(event=name, resource=resource, related=related or None, payload=payload)
