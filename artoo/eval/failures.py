"""Why an eval task was not solved, read from its run's decision log: one kind per task, by what stopped it.

A real model's misses have different cures: a *format* miss (an answer no repair could save, twice) is
artoo's to fix; a *plan-rules* miss (a plan refused twice) is the planner prompt's; a *wrong command*
is the model's reasoning; a *Law-1 refusal* is the safety gate doing its job.  Counting them apart is
how bench/README can say which part of a real model's failures artoo could still remove.  Pure: the
records in, the kind and its evidence out.
"""

from __future__ import annotations

import json
from typing import Any

KINDS = ("endpoint", "format", "plan_rules", "no_tool_call", "law1_refusal", "wrong_command", "accepted_wrong")
"""Failure kinds, in the order that decides a task with several (the first one found ends the search)."""

_FORMAT_WORDS = ("gave an invalid", "answer twice")
_PLAN_WORDS = ("broke the plan rules",)
_ENDPOINT_WORDS = ("cannot connect", "timed out", "HTTP 5", "rejected every structured-output mode")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def llm_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """What the LLM layer did for a run: calls, invalid answers, repaired answers, repairs, format refusals."""
    calls = [r for r in records if r.get("kind") == "llm"]
    invalid = sum(1 for r in calls if str(r.get("error") or "").startswith("invalid answer"))
    repaired = [r for r in calls if r.get("repairs")]
    refused = sum(1 for r in calls if r.get("refusal") or "response_format" in str(r.get("error") or ""))
    return {"llm_calls": len(calls), "invalid_answers": invalid, "repaired_answers": len(repaired),
            "repairs": sum(len(r["repairs"]) for r in repaired), "format_refusals": refused}


def failure_kind(row: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    """The kind of an unsolved task's failure (None when solved); see KINDS for the order."""
    if row.get("solved"):
        return None
    error = str(row.get("error") or "")
    said = " ".join(_text(r.get("payload")) for r in records if r.get("kind") == "message") + " " + error
    if error and any(word in error for word in _ENDPOINT_WORDS) and not any(w in error for w in _FORMAT_WORDS):
        return "endpoint"
    if all(word in said for word in _FORMAT_WORDS):
        return "format"
    if any(word in said for word in _PLAN_WORDS) and not any(r.get("kind") == "tool" for r in records):
        return "plan_rules"
    if not any(r.get("kind") == "tool" for r in records):
        return "no_tool_call"
    if any(q.get("approved") is False for q in row.get("law1") or []):
        return "law1_refusal"
    if row.get("final_directive") in ("accept", "success"):
        return "accepted_wrong"
    return "wrong_command"


def by_kind(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many unsolved tasks of each kind (every kind listed, zeros included)."""
    counts = dict.fromkeys(KINDS, 0)
    for row in rows:
        kind = row.get("failure")
        if kind:
            counts[kind] = counts.get(kind, 0) + 1
    return counts
