"""Property tests (hypothesis) that extend the ones next to each module instead of repeating them.

Already covered elsewhere: one macro-state per (D, P, Ω, ∇L) and the kill switch with Ω ≡ 0
(tests/test_ggs_properties.py); one wrapper around a dangerous command
(tests/test_policy.py).  Added here: the GGS controller over whole trajectories with the
real Ω; the potentials (attention ≥ |decision|, decay monotone in time, the SQL store
agreeing with both); and Law-1 wrappers that are nested or were not tried before.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from artoo.config.contracts import CriterionVerdict, Megram, OutcomeSummary, ReplanRequest, SubTaskOutcome
from artoo.config.settings import GGSParams
from artoo.memory.potentials import kernel, live_attention, reference_potentials
from artoo.memory.store import MemoryStore
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.maths import distance, implausibility, loss, resource_cost
from artoo.tasks.law1.judge import judge_command
from tests.test_policy import NAME, TEMPLATES

T0 = datetime(2025, 6, 1, tzinfo=UTC)

# ------------------------------------------------------------------ the GGS controller, whole trajectories


def _outcome(n_fail: int, n_pass: int, n_env: int) -> SubTaskOutcome:
    verdicts = [CriterionVerdict(criterion=f"c{i}", verdict="fail",
                                 failure_class="environmental" if i < n_env else "logical") for i in range(n_fail)]
    verdicts += [CriterionVerdict(criterion=f"p{i}", verdict="pass") for i in range(n_pass)]
    return SubTaskOutcome(subtask_id="s", parent_task_id="t", status="failed" if n_fail else "matched",
                          criteria_verdicts=verdicts)


outcomes = st.builds(lambda f, p, e: _outcome(f, p, min(e, f)), st.integers(0, 4), st.integers(0, 4),
                     st.integers(0, 4))
rounds = st.tuples(outcomes, st.booleans(), st.floats(0, 400_000))  # outcome, accepted by R4b, elapsed ms


def message(outcome: SubTaskOutcome, accepted: bool) -> OutcomeSummary | ReplanRequest:
    if accepted and outcome.status == "matched":
        return OutcomeSummary(task_id="t", outcomes=[outcome])
    return ReplanRequest(task_id="t", failed_outcomes=[outcome])


@settings(max_examples=150, deadline=None)
@given(st.lists(rounds, min_size=1, max_size=12), st.integers(0, 5))
def test_every_round_gets_exactly_one_decision_and_every_run_ends(trajectory, max_replans):
    """Whatever the rounds, each gets a directive xor a final result, and the run ends in time."""
    controller = GGSController("t", "find the files", GGSParams(max_replans=max_replans))
    elapsed = 0.0
    for n, (outcome, accepted, step) in enumerate(trajectory, 1):
        elapsed += step
        decision = controller.evaluate(message(outcome, accepted), elapsed)
        assert (decision.directive is None) != (decision.final is None)
        if decision.final is not None:
            assert decision.final.directive in ("accept", "success", "abandon", "unverified")
            assert decision.final.directive != "accept" or decision.state == "accept"
            assert decision.final.replans == n - 1
            return
        assert decision.directive.directive in ("refine", "change_path", "change_approach", "break_symmetry")
        assert n <= max_replans, "a replan was granted beyond the budget"


@settings(max_examples=150, deadline=None)
@given(st.lists(outcomes, min_size=2, max_size=8), st.floats(0, 60_000))
def test_the_kill_switch_never_fires_on_improving_loss_with_the_real_omega(trajectory, step_ms):
    """With Ω live (replans and time count), a non-increasing L never trips Law 2."""
    params = GGSParams(max_replans=20)
    elapsed = [step_ms * n for n in range(len(trajectory))]

    def round_loss(n: int, o: SubTaskOutcome) -> float:
        return loss(distance([o], []), implausibility([o], []), resource_cost(n, elapsed[n], params), params)

    ordered = sorted(trajectory, key=lambda o: round_loss(0, o), reverse=True)
    losses = [round_loss(n, o) for n, o in enumerate(ordered)]
    assume(all(b <= a for a, b in zip(losses, losses[1:], strict=False)))
    controller = GGSController("t", "find the files", params)
    for n, outcome in enumerate(ordered):
        decision = controller.evaluate(ReplanRequest(task_id="t", failed_outcomes=[outcome]), elapsed[n])
        assert decision.abandon_reason != "law2"
        if decision.final is not None:
            break


# ------------------------------------------------------------------ the potentials

megram_fields = st.tuples(st.floats(-5, 5, allow_nan=False), st.floats(-1, 1, allow_nan=False),
                          st.floats(0, 2, allow_nan=False), st.floats(0, 400, allow_nan=False),
                          st.sampled_from(["M", "K"]))


def _megrams(rows: list[tuple]) -> list[Megram]:
    return [Megram(id=f"m{i}", level=level, created_at=T0 - timedelta(days=age), space="intent:x",
                   entity="env:local", f=f, sigma=sigma, k=k) for i, (f, sigma, k, age, level) in enumerate(rows)]


@given(st.lists(megram_fields, max_size=30), st.floats(0, 1000, allow_nan=False))
def test_attention_bounds_the_decision(rows, days_later):
    attention, decision = reference_potentials(_megrams(rows), T0 + timedelta(days=days_later))
    assert attention >= abs(decision) - 1e-9


@given(st.lists(megram_fields, min_size=1, max_size=30), st.floats(0, 500), st.floats(0, 500))
def test_attention_never_grows_with_time(rows, a, b):
    early, late = sorted((a, b))
    megrams = _megrams(rows)
    assert reference_potentials(megrams, T0 + timedelta(days=late))[0] <= \
        reference_potentials(megrams, T0 + timedelta(days=early))[0] + 1e-9


@given(st.floats(0, 5), st.floats(0, 2), st.floats(0, 1000), st.floats(0, 1000))
def test_one_megram_decays_monotonically_and_never_above_its_f(f, k, d1, d2):
    early, late = sorted((d1, d2))
    assert 0.0 <= kernel(k, late) <= kernel(k, early) <= 1.0
    assert live_attention(f, k, late) <= live_attention(f, k, early) <= abs(f)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(megram_fields, min_size=1, max_size=12), st.floats(0, 300, allow_nan=False))
def test_the_sql_store_agrees_with_the_reference_and_keeps_the_bound(rows, days_later):
    at = T0 + timedelta(days=days_later)
    megrams = _megrams(rows)
    with tempfile.TemporaryDirectory() as home:
        store = MemoryStore(Path(home))
        try:
            for m in megrams[: len(megrams) // 2]:
                store.write(m)
            store.ingest()  # half in DuckDB, half still in the spool: both sides of the SQL
            for m in megrams[len(megrams) // 2:]:
                store.write(m)
            live = store.query_mk("intent:x", "env:local", at=at)
        finally:
            store.close()
    attention, decision = reference_potentials(megrams, at)
    assert abs(live.attention - attention) <= 1e-6 * max(1.0, attention)
    assert abs(live.decision - decision) <= 1e-6 * max(1.0, attention)
    assert live.attention >= abs(live.decision) - 1e-9


# ------------------------------------------------------------------ Law 1: more wrappers, and nesting

MORE_WRAPPERS = ["env X=1 {c}", "nohup {c}", "timeout 5 {c}", "nice -n 5 {c}", "sudo {c}", 'eval "{c}"',
                 "{{ {c}; }}", "({c})", "false || {c}", "if true; then {c}; fi", "for i in 1; do {c}; done",
                 "while false; do :; done; {c}", "echo start\n{c}", "time {c}", "command {c}", "exec {c}",
                 "bash -lc '{c}'", "sh -ec '{c}'"]
NESTABLE = ["sh -c '{c}'", "$({c})", "x; {c}", "true && {c}", "echo x | xargs {c}", "({c})", "env X=1 {c}"]


@settings(max_examples=300, deadline=None)
@given(template=st.sampled_from(TEMPLATES), name=NAME, wrapper=st.sampled_from(MORE_WRAPPERS))
def test_other_wrappers_are_at_least_as_dangerous(template: str, name: str, wrapper: str):
    bare = judge_command(template.format(f=name))
    wrapped_text = wrapper.format(c=template.format(f=name))
    wrapped = judge_command(wrapped_text)
    assert wrapped.irreversible, f"{wrapped_text}: {wrapped.reason}"
    assert set(bare.categories) <= set(wrapped.categories), f"{wrapped_text}: {wrapped.reason}"


@settings(max_examples=300, deadline=None)
@given(template=st.sampled_from([t for t in TEMPLATES if "'" not in t and '"' not in t]), name=NAME,
       outer=st.sampled_from(NESTABLE), inner=st.sampled_from(NESTABLE))
def test_nested_wrappers_are_at_least_as_dangerous(template: str, name: str, outer: str, inner: str):
    assume(not ("'" in outer and "'" in inner))  # a quote inside the same quote is a different command
    bare = judge_command(template.format(f=name))
    wrapped_text = outer.format(c=inner.format(c=template.format(f=name)))
    assume("$((" not in wrapped_text)  # "$(" around "(…)" is arithmetic: `$((reboot))` reads a variable, runs nothing
    wrapped = judge_command(wrapped_text)
    assert wrapped.irreversible, f"{wrapped_text}: {wrapped.reason}"
    assert set(bare.categories) <= set(wrapped.categories), f"{wrapped_text}: {wrapped.reason}"
