"""One medium-loop round as a subflow: calibrate → plan → dispatch → fast loops → R4b.

Subtasks of one sequence group run concurrently (their subflows are gathered);
a later group sees the earlier groups' outputs in its context.  When a group fails,
later groups are not run (they would lack their inputs) and are reported as skipped:
unmet for D, so D stays honest, but no evidence about the approach for P.  The round
ends with R4b's OutcomeSummary or ReplanRequest, which the medium loop hands to the GGS.
"""

from __future__ import annotations

import asyncio

from prefect import flow
from prefect.logging import get_run_logger

from artoo.config.compat import named as run_named
from artoo.config.contracts import (
    DispatchManifest,
    MemoryQuery,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTask,
    SubTaskOutcome,
    TaskSpec,
)
from artoo.config.errors import PlanRejected, RunFailure
from artoo.config.protocol import PlanAnswer
from artoo.flows.fast_loop import subtask_flow, subtask_run_name
from artoo.memory.calibration import calibrate_from_store
from artoo.tasks import plan_rules
from artoo.tasks.prefect_tasks import meta_validate_task, plan_task, publish_r4b
from artoo.tasks.roles import agent_validator as r4a
from artoo.tasks.roles import meta_validator as r4b
from artoo.tasks.runtime import Runtime, get_runtime


def round_run_name(round_no: int, directive: PlanDirective | None) -> str:
    """``round-2 · change_path`` — the story the run graph tells."""
    return f"round-{round_no} · {directive.directive if directive else 'init'}"


@flow(name="round", validate_parameters=False, log_prints=False, persist_result=False)
async def round_flow(runtime_id: str, spec: TaskSpec, round_no: int, directive: PlanDirective | None,
                     blocked_tools: list[str], blocked_targets: list[str],
                     prior_summary: str = "", evidence: str = "") -> OutcomeSummary | ReplanRequest:
    """Plan and run one round; return R4b's verdict for the GGS (``evidence``: the last round's calls)."""
    rt = get_runtime(runtime_id)
    logger = get_run_logger()
    calibration = _calibrate(rt, spec, blocked_tools, blocked_targets)
    rt.served_sops = [*calibration.sops, *calibration.tool_sops] if calibration is not None else []
    must_not_tools = set(blocked_tools) | set(getattr(calibration, "must_not_tools", set()))
    must_not_targets = set(blocked_targets) | set(getattr(calibration, "must_not_targets", set()))
    pairs = sorted(getattr(calibration, "must_not_pairs", set()))  # memory: that tool on that target only
    block = calibration.prompt_block() if calibration is not None else ""
    try:
        plan = await _plan(runtime_id, spec, block, directive, must_not_tools, must_not_targets, prior_summary,
                           evidence, pairs)
    except RunFailure as exc:  # a plan that broke the rules twice, or the planner's endpoint failing
        logger.error("round %d failed honestly: %s", round_no, exc)
        return _rejected_round(rt, spec, str(exc), exc.failure_class)
    plan, cap_note = plan_rules.cap_plan(plan_rules.normalise_sequences(plan))
    if cap_note:
        logger.warning(cap_note)
    manifest, groups = plan_rules.dispatch(plan, spec.task_id, round_no)
    rt.bus.publish(manifest, "R2", "R4b")
    outcomes = await _run_groups(runtime_id, rt, round_no, groups, sorted(must_not_tools), sorted(must_not_targets),
                                 pairs)
    merged = r4b.merge_outputs(outcomes)
    verdicts, summary = None, ""
    if r4b.needs_llm(outcomes):
        try:
            answer = await meta_validate_task(runtime_id, manifest, outcomes, merged)
            verdicts, summary = r4b.task_verdicts(manifest, answer), answer.summary
        except RunFailure as exc:  # no verdict is not an accept: every task criterion fails with the cause
            logger.error("R4b could not judge the task criteria: %s", exc)
            verdicts = r4b.unjudged(manifest, str(exc), exc.failure_class)
            summary = f"the meta-validator could not judge: {exc}"
    else:
        logger.info("R4b: a subtask failed, so no LLM call; replan requested")
    message = r4b.decide(spec.task_id, manifest, outcomes, merged, verdicts, summary)
    publish_r4b(runtime_id, message)
    return message


def _calibrate(rt: Runtime, spec: TaskSpec, blocked_tools: list[str], blocked_targets: list[str]):
    """R2's memory calibration (no LLM call); memory trouble never stops planning."""
    if rt.store is None or rt.settings.ablation.strategy == "retry":  # the retry ablation plans without memory
        return None
    logger = get_run_logger()
    try:
        calibration = calibrate_from_store(rt.store, spec.intent, set(blocked_tools), set(blocked_targets))
    except Exception as exc:  # memory must never block the operational path
        logger.warning("memory calibration unavailable: %s", exc)
        return None
    query = MemoryQuery(task_id=spec.task_id, space=calibration.space, entity=calibration.entity,
                        potentials=calibration.potentials, sop_count=len(calibration.sops) + len(calibration.tool_sops))
    rt.bus.publish(query, "R2", "R5")
    logger.info("memory %s/%s: %s", query.space, query.entity,
                query.potentials.action if query.potentials else "none")
    return calibration


async def _plan(runtime_id: str, spec: TaskSpec, block: str, directive: PlanDirective | None,
                must_not_tools: set[str], must_not_targets: set[str], prior_summary: str,
                evidence: str = "", pairs: list[tuple[str, str]] = ()) -> PlanAnswer:
    """Ask R2; a plan that breaks the rules is re-asked once with the problems, then rejected.

    Size alone never rejects the re-asked plan: it is capped (and the cap logged) instead.
    """
    problems: list[str] | None = None
    shown_directive, shown_targets = directive, must_not_targets
    if not get_runtime(runtime_id).settings.ablation.planner_sees_blocked_targets:  # debug: hide one channel
        shown_targets = set()  # still enforced below and by the toolbox; only the prompt loses them
        shown_directive = directive.model_copy(update={"blocked_targets": []}) if directive else None
        block = "\n".join(line for line in block.splitlines() if not any(t in line for t in must_not_targets))
    for suffix in ("", " · re-ask"):
        plan = await plan_task(runtime_id, spec, block, shown_directive, must_not_tools, shown_targets,
                               prior_summary, problems, suffix=suffix, evidence=evidence)
        size_limit = None if suffix else plan_rules.MAX_SUBTASKS
        problems = plan_rules.validate_plan(plan, must_not_tools, must_not_targets, max_subtasks=size_limit,
                                            workspace=get_runtime(runtime_id).workspace, must_not_pairs=pairs)
        if not problems:
            return plan
        get_run_logger().warning("plan rejected: %s", "; ".join(problems))
    raise PlanRejected("the planner broke the plan rules twice: " + "; ".join(problems or []))


async def _run_groups(runtime_id: str, rt: Runtime, round_no: int, groups: list[list[SubTask]],
                      blocked_tools: list[str], blocked_targets: list[str],
                      blocked_pairs: list[tuple[str, str]] = ()) -> list[SubTaskOutcome]:
    """Run sequence groups in order, each group's subtasks concurrently."""
    outcomes: list[SubTaskOutcome] = []
    index = 0
    for position, group in enumerate(groups):
        if any(o.status == "failed" for o in outcomes):
            skipped = [st for g in groups[position:] for st in g]
            outcomes.extend(_not_run(rt, st) for st in skipped)
            break
        runs = []
        for st in group:
            index += 1
            st = st.model_copy(update={"context": plan_rules.group_context(st.context, outcomes)}) if outcomes else st
            named = run_named(subtask_flow, subtask_run_name(round_no, index, st.intent))
            runs.append(named(runtime_id, st, blocked_tools, blocked_targets, list(blocked_pairs)))
        outcomes.extend(await asyncio.gather(*runs))
    return outcomes


def _not_run(rt: Runtime, subtask: SubTask) -> SubTaskOutcome:
    """A later-group subtask skipped because an earlier group failed (unmet in D, never in P)."""
    reason = "not run: an earlier sequence group failed"
    verdicts = r4a.immediate_failure(subtask, reason, "logical")
    outcome = r4a.outcome(subtask, "failed", None, verdicts, [r4a.gap_point(1, verdicts)],
                          failure_reason=reason, failure_class="logical", kind="skipped")
    return rt.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)


def _rejected_round(rt: Runtime, spec: TaskSpec, reason: str, failure_class: str) -> ReplanRequest:
    """The planner produced no valid plan: an honest failure of the round, classified by its cause."""
    placeholder = SubTask(subtask_id="plan", parent_task_id=spec.task_id, intent="produce a valid plan")
    verdicts = r4a.immediate_failure(placeholder, reason, failure_class)
    failed = r4a.outcome(placeholder, "failed", None, verdicts, [r4a.gap_point(1, verdicts)],
                         failure_reason=reason, failure_class=failure_class)
    manifest = DispatchManifest(task_id=spec.task_id)
    message = r4b.decide(spec.task_id, manifest, [failed], {}, None, reason)
    rt.bus.publish(message, "R4b", "R7")
    return message
