"""Properties of the GGS that must hold for every input, not just the tabled ones (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from artoo.config.contracts import CriterionVerdict, ReplanRequest, SubTaskOutcome
from artoo.config.settings import GGSParams
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.maths import MACRO_STATES, distance, implausibility, loss, macro_state, resource_cost

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
gradient = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False)
thresholds = st.builds(GGSParams, epsilon=st.floats(0.0, 0.5), delta=unit, rho=unit, theta=unit)


def spec_rows(d: float, pi: float, om: float, g: float, p: GGSParams) -> dict[str, bool]:
    """The spec's six rows, written as the table states them (not as the cascade computes them)."""
    live, stuck, wrong = om < p.theta, abs(g) < p.epsilon, pi > p.rho
    far = live and d > p.delta
    return {
        "abandon": om >= p.theta,
        "success": live and d <= p.delta,
        "break_symmetry": far and stuck and wrong,
        "change_approach": far and not stuck and wrong,
        "change_path": far and stuck and not wrong,
        "refine": far and not stuck and not wrong,
    }


@given(D=unit, P=unit, omega=unit, grad=gradient, params=thresholds)
def test_exactly_one_macro_state_for_every_input(D, P, omega, grad, params):
    state = macro_state(D, P, omega, grad, params)
    holding = [name for name, holds in spec_rows(D, P, omega, grad, params).items() if holds]
    assert state in MACRO_STATES
    assert holding == [state]


@given(replans=st.integers(0, 1000), elapsed=st.floats(0, 1e9, allow_nan=False),
       params=st.builds(GGSParams, w1=st.floats(-5, 5), w2=st.floats(-5, 5),
                        max_replans=st.integers(0, 10), time_budget_ms=st.integers(1, 10**7)))
def test_omega_stays_in_unit_interval(replans, elapsed, params):
    assert 0.0 <= resource_cost(replans, elapsed, params) <= 1.0


def _outcome(n_fail: int, n_pass: int, n_env: int) -> SubTaskOutcome:
    verdicts = [CriterionVerdict(criterion=f"c{i}", verdict="fail",
                                 failure_class="environmental" if i < n_env else "logical")
                for i in range(n_fail)]
    verdicts += [CriterionVerdict(criterion=f"p{i}", verdict="pass") for i in range(n_pass)]
    return SubTaskOutcome(subtask_id="s", parent_task_id="t", status="failed", criteria_verdicts=verdicts)


rounds = st.builds(lambda f, p, e: _outcome(f, p, min(e, f)),
                   st.integers(0, 4), st.integers(0, 4), st.integers(0, 4))


@given(st.lists(rounds, min_size=1, max_size=12))
def test_d_and_p_stay_in_unit_interval(outcomes):
    assert 0.0 <= distance(outcomes, []) <= 1.0
    assert 0.0 <= implausibility(outcomes, []) <= 1.0


@settings(max_examples=60)
@given(st.lists(rounds, min_size=2, max_size=10))
def test_kill_switch_never_fires_on_non_increasing_losses(outcomes):
    params = GGSParams(w1=0.0, w2=0.0, max_replans=50)  # Ω ≡ 0: abandon could only come from Law 2

    def round_loss(o: SubTaskOutcome) -> float:
        return loss(distance([o], []), implausibility([o], []), 0.0, params)

    controller = GGSController("t", "find the files", params)
    for outcome in sorted(outcomes, key=round_loss, reverse=True):
        decision = controller.evaluate(ReplanRequest(task_id="t", failed_outcomes=[outcome]), 0.0)
        assert decision.state != "abandon" and decision.abandon_reason is None
        assert decision.urgency != "high"
        if decision.final is not None:
            break
