"""The medium loop as the ``artoo-task`` flow: R1 → rounds → GGS → FinalResult.

Each round is a subflow named ``round-N · <directive>`` so the run graph reads like a
story; the GGS task between rounds logs the loss line and keeps the trajectory table.
The flow builds its own runtime (LLM client, memory store, bus, Law-1 gate) from the
settings, so the same code serves ``artoo run`` (ephemeral Prefect), a deployment run
triggered from the UI, and the tests.

Heartbeats: the top-level run keeps Prefect's flow-run heartbeat (every 180 s), so a run
whose process dies is detectable as crashed.  Its round and subtask subflows run in the
same process, so their heartbeats would say nothing the parent's does not, yet each costs a
thread and an event per subflow (and ~1 s at exit for a sync subflow, whose engine joins
the heartbeat thread).  The medium loop therefore runs under
``temporary_settings(PREFECT_FLOWS_HEARTBEAT_FREQUENCY=None)`` (the supported way: the
setting cannot be unset through the environment): every subflow started inside it sends none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact
from prefect.context import FlowRunContext
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from artoo.config.compat import named as run_named
from artoo.config.contracts import FinalResult, OutcomeSummary, ReplanRequest
from artoo.config.errors import ArtooError
from artoo.config.settings import Settings, load_settings
from artoo.flows.consensus import unsure_result, with_disk_summary
from artoo.flows.law1 import make_gate, resolve_mode
from artoo.flows.round import RoundBrief, round_flow, round_run_name, send_plan_early
from artoo.tasks.bus.events import Bus
from artoo.tasks.checks.evaluate import confined_from, take_snapshot
from artoo.tasks.checks.votes import ends_unsure
from artoo.tasks.decisions.log import DecisionLog, in_scope
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.task import artifact_key, ggs_task
from artoo.tasks.llm import OpenAICompatLLM, cost_report
from artoo.tasks.plan.ahead import take as take_ahead
from artoo.tasks.roles.meta_validator import KeptResult, keep_results
from artoo.tasks.roles.planner import evidence_block, failure_messages
from artoo.tasks.roles.prompting import RUN, run_context
from artoo.tasks.roles.runtime import RunDeps, RunRecord, Runtime, drop, register, with_bus
from artoo.tasks.roles.session import append_history, history_for
from artoo.tasks.roles.task import failure_report_task, perceive_task

DEFECTS = "Checks of the last plan that could not run (write each as a command that runs here):\n"
"""How the planner is told, on the next round, which of its checks were broken."""
READER_KEEP_S = 600.0
"""The memory reader stays open across rounds (closed with the store at the run's end, or when a writer waits)."""


class ExpectedFailureFilter(logging.Filter):
    """Prefect logs a traceback with every failed run; an ArtooError is an expected failure, not a bug.

    The one-line message stays (it names the role, endpoint and cause); the traceback goes, so
    ``artoo run`` shows a person no Python internals for an endpoint that is down or a model
    that answered garbage.  Any other exception keeps its traceback: that one is a bug.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record; drop its traceback when the exception is an ArtooError."""
        if record.exc_info and isinstance(record.exc_info[1], ArtooError):
            record.exc_info, record.exc_text = None, None
        return True


for _name in ("prefect.flow_runs", "prefect.task_runs"):
    logging.getLogger(_name).addFilter(ExpectedFailureFilter())


def task_run_name() -> str:
    """``artoo · <request>`` shortened, for the runs list."""
    request = " ".join(str(flow_run.parameters.get("request", "")).split())
    return "artoo · " + (request if len(request) <= 60 else request[:59] + "…")


@flow(name="artoo-task", flow_run_name=task_run_name, validate_parameters=True, log_prints=False,
      persist_result=False)
async def artoo_task(request: str, workspace: str | None = None) -> dict[str, Any]:
    """Run one request through the full loop; returns the FinalResult as JSON data.

    Args:
        request: What you want done, in plain words, as you would ask a colleague (for example: count
            the lines in notes.txt and write the number to count.txt).
        workspace: The folder where new files are written; leave empty for the configured workspace
            (ARTOO_WORKSPACE, default ~/artoo_workspace).
    """
    settings = load_settings()
    home = settings.home_dir
    ws = Path(workspace).expanduser() if workspace else settings.workspace_dir
    ws.mkdir(parents=True, exist_ok=True)
    shared = RUN.set(run_context(request, ws))  # every role's prompt begins with it (one cached prefix)
    runtime = _open_runtime(settings, ws, request)
    runtime_id = register(runtime)
    deps, record = runtime.deps, runtime.record  # the medium loop swaps only the bus (with_bus)
    started = time.monotonic()
    budget_s = settings.ggs.time_budget_ms / 1000
    deps.llm.deadline = lambda: started + budget_s + sum(record.law1_waits)  # the person's waits are not the agent's
    record.confined = confined_from(settings)
    record.before = await take_snapshot(ws, record.confined)  # where the plan's reference run starts
    if record.before.note:
        get_run_logger().warning("%s", record.before.note)
    own_audit = _OwnAudit() if _deployment_run() else None
    try:
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):  # subflows: no heartbeat
            history = history_for(request, home, settings.history_size)  # as R1 was sent early with
            final = await _medium_loop(runtime_id, runtime, request, history, started)
        append_history(home, request, final.summary)
        document = {"final": final.model_dump(mode="json"), "cost": cost_report(deps.llm.records),
                    "tool_seconds": round(record.tool_seconds, 3),
                    "wall_seconds": round(time.monotonic() - started, 3),
                    "law1_wait_seconds": round(sum(record.law1_waits), 3)}
        deps.decisions.write("end", **document)
        return document
    except BaseException as exc:  # a failed, crashed or cancelled run still says how it ended
        deps.decisions.write("end", error=f"{type(exc).__name__}: {exc}", cost=cost_report(deps.llm.records))
        raise
    finally:
        for snapshot in {id(s): s for s in [record.before, *record.snapshots.values()] if s is not None}.values():
            snapshot.close()
        await _flush_writes(deps)
        if own_audit is not None:
            await own_audit.finish()
        drop(runtime_id)
        RUN.reset(shared)
        await deps.llm.aclose()
        if deps.store is not None:
            deps.store.close()


async def _flush_writes(deps: RunDeps) -> None:
    """Every artifact written in the background lands before the run ends; a failed one is said, not raised."""
    await deps.writes.flush()
    if deps.writes.failures:
        get_run_logger().warning("%d artifact write(s) failed: %s", len(deps.writes.failures),
                                 "; ".join(deps.writes.failures))


def _deployment_run() -> bool:
    """Whether this run was started from a deployment (by a worker or ``artoo serve``)."""
    context = FlowRunContext.get()
    return bool(context and context.flow_run and context.flow_run.deployment_id)


class _OwnAudit:
    """A deployment run (a worker, ``artoo serve``) records its own messages into this home's audit log.

    So on a cluster each worker's ARTOO_HOME holds the hash chain of the runs it executed, without a
    shared disk; on one machine the auditor deployment skips what is already there (ids are deduplicated).
    """

    def __init__(self) -> None:
        from datetime import UTC, datetime

        from artoo.flows.auditor import PublishedTap
        from artoo.tasks.bus.events import add_tap

        self.started, self.tap = datetime.now(UTC), PublishedTap()
        add_tap(self.tap)

    async def finish(self) -> None:
        from artoo.flows.auditor import audit_own_run
        from artoo.tasks.bus.events import remove_tap

        remove_tap(self.tap)
        result = await audit_own_run(self.tap.runs, self.started)
        if not result.complete:
            get_run_logger().warning("audit log of this worker is missing messages of this run: %s",
                                     result.error or result.missing)


def _open_runtime(settings: Settings, workspace: Path, request: str) -> Runtime:
    logger = get_run_logger()
    decisions = DecisionLog(settings.home_dir, str(flow_run.id), settings, request)
    store = None
    try:
        from artoo.memory.backends import open_store

        store = open_store(settings.home_dir, settings.memory, reader_idle_s=READER_KEEP_S)
    except Exception as exc:  # memory is an aid, never a reason not to work
        logger.warning("memory store unavailable, planning without it: %s", exc)
    record = RunRecord()  # the gate appends each Law-1 answer and wait to the record's lists
    mode = resolve_mode(settings)
    llm = OpenAICompatLLM(settings, max_retries=settings.llm_max_retries)
    llm.observer = decisions.llm_call
    gate = make_gate(settings, mode, record.law1_events, record.law1_waits, top_run_id=flow_run.id)
    deps = RunDeps(settings=settings, llm=llm, store=store, workspace=workspace, gate=gate, decisions=decisions,
                   bus=Bus("pending", run_id=flow_run.id, sink=decisions.bus_message))  # R1 names the task
    logger.info("workspace %s, Law-1 confirmations: %s", workspace, mode)
    return Runtime(deps, record)


async def _medium_loop(runtime_id: str, run: Runtime, request: str, history: list[dict],
                       started: float) -> FinalResult:
    logger = get_run_logger()
    spec = await perceive_task(runtime_id, request, history)
    spec = spec.model_copy(update={"raw_input": request})
    was = run.deps  # its bus published nothing yet, under "pending": R1 has named the task now
    run = with_bus(runtime_id, Bus(spec.task_id, run_id=was.bus.run_id, sink=was.decisions.bus_message))
    deps, record = run.deps, run.record
    deps.decisions.task(spec.task_id, spec.intent)
    deps.bus.publish(spec, "R1", "R2")
    controller = GGSController(spec.task_id, spec.intent, deps.settings.ggs)
    directive, prior_summary, evidence, round_no = None, "", "", 1
    kept: list[KeptResult] = []  # what earlier rounds validated: R4b judges it with the redo, the user gets it
    retry = deps.settings.ablation.strategy == "retry"  # the ablation: same stopping rule, no directed correction
    while True:
        brief = RoundBrief(round_no=round_no, directive=directive, spec=spec, prior_summary=prior_summary,
                           evidence=evidence, kept=tuple(kept))
        ahead = await asyncio.to_thread(take_ahead, request, spec) if round_no == 1 else None
        send_plan_early(run, brief, ahead)  # R2 thinks while the round's subflow is made
        named = run_named(round_flow, round_run_name(round_no, directive))
        with in_scope(round=round_no):
            message = await named(runtime_id, brief)
            elapsed_ms = (time.monotonic() - started) * 1000
            paused_ms = sum(record.law1_waits) * 1000  # the person's time answering Law 1: not the agent's, not in Ω
            if paused_ms:
                logger.info("Ω excludes %.1f s spent waiting for Law-1 answers", paused_ms / 1000)
            decision = await ggs_task(runtime_id, controller, message, elapsed_ms, round_no, paused_ms,
                                      deps.llm.spent)  # Ω counts the calls spent: a spent budget ends the task
        ballot = record.ballot
        if ends_unsure(ballot.decision if ballot is not None else None,
                       decision.final.directive if decision.final is not None else None):
            unsure = decision.final or FinalResult(task_id=spec.task_id, summary="", loss=decision.loss,
                                                   grad_l=decision.grad_l, replans=round_no - 1, directive="abandon")
            final = unsure_result(unsure, deps.workspace, record.before.path, ballot)
            break
        if decision.final is not None:
            final = decision.final
            break
        directive = None if retry else decision.directive
        prior_summary, kept, evidence = ("", [], "") if retry else _carried(message, kept, round_no)
        if record.check_defects:  # a plan defect is the planner's to mend, whatever the strategy
            defects = DEFECTS + "\n".join(f"- {d}" for d in record.check_defects)
            evidence = "\n\n".join(filter(None, [evidence, defects]))
            record.check_defects.clear()
        round_no += 1
    if final.directive != "unsure":  # what the person is told about the folder is code's reading of it
        before = record.before.path if record.before is not None else None
        final = with_disk_summary(final, deps.workspace, before, record.ballot)
    if final.directive == "abandon":  # spec v0.9: one R2 call reports what was achieved and what to try
        deps.llm.send_early("R2", "FailureReport", failure_messages(spec, final, decision.trajectory))
        final = await failure_report_task(runtime_id, spec, final, decision.trajectory)
    final = _with_law1(final, record.law1_events)
    deps.bus.publish(final, "R7", "user")
    logger.info("final: %s (%d replans) — %s", final.directive, final.replans, final.summary)
    markdown = final_markdown(final, deps.llm.records)
    deps.writes.submit(lambda: acreate_markdown_artifact(key=artifact_key("final", spec.task_id), markdown=markdown,
                                                         description=f"FinalResult of `{spec.task_id}`"))
    return final


def _carried(message: OutcomeSummary | ReplanRequest, kept: list[KeptResult],
             round_no: int) -> tuple[str, list[KeptResult], str]:
    """What the next round takes from R4b's verdict on this one: the gap, the results kept, the evidence."""
    match message:
        case ReplanRequest(gap_summary=gap, matched_outcomes=matched, failed_outcomes=failed):
            pass
        case OutcomeSummary():  # accepted, yet the GGS asked for another round: nothing failed to show
            gap, matched, failed = "", [], []
        case _:
            raise TypeError(f"R4b answers an OutcomeSummary or a ReplanRequest, not {type(message).__name__}")
    kept = keep_results(kept, round_no, matched)
    return gap, kept, evidence_block(failed, [k.outcome for k in kept])


def _with_law1(final: FinalResult, decisions: list[str]) -> FinalResult:
    denied = list(dict.fromkeys(d for d in decisions if d.startswith("denied")))  # gate and fast loop both record
    if not denied:
        return final
    note = " [LAW1] " + "; ".join(denied) + " (an irreversible action was not confirmed, so it did not run)."
    return final.model_copy(update={"summary": final.summary + note})


def final_markdown(final: FinalResult, records: list | None = None) -> str:
    """The FinalResult as the markdown artifact a person reads first, with the per-role LLM cost."""
    label = {"accept": "✅ accepted", "success": "✅ success (within threshold)", "abandon": "⛔ abandoned",
             "unsure": "❔ unsure", "unverified": "⚠️ done, unverified"}
    lines = [f"# {label.get(final.directive, final.directive)}: `{final.task_id}`", "", final.summary, "",
             "| D | P | Ω | L | ∇L | replans |", "|---|---|---|---|---|---|",
             f"| {final.loss.D:.3f} | {final.loss.P:.3f} | {final.loss.Omega:.3f} | {final.loss.L:.3f} "
             f"| {final.grad_l:+.3f} | {final.replans} |"]
    if final.next_steps:
        lines += ["", "## What to try next", *[f"- {step}" for step in final.next_steps]]
    lines += ["", "## Output", "```json", _json(final.output)[:6000], "```"]
    if records is not None:
        lines += ["", *cost_markdown(records)]
    return "\n".join(lines)


def cost_markdown(records: list) -> list[str]:
    """The cost by role as a markdown table; the abandon report's own call is named on its own line."""
    lines = ["## Cost by role", "", "| role | LLM calls | prompt tokens | completion tokens | LLM seconds |",
             "|---|---|---|---|---|"]
    for role, row in sorted(cost_report(records).items()):
        lines.append(f"| {role} | {row['calls']} | {row['prompt_tokens']} | {row['completion_tokens']} "
                     f"| {row['llm_seconds']:.2f} |")
    report = [r for r in records if r.schema == "FailureReport"]
    if report:
        lines += ["", f"Failure report (R2, on abandon): {len(report)} call, "
                      f"{sum(r.prompt_tokens + r.completion_tokens for r in report)} tokens, "
                      f"{sum(r.latency_s for r in report):.2f} s (included above)."]
    return lines


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2, default=str)
