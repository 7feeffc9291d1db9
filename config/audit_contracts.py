"""The Auditor's contracts (spec R6): what it writes to its log and reports to the human.

Kept apart from the bus messages because the Auditor is outside both loops: no role
produces these, and nothing in the loops consumes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from artoo.config.contracts import Contract


class GapTrend(Contract):
    """One task's trend in an AuditReport."""

    task_id: str
    """The task."""
    trend: Literal["improving", "stable", "worsening"]
    """Direction of its loss."""
    run: str = ""
    """Short id of the run (one conversation of the task) it belongs to; empty when the bus did not label it."""


class ToolHealth(Contract):
    """Tool failure counters for an AuditReport window."""

    execution_failures: int = 0
    """ExecutionResult.status == failed."""
    environmental_retries: int = 0
    """CorrectionSignals classed environmental."""
    logical_retries: int = 0
    """CorrectionSignals classed logical."""


class AuditEvent(Contract):
    """One observed bus message in the hash-chained audit log."""

    seq: int
    """Position in the audit log."""
    event_id: str
    """Prefect event id (duplicates are ignored by it)."""
    occurred: datetime
    """When the message was published."""
    task_id: str
    """The task it belongs to."""
    message: str
    """The message kind, e.g. plan_directive."""
    from_role: str
    """Sender role (R1…R7, user, dispatcher)."""
    to_role: str
    """Receiver role."""
    task_seq: int
    """The per-task bus sequence number."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """The message itself."""
    prev_hash: str
    """SHA-256 of the previous record (64 zeros for the first)."""
    hash: str = ""
    """SHA-256 of this record without this field."""


class AuditReport(Contract):
    """The Auditor's report to the human operator."""

    trigger: Literal["periodic", "on-demand"]
    """Why it was produced."""
    window_start: datetime
    """Start of the statistics window."""
    tasks_observed: int = 0
    """Distinct tasks seen in the window."""
    total_corrections: int = 0
    """CorrectionSignals seen in the window."""
    gap_trends: list[GapTrend] = Field(default_factory=list)
    """Per-task loss trend."""
    boundary_violations: list[str] = Field(default_factory=list)
    """Messages between roles the spec does not connect."""
    drift_alerts: list[str] = Field(default_factory=list)
    """Roles whose correction rate is rising."""
    anomalies: list[str] = Field(default_factory=list)
    """ggs_thrashing, convergence_failure, bus_gap, law1_denied, unverified_success…"""
    tool_health: ToolHealth = Field(default_factory=ToolHealth)
    """Tool failure counters."""
