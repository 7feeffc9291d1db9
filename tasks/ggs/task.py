"""The GGS as a Prefect task: one line per round, a loss-trajectory table, memory writes.

The controller (artoo.tasks.ggs.controller) decides; this wrapper makes the decision legible
in the Prefect UI (a log line with D, P, Ω, L, ∇L, directive, urgency, blocked tools and
targets; a table artifact ``ggs-<task_id>`` and a picture ``loss-<task_id>``, both updated every
round, written in the background in order and flushed before the run ends), publishes the
PlanDirective or FinalResult on the bus, and hands the Megrams to the memory store
fire-and-forget.  It also appends R5's negative feedback against each SOP the round's
calibration served and the outcome contradicted (artoo.memory.feedback), once per task.
The GGS is the only writer of memory.
"""

from __future__ import annotations

import asyncio

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from artoo.config.contracts import OutcomeSummary, ReplanRequest
from artoo.memory.feedback import contradicted
from artoo.tasks.ggs.controller import GGSController, GGSDecision, calls_spent
from artoo.tasks.ggs.picture import trajectory_markdown
from artoo.tasks.roles.runtime import Runtime, get_runtime


def artifact_key(prefix: str, task_id: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    slug = "".join(c if c.isalnum() else "-" for c in task_id.lower()).strip("-") or "task"
    return f"{prefix}-{slug}"[:100]


@task(name="R7 · GGS", task_run_name="R7 · GGS round {round_no}", cache_policy=NO_CACHE, persist_result=False)
async def ggs_task(runtime_id: str, controller: GGSController, message: OutcomeSummary | ReplanRequest,
                   elapsed_ms: float, round_no: int, paused_ms: float = 0.0, spent: float = 0.0) -> GGSDecision:
    """Evaluate one round and publish the outcome (``paused_ms``: Law-1 waits, kept out of Ω; ``spent``: the task's
    weighed LLM calls so far, which Ω counts against ``ggs.max_calls``)."""
    run = get_runtime(runtime_id)
    deps = run.deps
    logger = get_run_logger()
    params = controller.params  # recorded as the controller saw them: replay feeds the same inputs
    decision = controller.evaluate(message, elapsed_ms, paused_ms, spent)
    logger.info(decision.log_line)
    if decision.abandon_reason == "calls":  # the run's log says in so many words why it ends here
        logger.warning("%s: the task ends here", calls_spent(spent, params.max_calls))
    deps.decisions.ggs(task_id=controller.task_id, intent=controller.intent, round_no=round_no,
                       elapsed_ms=elapsed_ms, params=params, message=message, decision=decision,
                       paused_ms=paused_ms, spent=spent)
    table = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()} for row in decision.trajectory]
    picture = trajectory_markdown(controller.task_id, decision.trajectory)
    deps.writes.submit(lambda: asyncio.gather(  # off the critical path: the next round does not wait for them
        acreate_table_artifact(key=artifact_key("ggs", controller.task_id), table=table,
                               description=f"GGS loss trajectory of task `{controller.task_id}`: one row per round."),
        acreate_markdown_artifact(
            key=artifact_key("loss", controller.task_id), markdown=picture,
            description=f"GGS loss trajectory of `{controller.task_id}` as a picture: L, D, P, Ω by round."),
    ))
    for megram in decision.megrams:
        deps.bus.publish(megram, "R7", "R5")
        if deps.store is not None:
            try:
                deps.store.write(megram)
            except Exception as exc:  # fire-and-forget: memory never blocks the GGS
                logger.warning("memory write failed (kept going): %s", exc)
    _negative_feedback(run, decision, message, logger)
    if decision.directive is not None:
        deps.bus.publish(decision.directive, "R7", "R2")
    return decision


def _negative_feedback(run: Runtime, decision: GGSDecision, message: OutcomeSummary | ReplanRequest,
                       logger) -> None:
    """Append a negative-σ Megram against each served SOP the round contradicted (once per task)."""
    deps, record = run.deps, run.record
    if deps.store is None or not record.served_sops:
        return
    outcomes = message.outcomes if isinstance(message, OutcomeSummary) else [
        *message.matched_outcomes, *message.failed_outcomes]
    calls = [c for o in outcomes for c in o.calls]
    for sop, why in contradicted(decision.state, decision.abandon_reason, record.served_sops, calls):
        if sop.id in record.fed_back:
            continue
        record.fed_back.add(sop.id)
        try:
            deps.bus.publish(deps.store.record_negative_feedback(sop.id, why), "R7", "R5")
        except Exception as exc:  # fire-and-forget: memory never blocks the GGS
            logger.warning("negative feedback on rule %s failed (kept going): %s", sop.id, exc)
