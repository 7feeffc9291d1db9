"""The per-task GGS controller (spec R7): one instance per task run, one ``evaluate`` per round.

Why a small state machine apart from the maths: the GGS is a *dynamic-differential*
controller, so what it decides depends on history — L_prev for ∇L, the count of
consecutive worsening rounds for the Law-2 kill switch, the blocked targets accumulated
over every round, the previous directive and how persistently each criterion failed.
That history belongs to one task and nothing else, so it lives in one object with no
I/O: the caller publishes the directive or final result and writes the Megrams
(fire-and-forget); this class only decides.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from artoo.config.contracts import (
    BlockedTarget,
    CriterionVerdict,
    FinalResult,
    Loss,
    Megram,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTaskOutcome,
)
from artoo.config.settings import GGSParams, load_settings
from artoo.memory.sops import SUCCESS_STATES
from artoo.memory.tags import ENV_LOCAL, episode_content, intent_space, path_entity, tool_space
from artoo.tasks.blame.access import attributed_blocks
from artoo.tasks.blame.failure import blamed_tools, matched_tools, outcome_counts, refusals, walk_notes_of
from artoo.tasks.blame.methods import blamed_methods
from artoo.tasks.ggs.maths import (
    ACTION_STATES,
    LOGICAL_STATES,
    QUANTIZATION,
    agent_elapsed_ms,
    call_cost,
    distance,
    failing_criteria,
    failure_class_of,
    implausibility,
    loss,
    macro_state,
    omega_of,
    urgency,
)


@dataclass
class GGSDecision:
    """What the GGS decided for one round; exactly one of ``directive``/``final`` is set."""

    state: str
    loss: Loss
    grad_l: float
    urgency: str
    directive: PlanDirective | None
    final: FinalResult | None
    megrams: list[Megram]
    log_line: str
    trajectory: list[dict]
    abandon_reason: str | None = None
    """Why an abandon happened: ``omega`` (Ω ≥ θ), ``calls`` (Ω ≥ θ from the LLM calls spent), ``law2`` (kill
    switch) or ``budget`` (replans spent)."""


@dataclass
class _Reading:
    """One round's numbers, computed before any state of the controller changes."""

    round: int
    outcomes: list[SubTaskOutcome]
    task_verdicts: list[CriterionVerdict]
    D: float
    P: float
    omega: float
    L: float
    grad: float
    urgency: str
    paused_ms: float = 0.0
    spent: float = 0.0
    """The task's LLM calls so far, weighed (the client's ``spent``)."""
    calls: float = 0.0
    """The calls term of Ω (``maths.call_cost``)."""


def _verdicts(reading: _Reading) -> list[CriterionVerdict]:
    """Every verdict of the round: each step's, then the task's."""
    return [*(v for o in reading.outcomes for v in o.criteria_verdicts), *reading.task_verdicts]


def _verified_gap(reading: _Reading) -> bool:
    """Whether a verifiable criterion of the round (a step's or the task's) failed."""
    return any(v.verdict == "fail" and v.mode == "verifiable" for v in _verdicts(reading))


def judged_by_model(reading: _Reading) -> list[str] | None:
    """The round's verifiable criteria a model decided (no check or vote did), [] when code decided every one, and
    None when the round had no verifiable criterion at all.

    Why: an accept rests on its weakest verdict, and a model's pass may be a false accept; a round that leans on one
    ends ``unverified``, never ``accept``."""
    verifiable = [v for v in _verdicts(reading) if v.mode == "verifiable"]
    if not verifiable:
        return None
    return list(dict.fromkeys(v.criterion for v in verifiable if v.by != "check"))


def verified_checks(reading: _Reading) -> tuple[str, ...] | None:
    """The checks of a round whose every verifiable criterion code decided and found met (None otherwise).

    Why: a model's pass may be a false accept, a check's may not, so only such a round's method is written as
    verified.  A round with no verifiable criterion, one a model decided, or one that failed is not verified."""
    verifiable = [v for v in _verdicts(reading) if v.mode == "verifiable"]
    if not verifiable or any(v.by != "check" or v.verdict != "pass" for v in verifiable):
        return None
    return tuple(dict.fromkeys(v.check for v in verifiable if v.check.strip()))


class GGSController:
    """Turns each round's OutcomeSummary/ReplanRequest into a PlanDirective or a FinalResult."""

    def __init__(self, task_id: str, intent: str, params: GGSParams | None = None,
                 now: Callable[[], datetime] | None = None) -> None:
        self.task_id = task_id
        self.intent = intent
        self.params = params if params is not None else load_settings().ggs
        self._now = now or _utc_now
        self._round = 0
        self._l_prev: float | None = None
        self._worsening = 0
        self._prev_directive = "init"
        self._targets: dict[BlockedTarget, str] = {}
        """Every (target, access) blamed in this task, and the tool whose call failed there."""
        self._new_targets: dict[BlockedTarget, str] = {}
        self._refused: dict[str, None] = {}
        self._tools_ever: dict[str, None] = {}
        self._worked: dict[str, None] = {}
        """The tools a subtask matched with in an earlier round: never blocked as the wrong approach."""
        self._tried: dict[str, None] = {}
        self._persistence: Counter[str] = Counter()
        self._open: dict[str, None] = {}
        self._trajectory: list[dict] = []
        self._final: FinalResult | None = None

    @property
    def finished(self) -> bool:
        """True once a FinalResult was emitted; further rounds are refused."""
        return self._final is not None

    def evaluate(self, message: OutcomeSummary | ReplanRequest, elapsed_ms: float,
                 paused_ms: float = 0.0, spent: float = 0.0) -> GGSDecision:
        """Compute the round's loss, pick the macro-state and build the directive or final result.

        ``elapsed_ms`` is wall time since the task began; ``paused_ms`` of it was spent waiting
        for a person's Law-1 answer, which is not the agent's time and so never counts in Ω.
        ``spent``: the task's LLM calls so far, weighed; Ω is at least spent/max_calls (``maths.call_cost``).
        """
        reading = self._read(message, elapsed_ms, paused_ms, spent)
        p = self.params
        self._worsening = self._worsening + 1 if reading.grad > p.epsilon else 0
        state, reason = self._decide(reading, accepted=isinstance(message, OutcomeSummary))
        failing = failing_criteria(reading.outcomes, reading.task_verdicts)
        self._persistence.update(dict(failing))
        self._track_open(reading, failing)
        self._accumulate_targets(reading.outcomes)
        self._refused.update(dict.fromkeys(refusals(reading.outcomes)))
        tools = self._blocked_tools(state, reading.outcomes)
        self._tools_ever.update(dict.fromkeys(tools))
        self._worked.update(dict.fromkeys(matched_tools(reading.outcomes)))
        loss_ = Loss(D=reading.D, P=reading.P, Omega=reading.omega, L=reading.L)
        directive = final = None
        if state in ACTION_STATES:
            directive = self._directive(state, reading, loss_, tools, failing)
        else:
            final = self._final_result(state, reason, message, reading, loss_, failing)
        self._tried.update(dict.fromkeys(_calls_tried(reading)))
        megrams = self._megrams(state, reading.round, final, verified_checks(reading) if final else None)
        self._l_prev = reading.L
        self._round = reading.round
        self._prev_directive = state
        self._final = final
        self._trajectory.append({
            "round": reading.round, "D": reading.D, "P": reading.P, "Omega": reading.omega,
            "L": reading.L, "grad_l": reading.grad, "state": state, "urgency": reading.urgency,
        })
        return GGSDecision(
            state=state, loss=loss_, grad_l=reading.grad, urgency=reading.urgency, directive=directive,
            final=final, megrams=megrams, log_line=self._log_line(state, reading, tools),
            trajectory=[dict(row) for row in self._trajectory], abandon_reason=reason,
        )

    def _read(self, message: OutcomeSummary | ReplanRequest, elapsed_ms: float, paused_ms: float,
              spent: float = 0.0) -> _Reading:
        if self._final is not None:
            raise RuntimeError(f"task {self.task_id!r} already finished with {self._final.directive!r}")
        if not isinstance(message, OutcomeSummary | ReplanRequest):
            raise TypeError(f"GGS evaluates OutcomeSummary or ReplanRequest, got {type(message).__name__}")
        if message.task_id != self.task_id:
            raise ValueError(f"message for task {message.task_id!r} sent to the GGS of {self.task_id!r}")
        outcomes = _outcomes(message)
        verdicts = list(message.task_criteria_verdicts)
        r = self._round + 1
        d, p_ = distance(outcomes, verdicts), implausibility(outcomes, verdicts)
        paused = float(paused_ms)
        calls = call_cost(spent, self.params)
        omega = omega_of(r - 1, agent_elapsed_ms(elapsed_ms, paused_ms), spent, self.params)
        value = loss(d, p_, omega, self.params)
        grad = 0.0 if self._l_prev is None else value - self._l_prev
        return _Reading(r, outcomes, verdicts, d, p_, omega, value, grad, urgency(grad, self.params), paused,
                        float(spent), calls)

    def _decide(self, reading: _Reading, *, accepted: bool) -> tuple[str, str | None]:
        """The cascade, then the overrides: accept, Law-2 kill switch, replan budget."""
        p = self.params
        state = macro_state(reading.D, reading.P, reading.omega, reading.grad, p, verified_gap=_verified_gap(reading))
        if state == "abandon":
            return state, "calls" if reading.calls >= p.theta else "omega"
        if state == "success":
            return ("accept" if accepted and reading.D == 0 else "success"), None
        if self._worsening >= p.law2_threshold:
            return "abandon", "law2"
        if reading.round - 1 >= p.max_replans:
            return "abandon", "budget"
        return state, None

    def _track_open(self, reading: _Reading, failing: list[tuple[str, int]]) -> None:
        """Criteria that failed in some round and have not passed in any round since (first failed first)."""
        passed = [v.criterion.strip() for o in reading.outcomes for v in o.criteria_verdicts if v.verdict == "pass"]
        passed += [v.criterion.strip() for v in reading.task_verdicts if v.verdict == "pass"]
        for criterion in passed:
            self._open.pop(criterion, None)
        self._open.update(dict.fromkeys(c for c, _ in failing))

    def _accumulate_targets(self, outcomes: list[SubTaskOutcome]) -> None:
        """The targets of the calls an environmental failure belongs to join blocked_targets for the task.

        Only the call that failed is blamed (artoo.tasks.blame.failure), and only for the access that failed
        (artoo.tasks.blame.access): a file read fine beside a failing write stays usable, a write refused on a
        read-only file leaves it readable, and a Law-1 denial is a constraint, never a failed target.
        """
        self._new_targets = {b: tool for b, tool in attributed_blocks(outcomes) if b not in self._targets}
        self._targets.update(self._new_targets)

    def _blocked_tools(self, state: str, outcomes: list[SubTaskOutcome]) -> list[str]:
        """break_symmetry blocks the failing subtasks' tools; change_approach the logical ones' (never a
        tool a subtask of this task matched with: artoo.tasks.blame.failure.blamed_tools)."""
        if state not in LOGICAL_STATES:
            return []
        tools = blamed_tools(outcomes, logical_only=state == "change_approach", worked_before=self._worked)
        failing = [o for o in outcomes if o.status == "failed"]  # the shell stays: its failed methods go
        worked = set(blamed_methods([o for o in outcomes if o.status == "matched"]))
        return [t for t in tools if t != "shell"] + [m for m in blamed_methods(failing) if m not in worked]

    def _most_persistent(self, failing: list[tuple[str, int]]) -> str:
        if not failing:
            return ""
        return max((c for c, _ in failing), key=lambda c: self._persistence[c])

    def _directive(self, state: str, reading: _Reading, loss_: Loss, tools: list[str],
                   failing: list[tuple[str, int]]) -> PlanDirective:
        return PlanDirective(
            task_id=self.task_id, loss=loss_, prev_directive=self._prev_directive, directive=state,
            blocked_tools=tools, blocked_targets=list(self._targets),
            failed_criterion=self._most_persistent(failing),
            failure_class=failure_class_of(reading.outcomes, reading.task_verdicts),
            budget_pressure=reading.omega, grad_l=reading.grad,
            rationale=_rationale(state, reading, self.params) + _walk_note(reading.outcomes), urgency=reading.urgency,
            refused=list(self._refused),
        )

    def _final_result(self, state: str, reason: str | None, message: OutcomeSummary | ReplanRequest,
                      reading: _Reading, loss_: Loss, failing: list[tuple[str, int]]) -> FinalResult:
        # An abandon names every criterion still open, not only the last round's: a last round whose plan
        # the rules rejected ran nothing, and its "produce a valid plan" must not hide the user's own goal.
        still = list(self._open) if state == "abandon" else [c for c, _ in failing]
        unmet = sorted(still, key=lambda c: -self._persistence[c])
        summary = self._summary(state, reason, message, reading, unmet)
        directive = state
        judged = judged_by_model(reading) if state in SUCCESS_STATES and not self.params.accept_judged else []
        if judged is None or judged:  # the GGS's state stays (memory keeps it, without a verified line)
            directive, summary = "unverified", _unverified_summary(reading, judged, unmet)
        return FinalResult(
            task_id=self.task_id, summary=summary, output=_merged_output(message, reading.outcomes),
            loss=loss_, grad_l=reading.grad, replans=reading.round - 1,
            prev_directive=self._prev_directive, directive=directive,
            next_steps=self._next_steps(reason, unmet) if state == "abandon" else [],
        )

    def _summary(self, state: str, reason: str | None, message: OutcomeSummary | ReplanRequest,
                 reading: _Reading, unmet: list[str]) -> str:
        replans = reading.round - 1
        matched = sum(1 for o in reading.outcomes if o.status == "matched")
        progress = f"{matched} of {len(reading.outcomes)} subtask(s) matched"
        still = f"; still unmet: {'; '.join(unmet)}" if unmet else ""
        if state == "accept":
            text = f"Accepted after {replans} replan(s): {progress}, every criterion passed."
        elif state == "success":
            text = (f"Succeeded within the convergence threshold (D={reading.D:.2f} <= "
                    f"delta={self.params.delta}) after {replans} replan(s): {progress}{still}.")
        else:
            text = (f"Abandoned after {replans} replan(s) because {self._why(reason, reading)}. "
                    f"Achieved: {progress}, D={reading.D:.2f}{still}.")
        if state in ("accept", "success"):  # what the folder holds is told by code (the flow), never by R4b's words
            return text
        extra = message.summary if isinstance(message, OutcomeSummary) else message.gap_summary
        return f"{text} {extra.strip()}".strip()

    def _why(self, reason: str | None, reading: _Reading) -> str:
        p = self.params
        if reason == "law2":
            return (f"the Law-2 kill switch fired: the loss worsened (grad_l > {p.epsilon}) "
                    f"for {self._worsening} consecutive rounds")
        if reason == "budget":
            return f"the replan budget is spent ({reading.round - 1} of {p.max_replans} replans used)"
        if reason == "calls":
            return (f"the LLM calls ran out ({calls_spent(reading.spent, p.max_calls)}, "
                    f"Omega={reading.omega:.2f} >= theta={p.theta})")
        return f"the resource budget is exhausted (Omega={reading.omega:.2f} >= theta={p.theta})"

    def _next_steps(self, reason: str | None, unmet: list[str]) -> list[str]:
        steps = [f"Resolve the unmet criterion: {c}" for c in unmet[:3]]
        if self._targets:
            steps.append("Check these inputs, which failed for environmental reasons: "
                         + ", ".join(b.label() for b in list(self._targets)[:5]))
        if self._tools_ever:
            steps.append("Try a method that does not rely on: " + ", ".join(self._tools_ever))
        if self._refused:
            steps.append("You refused (Law 1): " + "; ".join(list(self._refused)[:3])
                         + ". Approve it when asked, or ask for a result that does not need it.")
        steps.append({
            "law2": "Restate the request more narrowly: each replan moved further from the goal.",
            "budget": "Narrow the request, or raise ggs.max_replans if more rounds are worth it.",
            "calls": "Narrow the request, or raise ggs.max_calls if more LLM calls are worth it.",
        }.get(reason or "", "Allow more time (ggs.time_budget_ms) or split the task into smaller requests."))
        return steps

    def _megrams(self, state: str, round_: int, final: FinalResult | None,
                 verified: tuple[str, ...] | None = None) -> list[Megram]:
        """Action states: one Megram per target blamed THIS round; terminal states: one for the intent, marked
        verified (with its checks) when code decided every verifiable criterion of a success.

        A target blocked in an earlier round was not tried again (it was blocked), so writing it
        again would count one failure as several and, through memory, ban it for later tasks.
        """
        f, sigma, k = QUANTIZATION[state]
        created = _utc(self._now())
        if final is not None:
            return [Megram(id=uuid.uuid4().hex, created_at=created, space=intent_space(self.intent),
                           entity=ENV_LOCAL,
                           content=episode_content(state, self.intent, list(self._tried)[-TRIED_KEPT:],
                                                   final.summary, verified if state in SUCCESS_STATES else None),
                           state=state, f=f, sigma=sigma, k=k)]
        return [
            Megram(id=uuid.uuid4().hex, created_at=created, space=tool_space(tool),
                   entity=path_entity(blocked.target, blocked.access),
                   content=f"{state}: {tool} on {blocked.label()} failed (task {self.task_id}, round {round_})",
                   state=state, f=f, sigma=sigma, k=k)
            for blocked, tool in self._new_targets.items()
        ]

    def _log_line(self, state: str, reading: _Reading, tools: list[str]) -> str:
        return (f"ggs task={self.task_id} round={reading.round} D={reading.D:.3f} P={reading.P:.3f} "
                f"Ω={reading.omega:.3f} L={reading.L:.3f} ∇L={reading.grad:+.3f} directive={state} "
                f"urgency={reading.urgency} calls={reading.spent:g}/{self.params.max_calls} "
                f"outcomes=[{_counts(reading.outcomes)}] "
                f"law1_wait={reading.paused_ms / 1000:.1f}s (not in Ω) blocked_tools=[{', '.join(tools)}] "
                f"blocked_targets=[{', '.join(b.label() for b in self._targets)}]")


def _unverified_summary(reading: _Reading, judged: list[str] | None, unmet: list[str]) -> str:
    """What a done-but-unverified run tells the person: what matched, and which criteria only a model judged."""
    matched = sum(1 for o in reading.outcomes if o.status == "matched")
    still = f" (still unmet: {'; '.join(unmet)})" if unmet else ""
    head = (f"Done, unverified, after {reading.round - 1} replan(s): {matched} of {len(reading.outcomes)} "
            f"subtask(s) matched{still}")
    if judged is None:
        return f"{head}, but the plan had no criterion code could check. Look at the result before relying on it."
    return (f"{head}, but no check or vote decided {len(judged)} verifiable criterion(s), which a model judged: "
            f"{'; '.join(judged)}. Look at the result before relying on it.")


TRIED_KEPT = 6
"""The latest tool calls an intent Megram quotes as what was tried."""


def calls_spent(spent: float, max_calls: int) -> str:
    """``call budget spent: 24 of 30 calls``: the words the summary, the run's log and the decision log share."""
    return f"call budget spent: {spent:g} of {max_calls} calls"


def _calls_tried(reading: _Reading) -> list[str]:
    """``r2 shell: wc -l notes.txt → 3``: each call of the round, one line, capped."""
    calls = []
    for outcome in reading.outcomes:
        for evidence in outcome.tool_calls:
            line = " ".join(evidence.split())
            calls.append(f"r{reading.round} " + (line if len(line) <= 160 else line[:159] + "…"))
    return calls


def _walk_note(outcomes: list[SubTaskOutcome]) -> str:
    """`` Not blocked: find skipped 37 unreadable paths under /…``: the noise of a walk, said once, never blamed."""
    notes = walk_notes_of(outcomes)
    return f" Not blocked: {'; '.join(notes)} (places a walk could not read, not failed targets)." if notes else ""


def _counts(outcomes: list[SubTaskOutcome]) -> str:
    """``matched=1 failed=1 skipped=2 denied=0``: how the round's subtasks ended."""
    return " ".join(f"{kind}={n}" for kind, n in outcome_counts(outcomes).items())


def _outcomes(message: OutcomeSummary | ReplanRequest) -> list[SubTaskOutcome]:
    if isinstance(message, OutcomeSummary):
        return list(message.outcomes)
    return list(message.matched_outcomes) + list(message.failed_outcomes)


def _merged_output(message: OutcomeSummary | ReplanRequest, outcomes: list[SubTaskOutcome]) -> Any:
    if message.merged_output is not None:
        return message.merged_output
    matched = [o.output for o in outcomes if o.status == "matched"]
    return matched or None


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _rationale(state: str, r: _Reading, p: GGSParams) -> str:
    """One sentence naming the numbers that chose the directive, then how the subtasks ended."""
    return f"{_reason(state, r, p)} Subtasks: {_counts(r.outcomes)}."


def _reason(state: str, r: _Reading, p: GGSParams) -> str:
    trend = {"low": "improving", "high": "worsening"}.get(r.urgency, "flat")
    head = f"D={r.D:.2f} > delta={p.delta}"
    signal = f"a directional signal (|grad_l|={abs(r.grad):.2f} >= epsilon, {trend})"
    plateau = f"a plateau (|grad_l|={abs(r.grad):.2f} < epsilon)"
    env = f"mostly environmental failures (P={r.P:.2f} <= rho={p.rho})"
    wrong = f"a logically wrong approach (P={r.P:.2f} > rho={p.rho})"
    if state == "refine":
        return f"{head} with {signal} and {env}: keep the approach and tighten its parameters."
    if state == "change_path":
        return (f"{head} on {plateau} with {env}: keep the approach but use a different target or path "
                "(or create the missing folder the evidence shows).")
    if state == "change_approach":
        doubt = ", distrusting the improving trend" if r.urgency == "low" else ""
        return f"{head} with {signal} and {wrong}: switch method{doubt} and do not use the blocked tools."
    return f"{head} on {plateau} with {wrong}: demand a novel tool class and do not use the blocked tools."
