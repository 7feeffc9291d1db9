"""The AuditReport from the statistics state, and its markdown for the Prefect UI.

Pure: the same state gives the same report.  Boundary violations go to their own
field, drift to ``drift_alerts``, every other anomaly to ``anomalies``; each string
starts with the anomaly's name, and ``anomaly_names`` gathers them across the three.

Each conversation (one run of a task) has one gap trend.  Two runs of one task_id are told
apart by their run id: a conversation's anomaly strings end with `` [run 1a2b3c4d]``, and
each gap trend carries the short run id.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from artoo.config.audit_contracts import AuditReport, GapTrend
from artoo.tasks.audit.anomalies import (
    ANOMALY_NAMES,
    AuditParams,
    boundary_violations,
    conversation_anomalies,
    drift_alerts,
    trend,
)
from artoo.tasks.audit.stats import (
    Conversation,
    StatsState,
    in_window,
    role_counts,
    short_run,
    tool_health,
    touched,
    window_entries,
)


def gap_trend(conv: Conversation, p: AuditParams) -> GapTrend:
    """The conversation's loss trend, with its short run id (empty for an unlabelled bus)."""
    return GapTrend(task_id=conv.task_id, trend=trend(conv, p), run=short_run(conv.run) if conv.run else "")


def build_report(state: StatsState, trigger: Literal["periodic", "on-demand"],
                 params: AuditParams | None = None) -> AuditReport:
    """The report for the current window."""
    p = params or AuditParams()
    entries = window_entries(state)
    convs = touched(state)
    anomalies: list[str] = []
    violations: list[str] = []
    for conv in convs:
        anomalies += conversation_anomalies(conv, p)
        violations += boundary_violations(conv, [e for e in conv.entries if in_window(state, e)])
    if state.unreadable:
        lines = ", ".join(str(n) for n in state.unreadable[:10])
        anomalies.append(f"audit_log: unreadable record(s) at line(s) {lines}; run `artoo audit verify`")
    return AuditReport(
        trigger=trigger, window_start=state.window_start, tasks_observed=len(convs),
        total_corrections=sum(1 for e in entries if e.kind == "correction_signal"),
        gap_trends=[gap_trend(c, p) for c in convs],
        boundary_violations=violations,
        drift_alerts=drift_alerts(state.history, role_counts(entries), p),
        anomalies=anomalies, tool_health=tool_health(entries),
    )


def anomaly_names(report: AuditReport) -> set[str]:
    """The anomaly names a report carries, across anomalies, boundary violations and drift alerts."""
    texts = [*report.anomalies, *report.boundary_violations, *report.drift_alerts]
    return {name for name in ANOMALY_NAMES for text in texts if text.startswith(name + ":")}


def render_markdown(report: AuditReport, now: datetime | None = None) -> str:
    """The report as the ``audit-report`` markdown artifact."""
    h = report.tool_health
    lines = [f"# Audit report ({report.trigger})", "",
             f"Window from {report.window_start.isoformat()}"
             + (f" to {now.isoformat()}" if now else "") + ".", "",
             "| tasks observed | corrections | execution failures | environmental retries | logical retries |",
             "|---|---|---|---|---|",
             f"| {report.tasks_observed} | {report.total_corrections} | {h.execution_failures} "
             f"| {h.environmental_retries} | {h.logical_retries} |"]
    sections = [("Anomalies", report.anomalies), ("Boundary violations", report.boundary_violations),
                ("Drift alerts", report.drift_alerts)]
    for title, items in sections:
        lines += ["", f"## {title}", *([f"- {item}" for item in items] or ["none"])]
    if report.gap_trends:
        lines += ["", "## Gap trends", *_gap_table(report)]
    return "\n".join(lines)


def _gap_table(report: AuditReport) -> list[str]:
    """One row per conversation; a run column when any conversation has a run id."""
    if not any(g.run for g in report.gap_trends):
        return ["| task | trend |", "|---|---|", *[f"| `{g.task_id}` | {g.trend} |" for g in report.gap_trends]]
    return ["| task | run | trend |", "|---|---|---|",
            *[f"| `{g.task_id}` | {f'`{g.run}`' if g.run else '—'} | {g.trend} |" for g in report.gap_trends]]


def describe(line: bytes) -> str:
    """One audit record as a short line for ``artoo audit tail``."""
    try:
        r = json.loads(line)
        run = f" [run {short_run(str(r['run']))}]" if r.get("run") else ""
        return (f"{r['seq']:>6} {str(r['occurred'])[:23]} {r['task_id']}{run} #{r['task_seq']} "
                f"{r['message']} {r['from_role']}→{r['to_role']}")
    except (ValueError, KeyError, TypeError):
        return f"(unreadable record: {line[:80]!r})"
