"""The Dreamer (R5's offline engine) as the ``dreamer`` flow: one pass, then a report a person reads.

Why a flow: the spec runs the Dreamer "on a 5-minute timer, never blocking the operational
path".  As a Prefect deployment on an interval schedule with concurrency limit 1 the timer
is visible (the UI shows the next run), a pass that crashes is recorded, and two passes
never overlap.  The pass itself is ``artoo.memory.dreamer.dream``: ingest the spools, forget,
demote, consolidate.  Consolidation asks the brain tier for one rule per qualifying
(space, entity) pair, through the same LLM layer as every role (role ``dreamer``, schema
``Consolidation``); with no endpoint configured the downward flow still runs and the
report says consolidation was skipped.  SOPs from repeated successes are written by code
(``artoo.memory.sops``), endpoint or not, and counted on their own line.

``dream`` is synchronous (DuckDB under a file lock) and calls ``distil`` synchronously, so
the pass runs on a worker thread and each distillation is handed back to the flow's event
loop, where the async LLM client lives.  Every pass publishes the markdown artifact
``dreamer-report`` (deleted, demoted, promoted counts).

Heartbeats stay on: this is a top-level deployment run, and a pass that dies must be
detectable as crashed (it has no subflows, so there is nothing to save per run).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact
from prefect.logging import get_run_logger

from artoo.config.contracts import Megram
from artoo.config.protocol import Consolidation
from artoo.config.settings import Settings, load_settings
from artoo.memory.dreamer import Distil, DreamReport, dream
from artoo.tasks.roles.prompting import fence_untrusted, system, user

REPORT_ARTIFACT_KEY = "dreamer-report"
DREAMER_LIMIT = "artoo-dreamer"
"""Global concurrency limit (1 slot) every Dreamer pass holds: one pass at a time across the cluster."""
DREAMER_LEASE_S = 300.0
"""Lease of the slot, renewed while the pass runs; a worker that dies frees it after this long."""
EVIDENCE_LINES = 20
"""At most this many evidence Megrams reach the distillation prompt (strongest first)."""

ROLE = """Role: the Dreamer, R5's offline consolidation engine. Many past experiences of one
(space, entity) pair point the same way. Distil them into ONE rule the planner can follow next time.
- kind: exactly the kind you are asked for ("best_practice" when the experiences were good,
  "constraint" when they were bad).
- content: the rule in one or two plain sentences, naming the tool or target it is about. State only
  what the experiences show; do not invent steps that never happened."""


def consolidation_messages(space: str, entity: str, kind: str, evidence: list[Megram]) -> list[dict]:
    """The distillation prompt: the role, then the pair and its evidence (fenced, strongest first)."""
    strongest = sorted(evidence, key=lambda m: abs(m.f), reverse=True)[:EVIDENCE_LINES]
    lines = [f"- {m.created_at:%Y-%m-%d %H:%M} state={m.state or '?'} f={m.f:.2f} σ={m.sigma:+.1f}: {m.content}"
             for m in strongest]
    more = len(evidence) - len(strongest)
    if more > 0:
        lines.append(f"(and {more} weaker experience(s) of the same pair)")
    wanted = "best_practice" if kind == "best_practice" else "constraint"
    body = (f"Pair: space={space!r} entity={entity!r}.\nDistil a {wanted}.\n\n"
            + fence_untrusted("past experiences", "\n".join(lines) or "(no text recorded)"))
    return [system(ROLE, "Consolidation"), user(body)]


def llm_distil(ask: Callable[[list[dict]], Awaitable[Consolidation]], loop: asyncio.AbstractEventLoop,
               timeout_s: float) -> Distil:
    """A synchronous ``Distil`` for ``dream`` (run on a worker thread) that asks on ``loop``."""

    def distil(space: str, entity: str, kind: str, evidence: list[Megram]) -> Consolidation:
        future = asyncio.run_coroutine_threadsafe(ask(consolidation_messages(space, entity, kind, evidence)), loop)
        return future.result(timeout=timeout_s)

    return distil


def has_brain(settings: Settings) -> bool:
    """Whether the brain tier has an endpoint (base URL and model) to distil with."""
    tier = settings.tier("brain")
    return bool(tier.base_url and tier.model)


def report_markdown(report: DreamReport) -> str:
    """The Dreamer report artifact: what one pass did, counts first."""
    consolidation = ("skipped (no LLM endpoint configured)" if report.consolidation_skipped
                     else f"{report.consolidation_eligible} pair(s) eligible")
    lines = [f"# Dreamer pass at {report.at:%Y-%m-%d %H:%M:%S} UTC", "",
             "| deleted | demoted | promoted | ingested | seconds |", "|---|---|---|---|---|",
             f"| {report.deleted} | {report.demoted} | {report.promoted} | {report.ingested} | {report.seconds:.2f} |",
             "", f"Consolidation: {consolidation}.",
             f"SOPs written by code from repeated successes (no LLM): {report.sops}."]
    if report.consolidation_failed:
        lines += ["", "## Distillations that failed", *[f"- {line}" for line in report.consolidation_failed]]
    for title, ids in (("Forgotten (M/K)", report.deleted_ids), ("Demoted C → K", report.demoted_ids),
                       ("New C rules", report.promoted_ids)):
        if ids:
            shown = ", ".join(f"`{i}`" for i in ids[:20])
            lines += ["", f"## {title}", shown + (f" … and {len(ids) - 20} more" if len(ids) > 20 else "")]
    if report.compacted:
        lines += ["", "The store was re-clustered by tag."]
    return "\n".join(lines)


@asynccontextmanager
async def one_pass_at_a_time() -> AsyncIterator[None]:
    """Hold the cluster-wide ``artoo-dreamer`` global concurrency limit (1 slot) for one pass.

    The deployment's own limit stops two *scheduled* runs overlapping; this one also covers a
    manual run of the flow, on any worker, against the same Prefect server.  The limit is
    created (or reset to 1) here, so no worker needs setting up beforehand.
    """
    from prefect.client.orchestration import get_client
    from prefect.concurrency.asyncio import concurrency
    from prefect.exceptions import ObjectAlreadyExists

    # another worker may create it between the upsert's read and its write: then it exists, which is all we need
    async with get_client() as client:
        with contextlib.suppress(ObjectAlreadyExists):
            await client.upsert_global_concurrency_limit_by_name(DREAMER_LIMIT, 1)
    async with concurrency(DREAMER_LIMIT, occupy=1, strict=True, lease_duration=DREAMER_LEASE_S):
        yield


@flow(name="dreamer", log_prints=False, persist_result=False)
async def dreamer(at: datetime | None = None) -> dict[str, Any]:
    """One Dreamer pass over the memory store (ingest, forget, demote, consolidate) and its report."""
    from artoo.memory.backends import open_store
    from artoo.tasks.llm import OpenAICompatLLM

    logger = get_run_logger()
    settings = load_settings()
    llm = OpenAICompatLLM(settings, max_retries=settings.llm_max_retries) if has_brain(settings) else None
    if llm is None:
        logger.warning("no LLM endpoint configured for the brain tier: forgetting and demotion only")
    store = open_store(settings.home_dir, settings.memory)
    try:
        distil = None
        if llm is not None:
            async def ask(messages: list[dict]) -> Consolidation:
                return await llm.structured("dreamer", "Consolidation", messages)

            # a whole distillation (answer, repair, retries) at the brain tier's pace: a slow call is not a stuck one
            distil = llm_distil(ask, asyncio.get_running_loop(), timeout_s=settings.call_bound_s("brain"))
        async with one_pass_at_a_time():
            report = await asyncio.to_thread(dream, store, at, distil)
    finally:
        store.close()
        if llm is not None:
            await llm.aclose()
    logger.info("dreamer: ingested %d, deleted %d, demoted %d, promoted %d (%d failed) in %.2f s",
                report.ingested, report.deleted, report.demoted, report.promoted,
                len(report.consolidation_failed), report.seconds)
    await acreate_markdown_artifact(key=REPORT_ARTIFACT_KEY, markdown=report_markdown(report),
                                    description="What the last Dreamer pass forgot, demoted and promoted.")
    return report.model_dump(mode="json")
