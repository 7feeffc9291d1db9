"""The Dreamer's set-at-a-time SQL: forgetting, trust bankruptcy, consolidation candidates.

At 10⁷ Megrams a pass must take seconds, so the rules run as whole-table SQL over the
same kernel as query_mk (the same Δt in integer microseconds, clamped at 0).  Where a
rule needs judgement per row (bankruptcy, consolidation kind, new evidence) SQL narrows
the rows and the pure functions in artoo.memory.dreamer decide.  Every mutation writes its
journal row in the same transaction (the caller's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC

import duckdb

from artoo.config.contracts import Megram
from artoo.memory.queries import STORED_REF, WEIGHT
from artoo.memory.schema import tag_key
from artoo.memory.tags import EPISODE_TRIED

_W = WEIGHT.format(ref=STORED_REF)
_FORGET_WHERE = f"level IN ('M', 'K') AND abs(f) * {_W} < $gc"


def forget(con: duckdb.DuckDBPyConnection, at_us: int, gc: float, cap: int) -> tuple[int, list[str]]:
    """Journal then hard-delete M/K Megrams whose own live attention is below ``gc``."""
    params = {"at": at_us, "gc": gc}
    con.execute(
        f"""INSERT INTO memory_ops
        SELECT make_timestamp($at), 'forget', id, space, entity,
               printf('attention=%.6g < %.6g', abs(f) * {_W}, $gc)
        FROM megrams WHERE {_FORGET_WHERE}""",
        params,
    )
    ids = [
        r[0]
        for r in con.execute(f"SELECT id FROM megrams WHERE {_FORGET_WHERE} LIMIT {cap}", params).fetchall()
    ]
    count = con.execute(f"DELETE FROM megrams WHERE {_FORGET_WHERE}", params).fetchone()[0]
    return count, ids


def rule_decisions(con: duckdb.DuckDBPyConnection, at_us: int) -> list[tuple[str, str, str, float, float]]:
    """(id, space, entity, σ, live M/K decision of its pair) for every C Megram."""
    return con.execute(
        f"""WITH rules AS (SELECT id, tag, space, entity, sigma FROM megrams WHERE level = 'C'),
        dec AS (
            SELECT tag, space, entity, sum(sigma * f * w) AS decision
            FROM (SELECT tag, space, entity, sigma, f, {_W} AS w FROM megrams
                  WHERE level IN ('M', 'K') AND tag IN (SELECT tag FROM rules))
            GROUP BY tag, space, entity)
        SELECT r.id, r.space, r.entity, r.sigma, coalesce(d.decision, 0.0)
        FROM rules r LEFT JOIN dec d ON d.tag = r.tag AND d.space = r.space AND d.entity = r.entity
        ORDER BY r.id""",
        {"at": at_us},
    ).fetchall()


def demote(con: duckdb.DuckDBPyConnection, at_us: int, bankrupt: list[tuple[str, float]], k: float) -> None:
    """C → K with decay ``k`` for each (id, decision), journalled."""
    ids = [i for i, _ in bankrupt]
    decisions = [d for _, d in bankrupt]
    con.execute(
        """INSERT INTO memory_ops
        SELECT make_timestamp($at), 'demote', m.id, m.space, m.entity,
               printf('decision=%.6g contradicts sigma=%g; C->K, k 0->%g', b.decision, m.sigma, $k)
        FROM megrams m JOIN (SELECT unnest($ids::VARCHAR[]) AS id, unnest($dec::DOUBLE[]) AS decision) b
        ON m.id = b.id WHERE m.level = 'C'""",
        {"at": at_us, "ids": ids, "dec": decisions, "k": k},
    )
    con.execute(
        "UPDATE megrams SET level = 'K', k = $k WHERE level = 'C' AND list_contains($ids::VARCHAR[], id)",
        {"ids": ids, "k": k},
    )


@dataclass
class Candidate:
    """A tag pair whose potentials reach a consolidation threshold and that has new evidence."""

    space: str
    entity: str
    kind: str
    attention: float
    decision: float
    evidence_ids: list[str]
    megrams: list[Megram] = field(default_factory=list)


_CANDIDATES = f"""
WITH over AS (
    SELECT tag, space, entity, sum(abs(f) * w) AS attention, sum(sigma * f * w) AS decision
    FROM (SELECT tag, space, entity, f, sigma, {_W} AS w FROM megrams
          WHERE level IN ('M', 'K') AND {{only}})
    GROUP BY tag, space, entity
    HAVING attention >= $pa AND (decision >= $pd OR decision <= -$pd)),
ruled AS (
    SELECT DISTINCT tag, space, entity FROM megrams WHERE level = 'C' AND tag IN (SELECT tag FROM over)),
covered AS (
    SELECT DISTINCT tag, space, entity, unnest(derived_from) AS id
    FROM megrams WHERE level = 'C' AND tag IN (SELECT tag FROM over)),
fresh_ruled AS (
    SELECT DISTINCT tag, space, entity FROM (
        SELECT m.tag, m.space, m.entity, m.id FROM megrams m JOIN ruled USING (tag, space, entity)
        WHERE m.level IN ('M', 'K')) ANTI JOIN covered USING (tag, space, entity, id))
SELECT space, entity, attention, decision FROM (
    SELECT * FROM over ANTI JOIN ruled USING (tag, space, entity)
    UNION ALL
    SELECT * FROM over SEMI JOIN fresh_ruled USING (tag, space, entity))
ORDER BY abs(decision) DESC, space, entity
"""
"""Pairs over the thresholds with M/K evidence that no C rule of the pair was distilled from
(a pair without any C rule needs no id comparison, which keeps this one pass at scale)."""

_EVIDENCE = """
SELECT level, id, created_at, last_recalled_at, content, state, f, sigma, k, derived_from
FROM megrams WHERE tag = $tag AND space = $space AND entity = $entity AND level IN ('M', 'K', 'C')
ORDER BY created_at, id
"""


def candidates(
    con: duckdb.DuckDBPyConnection,
    at_us: int,
    thresholds: tuple[float, float],
    kind_of: Callable[[float, float], str | None],
    uncovered: Callable[[list[str], set[str]], list[str]],
    load: int,
    only: list[tuple[str, str]] | None = None,
) -> list[Candidate]:
    """Pairs due for consolidation (all, or ``only`` these), strongest first; the first ``load``
    come with their evidence."""
    params = {"at": at_us, "pa": thresholds[0], "pd": thresholds[1]}
    where = "TRUE"
    if only is not None:
        params["only"] = sorted({tag_key(space, entity) for space, entity in only})
        where = "tag IN (SELECT unnest($only::BIGINT[]))"
    rows = con.execute(_CANDIDATES.format(only=where), params).fetchall()
    found = []
    for space, entity, attention, decision in rows:
        kind = kind_of(attention, decision)
        if kind is None:
            continue
        candidate = Candidate(space, entity, kind, attention, decision, [])
        if len(found) < load and not _load_evidence(con, candidate, uncovered):
            continue
        found.append(candidate)
    return found


def _load_evidence(con: duckdb.DuckDBPyConnection, c: Candidate, uncovered: Callable) -> bool:
    """Fill the candidate's evidence; False when the pure rule finds nothing uncovered."""
    pair = {"tag": tag_key(c.space, c.entity), "space": c.space, "entity": c.entity}
    covered: set[str] = set()
    rows = []
    for row in con.execute(_EVIDENCE, pair).fetchall():
        if row[0] == "C":
            covered.update(row[-1])
        else:
            rows.append(row)
    c.evidence_ids = [row[1] for row in rows]
    c.megrams = [_megram((c.space, c.entity), row) for row in rows]
    return bool(uncovered(c.evidence_ids, covered))


def _megram(pair: tuple[str, str], row: tuple) -> Megram:
    level, megram_id, created, recalled, content, state, f, sigma, k, derived = row
    return Megram(
        id=megram_id,
        level=level,
        created_at=created.replace(tzinfo=UTC),
        last_recalled_at=None if recalled is None else recalled.replace(tzinfo=UTC),
        space=pair[0],
        entity=pair[1],
        content=content,
        state=state,
        f=f,
        sigma=sigma,
        k=k,
        derived_from=list(derived),
    )


def promote(con: duckdb.DuckDBPyConnection, at_us: int, megram: Megram, tag: int, detail: str) -> None:
    """Insert a consolidated C Megram and journal it."""
    con.execute(
        """INSERT INTO megrams VALUES ($id, 'C', make_timestamp($at), NULL, $space, $entity, $content,
                                      $state, $f, $sigma, 0.0, $derived::VARCHAR[], $tag)""",
        {
            "id": megram.id,
            "at": at_us,
            "space": megram.space,
            "entity": megram.entity,
            "content": megram.content,
            "state": megram.state,
            "f": megram.f,
            "sigma": megram.sigma,
            "derived": megram.derived_from,
            "tag": tag,
        },
    )
    con.execute(
        "INSERT INTO memory_ops VALUES (make_timestamp($at), 'promote', $id, $space, $entity, $detail)",
        {"at": at_us, "id": megram.id, "space": megram.space, "entity": megram.entity, "detail": detail},
    )


@dataclass
class SOPPair:
    """One intent pair with enough successful episodes to be worth an SOP look (newest episode first)."""

    space: str
    entity: str
    decision: float = 0.0
    episodes: list[tuple[str, str]] = field(default_factory=list)
    covered: set[str] = field(default_factory=set)
    rules: list[str] = field(default_factory=list)


_SOP_SUCCESS = "space LIKE 'intent:%' AND sigma > 0 AND list_contains($states, state) AND contains(content, $tried)"
_SOP_PAIRS = f"""
WITH ok AS (
    SELECT tag, space, entity FROM megrams WHERE level IN ('M', 'K') AND {_SOP_SUCCESS}
    GROUP BY tag, space, entity HAVING count(*) >= $n),
dec AS (
    SELECT tag, space, entity, sum(sigma * f * w) AS decision
    FROM (SELECT tag, space, entity, sigma, f, {_W} AS w FROM megrams
          WHERE level IN ('M', 'K') AND tag IN (SELECT tag FROM ok))
    GROUP BY tag, space, entity)
SELECT space, entity, d.decision, m.level, m.id, m.content, m.derived_from
FROM megrams m JOIN ok USING (tag, space, entity) JOIN dec d USING (tag, space, entity)
WHERE m.level = 'C' OR len(m.derived_from) > 0 OR (m.level IN ('M', 'K') AND {_SOP_SUCCESS.replace("space", "m.space")})
ORDER BY space, entity, m.created_at DESC, m.id
"""
"""For each intent pair holding at least $n successful episodes that say what they tried: its live
decision, those episodes, its C rules and every id a rule was distilled from.  Only such rows leave
SQL (a store of 10⁷ Megrams has few), and which episodes share a method is read in Python."""


def sop_pairs(con: duckdb.DuckDBPyConnection, at_us: int, states: list[str], n: int) -> list[SOPPair]:
    """The intent pairs with ≥ ``n`` successful episodes: those episodes, covered ids, C rules and decision."""
    pairs: dict[tuple[str, str], SOPPair] = {}
    params = {"at": at_us, "states": states, "n": n, "tried": f"\n{EPISODE_TRIED}"}
    for space, entity, decision, level, mid, content, derived in con.execute(_SOP_PAIRS, params).fetchall():
        pair = pairs.setdefault((space, entity), SOPPair(space, entity, decision))
        pair.covered.update(derived or [])
        if level == "C":
            pair.rules.append(content)
        elif not derived:
            pair.episodes.append((mid, content))
    return list(pairs.values())
