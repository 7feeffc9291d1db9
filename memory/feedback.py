"""Which served SOPs a round contradicted: the rule behind R5's RecordNegativeFeedback (spec R5).

Why: a C-level SOP is timeless (k = 0) until Trust Bankruptcy, which demotes it only when
its pair's live decision turns against it.  The GGS's own Megrams do not always land on
the rule's pair (a tool-pair rule is contradicted by a failing call whose target never
became a blocked target; an intent rule by a logical replan, which writes no intent
Megram), so a rule the planner was told to prefer could fail again and again and stay
timeless.  After each round the GGS (the only writer) asks this module which of the
rules it served were contradicted, and appends one negative-σ Megram against each
(``MemoryStore.record_negative_feedback``: the rule itself is never changed).

Contradicted means, for a rule the planner was told to prefer (σ > 0):

* an intent rule — the round ended in a logical directive (change_approach,
  break_symmetry) or an abandon for any reason but time (Ω): the approach was wrong;
* a tool-pair rule — a call of that tool on that target failed (a Law-1 refusal is the
  person's choice, not the rule's failure).

A MUST NOT rule (σ ≤ 0) is never contradicted by a failure.  Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from artoo.config.contracts import SOPRecord, ToolCall
from artoo.memory.tags import entity_target

CONTRADICTING_STATES = frozenset({"change_approach", "break_symmetry"})
"""Directives that say the planned approach was logically wrong."""


def _strip(value: str, prefix: str) -> str:
    return value[len(prefix):] if value.startswith(prefix) else value


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def contradicted(state: str, abandon_reason: str | None, sops: Iterable[SOPRecord],
                 calls: Iterable[ToolCall]) -> list[tuple[SOPRecord, str]]:
    """(rule, what contradicted it) for every served rule this round's outcome went against."""
    calls = list(calls)
    logical = state in CONTRADICTING_STATES or (state == "abandon" and abandon_reason != "omega")
    found: list[tuple[SOPRecord, str]] = []
    for sop in sops:
        if sop.sigma <= 0:
            continue
        if sop.space.startswith("tool:"):
            tool, target = _strip(sop.space, "tool:"), entity_target(sop.entity)[0]
            failed = next((c for c in calls if c.tool == tool and target in c.targets
                           and not c.ok and not c.denied), None)
            if failed is not None:
                found.append((sop, f"{tool} on {target} failed: {_one_line(failed.output) or 'no output'}"))
        elif logical:
            why = f"abandoned ({abandon_reason})" if state == "abandon" else f"the GGS chose {state}"
            found.append((sop, f"a plan made with this rule failed: {why}"))
    return found
