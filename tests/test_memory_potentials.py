"""The potentials' reference maths and the thresholds → action mapping (pure, table-driven)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from artoo.config.contracts import Megram
from artoo.config.settings import MemoryParams
from artoo.memory.potentials import (
    action_for,
    age_days,
    from_us,
    kernel,
    reference_potentials,
    to_us,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def megram(
    days_ago: float, f: float, sigma: float, k: float, level: str = "M", recalled_days_ago=None
) -> Megram:
    recalled = None if recalled_days_ago is None else T0 - timedelta(days=recalled_days_ago)
    return Megram(
        id=f"{days_ago}-{f}-{sigma}",
        level=level,
        created_at=T0 - timedelta(days=days_ago),
        last_recalled_at=recalled,
        space="intent:x",
        entity="env:local",
        f=f,
        sigma=sigma,
        k=k,
    )


@pytest.mark.parametrize(
    ("attention", "decision", "action"),
    [
        (0.0, 0.0, "Ignore"),
        (0.49, 5.0, "Ignore"),
        (0.49, -5.0, "Ignore"),
        (0.5, 0.21, "Exploit"),
        (0.5, 0.2, "Caution"),
        (0.5, -0.2, "Caution"),
        (0.5, -0.21, "Avoid"),
        (3.0, 0.0, "Caution"),
    ],
)
def test_action_thresholds(attention, decision, action):
    assert action_for(attention, decision, MemoryParams()) == action


def test_thresholds_come_from_params():
    params = MemoryParams(attention_threshold=2.0, decision_threshold=1.0)
    assert action_for(1.5, 0.9, params) == "Ignore"
    assert action_for(2.5, 0.9, params) == "Caution"
    assert action_for(2.5, 1.1, params) == "Exploit"


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_microsecond_round_trip(moment):
    assert from_us(to_us(moment)) == moment
    assert to_us(moment.replace(tzinfo=None)) == to_us(moment)


@pytest.mark.parametrize(("delta_days", "expected"), [(2.5, 2.5), (0.0, 0.0), (-3.0, 0.0)])
def test_age_is_clamped_at_zero(delta_days, expected):
    at = to_us(T0)
    ref = to_us(T0 - timedelta(days=delta_days))
    assert age_days(at, ref) == pytest.approx(expected)


@pytest.mark.parametrize(("k", "half_life_days"), [(0.05, 13.86), (0.2, 3.47), (0.5, 1.39)])
def test_spec_half_lives(k, half_life_days):
    assert kernel(k, half_life_days) == pytest.approx(0.5, abs=2e-3)


def test_channels_follow_the_formulas():
    entries = [megram(14, 0.8, 1.0, 0.05), megram(3, 0.85, -1.0, 0.05), megram(1, 0.3, 0.0, 0.2)]
    attention, decision = reference_potentials(entries, T0)
    assert attention == pytest.approx(0.8 * math.exp(-0.7) + 0.85 * math.exp(-0.15) + 0.3 * math.exp(-0.2))
    assert decision == pytest.approx(0.8 * math.exp(-0.7) - 0.85 * math.exp(-0.15))


def test_decay_counts_from_last_recall():
    attention, _ = reference_potentials([megram(30, 1.0, 1.0, 0.05, recalled_days_ago=2)], T0)
    assert attention == pytest.approx(math.exp(-0.1))


def test_only_m_and_k_count():
    entries = [megram(0, 1.0, 1.0, 0.0, level=level) for level in ("M", "K", "C", "T")]
    assert reference_potentials(entries, T0) == (2.0, 2.0)


def test_opposite_experiences_make_caution_not_ignore():
    entries = [megram(0, 0.9, 1.0, 0.05), megram(0, 0.9, -1.0, 0.05)]
    attention, decision = reference_potentials(entries, T0)
    assert (attention, decision) == (pytest.approx(1.8), pytest.approx(0.0))
    assert action_for(attention, decision, MemoryParams()) == "Caution"
