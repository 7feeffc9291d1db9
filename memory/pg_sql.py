"""PostgreSQL schema and read-path SQL of the shared Megram store (memory.pg_store).

Why these shapes: the potentials must equal the embedded store's to 1e-9, so time is kept
exactly as memory.potentials counts it — integer microseconds since the epoch
(``created_us``, ``last_recalled_us``) — and the kernel is the same expression as
memory.queries: Δt = max(0, at − ref) microseconds, turned into days in float8.  ``id``
is the primary key, so a Megram written twice (a retry, two workers replaying one spool)
is stored once: every insert is ``ON CONFLICT (id) DO NOTHING``.  ``tag`` is the same
63-bit pair hash as the DuckDB schema, indexed, so a pair's rows are one index range.
"""

from __future__ import annotations

WEIGHT = "exp(-k * (greatest(0, %(at)s::bigint - {ref})::float8 / 86400000000.0::float8))"
"""The decay kernel e^(−k·Δt), Δt in days from integer microseconds, clamped at 0."""
REF = "coalesce(last_recalled_us, created_us)"
PAIR = "tag = %(tag)s AND space = %(space)s AND entity = %(entity)s"

MIGRATIONS: list[tuple[int, str, tuple[str, ...]]] = [
    (1, "MKCT megrams (microsecond times), operations journal", (
        """CREATE TABLE IF NOT EXISTS megrams (
            id TEXT PRIMARY KEY,
            level TEXT NOT NULL CHECK (level IN ('M', 'K', 'C', 'T')),
            created_us BIGINT NOT NULL,
            last_recalled_us BIGINT,
            space TEXT NOT NULL,
            entity TEXT NOT NULL,
            content TEXT NOT NULL,
            state TEXT NOT NULL,
            f DOUBLE PRECISION NOT NULL,
            sigma DOUBLE PRECISION NOT NULL,
            k DOUBLE PRECISION NOT NULL,
            derived_from TEXT[] NOT NULL,
            tag BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS megrams_tag ON megrams (tag)",
        """CREATE TABLE IF NOT EXISTS memory_ops (
            op_time TIMESTAMP NOT NULL,
            op TEXT NOT NULL,
            megram_id TEXT NOT NULL,
            space TEXT NOT NULL,
            entity TEXT NOT NULL,
            detail TEXT NOT NULL)""",
    )),
]
"""(version, description, statements), applied in order under an advisory lock."""
LATEST_VERSION = MIGRATIONS[-1][0]

MIGRATE_LOCK = 0x61727430_6D656D00 >> 1
"""pg_advisory lock key held while migrating (any 63-bit constant of ours)."""
DREAM_LOCK = 0x61727430_64726D00 >> 1
"""pg_advisory lock key held by a Dreamer pass / import / export (one at a time, cluster-wide)."""

COLUMNS = ("id", "level", "created_us", "last_recalled_us", "space", "entity", "content", "state",
           "f", "sigma", "k", "derived_from", "tag")
"""Column order of INSERT and of the snapshot the Dreamer works on."""

INSERT = (f"INSERT INTO megrams ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(COLUMNS))}) "
          "ON CONFLICT (id) DO NOTHING")

MK = f"""
SELECT coalesce(sum(abs(f) * w), 0.0), coalesce(sum(sigma * f * w), 0.0) FROM (
    SELECT f, sigma, {WEIGHT.format(ref=REF)} AS w
    FROM megrams WHERE {PAIR} AND level IN ('M', 'K')) AS pair_rows
"""

C = f"SELECT id, content, sigma FROM megrams WHERE {PAIR} AND level = 'C' ORDER BY created_us, id"

SPACE = f"""
SELECT space, entity, sum(abs(f) * w), sum(sigma * f * w) FROM (
    SELECT space, entity, f, sigma, {WEIGHT.format(ref=REF)} AS w
    FROM megrams WHERE starts_with(space, %(prefix)s) AND level IN ('M', 'K')) AS pair_rows
GROUP BY space, entity ORDER BY space COLLATE "C", entity COLLATE "C"
"""

C_PREFIX = """SELECT id, space, entity, content, sigma FROM megrams
WHERE starts_with(space, %(prefix)s) AND level = 'C' ORDER BY created_us, id"""
"""Every C rule whose space starts with a prefix (the SOPs distilled for tool pairs)."""

RECENT = f"""SELECT id, level, created_us, content, state, f, sigma, k FROM megrams
WHERE {PAIR} AND level IN ('M', 'K') ORDER BY created_us DESC, id DESC LIMIT %(limit)s"""
"""The newest M/K Megrams of one pair: what happened, for the planner to quote."""

EPISODES = """SELECT id, level, created_us, space, entity, content, state, f, sigma, k FROM megrams
WHERE starts_with(space, %(prefix)s) AND level IN ('M', 'K') AND state = ANY(%(states)s)
ORDER BY created_us DESC, id DESC LIMIT %(limit)s"""
"""The newest M/K Megrams in some states across every space with a prefix: the episodes of all intents."""

RECALL = """UPDATE megrams SET last_recalled_us = %(at)s
WHERE id = ANY(%(ids)s) AND (last_recalled_us IS NULL OR last_recalled_us < %(at)s)"""
"""A QueryC hit resets the rule's decay clock (never moves it backwards)."""
