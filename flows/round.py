"""One medium-loop round as a subflow: calibrate → plan → dispatch → fast loops → R4b.

Subtasks of one sequence group run concurrently (their subflows are gathered);
a later group sees the earlier groups' outputs in its context.  When a group fails,
later groups are not run (they would lack their inputs) and are reported as skipped:
unmet for D, so D stays honest, but no evidence about the approach for P.  The round
ends with R4b's OutcomeSummary or ReplanRequest, which the medium loop hands to the GGS.
"""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import flow
from prefect.logging import get_run_logger
from pydantic import BaseModel, ConfigDict, Field

from artoo.config.compat import named as run_named
from artoo.config.contracts import (
    BlockedTarget,
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
from artoo.config.protocol import PlanAnswer, TaskVerdict
from artoo.flows.consensus import ballot_for
from artoo.flows.fast_loop import subtask_flow, subtask_run_name
from artoo.tasks.checks.decide import split_by_checks
from artoo.tasks.checks.evaluate import existed_before, take_snapshot
from artoo.tasks.llm import TOOLS_SCHEMA
from artoo.tasks.plan import rules as plan_rules
from artoo.tasks.plan.inputs import RoundInputs, plan_messages, round_inputs, shown
from artoo.tasks.roles import agent_validator as r4a
from artoo.tasks.roles import executor
from artoo.tasks.roles import meta_validator as r4b
from artoo.tasks.roles.prompting import as_text
from artoo.tasks.roles.runtime import RunDeps, Runtime, get_runtime
from artoo.tasks.roles.task import (
    REJUDGED,
    checks_task,
    grounded_answer,
    meta_validate_task,
    plan_task,
    publish_r4b,
)
from artoo.tasks.tools.found import absent_names, named_files_now
from artoo.tasks.tools.specs import served


def round_run_name(round_no: int, directive: PlanDirective | None) -> str:
    """``round-2 · change_path`` — the story the run graph tells."""
    return f"round-{round_no} · {directive.directive if directive else 'init'}"


class RoundBrief(BaseModel):
    """What the medium loop hands one round (the round flow's one input besides the runtime id): its number,
    the GGS's directive, and what carries over from the rounds before.  Frozen: a round reads it, never changes
    it.  The Prefect UI shows it as the round run's ``brief`` parameter, as JSON."""

    model_config = ConfigDict(frozen=True)

    round_no: int = Field(ge=1)
    directive: PlanDirective | None = None
    """The GGS's correction for this round; None for round 1 (and under the retry ablation)."""
    spec: TaskSpec
    prior_summary: str = ""
    """R4b's summary of the last round."""
    evidence: str = ""
    """The last round's tool calls, as R2 is shown them."""
    kept: tuple[r4b.KeptResult, ...] = ()
    """What earlier rounds validated: merged with this round's results and shown to R4b."""

    @property
    def blocked_tools(self) -> list[str]:
        return list(self.directive.blocked_tools) if self.directive else []

    @property
    def blocked_targets(self) -> list[BlockedTarget]:
        return list(self.directive.blocked_targets) if self.directive else []


def send_plan_early(run: Runtime, brief: RoundBrief, inputs: RoundInputs | None = None) -> None:
    """Before the round's subflow is created: work out its inputs and send its R2 request now.

    The round takes both (``run.record.prepared``), so its plan task asks with the very same words and gets
    the answer that has been on its way meanwhile (artoo.tasks.llm.early).
    """
    deps = run.deps
    if inputs is None:  # else worked out ahead by ``artoo run`` (artoo.tasks.plan.ahead), maybe sent already
        inputs = round_inputs(deps.settings, deps.store, brief.spec, brief.blocked_tools, brief.blocked_targets)
    run.record.prepared[brief.round_no] = inputs
    deps.llm.send_early("R2", "Plan", plan_messages(deps.settings, inputs, brief.spec, brief.directive,
                                                    brief.prior_summary, brief.evidence, str(deps.workspace)))


@flow(name="round", validate_parameters=False, log_prints=False, persist_result=False)
async def round_flow(runtime_id: str, brief: RoundBrief) -> OutcomeSummary | ReplanRequest:
    """Plan and run one round; return R4b's verdict for the GGS."""
    spec, round_no, kept = brief.spec, brief.round_no, list(brief.kept)
    run = get_runtime(runtime_id)
    deps = run.deps
    logger = get_run_logger()
    inputs = run.record.prepared.pop(round_no, None)  # sent early by the medium loop, else worked out now
    inputs = inputs or round_inputs(deps.settings, deps.store, spec, brief.blocked_tools, brief.blocked_targets)
    _announce(run, spec, inputs, round_no)
    try:
        plan = await _plan(runtime_id, spec, inputs, brief.directive, brief.prior_summary, brief.evidence, round_no)
    except RunFailure as exc:  # a plan that broke the rules twice, or the planner's endpoint failing
        logger.error("round %d failed honestly: %s", round_no, exc)
        return _rejected_round(deps, spec, str(exc), exc.failure_class, kept)
    seen = plan.model_dump_json()
    repeated = run.record.plans.get(seen)
    if repeated is not None:  # the same plan again can only fail again: no call is spent running it
        reason = f"the plan repeats round {repeated}'s, which fell short"
        logger.warning("round %d not dispatched: %s", round_no, reason)
        deps.decisions.write("plan_repeated", round=round_no, earlier=repeated)
        return _rejected_round(deps, spec, reason, "logical", kept)
    run.record.plans[seen] = round_no
    plan, cap_note = plan_rules.cap_plan(plan_rules.normalise_sequences(plan))
    if cap_note:
        logger.warning(cap_note)
    plan, moves = plan_rules.place_task_criteria(plan)
    plan, told = plan_rules.with_request(plan, spec.intent)
    _note_repairs(deps, round_no, moves + told)
    manifest, groups = plan_rules.dispatch(plan, spec.task_id, round_no, await _reference(runtime_id, spec))
    deps.bus.publish(manifest, "R2", "R4b")
    outcomes = await _run_groups(runtime_id, deps, round_no, groups, sorted(inputs.must_not_tools),
                                 sorted(inputs.must_not_targets), inputs.pairs)
    merged = r4b.merge_outputs(outcomes, kept)
    verdicts, summary = None, ""
    if r4b.needs_llm(outcomes):  # this round's outcomes only: kept results never make a failed round matched
        checked = [c for c in manifest.task_criteria if c.check.strip()]
        printed = [*run.record.printed, *(as_text(o.output) for o in outcomes)]
        checks = await checks_task(runtime_id, checked, f"round {round_no}", printed=printed) if checked else []
        decided, left, notes = split_by_checks(manifest.task_criteria, checks)
        pending = manifest.model_copy(update={"task_criteria": left})
        verdicts, summary = [], r4b.checked_summary(list(decided.values()))
        if pending.task_criteria:  # the model judges only what no check decided
            names = r4b.named_files(pending)
            found = named_files_now(names, deps.workspace) if deps.workspace else []
            try:
                answer = await meta_validate_task(runtime_id, pending, outcomes, kept, found, notes=notes)
                absent = absent_names(names, deps.workspace) if deps.workspace else []
                answer, verdicts = await _grounded(runtime_id, deps, round_no, answer,
                                                   (pending, outcomes, kept, found, absent, notes))
                summary = answer.summary
            except RunFailure as exc:  # no verdict is not an accept: every task criterion fails with the cause
                logger.error("R4b could not judge the task criteria: %s", exc)
                verdicts = r4b.unjudged(pending, str(exc), exc.failure_class)
                summary = f"the meta-validator could not judge: {exc}"
        else:
            logger.info("R4b: every task criterion was decided by a check, so no LLM call")
        verdicts = r4b.in_plan_order(manifest, decided, verdicts)
    else:
        logger.info("R4b: a subtask failed, so no LLM call; replan requested")
    message = r4b.decide(spec.task_id, manifest, outcomes, merged, verdicts, summary)
    publish_r4b(runtime_id, message)
    return message


async def _grounded(runtime_id: str, deps: RunDeps, round_no: int, answer: TaskVerdict,
                    judged: tuple) -> tuple[TaskVerdict, list]:
    """R4b's answer and its verdicts after code's grounding (``grounded_answer``).  ``judged``: manifest, outcomes,
    kept, found, absent, notes."""
    manifest, outcomes, kept, found, absent, notes = judged
    existed = existed_before(r4b.named_files(manifest), deps.workspace, get_runtime(runtime_id).record.before)

    def ground(given: TaskVerdict) -> tuple[list, list[str]]:
        return r4b.grounded(r4b.task_verdicts(manifest, given), outcomes, kept, found, absent, existed)

    async def reask(objection: str) -> TaskVerdict:
        return await meta_validate_task(runtime_id, manifest, outcomes, kept, found, notes=notes, objection=objection,
                                        suffix=REJUDGED)
    return await grounded_answer(deps, "R4b", answer, ground, reask, found, round=round_no)


async def _reference(runtime_id: str, spec: TaskSpec) -> str:
    """The command that stands for the task's votes in its criterion ("" when no vote could be drawn): the votes
    are drawn once, in the first round, from the request and a glance at the folder, never from the plan."""
    ballot = await ballot_for(runtime_id, spec)
    return ballot.commands[0] if ballot is not None and ballot.commands else ""


def _announce(run: Runtime, spec: TaskSpec, inputs: RoundInputs, round_no: int = 1) -> None:
    """The round's log and bus say what memory served it (R2 → R5 MemoryQuery); R7 checks the SOPs later.
    The decision log keeps the served lines themselves (``memory``), so an eval can count what a planner saw."""
    logger, deps = get_run_logger(), run.deps
    calibration = inputs.calibration
    run.record.served_sops = [*calibration.sops, *calibration.tool_sops] if calibration is not None else []
    if inputs.calibration_error:
        logger.warning("memory calibration unavailable: %s", inputs.calibration_error)
    if calibration is None:
        return
    deps.decisions.write("memory", round=round_no, **served_lines(calibration))
    query = MemoryQuery(task_id=spec.task_id, space=calibration.space, entity=calibration.entity,
                        potentials=calibration.potentials, sop_count=len(calibration.sops) + len(calibration.tool_sops))
    deps.bus.publish(query, "R2", "R5")
    logger.info("memory %s/%s: %s", query.space, query.entity,
                query.potentials.action if query.potentials else "none")


def served_lines(calibration: Any) -> dict[str, list[str]]:
    """Memory's own lines of a calibration (the GGS's "blocked in this task" lines, appended last, left out)
    and the contents of the SOPs among them (an SOP cut by ``max_calibration_entries`` was not seen)."""
    own = (len(calibration.must_not) - len(calibration.must_not_tools) - len(calibration.must_not_targets)
           - len(calibration.must_not_access))
    must_not = list(calibration.must_not[:max(own, 0)])
    shown = must_not + list(calibration.prefer)
    sops = [sop.content for sop in [*calibration.sops, *calibration.tool_sops]]
    return {"must_not": must_not, "prefer": list(calibration.prefer), "caution": list(calibration.caution),
            "verified": list(calibration.verified),
            "sops": [content for content in dict.fromkeys(sops) if any(content in line for line in shown)]}


async def _plan(runtime_id: str, spec: TaskSpec, inputs: RoundInputs, directive: PlanDirective | None,
                prior_summary: str, evidence: str = "", round_no: int = 1) -> PlanAnswer:
    """Ask R2; a plan that breaks the rules is re-asked once with the problems, then rejected.

    Size alone never rejects the re-asked plan: it is capped (and the cap logged) instead, and blocked tools
    it still declares are struck (plan_rules.drop_blocked_tools) when nothing else is wrong with it.
    """
    deps = get_runtime(runtime_id).deps
    problems: list[str] | None = None
    block, shown_directive, shown_targets = shown(deps.settings, inputs, directive)
    for suffix in ("", " · re-ask"):
        plan = await plan_task(runtime_id, spec, block, shown_directive, inputs.must_not_tools, shown_targets,
                               prior_summary, problems, suffix=suffix, evidence=evidence)
        size_limit = None if suffix else plan_rules.MAX_SUBTASKS
        problems = plan_rules.validate_plan(plan, inputs.must_not_tools, inputs.must_not_targets,
                                            max_subtasks=size_limit, workspace=deps.workspace,
                                            must_not_pairs=inputs.pairs)
        if not problems:
            return plan
        get_run_logger().warning("plan rejected: %s", "; ".join(problems))
    repaired, notes = plan_rules.drop_blocked_tools(plan, inputs.must_not_tools)
    if notes and not plan_rules.validate_plan(repaired, inputs.must_not_tools, inputs.must_not_targets,
                                              max_subtasks=None, workspace=deps.workspace,
                                              must_not_pairs=inputs.pairs):
        _note_repairs(deps, round_no, notes)
        return repaired
    raise PlanRejected("the planner broke the plan rules twice: " + "; ".join(problems or []))


def _note_repairs(deps: RunDeps, round_no: int, notes: list[str]) -> None:
    """Each deterministic plan repair in the run's log (the Prefect UI) and its decision log (``artoo log``)."""
    for note in notes:
        get_run_logger().warning("plan repaired: %s", note)
        deps.decisions.write("plan_repair", round=round_no, note=note)


async def _run_groups(runtime_id: str, deps: RunDeps, round_no: int, groups: list[list[SubTask]],
                      blocked_tools: list[str], blocked_targets: list[BlockedTarget],
                      blocked_pairs: list[tuple[str, str, str]] = ()) -> list[SubTaskOutcome]:
    """Run sequence groups in order, each group's subtasks concurrently."""
    outcomes: list[SubTaskOutcome] = []
    index = 0
    record = get_runtime(runtime_id).record
    for position, group in enumerate(groups):
        if any(o.status == "failed" for o in outcomes):
            skipped = [st for g in groups[position:] for st in g]
            outcomes.extend(_not_run(deps, st) for st in skipped)
            break
        if (position or round_no > 1) and record.confined is not None and any(
                c.check.strip() for st in group for c in st.success_criteria):  # its checks start from here
            before = await take_snapshot(deps.workspace, record.confined)
            record.snapshots.update({st.subtask_id: before for st in group})
        runs = []
        for st in group:
            index += 1
            st = st.model_copy(update={"context": plan_rules.group_context(st.context, outcomes)}) if outcomes else st
            tools = served(set(blocked_tools))
            deps.llm.send_early("R3", TOOLS_SCHEMA, executor.messages_for(st, None, str(deps.workspace),
                                                                       executor.acts_by(deps.llm), tools), tools)
            named = run_named(subtask_flow, subtask_run_name(round_no, index, st.intent))
            runs.append(named(runtime_id, st, blocked_tools, blocked_targets, list(blocked_pairs)))
        outcomes.extend(await asyncio.gather(*runs))
    return outcomes


def _not_run(deps: RunDeps, subtask: SubTask) -> SubTaskOutcome:
    """A later-group subtask skipped because an earlier group failed (unmet in D, never in P)."""
    reason = "not run: an earlier sequence group failed"
    verdicts = r4a.immediate_failure(subtask, reason, "logical")
    outcome = r4a.outcome(subtask, "failed", None, verdicts, [r4a.gap_point(1, verdicts)],
                          failure_reason=reason, failure_class="logical", kind="skipped")
    return deps.bus.publish(outcome, "R4a", "R4b", subtask.subtask_id)


def _rejected_round(deps: RunDeps, spec: TaskSpec, reason: str, failure_class: str,
                    kept: list[r4b.KeptResult] = ()) -> ReplanRequest:
    """The planner produced no valid plan: an honest failure of the round, classified by its cause
    (what earlier rounds validated stays in its merged output: achieved so far)."""
    placeholder = SubTask(subtask_id="plan", parent_task_id=spec.task_id, intent="produce a valid plan")
    verdicts = r4a.immediate_failure(placeholder, reason, failure_class)
    failed = r4a.outcome(placeholder, "failed", None, verdicts, [r4a.gap_point(1, verdicts)],
                         failure_reason=reason, failure_class=failure_class)
    manifest = DispatchManifest(task_id=spec.task_id)
    message = r4b.decide(spec.task_id, manifest, [failed], r4b.merge_outputs([], list(kept)), None, reason)
    deps.bus.publish(message, "R4b", "R7")
    return message
