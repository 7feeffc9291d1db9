"""The Goal Gradient Solver's maths (spec R7): loss, macro-state cascade, quantization.

Why a module of plain functions: the GGS is the controller of the medium loop, and a
controller whose arithmetic hides behind I/O cannot be checked cell by cell against the
spec's 24-cell table.  Everything here is pure and exact; the per-task state machine
that uses it (L_prev, the Law-2 counter, accumulated blocked targets) lives in
``artoo.tasks.ggs.controller``.

Inputs are the spec's contracts (``SubTaskOutcome``, ``CriterionVerdict``).  D counts
*every* criterion verdict — matched and failed subtasks and the task-level verdicts —
so a round whose subtasks all matched but whose task criteria failed is never mistaken
for success.  Non-finite or negative inputs raise ``ValueError``: a NaN would otherwise
fall silently through the cascade into ``refine``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from artoo.config.contracts import CriterionVerdict, SubTaskOutcome
from artoo.config.settings import GGSParams, load_settings
from artoo.tasks.blame.failure import is_evidence

MACRO_STATES: tuple[str, ...] = (
    "abandon", "success", "break_symmetry", "change_approach", "change_path", "refine",
)
"""The six macro-states of the cascade."""
ACTION_STATES: frozenset[str] = frozenset({"refine", "change_path", "change_approach", "break_symmetry"})
"""States that send a PlanDirective back to R2."""
LOGICAL_STATES: frozenset[str] = frozenset({"change_approach", "break_symmetry"})
"""Action states caused by a wrong approach (P > ρ): they block tools."""
TERMINAL_STATES: frozenset[str] = frozenset({"accept", "success", "abandon"})
"""States that end the task with a FinalResult."""

QUANTIZATION: dict[str, tuple[float, float, float]] = {
    "abandon": (0.95, -1.0, 0.05),
    "accept": (0.90, 1.0, 0.05),
    "change_approach": (0.85, -1.0, 0.05),
    "success": (0.80, 1.0, 0.05),
    "break_symmetry": (0.75, 1.0, 0.05),
    "change_path": (0.30, 0.0, 0.2),
    "refine": (0.10, 0.5, 0.5),
}
"""Spec "GGS Quantization Matrix": state → (f magnitude, σ valence, k decay per day)."""


def _params(params: GGSParams | None) -> GGSParams:
    return params if params is not None else load_settings().ggs


def _finite(name: str, value: float, *, low: float | None = None, high: float | None = None) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value!r}")
    return value


def resource_cost(replan_count: int, elapsed_ms: float, params: GGSParams | None = None) -> float:
    """Ω = w₁·replans/maxReplans + w₂·elapsed/time_budget, clipped to [0, 1]."""
    p = _params(params)
    if replan_count < 0:
        raise ValueError(f"replan_count must be >= 0, got {replan_count}")
    elapsed = _finite("elapsed_ms", elapsed_ms, low=0.0)
    if p.time_budget_ms <= 0:
        raise ValueError(f"time_budget_ms must be positive, got {p.time_budget_ms}")
    if p.max_replans < 0:
        raise ValueError(f"max_replans must be >= 0, got {p.max_replans}")
    replan_share = replan_count / p.max_replans if p.max_replans else float(replan_count > 0)
    omega = p.w1 * replan_share + p.w2 * (elapsed / p.time_budget_ms)
    return min(1.0, max(0.0, omega))


def call_cost(spent: float, params: GGSParams | None = None) -> float:
    """The calls term of Ω (a deviation from the spec's two terms): spent/max_calls, and 1 once less than one
    role call is left, so a round a spent budget cut short ends the task whatever θ is (θ ≤ 1)."""
    p = _params(params)
    used = _finite("spent", spent, low=0.0)
    if p.max_calls < 1:
        raise ValueError(f"max_calls must be >= 1, got {p.max_calls}")
    if used > p.max_calls - 1:
        return 1.0
    return used / p.max_calls


def omega_of(replan_count: int, elapsed_ms: float, spent: float = 0.0, params: GGSParams | None = None) -> float:
    """Ω = max(w₁·replans/maxReplans + w₂·elapsed/time_budget, the calls term): whichever budget is nearer spent;
    1 once the time budget itself is spent (the LLM client sends nothing after it, so no round could go on)."""
    if _finite("elapsed_ms", elapsed_ms, low=0.0) >= _params(params).time_budget_ms:
        return 1.0
    return max(resource_cost(replan_count, elapsed_ms, params), call_cost(spent, params))


def agent_elapsed_ms(elapsed_ms: float, paused_ms: float = 0.0) -> float:
    """The agent's time: wall time minus the time paused for a person's Law-1 answer (never below 0)."""
    elapsed = _finite("elapsed_ms", elapsed_ms, low=0.0)
    paused = _finite("paused_ms", paused_ms, low=0.0)
    return max(elapsed - paused, 0.0)


def loss(D: float, P: float, omega: float, params: GGSParams | None = None) -> float:
    """L = α·D + β·(1−Ω)·P + λ·Ω (β_eff decays as the budget is spent)."""
    p = _params(params)
    d = _finite("D", D, low=0.0, high=1.0)
    pi = _finite("P", P, low=0.0, high=1.0)
    om = _finite("omega", omega, low=0.0, high=1.0)
    return p.alpha * d + p.beta * (1.0 - om) * pi + p.lam * om


def macro_state(D: float, P: float, omega: float, grad_l: float,
                params: GGSParams | None = None, verified_gap: bool = False) -> str:
    """The diagnostic cascade: Ω first, then D, then (|∇L|, P) pick one of six states.

    ``verified_gap``: a verifiable criterion failed this round, so D ≤ δ is no success: the threshold forgives
    noise in what is judged, never a criterion a check or the evidence showed unmet (a task accepted at D = 0.25
    with its one verifiable task criterion failed had delivered a wrong file)."""
    p = _params(params)
    d = _finite("D", D)
    pi = _finite("P", P)
    om = _finite("omega", omega)
    grad = _finite("grad_l", grad_l)
    if om >= p.theta:
        return "abandon"
    if d <= p.delta and not verified_gap:
        return "success"
    plateau = abs(grad) < p.epsilon
    logical = pi > p.rho
    if plateau:
        return "break_symmetry" if logical else "change_path"
    return "change_approach" if logical else "refine"


def urgency(grad_l: float, params: GGSParams | None = None) -> str:
    """∇L's sign as a modulator: low when improving (< −ε), high when worsening (> ε)."""
    p = _params(params)
    grad = _finite("grad_l", grad_l)
    if grad < -p.epsilon:
        return "low"
    if grad > p.epsilon:
        return "high"
    return "normal"


def _attempts_failing(criterion: str, outcome: SubTaskOutcome) -> int:
    """k: attempts of the outcome's trajectory that list the criterion as unmet."""
    key = criterion.strip()
    return sum(1 for point in outcome.gap_trajectory if key in (c.strip() for c in point.unmet_criteria))


def _weight(verdict: CriterionVerdict, outcome: SubTaskOutcome) -> float:
    """1.0 for a failed verifiable criterion; k/N for a plausible one (the final attempt counts)."""
    if verdict.mode == "verifiable" or not outcome.gap_trajectory:
        return 1.0
    return max(_attempts_failing(verdict.criterion, outcome), 1) / len(outcome.gap_trajectory)


def _has_failing_verdict(outcome: SubTaskOutcome) -> bool:
    return any(v.verdict == "fail" for v in outcome.criteria_verdicts)


def distance(outcomes: list[SubTaskOutcome], task_verdicts: list[CriterionVerdict]) -> float:
    """D = Σ weighted failed criteria / number of criteria, over every outcome and task verdict."""
    total = 0
    failed = 0.0
    for outcome in outcomes:
        for verdict in outcome.criteria_verdicts:
            total += 1
            if verdict.verdict == "fail":
                failed += _weight(verdict, outcome)
        if outcome.status == "failed" and not _has_failing_verdict(outcome):
            total += 1  # an outright failure (executor crash, timeout) is one failed verifiable criterion
            failed += 1.0
    for verdict in task_verdicts:
        total += 1
        if verdict.verdict == "fail":
            failed += 1.0  # task-level verdicts have no trajectory
    return failed / total if total else 0.0


def failure_counts(outcomes: list[SubTaskOutcome],
                   task_verdicts: list[CriterionVerdict]) -> tuple[int, int]:
    """(logical, environmental) over failed verdicts and failed outcomes without a failing verdict.

    Skipped subtasks (never run) and Law-1 denials (a person's answer) are no evidence about
    the approach: they count as unmet in D but never in P.
    """
    logical = environmental = 0
    outcomes = [o for o in outcomes if is_evidence(o)]
    verdicts = [v for o in outcomes for v in o.criteria_verdicts] + list(task_verdicts)
    classes = [v.failure_class for v in verdicts if v.verdict == "fail"]
    classes += [o.failure_class for o in outcomes if o.status == "failed" and not _has_failing_verdict(o)]
    for cls in classes:
        if cls == "environmental":
            environmental += 1
        else:
            logical += 1  # a missing class counts as logical
    return logical, environmental


def implausibility(outcomes: list[SubTaskOutcome], task_verdicts: list[CriterionVerdict]) -> float:
    """P = logical / (logical + environmental) failures; 0 when nothing failed."""
    logical, environmental = failure_counts(outcomes, task_verdicts)
    return logical / (logical + environmental) if logical + environmental else 0.0


def failure_class_of(outcomes: list[SubTaskOutcome], task_verdicts: list[CriterionVerdict]) -> str:
    """The round's failure class for a PlanDirective: logical, environmental or mixed.

    A round whose only failures were Law-1 denials is environmental (the world said no).
    """
    logical, environmental = failure_counts(outcomes, task_verdicts)
    if not logical and not environmental and any(o.outcome == "denied" for o in outcomes):
        return "environmental"
    if logical and environmental:
        return "mixed"
    return "environmental" if environmental else "logical"


def outcome_class(outcome: SubTaskOutcome) -> str:
    """A failed outcome's dominant class: its own, else the majority of its failed verdicts."""
    if outcome.failure_class is not None:
        return outcome.failure_class
    logical, environmental = failure_counts([outcome], [])
    return "environmental" if environmental > logical else "logical"


def failing_criteria(outcomes: list[SubTaskOutcome],
                     task_verdicts: list[CriterionVerdict]) -> list[tuple[str, int]]:
    """Each failing criterion with its persistence (attempts failing it, at least 1), in order."""
    found: dict[str, int] = {}
    for outcome in outcomes:
        for verdict in outcome.criteria_verdicts:
            if verdict.verdict == "fail":
                key = verdict.criterion.strip()
                found[key] = found.get(key, 0) + max(_attempts_failing(key, outcome), 1)
        if outcome.status == "failed" and not _has_failing_verdict(outcome):
            key = _outright_failure(outcome)
            found[key] = found.get(key, 0) + max(len(outcome.gap_trajectory), 1)
    for verdict in task_verdicts:
        if verdict.verdict == "fail":
            key = verdict.criterion.strip()
            found[key] = found.get(key, 0) + 1
    return list(found.items())


def _outright_failure(outcome: SubTaskOutcome) -> str:
    what = outcome.intent or outcome.subtask_id
    reason = outcome.failure_reason or "no verdict"
    return f"subtask '{what}' failed: {reason}"


def _split_entry(entry: str) -> tuple[str, str]:
    name, _, rest = entry.partition(":")
    tool_in, _, _ = rest.partition("→")
    return name.strip(), tool_in.strip()


def tool_name(entry: str) -> str:
    """The tool of a tool_calls entry ``name: input → firstN(output)``."""
    return _split_entry(entry)[0]


def tool_input(entry: str) -> str:
    """The input of a tool_calls entry ``name: input → firstN(output)`` ('' when absent)."""
    return _split_entry(entry)[1]


def tool_calls_of(outcomes: Iterable[SubTaskOutcome]) -> Iterator[tuple[str, str]]:
    """(tool, input) of every well-formed tool_calls entry of the given outcomes."""
    for outcome in outcomes:
        for entry in outcome.tool_calls:
            name, target = _split_entry(entry)
            if name:
                yield name, target
