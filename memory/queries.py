"""The read path's SQL: dual-channel potentials over DuckDB rows united with spool lines.

One kernel for every query, written exactly as artoo.memory.potentials defines it: Δt in
integer microseconds (``epoch_us``), clamped at 0, divided by a day, so the SQL and the
Python reference agree to rounding.  Pending (spooled) Megrams arrive as list
parameters and are unnested into the same sums; one whose id is already stored counts once.
"""

from __future__ import annotations

from artoo.memory.pending import PendingMegram

WEIGHT = "exp(-k * (greatest(0, $at - {ref}) / 86400000000.0))"
"""The decay kernel e^(−k·Δt) with Δt in days from integer microseconds, clamped at 0."""
STORED_REF = "epoch_us(coalesce(last_recalled_at, created_at))"
"""A stored row's decay reference: last recall, else creation."""
PAIR = "tag = $tag AND space = $space AND entity = $entity"
_PENDING = """pend AS (
    SELECT unnest($pid::VARCHAR[]) AS id, unnest($pspace::VARCHAR[]) AS space,
           unnest($pentity::VARCHAR[]) AS entity, unnest($pf::DOUBLE[]) AS f,
           unnest($ps::DOUBLE[]) AS sigma, unnest($pk::DOUBLE[]) AS k, unnest($pref::BIGINT[]) AS ref)"""

MK_SQL = f"""
SELECT coalesce(sum(abs(f) * w), 0.0), coalesce(sum(sigma * f * w), 0.0) FROM (
    SELECT f, sigma, {WEIGHT.format(ref=STORED_REF)} AS w
    FROM megrams WHERE {PAIR} AND level IN ('M', 'K'))
"""

MK_PENDING_SQL = f"""
WITH {_PENDING},
rows AS (
    SELECT f, sigma, k, epoch_us(coalesce(last_recalled_at, created_at)) AS ref
    FROM megrams WHERE {PAIR} AND level IN ('M', 'K')
    UNION ALL
    SELECT f, sigma, k, ref FROM pend WHERE id NOT IN (SELECT id FROM megrams WHERE {PAIR}))
SELECT coalesce(sum(abs(f) * w), 0.0), coalesce(sum(sigma * f * w), 0.0)
FROM (SELECT f, sigma, {WEIGHT.format(ref="ref")} AS w FROM rows)
"""

C_SQL = f"SELECT id, content, sigma FROM megrams WHERE {PAIR} AND level = 'C' ORDER BY created_at, id"

C_PREFIX_SQL = """SELECT id, space, entity, content, sigma FROM megrams
WHERE starts_with(space, $prefix) AND level = 'C' ORDER BY created_at, id"""
"""Every C rule whose space starts with a prefix (the SOPs distilled for tool pairs)."""

RECENT_SQL = f"""SELECT id, level, created_at, content, state, f, sigma, k FROM megrams
WHERE {PAIR} AND level IN ('M', 'K') ORDER BY created_at DESC, id DESC LIMIT $limit"""
"""The newest M/K Megrams of one pair: what happened, for the planner to quote."""

EPISODES_SQL = """SELECT id, level, created_at, space, entity, content, state, f, sigma, k FROM megrams
WHERE starts_with(space, $prefix) AND level IN ('M', 'K') AND list_contains($states::VARCHAR[], state)
ORDER BY created_at DESC, id DESC LIMIT $limit"""
"""The newest M/K Megrams in some states across every space with a prefix: the episodes of all intents."""

SPACE_SQL = f"""
WITH {_PENDING},
db AS (SELECT id, space, entity, f, sigma, k, epoch_us(coalesce(last_recalled_at, created_at)) AS ref
       FROM megrams WHERE starts_with(space, $prefix) AND level IN ('M', 'K')),
rows AS (SELECT space, entity, f, sigma, k, ref FROM db
         UNION ALL
         SELECT space, entity, f, sigma, k, ref FROM pend WHERE id NOT IN (SELECT id FROM db))
SELECT space, entity, sum(abs(f) * w), sum(sigma * f * w)
FROM (SELECT space, entity, f, sigma, {WEIGHT.format(ref="ref")} AS w FROM rows)
GROUP BY space, entity ORDER BY space, entity
"""


def pending_params(megrams: list[PendingMegram]) -> dict[str, list]:
    """Pending Megrams as the list parameters the SQL unnests."""
    return {
        "pid": [m.id for m in megrams],
        "pspace": [m.space for m in megrams],
        "pentity": [m.entity for m in megrams],
        "pf": [m.f for m in megrams],
        "ps": [m.sigma for m in megrams],
        "pk": [m.k for m in megrams],
        "pref": [m.ref_us for m in megrams],
    }
