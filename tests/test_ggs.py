"""The GGS maths against the spec, table by table (R7 and the GGS Quantization Matrix)."""

from __future__ import annotations

import math

import pytest

from artoo.config.contracts import CriterionVerdict, GapPoint, SubTaskOutcome
from artoo.config.settings import GGSParams
from artoo.tasks.ggs.maths import (
    MACRO_STATES,
    QUANTIZATION,
    distance,
    failure_class_of,
    implausibility,
    loss,
    macro_state,
    resource_cost,
    tool_input,
    tool_name,
    urgency,
)

SPEC = GGSParams()  # the v0.8 defaults: ε=.1 δ=.3 ρ=.5 θ=.8


def verdict(criterion: str, result: str = "fail", cls: str | None = "logical",
            mode: str = "verifiable") -> CriterionVerdict:
    return CriterionVerdict(criterion=criterion, verdict=result, mode=mode,
                            failure_class=cls if result == "fail" else None)


def outcome(status: str = "failed", verdicts=(), cls=None, trajectory=(), tools=()) -> SubTaskOutcome:
    return SubTaskOutcome(subtask_id="s", parent_task_id="t", status=status, failure_class=cls,
                          criteria_verdicts=list(verdicts), gap_trajectory=list(trajectory),
                          tool_calls=list(tools))


# --- the full 24-cell enumeration, transcribed from the spec -------------------------------------

GRAD = {"< -e": -0.3, "|.|< e": 0.05, "> e": 0.3}
D_ = {"<= d": 0.2, "> d": 0.6}
P_ = {"<= r": 0.2, "> r": 0.9}
OMEGA = {"< t": 0.3, ">= t": 0.9}

CELLS = [
    ("< -e", "<= d", "<= r", "< t", "success"),
    ("< -e", "<= d", "> r", "< t", "success"),
    ("< -e", "<= d", "<= r", ">= t", "abandon"),
    ("< -e", "<= d", "> r", ">= t", "abandon"),
    ("< -e", "> d", "<= r", "< t", "refine"),
    ("< -e", "> d", "> r", "< t", "change_approach"),
    ("< -e", "> d", "<= r", ">= t", "abandon"),
    ("< -e", "> d", "> r", ">= t", "abandon"),
    ("|.|< e", "<= d", "<= r", "< t", "success"),
    ("|.|< e", "<= d", "> r", "< t", "success"),
    ("|.|< e", "<= d", "<= r", ">= t", "abandon"),
    ("|.|< e", "<= d", "> r", ">= t", "abandon"),
    ("|.|< e", "> d", "<= r", "< t", "change_path"),
    ("|.|< e", "> d", "> r", "< t", "break_symmetry"),
    ("|.|< e", "> d", "<= r", ">= t", "abandon"),
    ("|.|< e", "> d", "> r", ">= t", "abandon"),
    ("> e", "<= d", "<= r", "< t", "success"),
    ("> e", "<= d", "> r", "< t", "success"),
    ("> e", "<= d", "<= r", ">= t", "abandon"),
    ("> e", "<= d", "> r", ">= t", "abandon"),
    ("> e", "> d", "<= r", "< t", "refine"),
    ("> e", "> d", "> r", "< t", "change_approach"),
    ("> e", "> d", "<= r", ">= t", "abandon"),
    ("> e", "> d", "> r", ">= t", "abandon"),
]


@pytest.mark.parametrize(("grad", "d", "p", "omega", "expected"), CELLS,
                         ids=[f"cell-{i}" for i in range(1, len(CELLS) + 1)])
def test_24_cell_enumeration(grad, d, p, omega, expected):
    assert macro_state(D_[d], P_[p], OMEGA[omega], GRAD[grad], SPEC) == expected


@pytest.mark.parametrize(("D", "P", "omega", "grad", "expected"), [
    (0.3, 0.9, 0.0, 0.0, "success"),            # D = δ → success
    (0.3000001, 0.9, 0.0, 0.0, "break_symmetry"),
    (0.9, 0.9, 0.8, 0.0, "abandon"),            # Ω = θ → abandon
    (0.9, 0.9, 0.7999999, 0.0, "break_symmetry"),
    (0.9, 0.9, 0.0, 0.1, "change_approach"),    # |∇L| = ε → signal side
    (0.9, 0.9, 0.0, -0.1, "change_approach"),
    (0.9, 0.2, 0.0, 0.1, "refine"),
    (0.9, 0.2, 0.0, 0.0999999, "change_path"),
    (0.9, 0.5, 0.0, 0.0, "change_path"),        # P = ρ → environmental side
    (0.9, 0.5, 0.0, 0.5, "refine"),
    (0.9, 0.5000001, 0.0, 0.0, "break_symmetry"),
])
def test_boundaries(D, P, omega, grad, expected):
    assert macro_state(D, P, omega, grad, SPEC) == expected


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_macro_state_refuses_non_finite_input(bad):
    with pytest.raises(ValueError, match="finite"):
        macro_state(0.9, 0.9, 0.0, bad, SPEC)


def test_macro_state_uses_the_given_params():
    loose = GGSParams(delta=0.7)
    assert macro_state(0.6, 0.9, 0.0, 0.0, SPEC) == "break_symmetry"
    assert macro_state(0.6, 0.9, 0.0, 0.0, loose) == "success"


@pytest.mark.parametrize("D, P, grad, gap, state", [
    (0.25, 0.9, 0.0, False, "success"),        # a gap within δ in what is judged: forgiven
    (0.25, 0.9, 0.0, True, "break_symmetry"),  # a verifiable criterion failed: never a success at D ≤ δ
    (0.25, 0.1, 0.5, True, "refine"),
    (0.0, 0.0, 0.0, True, "change_path"),      # (D = 0 with a failed verifiable verdict cannot happen; the rule holds)
])
def test_a_failed_verifiable_criterion_is_no_success_within_delta(D, P, grad, gap, state):
    assert macro_state(D, P, 0.0, grad, SPEC, verified_gap=gap) == state


def test_params_default_to_load_settings(monkeypatch, tmp_path):
    monkeypatch.delenv("ARTOO_CONFIG", raising=False)
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path))
    monkeypatch.setenv("ARTOO_GGS__DELTA", "0.7")
    assert macro_state(0.6, 0.9, 0.0, 0.0) == "success"
    monkeypatch.setenv("ARTOO_GGS__DELTA", "0.3")
    assert macro_state(0.6, 0.9, 0.0, 0.0) == "break_symmetry"


def test_every_cell_state_is_a_macro_state():
    assert {row[-1] for row in CELLS} == set(MACRO_STATES)


# --- Ω, L and urgency ---------------------------------------------------------------------------

@pytest.mark.parametrize(("replans", "elapsed", "params", "expected"), [
    (0, 0, SPEC, 0.0),
    (3, 0, SPEC, 0.6),
    (0, 300_000, SPEC, 0.4),
    (1, 150_000, SPEC, 0.6 / 3 + 0.2),
    (3, 300_000, SPEC, 1.0),
    (6, 600_000, SPEC, 1.0),                                  # raw 2.0, clipped
    (2, 0, GGSParams(w1=-1.0), 0.0),                          # raw negative, clipped
    (1, 0, GGSParams(max_replans=0), 0.6),                    # no replans allowed: any replan is all of it
    (0, 0, GGSParams(max_replans=0), 0.0),
])
def test_resource_cost(replans, elapsed, params, expected):
    assert resource_cost(replans, elapsed, params) == pytest.approx(expected)


@pytest.mark.parametrize(("replans", "elapsed", "params", "message"), [
    (-1, 0, SPEC, "replan_count"),
    (0, -5, SPEC, "elapsed_ms"),
    (0, math.nan, SPEC, "elapsed_ms"),
    (0, 0, GGSParams(time_budget_ms=0), "time_budget_ms"),
])
def test_resource_cost_rejects_bad_input(replans, elapsed, params, message):
    with pytest.raises(ValueError, match=message):
        resource_cost(replans, elapsed, params)


@pytest.mark.parametrize(("D", "P", "omega", "expected"), [
    (1.0, 0.0, 0.0, 0.6),
    (0.0, 1.0, 0.0, 0.3),
    (0.0, 1.0, 0.5, 0.3 * 0.5 + 0.4 * 0.5),     # β_eff = β(1-Ω)
    (0.0, 1.0, 1.0, 0.4),                       # process weight gone at full budget
    (0.5, 0.5, 0.5, 0.3 + 0.075 + 0.2),
    (0.0, 0.0, 0.0, 0.0),
])
def test_loss_formula(D, P, omega, expected):
    assert loss(D, P, omega, SPEC) == pytest.approx(expected)


@pytest.mark.parametrize(("D", "P", "omega"), [(1.5, 0, 0), (0, -0.1, 0), (0, 0, math.nan)])
def test_loss_rejects_out_of_range(D, P, omega):
    with pytest.raises(ValueError):
        loss(D, P, omega, SPEC)


@pytest.mark.parametrize(("grad", "expected"), [
    (-0.5, "low"), (-0.1, "normal"), (0.0, "normal"), (0.1, "normal"), (0.1000001, "high"), (0.5, "high"),
])
def test_urgency(grad, expected):
    assert urgency(grad, SPEC) == expected


# --- D ------------------------------------------------------------------------------------------

TRAJ = [GapPoint(attempt=1, score=0.5, unmet_criteria=["looks tidy", "x"]),
        GapPoint(attempt=2, score=1.0, unmet_criteria=[]),
        GapPoint(attempt=3, score=0.5, unmet_criteria=["looks tidy"])]


@pytest.mark.parametrize(("outcomes", "task", "expected"), [
    pytest.param([], [], 0.0, id="no-criteria"),
    pytest.param([outcome("matched", [verdict("a", "pass")])], [], 0.0, id="all-pass"),
    pytest.param([outcome("failed", [verdict("a"), verdict("b", "pass"), verdict("c", "pass"),
                                     verdict("d", "pass")])], [], 1 / 4, id="1-of-4"),
    pytest.param([outcome("matched", [verdict("a", "pass"), verdict("b", "pass")]),
                  outcome("failed", [verdict("c"), verdict("d", "pass")])], [], 1 / 4,
                 id="matched-count-too"),
    pytest.param([outcome("failed", [verdict("looks tidy", mode="plausible"), verdict("b", "pass")],
                          trajectory=TRAJ)], [], (2 / 3) / 2, id="plausible-k-of-N"),
    pytest.param([outcome("failed", [verdict("looks tidy", mode="plausible")])], [], 1.0,
                 id="plausible-no-trajectory"),
    pytest.param([outcome("failed", [verdict("never listed", mode="plausible")], trajectory=TRAJ)], [],
                 1 / 3, id="plausible-final-attempt-counts"),
    pytest.param([outcome("matched", [verdict("a", "pass")])],
                 [verdict("t1", "pass"), verdict("t2")], 1 / 3, id="task-level-failure"),
    pytest.param([], [verdict("t1", mode="plausible")], 1.0, id="task-level-plausible"),
    pytest.param([outcome("failed")], [], 1.0, id="outright-failure"),
    pytest.param([outcome("matched", [verdict("a", "pass")]), outcome("failed")], [], 1 / 2,
                 id="outright-failure-with-matched"),
    pytest.param([outcome("failed", [verdict("a", "pass")])], [], 1 / 2, id="failed-but-all-verdicts-pass"),
])
def test_distance(outcomes, task, expected):
    assert distance(outcomes, task) == pytest.approx(expected)


# --- P ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("outcomes", "task", "expected", "klass"), [
    pytest.param([], [], 0.0, "logical", id="no-failures"),
    pytest.param([outcome("failed", [verdict("a", cls="logical"), verdict("b", cls="environmental")])], [],
                 0.5, "mixed", id="half"),
    pytest.param([outcome("failed", [verdict("a", cls=None)])], [], 1.0, "logical", id="null-is-logical"),
    pytest.param([outcome("failed", cls="environmental")], [], 0.0, "environmental", id="outright-env"),
    pytest.param([outcome("failed")], [], 1.0, "logical", id="outright-default-logical"),
    pytest.param([outcome("matched", [verdict("a", "pass")])], [verdict("t", cls="environmental")], 0.0,
                 "environmental", id="task-level-env"),
    pytest.param([outcome("failed", [verdict("a", cls="environmental")]), outcome("failed", cls="logical"),
                  outcome("failed", [verdict("c")])], [], 2 / 3, "mixed", id="two-of-three"),
])
def test_implausibility(outcomes, task, expected, klass):
    assert implausibility(outcomes, task) == pytest.approx(expected)
    assert failure_class_of(outcomes, task) == klass


# --- tool_calls entries -------------------------------------------------------------------------

@pytest.mark.parametrize(("entry", "name", "arg"), [
    ("shell: ls -la /tmp → total 0", "shell", "ls -la /tmp"),
    ("read_file: /a/b:c.txt → key: value", "read_file", "/a/b:c.txt"),
    ("glob: *.py", "glob", "*.py"),
    ("mdfind", "mdfind", ""),
    ("  search :  cats → a → b", "search", "cats"),
    ("", "", ""),
])
def test_tool_entry_parsing(entry, name, arg):
    assert tool_name(entry) == name
    assert tool_input(entry) == arg


# --- quantization matrix ------------------------------------------------------------------------

@pytest.mark.parametrize(("state", "f", "sigma", "k"), [
    ("abandon", 0.95, -1.0, 0.05),
    ("accept", 0.90, 1.0, 0.05),
    ("change_approach", 0.85, -1.0, 0.05),
    ("success", 0.80, 1.0, 0.05),
    ("break_symmetry", 0.75, 1.0, 0.05),
    ("change_path", 0.30, 0.0, 0.2),
    ("refine", 0.10, 0.5, 0.5),
])
def test_quantization_matrix(state, f, sigma, k):
    assert QUANTIZATION[state] == (f, sigma, k)


def test_quantization_covers_exactly_the_routable_states():
    assert set(QUANTIZATION) == set(MACRO_STATES) | {"accept"}
