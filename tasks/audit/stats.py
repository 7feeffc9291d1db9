"""Window statistics as a pure fold over audit records (no I/O).

``StatsState`` is everything the Auditor remembers between reports: the current window
(which starts after audit record ``window_seq``), a compact entry per observed message
of every conversation still worth watching, and the per-role correction counts of past
windows (for drift).  It is persisted as JSON by artoo.tasks.audit.persist, so statistics
survive restarts; the log remains the source of truth (the state records how far it has
folded it and the link of that record, so a replaced log is refolded from scratch).

A *conversation* is one run of a task.  The perceiver may give two runs the same
``task_id``, and the bus restarts ``artoo.seq`` at 1 for every run, so a conversation is
keyed by (task_id, run) where the bus labelled the run (``artoo.run``): two runs started
together interleave their sequence numbers, and only the run label tells them apart.
Records from before that label (run ``""``) fall back to the older rule, which handles runs
one after the other: a new conversation starts when sequence 1 arrives for a task whose
open conversation already has it.  The same rule applies within a run (a retried flow run
keeps its id but starts a new bus).  ``open_keys`` (unlabelled) and ``run_keys`` (labelled)
point at each open conversation; a state saved before ``run_keys`` existed loads with none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from artoo.config.audit_contracts import ToolHealth

# role → (message counted as a correction of that role, message counted as an opportunity)
CORRECTION_RATES: dict[str, tuple[str, str]] = {
    "R3": ("correction_signal", "execution_result"),  # executor attempts R4a sent back
    "R2": ("plan_directive", "dispatch_manifest"),  # plans the GGS sent back for a replan
}
HISTORY_WINDOWS = 12


class Entry(BaseModel):
    """What the statistics keep of one observed message."""

    seq: int
    task_seq: int
    at: float
    kind: str
    frm: str
    to: str
    facts: dict[str, Any] = Field(default_factory=dict)


def short_run(run: str) -> str:
    """The first 8 characters of a run id: enough for a person to tell two runs apart."""
    return run[:8]


class Conversation(BaseModel):
    """One run of a task as the Auditor saw it."""

    key: str
    task_id: str
    run: str = ""
    """The bus's ``artoo.run`` label; empty for messages published before runs were labelled."""
    entries: list[Entry] = Field(default_factory=list)
    idle_windows: int = 0

    @property
    def run_note(self) -> str:
        """`` [run 1a2b3c4d]`` for a labelled run, empty otherwise: appended to what names the conversation."""
        return f" [run {short_run(self.run)}]" if self.run else ""

    @property
    def finished(self) -> bool:
        """A FinalResult was observed."""
        return any(e.kind == "final_result" for e in self.entries)

    def ordered(self) -> list[Entry]:
        """Entries in bus order (per-task sequence, then arrival)."""
        return sorted(self.entries, key=lambda e: (e.task_seq, e.seq))


class StatsState(BaseModel):
    """The Auditor's memory between reports."""

    version: int = 1
    window_start: datetime
    window_seq: int = 0
    through_seq: int = 0
    through_offset: int = 0
    through_link: str = "0" * 64
    conversations: dict[str, Conversation] = Field(default_factory=dict)
    open_keys: dict[str, str] = Field(default_factory=dict)
    """task_id → key of its open unlabelled conversation."""
    run_keys: dict[str, dict[str, str]] = Field(default_factory=dict)
    """task_id → run → key of that run's open conversation."""
    next_key: int = 1
    history: list[dict[str, list[int]]] = Field(default_factory=list)
    unreadable: list[int] = Field(default_factory=list)


def _tool_calls_in(value: Any) -> int:
    """Non-empty ``tool_calls`` entries anywhere inside a JSON value."""
    if isinstance(value, dict):
        own = value.get("tool_calls")
        count = len(own) if isinstance(own, list) else 0
        return count + sum(_tool_calls_in(v) for k, v in value.items() if k != "tool_calls")
    if isinstance(value, list):
        return sum(_tool_calls_in(v) for v in value)
    return 0


def _loss_facts(p: dict[str, Any]) -> dict[str, Any]:
    loss = p.get("loss") if isinstance(p.get("loss"), dict) else {}
    return {"D": loss.get("D"), "L": loss.get("L"), "grad_l": p.get("grad_l"), "directive": p.get("directive")}


def facts_of(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The few fields of a message the detectors read."""
    p = payload if isinstance(payload, dict) else {}
    if kind in ("execution_result", "subtask_outcome"):
        facts: dict[str, Any] = {"status": p.get("status")}
        if kind == "subtask_outcome":
            facts["evidence"] = len(p.get("tool_calls") or [])
            facts["law1"] = "[LAW1]" in str(p.get("failure_reason") or "")
        return facts
    if kind == "correction_signal":
        return {"failure_class": p.get("failure_class")}
    if kind == "outcome_summary":
        return {"evidence": _tool_calls_in(p.get("outcomes"))}
    if kind == "plan_directive":
        return _loss_facts(p)
    if kind == "final_result":
        summary = str(p.get("summary") or "")
        return {**_loss_facts(p), "law1": "[LAW1]" in summary,
                "law2": "law-2 kill switch" in summary.lower(), "evidence": _tool_calls_in(p.get("output"))}
    return {}


def _timestamp(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def entry_of(record: dict[str, Any]) -> Entry:
    """The compact entry for one audit record."""
    kind = str(record.get("message", ""))
    return Entry(seq=int(record.get("seq", 0)), task_seq=int(record.get("task_seq", 0)),
                 at=_timestamp(record.get("occurred")), kind=kind, frm=str(record.get("from_role", "")),
                 to=str(record.get("to_role", "")), facts=facts_of(kind, record.get("payload") or {}))


def _open_key(state: StatsState, task_id: str, run: str) -> str | None:
    return state.run_keys.get(task_id, {}).get(run) if run else state.open_keys.get(task_id)


def _conversation_for(state: StatsState, task_id: str, run: str, task_seq: int) -> Conversation:
    key = _open_key(state, task_id, run)
    conv = state.conversations.get(key) if key else None
    if conv is None or (task_seq == 1 and any(e.task_seq == 1 for e in conv.entries)):
        key = f"{task_id}#{state.next_key}"
        state.next_key += 1
        conv = state.conversations[key] = Conversation(key=key, task_id=task_id, run=run)
        if run:
            state.run_keys.setdefault(task_id, {})[run] = key
        else:
            state.open_keys[task_id] = key
    return conv


def _forget(state: StatsState, conv: Conversation) -> None:
    """Drop a conversation and, when it is the open one of its task (and run), that pointer too."""
    state.conversations.pop(conv.key, None)
    if _open_key(state, conv.task_id, conv.run) != conv.key:
        return
    if not conv.run:
        del state.open_keys[conv.task_id]
        return
    runs = state.run_keys[conv.task_id]
    del runs[conv.run]
    if not runs:
        del state.run_keys[conv.task_id]


def fold(state: StatsState, record: dict[str, Any]) -> None:
    """Add one audit record to the state (in place)."""
    entry = entry_of(record)
    conv = _conversation_for(state, str(record.get("task_id", "")), str(record.get("run") or ""), entry.task_seq)
    conv.entries.append(entry)
    conv.idle_windows = 0
    state.through_seq = max(state.through_seq, entry.seq)


def in_window(state: StatsState, entry: Entry) -> bool:
    """True when the entry belongs to the current window."""
    return entry.seq > state.window_seq


def window_entries(state: StatsState) -> list[Entry]:
    """Every entry of the current window."""
    return [e for c in state.conversations.values() for e in c.entries if in_window(state, e)]


def touched(state: StatsState) -> list[Conversation]:
    """Conversations with at least one message in the current window, oldest first."""
    convs = [c for c in state.conversations.values() if any(in_window(state, e) for e in c.entries)]
    return sorted(convs, key=lambda c: min(e.seq for e in c.entries))


def tool_health(entries: list[Entry]) -> ToolHealth:
    """Execution failures and retries by failure class."""
    corrections = [e for e in entries if e.kind == "correction_signal"]
    failed = [e for e in entries if e.kind == "execution_result" and e.facts.get("status") == "failed"]
    return ToolHealth(
        execution_failures=len(failed),
        environmental_retries=sum(1 for e in corrections if e.facts.get("failure_class") == "environmental"),
        logical_retries=sum(1 for e in corrections if e.facts.get("failure_class") != "environmental"),
    )


def role_counts(entries: list[Entry]) -> dict[str, list[int]]:
    """Per role: [corrections, opportunities] in these entries."""
    return {role: [sum(1 for e in entries if e.kind == num), sum(1 for e in entries if e.kind == den)]
            for role, (num, den) in CORRECTION_RATES.items()}


def reset_window(state: StatsState, now: datetime, keep_idle: int = HISTORY_WINDOWS) -> None:
    """Close the window: remember its role counts, start a new one, forget finished conversations."""
    current = {c.key for c in touched(state)}
    state.history = (state.history + [role_counts(window_entries(state))])[-HISTORY_WINDOWS:]
    for conv in state.conversations.values():
        if conv.key not in current:
            conv.idle_windows += 1
    drop = [c for c in state.conversations.values()
            if (c.finished and c.idle_windows >= 1) or c.idle_windows >= keep_idle]
    for conv in drop:
        _forget(state, conv)
    state.window_seq = state.through_seq
    state.window_start = now
    state.unreadable = []
