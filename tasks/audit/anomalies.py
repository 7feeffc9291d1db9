"""Anomaly detectors: pure functions of a conversation's entries (or a window's counts).

Each detector returns human-readable strings that start with the anomaly's name
(``ggs_thrashing: task …``) so an operator can grep them and a report can be scanned by
name; a conversation whose run the bus labelled ends its strings with `` [run 1a2b3c4d]``, so
two runs of one task_id stay apart.  The rules, in the spec's words and ours:

- ``ggs_thrashing``: consecutive break_symmetry directives without D decreasing.
- ``convergence_failure``: ∇L above ε in consecutive rounds, or a Law-2 abandon.
- ``boundary_violation``: a (message, from, to) the bus's ROUTES do not allow.
- ``drift``: a role's correction rate rising across the last windows.
- ``bus_gap``: a missing, duplicated or out-of-order per-task sequence number.
- ``law1_denied``: a FinalResult summary or a subtask outcome carrying ``[LAW1]``.
- ``unverified_success``: an accept/success whose final round shows no tool evidence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from artoo.tasks.audit.stats import CORRECTION_RATES, Conversation, Entry
from artoo.tasks.bus.events import ROUTES

ANOMALY_NAMES = ("ggs_thrashing", "convergence_failure", "boundary_violation", "drift", "bus_gap",
                 "law1_denied", "unverified_success")


@dataclass(frozen=True)
class AuditParams:
    """Thresholds of the detectors."""

    epsilon: float = 0.1
    """∇L above this is a worsening round (the GGS's ε)."""
    trend_tolerance: float = 0.01
    """A change of D smaller than this is stable."""
    thrash_min: int = 2
    """Consecutive non-improving break_symmetry directives that count as thrashing."""
    order_slack_s: float = 1.0
    """A lower sequence number published this much later than a higher one is out of order."""
    drift_windows: int = 3
    """Windows (with enough samples) over which a rate must rise."""
    drift_min_rise: float = 0.1
    """Minimum rise of the rate across those windows."""
    drift_min_samples: int = 2
    """Opportunities a window needs for its rate to count."""


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _losses(conv: Conversation) -> list[Entry]:
    return [e for e in conv.ordered() if e.kind in ("plan_directive", "final_result")]


def trend(conv: Conversation, p: AuditParams) -> Literal["improving", "stable", "worsening"]:
    """Direction of D from the first to the last loss the GGS reported."""
    ds = [d for d in (_number(e.facts.get("D")) for e in _losses(conv)) if d is not None]
    if len(ds) < 2 or abs(ds[-1] - ds[0]) < p.trend_tolerance:
        return "stable"
    return "improving" if ds[-1] < ds[0] else "worsening"


def ggs_thrashing(conv: Conversation, p: AuditParams) -> str | None:
    """Consecutive break_symmetry directives without D decreasing."""
    best: list[Entry] = []
    streak: list[Entry] = []
    for e in (e for e in conv.ordered() if e.kind == "plan_directive"):
        if e.facts.get("directive") != "break_symmetry":
            streak = []
            continue
        d, prev = _number(e.facts.get("D")), _number(streak[-1].facts.get("D")) if streak else None
        streak = [e] if (d is not None and prev is not None and d < prev) else [*streak, e]
        best = streak if len(streak) > len(best) else best
    if len(best) < p.thrash_min:
        return None
    d = _number(best[-1].facts.get("D"))
    shown = f" (D={d:.2f})" if d is not None else ""
    return (f"ggs_thrashing: task {conv.task_id}: {len(best)} consecutive break_symmetry directives "
            f"without D decreasing{shown}")


def convergence_failure(conv: Conversation, p: AuditParams) -> str | None:
    """∇L > ε in two consecutive rounds, or an abandon by the Law-2 kill switch."""
    finals = [e for e in conv.entries if e.kind == "final_result"]
    if any(e.facts.get("law2") for e in finals):
        return f"convergence_failure: task {conv.task_id}: abandoned by the Law-2 kill switch (the loss kept worsening)"
    grads = [g for g in (_number(e.facts.get("grad_l")) for e in _losses(conv)) if g is not None]
    for a, b in zip(grads, grads[1:], strict=False):
        if a > p.epsilon and b > p.epsilon:
            return (f"convergence_failure: task {conv.task_id}: the loss worsened in consecutive rounds "
                    f"(∇L {a:+.2f}, {b:+.2f} > ε={p.epsilon})")
    return None


def _out_of_order(entries: list[Entry], slack: float) -> list[tuple[Entry, Entry]]:
    """Pairs (earlier, later) where the later-published message has the lower sequence number."""
    by_time = sorted((e for e in entries if e.task_seq > 0), key=lambda e: e.at)
    pairs: list[tuple[Entry, Entry]] = []
    highest: Entry | None = None
    j = 0
    for e in by_time:
        while j < len(by_time) and by_time[j].at < e.at - slack:
            if highest is None or by_time[j].task_seq > highest.task_seq:
                highest = by_time[j]
            j += 1
        if highest is not None and highest.task_seq > e.task_seq:
            pairs.append((highest, e))
    return pairs


def bus_gap(conv: Conversation, p: AuditParams) -> str | None:
    """Missing, duplicated, absent or out-of-order sequence numbers in one conversation."""
    seqs = [e.task_seq for e in conv.entries]
    problems: list[str] = []
    unnumbered = sorted({e.kind for e in conv.entries if e.task_seq <= 0})
    if unnumbered:
        problems.append(f"message(s) without a sequence number: {', '.join(unnumbered)}")
    numbered = [s for s in seqs if s > 0]
    twice = sorted(s for s, n in Counter(numbered).items() if n > 1)
    if twice:
        problems.append(f"sequence number(s) seen more than once: {_list(twice)}")
    missing = sorted(set(range(1, max(numbered, default=0) + 1)) - set(numbered))
    if missing:
        problems.append(f"missing sequence number(s): {_list(missing)}")
    for early, late in _out_of_order(conv.entries, p.order_slack_s)[:3]:
        problems.append(f"sequence {late.task_seq} ({late.kind}) was published {late.at - early.at:.1f} s after "
                        f"sequence {early.task_seq} ({early.kind}) (out of order)")
    return f"bus_gap: task {conv.task_id}: " + "; ".join(problems) if problems else None


def _list(numbers: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f" (+{len(numbers) - limit} more)" if len(numbers) > limit else "")


def law1_denied(conv: Conversation) -> str | None:
    """A Law-1 denial visible in a FinalResult summary or a subtask outcome."""
    hits = [e for e in conv.entries if e.kind in ("final_result", "subtask_outcome") and e.facts.get("law1")]
    if not hits:
        return None
    return f"law1_denied: task {conv.task_id}: an irreversible action was not confirmed ([LAW1] in {hits[0].kind})"


def unverified_success(conv: Conversation) -> str | None:
    """An accept/success FinalResult whose final round carries no tool evidence."""
    ordered = conv.ordered()
    finals = [e for e in ordered if e.kind == "final_result"]
    if not finals or finals[-1].facts.get("directive") not in ("accept", "success"):
        return None
    final = finals[-1]
    starts = [e.task_seq for e in ordered if e.kind == "dispatch_manifest" and e.task_seq < final.task_seq]
    first = starts[-1] if starts else 0
    round_ = [e for e in ordered if first <= e.task_seq <= final.task_seq]
    evidence = sum(int(e.facts.get("evidence") or 0) for e in round_
                   if e.kind != "subtask_outcome" or e.facts.get("status") == "matched")
    if evidence:
        return None
    return (f"unverified_success: task {conv.task_id}: FinalResult {final.facts.get('directive')} "
            "but no tool call backs its final round's output")


def conversation_anomalies(conv: Conversation, p: AuditParams) -> list[str]:
    """Every per-conversation anomaly, in a stable order."""
    found = [ggs_thrashing(conv, p), convergence_failure(conv, p), bus_gap(conv, p),
             law1_denied(conv), unverified_success(conv)]
    return [a + conv.run_note for a in found if a]


def boundary_violations(conv: Conversation, entries: list[Entry]) -> list[str]:
    """Messages of the conversation whose (kind, from, to) is not a route of the bus."""
    return [f"boundary_violation: task {conv.task_id}: {e.kind} {e.frm or '?'}→{e.to or '?'} "
            f"(sequence {e.task_seq}) is not a route the spec allows{conv.run_note}"
            for e in entries if (e.kind, e.frm, e.to) not in ROUTES]


def drift_alerts(history: list[dict[str, list[int]]], current: dict[str, list[int]], p: AuditParams) -> list[str]:
    """Roles whose correction rate rose over the last ``drift_windows`` windows with enough samples."""
    alerts: list[str] = []
    for role in CORRECTION_RATES:
        now = current.get(role, [0, 0])
        if now[1] < p.drift_min_samples:
            continue
        series = [h[role] for h in history if role in h and h[role][1] >= p.drift_min_samples] + [now]
        rates = [n / d for n, d in series][-p.drift_windows:]
        rising = all(b > a for a, b in zip(rates, rates[1:], strict=False))
        if len(rates) == p.drift_windows and rising and rates[-1] - rates[0] >= p.drift_min_rise:
            shown = " → ".join(f"{r:.2f}" for r in rates)
            alerts.append(f"drift: {role} correction rate rising across {len(rates)} windows: {shown}")
    return alerts
