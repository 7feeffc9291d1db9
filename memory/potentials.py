"""Dual-channel convolution potentials (spec R5) as plain maths: the reference.

The store computes the same sums in SQL for speed; this module is the definition they
are tested against, and it owns the thresholds → action mapping.  Time is counted in
integer microseconds since the Unix epoch (UTC) on both sides, so the SQL and the
Python see the very same Δt; Δt is clamped at 0, so an entry stamped after the query
time (a clock a little ahead, or ``at`` in the past) never weighs more than its f.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from artoo.config.contracts import Megram, MemoryAction, Potentials
from artoo.config.settings import MemoryParams

US_PER_DAY = 86_400_000_000
"""Microseconds in a day: Δt in the kernel e^(−k·Δt) is in days."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)

NEGATIVE_FEEDBACK = {"f": 1.0, "sigma": -1.0, "k": 0.05}
"""f, σ, k of the Megram record_negative_feedback appends: one full unit against the rule."""


def to_us(moment: datetime) -> int:
    """Microseconds since the epoch; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _ONE_US


def from_us(micros: int) -> datetime:
    """Aware UTC datetime from microseconds since the epoch."""
    return _EPOCH + micros * _ONE_US


def now_us() -> int:
    """The current time in microseconds since the epoch."""
    return to_us(datetime.now(UTC))


def reference_us(megram: Megram) -> int:
    """The instant decay counts from: last recall, else creation."""
    return to_us(megram.last_recalled_at or megram.created_at)


def age_days(at_us: int, ref_us: int) -> float:
    """Δt in days, clamped at 0."""
    return max(0, at_us - ref_us) / US_PER_DAY


def kernel(k: float, days: float) -> float:
    """The decay kernel g(Δt) = e^(−k·Δt)."""
    return math.exp(-k * days)


def live_attention(f: float, k: float, days: float) -> float:
    """One Megram's own live attention |f|·e^(−k·Δt)."""
    return abs(f) * kernel(k, days)


def reference_potentials(megrams: Iterable[Megram], at: datetime) -> tuple[float, float]:
    """(attention, decision) over the M and K Megrams given, in plain Python."""
    at_us = to_us(at)
    attention = decision = 0.0
    for m in megrams:
        if m.level not in ("M", "K"):
            continue
        w = kernel(m.k, age_days(at_us, reference_us(m)))
        attention += abs(m.f) * w
        decision += m.sigma * m.f * w
    return attention, decision


def action_for(attention: float, decision: float, params: MemoryParams) -> MemoryAction:
    """Ignore / Exploit / Avoid / Caution by the spec's thresholds."""
    if attention < params.attention_threshold:
        return "Ignore"
    if decision > params.decision_threshold:
        return "Exploit"
    if decision < -params.decision_threshold:
        return "Avoid"
    return "Caution"


def make_potentials(attention: float, decision: float, params: MemoryParams) -> Potentials:
    """The Potentials contract with its action."""
    return Potentials(attention=attention, decision=decision, action=action_for(attention, decision, params))
