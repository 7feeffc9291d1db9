"""From a Prefect event to the fields of one AuditEvent: what the Auditor observed.

The bus (artoo.tasks.bus.events) names each message ``artoo.<kind>`` on the resource
``artoo.task.<task_id>`` with ``artoo.from``/``artoo.to``/``artoo.seq``/``artoo.run`` labels.
This module only reads that shape; a label that is missing or malformed is kept as-is (an
empty role, sequence 0) so the statistics report it instead of the reader dropping it.  Events
published before the bus labelled runs have no ``artoo.run``: their run is the empty string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artoo.tasks.bus.events import EVENT_PREFIX

TASK_RESOURCE_PREFIX = "artoo.task."


def is_artoo(name: str) -> bool:
    """True for the bus's event names."""
    return name.startswith(EVENT_PREFIX)


def _task_seq(value: Any) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def observation(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """AuditEvent fields (no seq or hashes) from an event's JSON form; None for non-artoo events."""
    name = str(event.get("event", ""))
    if not is_artoo(name):
        return None
    resource = event.get("resource") or {}
    resource_id = str(resource.get("prefect.resource.id", ""))
    task_id = resource.get("prefect.resource.name") or resource_id.removeprefix(TASK_RESOURCE_PREFIX)
    payload = event.get("payload") or {}
    return {
        "event_id": str(event["id"]),
        "occurred": event["occurred"],
        "task_id": str(task_id),
        "message": name.removeprefix(EVENT_PREFIX),
        "from_role": str(resource.get("artoo.from", "")),
        "to_role": str(resource.get("artoo.to", "")),
        "task_seq": _task_seq(resource.get("artoo.seq")),
        "run": str(resource.get("artoo.run") or ""),
        "payload": dict(payload) if isinstance(payload, Mapping) else {"value": payload},
    }
