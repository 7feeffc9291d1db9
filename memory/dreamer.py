"""The Dreamer: offline forgetting, trust bankruptcy and upward consolidation (spec R5).

The rules are pure functions below; ``dream`` applies them to the whole store.

* Physical forgetting — an M/K Megram whose own live attention |f|·e^(−kΔt) is below
  ``gc_threshold`` is hard-deleted.
* Trust bankruptcy — a C rule contradicted by its pair's live M/K decision loses its
  time immunity: level K, k = ``demoted_k``.  *Contradicted* is read with the rule's
  sign: a best practice (σ ≥ 0) when the decision is below 0 — the spec's literal
  rule — and a constraint (σ < 0) when the decision is above 0.  Read literally for
  constraints, every freshly distilled constraint (made because decision ≤ −3) would be
  demoted on the very next pass and re-distilled on the one after, forever.
* Upward consolidation — attention ≥ 5 and decision ≥ +3 → a Best Practice, decision
  ≤ −3 → a Constraint: a new C Megram (k = 0, σ = ±1) distilled by an injected callable
  (memory never imports the LLM layer), recording the evidence ids in ``derived_from``;
  a pair is consolidated again only when it has M/K evidence no C rule covers.
* SOPs by code — when one intent pair holds ≥ ``sop_min_successes``
  successful episodes (accept/success), or ≥ ``sop_min_verified`` verified ones (code checked
  every verifiable criterion), with the same method that no rule was distilled
  from, and no C rule of the pair prescribes that method yet, an SOP is written in code
  (``artoo.memory.sops``: no LLM, so it runs with no endpoint too): a C Megram (k = 0,
  σ = +1, state ``sop``), evidence ids in ``derived_from``.  Only for a pair whose live
  decision is positive: bankruptcy would demote it again on the next pass.  Like any C
  rule it is timeless until bankruptcy, and R5's negative feedback applies to it.  SOPs
  are written after the LLM's rules of the same pass, so an answer already paid for is
  never dropped because an SOP covered its evidence first.

One pass = one DuckDB transaction under the single-writer lock, after ingesting the
spools: a Dreamer killed mid-pass leaves the store as it was.  Distillation (an LLM call,
seconds) happens *outside* the lock, so readers are never blocked on a model: candidates
are found in a first short locked step, distilled unlocked, then re-checked inside the
pass's transaction and kept only if the pair still qualifies the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal
from uuid import uuid4

from pydantic import BaseModel, Field

from artoo.config.contracts import Megram
from artoo.config.errors import ArtooError
from artoo.config.protocol import Consolidation
from artoo.config.settings import MemoryParams
from artoo.memory import dream_ops, sops
from artoo.memory.potentials import live_attention, to_us
from artoo.memory.schema import compact, needs_compaction, tag_key
from artoo.memory.store import MemoryStore

log = logging.getLogger("artoo.memory")

ConsolidationKind = Literal["best_practice", "constraint"]
Distil = Callable[[str, str, str, list[Megram]], Consolidation]
"""(space, entity, kind, evidence Megrams) → the distilled rule."""

REPORT_ID_CAP = 1000
"""At most this many ids per list in a DreamReport; the memory_ops journal has them all."""


# ── pure rules ────────────────────────────────────────────────────────────────────


def forgets(f: float, k: float, days: float, gc_threshold: float) -> bool:
    """Physical forgetting: the Megram's own live attention fell below the threshold."""
    return live_attention(f, k, days) < gc_threshold


def bankrupt(rule_sigma: float, decision: float) -> bool:
    """Trust bankruptcy: the pair's live decision contradicts the rule's sign."""
    return decision > 0 if rule_sigma < 0 else decision < 0


def consolidation_kind(attention: float, decision: float, params: MemoryParams) -> ConsolidationKind | None:
    """Which rule a pair's potentials call for, if any."""
    if attention < params.promote_attention:
        return None
    if decision >= params.promote_decision:
        return "best_practice"
    if decision <= -params.promote_decision:
        return "constraint"
    return None


def uncovered(evidence_ids: list[str], covered_ids: set[str]) -> list[str]:
    """Evidence no existing C rule was distilled from (empty → do not consolidate again)."""
    return [i for i in evidence_ids if i not in covered_ids]


def consolidated_megram(
    space: str, entity: str, kind: ConsolidationKind, content: str, evidence_ids: list[str], at: datetime
) -> Megram:
    """The new C Megram for a distilled rule."""
    return Megram(
        id=str(uuid4()),
        level="C",
        created_at=at,
        space=space,
        entity=entity,
        content=content,
        state=kind,
        f=1.0,
        sigma=1.0 if kind == "best_practice" else -1.0,
        k=0.0,
        derived_from=list(evidence_ids),
    )


# ── the pass ──────────────────────────────────────────────────────────────────────


class DreamReport(BaseModel):
    """What one Dreamer pass did (ids capped at REPORT_ID_CAP per list)."""

    at: datetime = Field(description="The instant potentials were evaluated at.")
    ingested: int = Field(0, description="Megrams moved from spools into DuckDB first.")
    deleted: int = Field(0, description="M/K Megrams forgotten.")
    deleted_ids: list[str] = Field(default_factory=list)
    demoted: int = Field(0, description="C rules demoted to K.")
    demoted_ids: list[str] = Field(default_factory=list)
    promoted: int = Field(0, description="New C rules distilled.")
    promoted_ids: list[str] = Field(default_factory=list)
    sops: int = Field(0, description="Of the promoted, SOPs written by code from repeated successes.")
    consolidation_skipped: bool = Field(False, description="No distil callable was given.")
    consolidation_eligible: int = Field(
        0, description="Pairs qualifying with uncovered evidence when consolidation began."
    )
    consolidation_failed: list[str] = Field(
        default_factory=list, description="Pairs whose distillation failed."
    )
    compacted: bool = Field(False, description="The table was re-clustered by tag.")
    ids_truncated: bool = Field(False, description="Some id list was capped.")
    seconds: float = Field(0.0, description="Wall time of the pass.")


def _distil_all(candidates: list[dream_ops.Candidate], distil: Distil, report: DreamReport) -> list:
    drafts = []
    for c in candidates:
        try:
            answer = distil(c.space, c.entity, c.kind, c.megrams)
        except Exception as exc:  # one pair's failed distillation must not cost the pass its forgetting
            if not isinstance(exc, ArtooError | TimeoutError):
                log.warning("distillation of %s %s raised", c.space, c.entity, exc_info=True)
            report.consolidation_failed.append(f"{c.space} {c.entity}: {type(exc).__name__}: {exc}")
            continue
        if answer.kind != c.kind:
            report.consolidation_failed.append(f"{c.space} {c.entity}: asked for {c.kind}, got {answer.kind}")
            continue
        drafts.append((c, answer))
    return drafts


def _find(con, at_us: int, params: MemoryParams, load: int, only=None) -> list[dream_ops.Candidate]:
    return dream_ops.candidates(
        con,
        at_us,
        (params.promote_attention, params.promote_decision),
        lambda a, d: consolidation_kind(a, d, params),
        uncovered,
        load,
        only,
    )


def _promote(
    con, at: datetime, drafts: list, current: list[dream_ops.Candidate], report: DreamReport
) -> None:
    still = {(c.space, c.entity): c for c in current}
    for draft, answer in drafts:
        now = still.get((draft.space, draft.entity))
        if now is None or now.kind != draft.kind:
            continue  # the pair no longer qualifies that way; the next pass looks again
        megram = consolidated_megram(
            draft.space, draft.entity, draft.kind, answer.content, draft.evidence_ids, at
        )
        detail = (
            f"{draft.kind} distilled from {len(draft.evidence_ids)} megram(s); "
            f"attention={now.attention:.6g} decision={now.decision:.6g}"
        )
        dream_ops.promote(con, to_us(at), megram, tag_key(megram.space, megram.entity), detail)
        report.promoted += 1
        report.promoted_ids.append(megram.id)


def _distil_sops(con, at: datetime, params: MemoryParams, report: DreamReport, cap: int) -> None:
    """Write the SOPs repeated successes call for (code, in the pass's transaction), at most ``cap``,
    strongest pair first: each is an insert and a journal row, and the next pass writes the rest."""
    at_us = to_us(at)
    least = min(params.sop_min_successes, params.sop_min_verified)
    found = dream_ops.sop_pairs(con, at_us, sorted(sops.SUCCESS_STATES), least)
    for pair in sorted(found, key=lambda p: (-p.decision, p.space, p.entity)):
        if pair.decision <= 0:
            continue
        ruled = {m for m in map(sops.sop_method, pair.rules) if m}
        episodes = [sops.Episode(i, c) for i, c in pair.episodes]
        for draft in sops.sop_drafts(episodes, pair.covered, ruled, params.sop_min_successes,
                                     params.sop_min_verified):
            if report.sops >= cap:
                return
            megram = consolidated_megram(pair.space, pair.entity, "best_practice", draft.content,
                                         draft.evidence_ids, at).model_copy(update={"state": sops.SOP_STATE})
            detail = (f"sop distilled from {len(draft.evidence_ids)} successful episode(s) with the method "
                      f"{' → '.join(draft.method)}; decision={pair.decision:.6g}")
            dream_ops.promote(con, at_us, megram, tag_key(megram.space, megram.entity), detail)
            report.promoted += 1
            report.sops += 1
            report.promoted_ids.append(megram.id)


def dream(
    store: MemoryStore,
    at: datetime | None = None,
    distil: Distil | None = None,
    *,
    max_consolidations: int = 50,
    max_sops: int = 100,
) -> DreamReport:
    """One Dreamer pass: ingest, forget, demote, consolidate (at most ``max_consolidations`` pairs by
    ``distil``), then write the SOPs repeated successes call for (code: with or without ``distil``; at
    most ``max_sops``)."""
    started = time.monotonic()
    at = at or datetime.now(UTC)
    at_us, params = to_us(at), store.params
    report = DreamReport(at=at)
    drafts: list = []
    if distil is not None:
        with store.exclusive() as con:
            report.ingested += store.ingest_locked(con).inserted
            found = _find(con, at_us, params, load=max_consolidations)
        report.consolidation_eligible = len(found)
        found = found[:max_consolidations]
        drafts = _distil_all(found, distil, report)
    with store.exclusive() as con:
        report.ingested += store.ingest_locked(con).inserted
        con.execute("BEGIN TRANSACTION")
        try:
            report.deleted, report.deleted_ids = dream_ops.forget(
                con, at_us, params.gc_threshold, REPORT_ID_CAP
            )
            rules = dream_ops.rule_decisions(con, at_us)
            broke = [(i, d) for i, _, _, sigma, d in rules if bankrupt(sigma, d)]
            if broke:
                dream_ops.demote(con, at_us, broke, params.demoted_k)
            report.demoted, report.demoted_ids = len(broke), [i for i, _ in broke[:REPORT_ID_CAP]]
            if distil is None:
                report.consolidation_eligible = len(_find(con, at_us, params, load=0))
                report.consolidation_skipped = True
            elif drafts:
                current = _find(con, at_us, params, load=0, only=[(d.space, d.entity) for d, _ in drafts])
                _promote(con, at, drafts, current, report)
            _distil_sops(con, at, params, report, max_sops)  # after: an LLM answer already paid for is never dropped
            if needs_compaction(con):
                compact(con)
                report.compacted = True
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    report.ids_truncated = max(report.deleted, report.demoted) > REPORT_ID_CAP
    report.seconds = time.monotonic() - started
    return report
