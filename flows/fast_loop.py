"""The fast loop: one subflow per subtask, whose attempts are tasks.

R3 executes, R4a scores the evidence; a gap sends a CorrectionSignal back to R3 and
the attempt repeats, up to maxRetries.  An executor that says ``failed`` is scored once
by R4a (to classify the failure) and never retried; an infrastructure error or a Law-1
denial ends the loop at once without an LLM call (retrying would only ask the same
question again).  An attempt that made an earlier attempt's calls and was judged the same ends it too: a
retry would only repeat it, spending the task's calls.  Only the final SubTaskOutcome leaves this subflow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from prefect import flow
from prefect.logging import get_run_logger

from artoo.config.contracts import (
    BlockedTarget,
    CriterionVerdict,
    ExecutionResult,
    GapPoint,
    SubTask,
    SubTaskOutcome,
)
from artoo.config.errors import RunFailure
from artoo.config.protocol import AgentVerdict
from artoo.tasks.checks.decide import settles, split_by_checks
from artoo.tasks.checks.evaluate import check_criteria, existed_before
from artoo.tasks.decisions.log import SCOPE
from artoo.tasks.roles import agent_validator as r4a
from artoo.tasks.roles.runtime import RunDeps, get_runtime
from artoo.tasks.roles.task import REJUDGED, checks_task, execute_task, grounded_answer, validate_task
from artoo.tasks.tools import Blocks, ToolBox
from artoo.tasks.tools.found import absent_names, named_files_now


def subtask_run_name(round_no: int, index: int, intent: str) -> str:
    """``subtask-2.1 · find the logs`` — what the run graph shows."""
    short = " ".join(intent.split())
    short = short if len(short) <= 48 else short[:47] + "…"
    return f"subtask-{round_no}.{index} · {short}"


@flow(name="subtask", validate_parameters=False, log_prints=False, persist_result=False)
async def subtask_flow(runtime_id: str, subtask: SubTask, blocked_tools: list[str],
                       blocked_targets: list[BlockedTarget],
                       blocked_pairs: list[tuple[str, str, str]] | None = None) -> SubTaskOutcome:
    """Run one subtask's fast loop and return its final outcome."""
    run = get_runtime(runtime_id)
    deps = run.deps
    logger = get_run_logger()
    deps.bus.publish(subtask, "R2", "R3", subtask.subtask_id)
    SCOPE.set({**SCOPE.get(), "subtask": subtask.subtask_id})  # this subflow's own context (gathered task)
    recorder = deps.decisions.tool_call
    blocks = Blocks(frozenset(blocked_tools), tuple(blocked_targets), frozenset(tuple(p) for p in blocked_pairs or []))
    toolbox = ToolBox(deps.settings, deps.workspace, deps.gate, blocks, recorder=recorder, created=run.record.created)
    trajectory: list[GapPoint] = []
    correction = None
    tried: set[tuple[str, str]] = set()  # what an attempt that fell short ran: not run again in this step
    seen: list[tuple] = []  # each attempt's calls and verdicts: a retry that only repeats one ends the loop
    max_attempts = deps.settings.ggs.max_retries + 1
    for attempt in range(1, max_attempts + 1):
        denied_before = len(toolbox.law1_denials)
        SCOPE.set({**SCOPE.get(), "attempt": attempt})
        try:
            result = await execute_task(runtime_id, subtask, toolbox, correction, attempt,
                                        settled=_settled(runtime_id, subtask), tried=frozenset(tried))
        except RunFailure as exc:
            return _finish(deps, subtask, None, trajectory, attempt, str(exc), exc.failure_class, logger)
        run.record.printed.extend(result.tool_calls)
        denials = toolbox.law1_denials[denied_before:]
        if denials:  # a person's answer: a constraint for the planner, never a failed target
            reason = "; ".join(f"[LAW1] denied: {d.command} ({d.reason})" for d in denials)
            run.record.law1_events.extend(f"denied: {d.command}" for d in denials)
            return _finish(deps, subtask, result, trajectory, attempt, reason, "environmental", logger, kind="denied")
        checked = [c for c in subtask.success_criteria if c.check.strip()]
        outcomes = await checks_task(runtime_id, checked, f"attempt {attempt}", before_of=subtask.subtask_id,
                                     printed=[*run.record.printed, result.output]) if checked else []
        unsure = [o for o in outcomes if o.status == "unsure"]
        if unsure:  # the votes split within their budget: another attempt cannot settle it, so the task says so
            return _finish(deps, subtask, result, trajectory, attempt, unsure[0].reason, "logical", logger)
        decided, pending, notes = split_by_checks(subtask.success_criteria, outcomes)
        if pending or not subtask.success_criteria:  # the model judges only what no check decided
            judged = subtask.model_copy(update={"success_criteria": pending})
            names = r4a.named_files(judged)
            found = named_files_now(names, deps.workspace) if deps.workspace else []
            try:
                answer = await validate_task(runtime_id, judged, result, attempt, found, notes=notes)
                absent = absent_names(names, deps.workspace) if deps.workspace else []
                answer, judged_verdicts = await _grounded_verdicts(runtime_id, deps, judged, result, attempt,
                                                                   answer, found, absent, notes)
            except RunFailure as exc:
                return _finish(deps, subtask, result, trajectory, attempt, f"validator: {exc}", exc.failure_class,
                               logger)
        else:
            logger.info("every criterion of attempt %d was decided by a check: no validator call", attempt)
            answer, judged_verdicts = AgentVerdict(verdicts=[], what_was_wrong=None, what_to_do=None), []
        verdicts = r4a.in_plan_order(subtask, decided, judged_verdicts)
        trajectory.append(r4a.gap_point(attempt, verdicts))
        if result.status == "failed":  # R4a classified the evidence; a failed executor is never retried
            failure_class = trajectory[-1].failure_class or "logical"
            outcome = r4a.outcome(subtask, "failed", result, verdicts, trajectory,
                                  failure_reason=f"executor reported failure: {result.output[:300]}",
                                  failure_class=failure_class, answer=answer)
            logger.warning("executor failed (%s), no retry: %s", failure_class, result.output[:200])
            return deps.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)
        if all(v.verdict == "pass" for v in verdicts):
            logger.info("matched on attempt %d", attempt)
            outcome = r4a.outcome(subtask, "matched", result, verdicts, trajectory)
            return deps.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)
        if attempt == max_attempts:
            unmet = [v.criterion for v in verdicts if v.verdict == "fail"]
            outcome = r4a.outcome(subtask, "failed", result, verdicts, trajectory,
                                  failure_reason=f"criteria unmet after {attempt} attempts: {'; '.join(unmet)}",
                                  failure_class=trajectory[-1].failure_class, answer=answer)
            logger.warning("failed after %d attempts: %s", attempt, outcome.failure_reason)
            return deps.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)
        if (key := attempt_key(result, verdicts)) in seen:  # another attempt would spend calls to repeat it again
            outcome = r4a.outcome(subtask, "failed", result, verdicts, trajectory,
                                  failure_reason=f"{REPEATED} (attempt {seen.index(key) + 1})",
                                  failure_class=trajectory[-1].failure_class, answer=answer)
            logger.warning("failed on attempt %d: %s", attempt, outcome.failure_reason)
            return deps.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)
        seen.append(key)
        correction = r4a.correction(subtask, attempt, verdicts, answer, result)
        tried.update((c.tool, c.input) for c in result.calls if c.tool == "shell" and not c.denied)
        logger.info("correction → attempt %d: %s", attempt + 1, correction.what_to_do or correction.what_was_wrong)
        deps.bus.publish(correction, "R4a", "R3", subtask.subtask_id)
    raise AssertionError("unreachable: the attempt loop always returns")


REPEATED = "the attempt repeated an earlier one"
"""Why a step ends when an attempt made the calls an earlier one made and was judged the same."""


def attempt_key(result: ExecutionResult, verdicts: list[CriterionVerdict]) -> tuple:
    """What an attempt did and how it was judged, for telling a repeat: its calls as code recorded them (tool,
    input, targets, outcome, output) and each criterion's verdict; the validator's words are left out."""
    calls = tuple((c.tool, c.input, tuple(c.targets), c.ok, c.denied, c.output) for c in result.calls)
    return calls, tuple((v.criterion, v.verdict) for v in verdicts)


def _settled(runtime_id: str, subtask: SubTask) -> Callable[[], Awaitable[bool]] | None:
    """When checks alone decide every criterion of the step: a probe the executor calls after each call that
    worked, true once they would accept it by the step's own rule (``split_by_checks``: every criterion decided and
    passed, the votes' quorum covering what a check could not tell); the attempt then ends without asking the model
    whether it is done."""
    run = get_runtime(runtime_id)
    record, checked = run.record, [c for c in subtask.success_criteria if c.check.strip()]
    if record.confined is None or record.before is None or not settles(subtask.success_criteria):
        return None

    async def settled() -> bool:
        before = record.snapshots.get(subtask.subtask_id, record.before)
        outcomes = await check_criteria(checked, run.deps.workspace, before, record.confined, list(record.printed),
                                        task_before=record.before,
                                        ballot=record.ballot.probe() if record.ballot is not None else None)
        decided, pending, _ = split_by_checks(subtask.success_criteria, outcomes)
        return bool(decided) and not pending and all(v.verdict == "pass" for v in decided.values())
    return settled


async def _grounded_verdicts(runtime_id: str, deps: RunDeps, subtask: SubTask, result: ExecutionResult,
                             attempt: int, answer: AgentVerdict, found: list[str],
                             absent: list[str], notes: dict[str, str]) -> tuple[AgentVerdict, list[CriterionVerdict]]:
    """R4a's answer and its verdicts after code's grounding (``grounded_answer``)."""
    existed = existed_before(r4a.named_files(subtask), deps.workspace, get_runtime(runtime_id).record.before)

    def ground(given: AgentVerdict) -> tuple[list[CriterionVerdict], list[str]]:
        return r4a.grounded(r4a.verdicts_for(subtask, given), result, found, absent=absent,
                            subject=r4a.subject_files(subtask), existed=existed)

    async def reask(objection: str) -> AgentVerdict:
        return await validate_task(runtime_id, subtask, result, attempt, found, notes=notes, objection=objection,
                                   suffix=REJUDGED)
    return await grounded_answer(deps, "R4a", answer, ground, reask, found, subtask_id=subtask.subtask_id,
                                 attempt=attempt)


def _finish(deps: RunDeps, subtask: SubTask, result: ExecutionResult | None, trajectory: list[GapPoint], attempt: int,
            reason: str, failure_class: str, logger, kind: str | None = None) -> SubTaskOutcome:
    """An immediate failure (no retry): every criterion fails with the failure's class."""
    verdicts = r4a.immediate_failure(subtask, reason, failure_class)
    trajectory.append(r4a.gap_point(attempt, verdicts))
    result = result or ExecutionResult(subtask_id=subtask.subtask_id, status="failed", output=reason)
    logger.warning("failed immediately (%s): %s", failure_class, reason)
    outcome = r4a.outcome(subtask, "failed", result, verdicts, trajectory, failure_reason=reason,
                          failure_class=failure_class, kind=kind)
    return deps.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)

