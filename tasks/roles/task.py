"""Thin Prefect task wrappers around the roles: names, logs and bus publishing only.

Each wrapper looks up the live runtime, calls one role function, publishes the message
that role sends, and returns it.  No decision is made here: the logic lives in the
pure role modules and the GGS, so it can be tested without Prefect.  Task names are a
product surface: they are what a person reads in the run graph.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from artoo.config.contracts import (
    CorrectionSignal,
    Criterion,
    DispatchManifest,
    ExecutionResult,
    FinalResult,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTask,
    SubTaskOutcome,
    TaskSpec,
)
from artoo.config.errors import ArtooError
from artoo.config.protocol import AgentVerdict, PlanAnswer, TaskVerdict
from artoo.tasks.checks.decide import CheckOutcome
from artoo.tasks.checks.evaluate import check_criteria
from artoo.tasks.roles import agent_validator, executor, grounding, meta_validator, perceiver, planner, voter
from artoo.tasks.roles.prompting import in_shared
from artoo.tasks.roles.runtime import RunDeps, Runtime, get_runtime
from artoo.tasks.tools.found import glance, named_files_now

ROLE_TASK = {"cache_policy": NO_CACHE, "retries": 0, "persist_result": False}


def asking(runtime_id: str) -> Runtime:
    """The run's runtime, as a role is about to ask the model: the background writes go out now, while the run
    waits for the LLM anyway (artoo.tasks.roles.runtime.OrderedWrites)."""
    run = get_runtime(runtime_id)
    run.deps.writes.start()
    return run


@task(name="R1 · perceive", **ROLE_TASK)
async def perceive_task(runtime_id: str, raw_input: str, history: list[dict]) -> TaskSpec:
    """R1: turn the request into a TaskSpec and send it to R2."""
    deps = asking(runtime_id).deps
    repaired: list[str] = []
    spec = await perceiver.perceive(deps.llm, raw_input, history, repaired)
    logger = get_run_logger()
    for note in repaired:
        logger.info("R1 answer repaired: %s", note)
        deps.decisions.write("spec_repair", note=note)
    logger.info("task %s: %s", spec.task_id, spec.intent)
    return spec


@task(name="R2 · plan", task_run_name="R2 · plan{suffix}", **ROLE_TASK)
async def plan_task(runtime_id: str, spec: TaskSpec, calibration_block: str, directive: PlanDirective | None,
                    must_not_tools: set[str], must_not_targets: set[str], prior_summary: str,
                    problems: list[str] | None, suffix: str = "", evidence: str = "") -> PlanAnswer:
    """R2: ask the planner for a plan under the MUST NOT set (suffix names a re-ask)."""
    deps = asking(runtime_id).deps
    answer = await planner.plan(deps.llm, spec, calibration_block, directive, must_not_tools, must_not_targets,
                                prior_summary, problems, evidence, str(deps.workspace))
    get_run_logger().info("plan: %d subtasks, %d task criteria", len(answer.subtasks), len(answer.task_criteria))
    return answer


@task(name="votes", task_run_name="votes · draw {count}", **ROLE_TASK)
async def votes_task(runtime_id: str, request: str, folder: str, count: int, first: bool,
                     start: int = 0) -> list[str]:
    """Draw ``count`` votes on the whole request, each from the user's words and a glance at the folder as it was,
    the framings taken in turn from the ``start``-th; the commands that came (a refused or failed call gives none:
    votes are evidence, not a reason to fail)."""
    deps = asking(runtime_id).deps
    checks, logger = deps.settings.checks, get_run_logger()
    seen = "" if in_shared(str(deps.workspace)) else glance(folder)  # the run's shared text shows it already
    temperatures = [checks.first_vote_temperature if first and i == 0 else checks.vote_temperature
                    for i in range(count)]
    framings = [checks.vote_framings[(start + i) % len(checks.vote_framings)] for i in range(count)]
    answers = await asyncio.gather(*(voter.vote(deps.llm, request, seen, t, f)
                                     for t, f in zip(temperatures, framings, strict=True)), return_exceptions=True)
    commands = []
    for answer in answers:
        if isinstance(answer, ArtooError):
            logger.warning("a vote was not drawn: %s", answer)
        elif isinstance(answer, BaseException):
            raise answer
        elif answer:
            commands.append(answer)
    logger.info("%d vote(s) drawn: %s", len(commands), " · ".join(f"`{c}`" for c in commands))
    return commands


@task(name="execute", task_run_name="execute · attempt {attempt}", **ROLE_TASK)
async def execute_task(runtime_id: str, subtask: SubTask, toolbox: Any, correction: CorrectionSignal | None,
                       attempt: int, settled: Callable[[], Awaitable[bool]] | None = None,
                       tried: frozenset[tuple[str, str]] = frozenset()) -> ExecutionResult:
    """R3: one execution attempt; the result goes to R4a."""
    run = asking(runtime_id)
    deps = run.deps
    started = time.perf_counter()
    denied_before = len(toolbox.law1_denials)
    result = await executor.execute(deps.llm, subtask, toolbox, correction, deps.settings.tools.max_tool_calls,
                                    settled, tried)
    checked = any(c.check.strip() for c in subtask.success_criteria)  # then R4a's prompt waits on the checks
    if len(toolbox.law1_denials) == denied_before and not checked:  # R4a judges it next (a denial ends the loop)
        deps.llm.send_early("R4a", "AgentVerdict",
                            agent_validator.messages_for(subtask, result, _files_now(deps, subtask)))
    run.record.tool_seconds += max(0.0, time.perf_counter() - started)
    logger = get_run_logger()
    logger.info("attempt %d: %s, %d tool calls", attempt, result.status, len(result.tool_calls))
    for entry in result.tool_calls:
        logger.info("  %s", entry)
    deps.bus.publish(result, "R3", "R4a", subtask.subtask_id)
    return result


def _files_now(deps: RunDeps, subtask: SubTask) -> list[str]:
    """The files the subtask's criteria name, as R4a is shown them (read again for the real request, so
    the early one is identical exactly when nothing changed in between)."""
    return named_files_now(agent_validator.named_files(subtask), deps.workspace) if deps.workspace else []


@task(name="validate", task_run_name="validate · attempt {attempt}{suffix}", **ROLE_TASK)
async def validate_task(runtime_id: str, subtask: SubTask, result: ExecutionResult, attempt: int,
                        found: list[str] | None = None, objection: str | None = None,
                        suffix: str = "", notes: dict[str, str] | None = None) -> AgentVerdict:
    """R4a: score one attempt's evidence against the subtask's criteria; ``found``: the named files as the
    fast loop read them after the attempt (read here when not given); ``objection``: code's reasons against
    R4a's earlier answer, asked once more (``suffix`` names that run in the UI)."""
    deps = asking(runtime_id).deps
    found = _files_now(deps, subtask) if found is None else found
    answer = await agent_validator.judge(deps.llm, subtask, result, found, objection, notes)
    deps.decisions.verdict("R4a", answer, subtask_id=subtask.subtask_id, attempt=attempt,
                           **({"rejudged": True} if objection else {}))
    logger = get_run_logger()
    for v in answer.verdicts:
        logger.info("  %s %s%s", "PASS" if v.verdict == "pass" else "FAIL", v.criterion,
                    f" ({v.failure_class})" if v.failure_class else "")
    return answer


@task(name="R4b · meta-validate", task_run_name="R4b · meta-validate{suffix}", **ROLE_TASK)
async def meta_validate_task(runtime_id: str, manifest: DispatchManifest, outcomes: list[SubTaskOutcome],
                             kept: list[meta_validator.KeptResult] | None = None,
                             found: list[str] | None = None, objection: str | None = None,
                             suffix: str = "", notes: dict[str, str] | None = None) -> TaskVerdict:
    """R4b: judge the task criteria against the recorded evidence (only when every subtask matched);
    ``kept``: the results earlier rounds validated, shown in their own section; ``found``: the files the
    task criteria name, as code read them after the round; ``objection``: code's reasons against R4b's
    earlier answer, asked once more."""
    deps = asking(runtime_id).deps
    answer = await meta_validator.judge_task(deps.llm, manifest, outcomes, kept or [], found or [],
                                             objection, notes)
    deps.decisions.verdict("R4b", answer, **({"rejudged": True} if objection else {}))
    logger = get_run_logger()
    for v in answer.verdicts:
        logger.info("  %s %s", "PASS" if v.verdict == "pass" else "FAIL", v.criterion)
    return answer


@task(name="R2 · failure report", **ROLE_TASK)
async def failure_report_task(runtime_id: str, spec: TaskSpec, final: FinalResult,
                              trajectory: list[dict]) -> FinalResult:
    """R2 on abandon (spec v0.9): one LLM call for what was achieved, what blocked it, what to try.

    The report is an aid: when the call fails the GGS's own account stands, with a warning.
    """
    deps = asking(runtime_id).deps
    logger = get_run_logger()
    try:
        report = await planner.failure_report(deps.llm, spec, final, trajectory)
    except ArtooError as exc:
        logger.warning("no failure report (the GGS's own summary stands): %s", exc)
        return final
    logger.info("failure report: achieved %s; blocked by %s", report.achieved, report.blocked_by)
    return planner.with_report(final, report)


@task(name="checks", task_run_name="checks · {label}", **ROLE_TASK)
async def checks_task(runtime_id: str, criteria: list[Criterion], label: str, before_of: str = "",
                      printed: list[str] | None = None) -> list[CheckOutcome]:
    """Run the checks of ``criteria`` (a step's, after an attempt; the task's, after a round) and log each outcome.

    ``before_of``: the subtask whose group's copy of the folder its checks start from ("" for the task's)."""
    run = get_runtime(runtime_id)
    record, deps = run.record, run.deps
    if record.confined is None or record.before is None:
        return []
    before = record.snapshots.get(before_of, record.before)
    outcomes = await check_criteria(criteria, deps.workspace, before, record.confined, printed or [],
                                    task_before=record.before, ballot=record.ballot)
    logger = get_run_logger()
    for outcome in outcomes:
        deps.decisions.write("check", label=label, **outcome.model_dump(mode="json", exclude={"comparison"}))
        if outcome.status == "broken":
            defect = f"the check of {outcome.criterion!r} could not run: `{outcome.command}`: {outcome.reason}"
            logger.warning("plan defect: %s (the criterion is judged by the model instead)", defect)
            if defect not in record.check_defects:
                record.check_defects.append(defect)
        else:
            logger.info("%s", outcome.line())
    return outcomes


REJUDGED = " · re-asked"
"""The suffix of a validator's task run asked once more after code turned its passes (the UI names it)."""


async def grounded_answer(deps: RunDeps, role: str, answer: Any, ground: Callable[[Any], tuple[list, list[str]]],
                          reask: Callable[[str], Awaitable[Any]], found: list[str], **where: Any) -> tuple[Any, list]:
    """A validator's answer and its verdicts after code's grounding, for R4a and R4b alike: a pass code turned is
    logged beside the answer, and the validator is asked once more with code's reasons (``llm.rejudge_ungrounded``,
    ``reask``); that answer, grounded the same way, is final.  ``ground``: answer → (verdicts, criteria turned)."""
    verdicts, turned = ground(answer)
    note_grounded(deps, role, verdicts, turned, **where)
    if turned and deps.settings.llm.rejudge_ungrounded:
        answer = await reask(grounding.objection(verdicts, turned, found))
        verdicts, turned = ground(answer)
        note_grounded(deps, role, verdicts, turned, rejudged=True, **where)
    return answer, verdicts


def note_grounded(deps: RunDeps, role: str, verdicts: list, turned: list[str], **where: Any) -> None:
    """Code's overrule of a validator's passes, beside that validator's own answer: one ``grounded`` decision
    record (``artoo log`` shows it where the answer is) and one warning per turned pass in the run's log."""
    if not turned:
        return
    deps.decisions.write("grounded", role=role, verdicts=[
        v.model_dump(mode="json") for v in verdicts if v.criterion in turned], **where)
    logger = get_run_logger()
    for v in verdicts:
        if v.criterion in turned:
            logger.warning("%s's pass on %s failed by code (Law 0): %s", role, v.criterion, v.evidence)


def publish_r4b(runtime_id: str, message: OutcomeSummary | ReplanRequest) -> None:
    """R4b's message always goes to the GGS (R7), never to R2."""
    get_runtime(runtime_id).deps.bus.publish(message, "R4b", "R7")
