"""The per-task GGS controller: history (∇L, Law 2, accumulated targets), directives, finals, Megrams."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from artoo.config.contracts import (
    BlockedTarget,
    CriterionVerdict,
    GapPoint,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
)
from artoo.config.settings import GGSParams
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.maths import ACTION_STATES, QUANTIZATION

SPEC = GGSParams()
FLAT = GGSParams(w1=0.0, w2=0.0, max_replans=5)  # Ω ≡ 0, so L = .6·D + .3·P moves only with the results
CLOCK = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TASK = "find_reports"
INTENT = "Find the quarterly reports in my documents"
A_CSV = "read_file: /d/a.csv → ENOENT"
B_CSV = "read_file: /d/b.csv → EACCES"
READ_A = BlockedTarget(target="/d/a.csv", access="read")
"""read_file failing on a.csv blames reading it, nothing else (#26)."""


def ctrl(params: GGSParams = SPEC, now=lambda: CLOCK) -> GGSController:
    return GGSController(TASK, INTENT, params, now)


def v(criterion: str, result: str = "fail", cls: str | None = "logical", mode: str = "verifiable"):
    """A verdict as the round decides it: a check decides a verifiable criterion, a model a plausible one."""
    return CriterionVerdict(criterion=criterion, verdict=result, mode=mode,
                            failure_class=cls if result == "fail" else None,
                            by="check" if mode == "verifiable" else "model")


def out(status: str, verdicts=(), cls=None, tools=(), trajectory=(), output=None,
        intent: str = "") -> SubTaskOutcome:
    return SubTaskOutcome(subtask_id=f"s-{intent or status}", parent_task_id=TASK, status=status,
                          failure_class=cls, criteria_verdicts=list(verdicts), tool_calls=list(tools),
                          gap_trajectory=list(trajectory), output=output, intent=intent)


def failing(n_fail: int, n_total: int, cls: str = "logical", tools=(), name: str = "c",
            mode: str = "verifiable") -> SubTaskOutcome:
    """A failed outcome with n_total criteria (of ``mode``) of which the first n_fail failed."""
    verdicts = [v(f"{name}{i}", "fail" if i < n_fail else "pass", cls, mode) for i in range(n_total)]
    return out("failed", verdicts, cls, tools)


def matched(n: int = 1, output=None) -> SubTaskOutcome:
    return out("matched", [v(f"m{i}", "pass") for i in range(n)], output=output)


def rr(failed=(), ok=(), task=(), merged=None, gap="") -> ReplanRequest:
    return ReplanRequest(task_id=TASK, failed_outcomes=list(failed), matched_outcomes=list(ok),
                         task_criteria_verdicts=list(task), merged_output=merged, gap_summary=gap)


def summary(outcomes, task=(), merged=None, text="") -> OutcomeSummary:
    return OutcomeSummary(task_id=TASK, outcomes=list(outcomes), task_criteria_verdicts=list(task),
                          merged_output=merged, summary=text)


def run(controller: GGSController, messages, elapsed_ms: float = 0.0):
    return [controller.evaluate(m, elapsed_ms) for m in messages]


# --- one scenario per state: the state reached and the Megrams written ---------------------------

THREE_WAY = [failing(1, 1, "logical", ["shell: grep -r Q3 → nothing"], "x"),
             failing(1, 1, "logical", ["glob: **/*.md → none"], "y"),
             failing(1, 1, "environmental", [B_CSV], "z")]
SCENARIOS = {
    "accept": ([summary([matched(2)], [v("t", "pass")])], 0, 1),
    "success": ([rr([failing(1, 4, mode="plausible")])], 0, 1),  # a judged gap within δ; a verified one never
    "abandon": ([rr([failing(1, 1)])], 2 * SPEC.time_budget_ms, 1),
    "change_path": ([rr([failing(1, 1, "environmental", [A_CSV])])], 0, 1),
    # round 2 writes only the target blamed in round 2 (B); round 1's (A, blocked since) is not re-written
    "refine": ([rr([failing(1, 2, "environmental", [A_CSV])]),
                rr([failing(2, 2, "environmental", [B_CSV])])], 0, 1),
    "break_symmetry": ([rr(THREE_WAY)], 0, 1),
    "change_approach": ([rr([failing(1, 2, "environmental", [A_CSV])]), rr(THREE_WAY)], 0, 1),
}


def test_a_target_blocked_earlier_is_written_to_memory_once_not_every_round():
    """Blocked after round 1, it is never tried again: re-writing it each round would count one failure
    three times and, through memory, ban it for later tasks."""
    controller = ctrl()
    rounds = run(controller, [rr([failing(1, 1, "environmental", [A_CSV])]), rr([failing(1, 1, "logical", ["x"])]),
                              rr([failing(1, 1, "logical", ["x"])])])
    written = [m.entity for d in rounds for m in d.megrams if m.space.startswith("tool:")]
    assert written == ["read:/d/a.csv"]  # a read that failed: blamed for reading only (#26)
    assert all(READ_A in d.directive.blocked_targets for d in rounds if d.directive)  # still blocked


@pytest.mark.parametrize("state", list(SCENARIOS))
def test_state_writes_quantized_megrams(state):
    messages, elapsed, count = SCENARIOS[state]
    decision = run(ctrl(), messages, elapsed)[-1]
    assert decision.state == state
    assert len(decision.megrams) == count
    for megram in decision.megrams:
        assert (megram.f, megram.sigma, megram.k) == QUANTIZATION[state]
        assert megram.state == state and megram.level == "M" and megram.created_at == CLOCK
        assert re.fullmatch(r"[0-9a-f]{32}", megram.id)
        if state in ACTION_STATES:
            assert megram.space.startswith("tool:") and megram.entity.startswith("read:")
        else:
            assert (megram.space, megram.entity) == ("intent:find_the_quarterly", "env:local")
    assert len({m.id for m in decision.megrams}) == count
    assert (decision.directive is None) != (decision.final is None)


def test_terminal_megram_says_what_was_tried_and_what_happened():
    """The intent Megram carries the calls of every round and the result, for the next planner to quote."""
    params = GGSParams(max_replans=1)
    c = GGSController(TASK, INTENT, params, lambda: CLOCK)
    first = c.evaluate(rr([failing(1, 1, "environmental", [A_CSV])]), 0.0)
    final = c.evaluate(rr([failing(1, 1, "environmental", [B_CSV])]), 0.0)
    assert first.final is None and final.final is not None and final.final.directive == "abandon"
    content = final.megrams[0].content
    assert content.splitlines() == [
        f"abandon: {INTENT}",
        f"tried: r1 {A_CSV}; r2 {B_CSV}",
        f"result: {' '.join(final.final.summary.split())}",
    ]


def test_action_megrams_tag_tool_and_target():
    first, second = run(ctrl(), SCENARIOS["change_approach"][0])
    assert [(m.space, m.entity) for m in first.megrams] == [("tool:read_file", "read:/d/a.csv")]
    assert [(m.space, m.entity) for m in second.megrams] == [("tool:read_file", "read:/d/b.csv")]


def test_naive_clock_is_taken_as_utc():
    decision = ctrl(now=lambda: datetime(2025, 3, 1, 12, 0)).evaluate(rr([failing(1, 4, mode="plausible")]), 0)
    assert decision.megrams[0].created_at == CLOCK


# --- accept, success and D counting every criterion ----------------------------------------------

def test_accept_path():
    message = summary([matched(2)], [v("t", "pass")], merged={"rows": 3}, text="3 rows.")
    decision = ctrl().evaluate(message, 1000)
    final = decision.final
    assert decision.state == final.directive == "accept"
    assert (final.output, final.replans, final.prev_directive) == ({"rows": 3}, 0, "init")
    assert final.next_steps == []
    assert decision.loss.D == 0 and final.summary.startswith("Accepted after 0 replan(s)")
    assert "3 rows." not in final.summary  # R4b's words about the result never reach the person as the summary


def test_accept_still_abandons_when_omega_reaches_theta():
    decision = ctrl().evaluate(summary([matched()]), 0.999 * SPEC.time_budget_ms, spent=0.8 * SPEC.max_calls)
    assert decision.loss.Omega == pytest.approx(SPEC.theta)
    assert (decision.state, decision.abandon_reason) == ("abandon", "calls")
    spent = ctrl().evaluate(summary([matched()]), SPEC.time_budget_ms)  # the time budget itself: a hard stop
    assert spent.loss.Omega == 1.0 and (spent.state, spent.abandon_reason) == ("abandon", "omega")
    assert "Omega=1.00 >= theta=0.8" in spent.final.summary


@pytest.mark.parametrize(("n_fail", "expected"), [(1, "success"), (2, "break_symmetry")])
def test_outcome_summary_with_failures_goes_through_the_cascade(n_fail, expected):
    decision = ctrl().evaluate(summary([matched(2)], [v(f"t{i}", "fail" if i < n_fail else "pass", mode="plausible")
                                                      for i in range(2)]), 0)
    assert pytest.approx(n_fail / 4) == decision.loss.D
    assert decision.state == expected


def test_task_level_rejection_counts_in_d_and_replans():
    decision = ctrl().evaluate(rr(ok=[matched(1)], task=[v("covers Q1-Q4", "pass"), v("sorted by date")]), 0)
    assert pytest.approx(1 / 3) == decision.loss.D   # 1 failed of 3 criteria: one subtask, two task-level
    assert decision.state in ACTION_STATES and decision.final is None
    assert decision.directive.failed_criterion == "sorted by date"


def test_one_of_four_judged_criteria_failing_is_success_unverified():
    """Within δ, so the GGS's state is success; but a model judged every criterion, so the run is not called so."""
    decision = ctrl().evaluate(rr([failing(1, 4, name="has ", mode="plausible")], merged=["a.pdf"]), 0)
    assert pytest.approx(0.25) == decision.loss.D
    assert (decision.state, decision.final.directive) == ("success", "unverified")
    assert "still unmet: has 0" in decision.final.summary and decision.final.output == ["a.pdf"]


def test_one_of_four_verifiable_criteria_failing_is_no_success():
    """D = 0.25 ≤ δ, but the failed criterion is verifiable: the result is shown wrong, so the round replans."""
    decision = ctrl().evaluate(rr([failing(1, 4, name="has ")], merged=["a.pdf"]), 0)
    assert pytest.approx(0.25) == decision.loss.D
    assert decision.final is None and decision.state in ACTION_STATES


def test_outright_executor_failure_is_never_success():
    decision = ctrl().evaluate(rr([out("failed", cls="environmental", tools=[A_CSV])]), 0)
    assert (decision.loss.D, decision.loss.P) == (1.0, 0.0)
    assert decision.state == "change_path" and decision.directive.blocked_targets == [READ_A]


def test_output_falls_back_to_matched_outputs():
    decision = ctrl().evaluate(rr([failing(1, 4, mode="plausible")], ok=[matched(output="x"), matched(output="y")]), 0)
    assert decision.final.output == ["x", "y"]


# --- Law 2 kill switch and the replan budget -----------------------------------------------------

def test_two_worsening_rounds_abandon():
    decisions = run(ctrl(FLAT), [rr([failing(n, 5)]) for n in (2, 3, 4)])
    assert [d.urgency for d in decisions] == ["normal", "high", "high"]
    assert all(d.grad_l > FLAT.epsilon for d in decisions[1:])
    assert decisions[1].state in ACTION_STATES
    assert (decisions[2].state, decisions[2].abandon_reason) == ("abandon", "law2")
    assert "Law-2 kill switch" in decisions[2].final.summary
    assert any("narrowly" in step for step in decisions[2].final.next_steps)


def test_worsening_then_success_stays_success():
    params = GGSParams(w1=0.0, w2=0.0, beta=0.6, max_replans=5)
    decisions = run(ctrl(params), [rr([failing(2, 5, "environmental")]), rr([failing(3, 5, "environmental")]),
                                   rr([failing(1, 4, "logical", mode="plausible")])])
    assert all(d.grad_l > params.epsilon for d in decisions[1:])
    assert decisions[2].state == "success" and decisions[2].abandon_reason is None


def test_non_worsening_round_resets_the_counter():
    decisions = run(ctrl(FLAT), [rr([failing(n, 5, "environmental")]) for n in (2, 3, 3, 4)])
    assert [d.state for d in decisions] == ["change_path", "refine", "change_path", "refine"]
    assert decisions[-1].grad_l > FLAT.epsilon


def test_replan_budget_spent_abandons_with_chain_of_directives():
    controller = ctrl()
    decisions = run(controller, [rr([failing(1, 1)])] * (1 + SPEC.max_replans))
    assert [d.state for d in decisions] == ["break_symmetry"] * SPEC.max_replans + ["abandon"]
    assert [d.directive.prev_directive for d in decisions[:-1]] == ["init"] + ["break_symmetry"] * 2
    final = decisions[-1].final
    assert (final.replans, final.prev_directive) == (3, "break_symmetry")
    assert decisions[-1].abandon_reason == "budget"
    assert "replan budget is spent (3 of 3" in final.summary
    assert final.next_steps[0] == "Resolve the unmet criterion: c0"
    assert controller.finished
    with pytest.raises(RuntimeError, match="already finished"):
        controller.evaluate(rr([failing(1, 1)]), 0)


NO_PLAN = out("failed", [v("the subtask is done: produce a valid plan")], "logical", intent="produce a valid plan")


@pytest.mark.parametrize(("rounds", "unmet"), [
    # the last rounds ran no plan (the planner broke the rules): the user's own criterion is still named
    ([rr([failing(1, 1, "environmental", [A_CSV], "count ")]), rr([NO_PLAN])],
     ["count 0", "the subtask is done: produce a valid plan"]),
    # a criterion that passed in a later round is no longer unmet; one that failed only later is
    ([rr([out("failed", [v("a"), v("b", "pass")], "logical")]), rr([out("failed", [v("a", "pass"), v("b")],
                                                                         "logical")])], ["b"]),
    # the same criterion every round is named once
    ([rr([failing(1, 1)]), rr([failing(1, 1)])], ["c0"]),
])
def test_an_abandon_names_every_criterion_still_open(rounds, unmet):
    final = run(ctrl(GGSParams(max_replans=len(rounds) - 1)), rounds)[-1].final
    assert final is not None and final.directive == "abandon"
    assert final.summary.split("still unmet: ", 1)[1].split(". ", 1)[0].rstrip(".") == "; ".join(unmet)
    assert [s for s in final.next_steps if s.startswith("Resolve")] == [f"Resolve the unmet criterion: {c}"
                                                                        for c in unmet]


# --- MUST NOT injection --------------------------------------------------------------------------

def test_blocked_targets_accumulate_across_rounds():
    """Only the call that ended a failing subtask is blamed (before #13 every input was: /d/b.csv too)."""
    controller = ctrl(FLAT)
    first = controller.evaluate(rr([failing(1, 1, "environmental", [A_CSV]),
                                    failing(1, 1, "logical", ["shell: wc -l x → 0"], "l")]), 0)
    calls = [B_CSV, "shell: curl http://h → timeout"]
    second = controller.evaluate(rr([failing(1, 1, "environmental", calls)]), 0)
    assert first.directive.blocked_targets == [READ_A]
    assert second.directive.blocked_targets == [READ_A, BlockedTarget(target="curl http://h")]  # a query: every use
    assert [(m.space, m.entity) for m in second.megrams][-1] == ("tool:shell", "path:curl http://h")


@pytest.mark.parametrize(("cls", "state", "tools"), [
    ("logical", "break_symmetry", ["glob", "shell:ls"]),  # the shell stays: its last method goes
    ("environmental", "change_path", []),
])
def test_blocked_tools_only_on_logical_states(cls, state, tools):
    calls = ["shell: grep Q3 → nothing", "glob: *.md → none", "shell: ls → a"]
    decision = ctrl().evaluate(rr([failing(1, 1, cls, calls)]), 0)
    assert (decision.state, decision.directive.blocked_tools) == (state, tools)


def test_change_approach_blocks_the_logically_failing_tools():
    decision = run(ctrl(), SCENARIOS["change_approach"][0])[-1]
    assert decision.state == "change_approach"
    assert decision.directive.blocked_tools == ["glob", "shell:grep -r"]  # the failed method, never the shell
    assert decision.directive.failure_class == "mixed"


def test_change_approach_spares_a_tool_that_matched_in_an_earlier_round():
    """t17 of #25: ``shell`` counted the lines in a matched round-1 step; the round-2 step ran the same
    command and never wrote the file.  Blocking ``shell`` left round 3 nothing to count with: the shell stays,
    only the method that failed now (``grep -r``) goes."""
    counted = out("matched", [v("c", "pass")], tools=["shell: wc -l *.txt → 9 total"])
    decisions = run(ctrl(), [rr([failing(1, 2, "environmental", [A_CSV])], ok=[counted]), rr(THREE_WAY)])
    assert decisions[-1].state == "change_approach"
    assert decisions[-1].directive.blocked_tools == ["glob", "shell:grep -r"]


def test_failed_criterion_is_the_most_persistent():
    traj = [GapPoint(attempt=i, score=0.0, unmet_criteria=["exists"]) for i in (1, 2, 3)]
    once = [GapPoint(attempt=1, score=0, unmet_criteria=["non-empty"])]
    flaky = out("failed", [v("non-empty")], trajectory=once)
    decision = ctrl().evaluate(rr([flaky, out("failed", [v("exists")], trajectory=traj)]), 0)
    assert decision.directive.failed_criterion == "exists"


# --- directive fields, trajectory, logging, bad input --------------------------------------------

def test_directive_fields_and_trajectory():
    decisions = run(ctrl(), [rr([failing(1, 2, "environmental", [A_CSV])]), rr(THREE_WAY)], 30_000)
    d = decisions[-1].directive
    assert (d.prev_directive, d.directive, d.urgency) == ("change_path", "change_approach", "high")
    assert d.budget_pressure == pytest.approx(SPEC.w1 / 3 + SPEC.w2 * 0.1) == decisions[-1].loss.Omega
    assert d.grad_l == pytest.approx(decisions[1].loss.L - decisions[0].loss.L)
    assert d.rationale.count(".") >= 1 and "P=0.67 > rho" in d.rationale
    rows = decisions[-1].trajectory
    assert [r["round"] for r in rows] == [1, 2] and rows[0]["grad_l"] == 0.0
    assert rows[1] == {"round": 2, "D": 1.0, "P": pytest.approx(2 / 3), "Omega": d.budget_pressure,
                       "L": decisions[1].loss.L, "grad_l": d.grad_l, "state": "change_approach",
                       "urgency": "high"}


def test_log_line_names_everything():
    line = run(ctrl(), SCENARIOS["change_approach"][0])[-1].log_line
    for part in ("round=2", "D=1.000", "P=0.667", "Ω=", "L=", "∇L=+", "directive=change_approach",
                 "urgency=high", "blocked_tools=[glob, shell:grep -r]",
                 "blocked_targets=[/d/a.csv (read), /d/b.csv (read)]"):
        assert part in line


@pytest.mark.parametrize(("message", "elapsed", "error"), [
    (rr([failing(1, 1)]).model_copy(update={"task_id": "other"}), 0, ValueError),
    (rr([failing(1, 1)]), -1, ValueError),
    (failing(1, 1), 0, TypeError),
])
def test_bad_input_is_refused_and_loses_nothing(message, elapsed, error):
    controller = ctrl()
    with pytest.raises(error):
        controller.evaluate(message, elapsed)
    decision = controller.evaluate(rr([failing(1, 1)]), 0)
    assert decision.trajectory[0]["round"] == 1 and decision.directive.prev_directive == "init"
