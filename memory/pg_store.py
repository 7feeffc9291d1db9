"""R5's MemoryService over PostgreSQL: one memory for many workers on many machines.

Why: the embedded store (memory.store) is a DuckDB file with one writer and a spool
directory on local disk, which a worker on another machine cannot reach.  This store
keeps the Megrams in a PostgreSQL database (the Prefect server's, or one beside it) and
offers the same interface the roles, flows and CLI use (write, query_mk, query_c,
pairs_with_space_prefix, stats, record_negative_feedback, ingest, exclusive, import /
export), so ``memory.backends.open_store`` can hand either to a task run.

* **Writes are immediate and idempotent**: ``INSERT … ON CONFLICT (id) DO NOTHING``, so a
  Megram id is stored exactly once whatever number of workers write.  There is no spool,
  so ``ingest`` has nothing to do.
* **Reads are one SQL statement** with the same kernel as the embedded store
  (memory.pg_sql); the potentials agree with it and with memory.potentials to rounding.
* **The Dreamer's rules run unchanged**: ``exclusive()`` takes a cluster-wide advisory
  lock inside one PostgreSQL transaction, copies the table into an in-process DuckDB,
  yields that connection to memory.dreamer (whose set-at-a-time SQL is DuckDB's), then
  writes back exactly what the pass changed — forgotten ids deleted, new rules inserted,
  demoted rules updated, journal rows appended — and commits.  A pass that raises
  writes nothing.  Megrams other workers insert during a pass are untouched by it.
  The copy costs memory proportional to the table: fine for a team's memory (10⁵–10⁶
  Megrams); see bench/README.md.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import psycopg
import pyarrow as pa

from artoo.config.contracts import Megram, Potentials, SOPRecord
from artoo.config.errors import ConfigurationError
from artoo.config.settings import MemoryParams
from artoo.memory import pg_sql, transfer
from artoo.memory.ingest import IngestResult
from artoo.memory.potentials import NEGATIVE_FEEDBACK, make_potentials, now_us, to_us
from artoo.memory.schema import migrate, tag_key
from artoo.memory.spool import megram_problem

log = logging.getLogger("artoo.memory")

_MUTABLE = ("level", "content", "state", "f", "sigma", "k")
"""Columns a Dreamer pass may change on an existing row (recall times belong to readers)."""


def libpq_url(url: str) -> str:
    """A libpq URL from the forms people paste: SQLAlchemy's ``postgresql+asyncpg://`` included."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] not in ("postgresql", "postgres"):
        raise ConfigurationError(f"memory.postgres_url must be a postgresql:// URL, got {redact(url)!r}")
    return "postgresql://" + rest


def redact(url: str) -> str:
    """The URL without its password (for stats and errors)."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"


class PostgresMemoryStore:
    """The MKCT store in a PostgreSQL database, shared by every worker that points at it."""

    def __init__(self, url: str, params: MemoryParams | None = None) -> None:
        if not url:
            raise ConfigurationError("memory.backend is 'postgres' but memory.postgres_url is empty "
                                     "(set ARTOO_MEMORY__POSTGRES_URL=postgresql://user@host:port/db)")
        self.url = libpq_url(url)
        self.params = params or MemoryParams()
        self._lock = threading.RLock()
        self._con: psycopg.Connection | None = None
        self._pid = os.getpid()
        self._closed = False
        with self._connection() as con:
            self._migrate(con)

    # ── connections ───────────────────────────────────────────────────────────────

    def _connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise ConfigurationError(f"cannot reach the memory database {redact(self.url)}: {exc}") from exc

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        with self._lock:
            if self._closed:
                raise RuntimeError("MemoryStore is closed")
            if self._con is None or self._con.closed or self._pid != os.getpid():
                self._con, self._pid = self._connect(), os.getpid()  # a forked child opens its own
            yield self._con

    @staticmethod
    def _migrate(con: psycopg.Connection) -> None:
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", [pg_sql.MIGRATE_LOCK])
            con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                        "description TEXT NOT NULL, applied_at TIMESTAMP NOT NULL)")
            current = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
            if current > pg_sql.LATEST_VERSION:
                raise ConfigurationError(
                    f"the memory database has schema version {current}, newer than this artoo understands "
                    f"({pg_sql.LATEST_VERSION}); upgrade artoo on this worker")
            for version, description, statements in pg_sql.MIGRATIONS:
                if version > current:
                    for statement in statements:
                        con.execute(statement)
                    con.execute("INSERT INTO schema_version VALUES (%s, %s, %s)",
                                [version, description, datetime.now(UTC).replace(tzinfo=None)])

    # ── write path ────────────────────────────────────────────────────────────────

    def write(self, m: Megram) -> None:
        """Store a Megram once (a second write of the same id is a no-op); durable once it returns."""
        problem = megram_problem(m)
        if problem:
            raise ValueError(f"Megram {m.id!r} cannot be stored: {problem}")
        with self._connection() as con:
            con.execute(pg_sql.INSERT, _row(m))

    def record_negative_feedback(self, rule_id: str, content: str) -> Megram:
        """Store a negative-σ Megram on the rule's tag pair; the rule itself is never changed."""
        with self._connection() as con:
            row = con.execute("SELECT space, entity FROM megrams WHERE id = %s", [rule_id]).fetchone()
        if row is None:
            raise ValueError(f"no Megram with id {rule_id!r}: cannot record feedback against it")
        feedback = Megram(id=str(uuid.uuid4()), level="M", created_at=datetime.now(UTC), space=row[0],
                          entity=row[1], content=f"feedback on rule {rule_id}: {content}",
                          state="negative_feedback", **NEGATIVE_FEEDBACK)
        self.write(feedback)
        return feedback

    # ── read path ─────────────────────────────────────────────────────────────────

    def query_mk(self, space: str, entity: str, at: datetime | None = None) -> Potentials:
        """Live attention/decision over the pair's M and K Megrams, in SQL."""
        params = {"tag": tag_key(space, entity), "space": space, "entity": entity,
                  "at": now_us() if at is None else to_us(at)}
        with self._connection() as con:
            attention, decision = con.execute(pg_sql.MK, params).fetchone()
        return make_potentials(attention, decision, self.params)

    def query_c(self, space: str, entity: str, *, recall: bool = True) -> list[SOPRecord]:
        """C-level rules of the pair; each hit is recorded as a recall (resets its decay clock)."""
        pair = {"tag": tag_key(space, entity), "space": space, "entity": entity}
        with self._connection() as con:
            rows = con.execute(pg_sql.C, pair).fetchall()
            if recall and rows:
                con.execute(pg_sql.RECALL, {"at": now_us(), "ids": [r[0] for r in rows]})
        return [SOPRecord(id=i, space=space, entity=entity, content=c, sigma=s) for i, c, s in rows]

    def query_c_prefix(self, prefix: str, *, recall: bool = True) -> list[SOPRecord]:
        """C-level rules of every pair whose space starts with ``prefix`` (the tool-pair SOPs); recalled."""
        with self._connection() as con:
            rows = con.execute(pg_sql.C_PREFIX, {"prefix": prefix}).fetchall()
            if recall and rows:
                con.execute(pg_sql.RECALL, {"at": now_us(), "ids": [r[0] for r in rows]})
        return [SOPRecord(id=i, space=sp, entity=e, content=c, sigma=sg) for i, sp, e, c, sg in rows]

    def recent(self, space: str, entity: str, limit: int = 3) -> list[Megram]:
        """The pair's newest M/K Megrams, newest first: what happened, for the planner to quote."""
        pair = {"tag": tag_key(space, entity), "space": space, "entity": entity, "limit": limit}
        with self._connection() as con:
            rows = con.execute(pg_sql.RECENT, pair).fetchall()
        return [Megram(id=i, level=level, created_at=datetime.fromtimestamp(us / 1e6, UTC), space=space,
                       entity=entity, content=content, state=state, f=f, sigma=sigma, k=k)
                for i, level, us, content, state, f, sigma, k in rows]

    def episodes(self, prefix: str, states: list[str], limit: int = 200) -> list[Megram]:
        """The newest M/K Megrams in ``states`` of every space starting with ``prefix``, newest first."""
        params = {"prefix": prefix, "states": list(states), "limit": limit}
        with self._connection() as con:
            rows = con.execute(pg_sql.EPISODES, params).fetchall()
        return [Megram(id=i, level=level, created_at=datetime.fromtimestamp(us / 1e6, UTC), space=space,
                       entity=entity, content=content, state=state, f=f, sigma=sigma, k=k)
                for i, level, us, space, entity, content, state, f, sigma, k in rows]

    def pairs_with_space_prefix(self, prefix: str, at: datetime | None = None
                                ) -> list[tuple[str, str, Potentials]]:
        """(space, entity, potentials) of every pair whose space starts with ``prefix``."""
        params = {"prefix": prefix, "at": now_us() if at is None else to_us(at)}
        with self._connection() as con:
            rows = con.execute(pg_sql.SPACE, params).fetchall()
        return [(s, e, make_potentials(a, d, self.params)) for s, e, a, d in rows]

    def stats(self) -> dict:
        """Counts per level, journal size, schema version (same keys as the embedded store)."""
        with self._connection() as con:
            levels = dict(con.execute("SELECT level, count(*) FROM megrams GROUP BY level").fetchall())
            ops = dict(con.execute("SELECT op, count(*) FROM memory_ops GROUP BY op").fetchall())
            version = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
            size = con.execute("SELECT pg_total_relation_size('megrams')").fetchone()[0]
        return {
            "backend": "postgres",
            "levels": {level: int(levels.get(level, 0)) for level in ("M", "K", "C", "T")},
            "total": int(sum(levels.values())),
            "pending": {"files": 0, "bytes": 0, "megrams": 0, "levels": {}},
            "journal": {op: int(n) for op, n in ops.items()},
            "db_bytes": int(size),
            "wal_bytes": 0,
            "quarantined_lines": 0,
            "schema_version": int(version),
            "path": redact(self.url),
        }

    # ── maintenance (one at a time, cluster-wide) ─────────────────────────────────

    def ingest(self) -> int:
        """Nothing to ingest: every write is already in the database."""
        return 0

    def ingest_locked(self, con: duckdb.DuckDBPyConnection) -> IngestResult:
        """ingest() for a caller inside ``exclusive()`` (the Dreamer): nothing to do here."""
        return IngestResult()

    def compact(self, force: bool = False) -> bool:
        """PostgreSQL keeps the pair index itself: nothing to re-cluster."""
        return False

    def export_parquet(self, path: Path) -> int:
        """Write every Megram to a Parquet file; returns the row count."""
        with self.exclusive() as con:
            return transfer.export_parquet(con, Path(path))

    def import_parquet(self, path: Path) -> int:
        """Validate a Parquet export whole, then add its Megrams (new ids only); returns how many."""
        table = transfer.read_and_validate(Path(path))
        with self.exclusive() as con:
            return transfer.import_table(con, table)

    @contextmanager
    def exclusive(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A DuckDB working copy under the cluster-wide lock; its changes are written back on exit."""
        with self._lock:
            pg = self._connect()
            try:
                with pg.transaction():
                    pg.execute("SELECT pg_advisory_xact_lock(%s)", [pg_sql.DREAM_LOCK])
                    before = pg.execute(f"SELECT {', '.join(pg_sql.COLUMNS)} FROM megrams").fetchall()
                    duck = duckdb.connect(":memory:")
                    try:
                        migrate(duck)
                        _load(duck, before)
                        yield duck
                        _write_back(pg, duck, before)
                    finally:
                        duck.close()
            finally:
                pg.close()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._closed = True
            if self._con is not None and self._pid == os.getpid():
                self._con.close()
            self._con = None

    def __enter__(self) -> PostgresMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _row(m: Megram) -> tuple:
    recalled = None if m.last_recalled_at is None else to_us(m.last_recalled_at)
    return (m.id, m.level, to_us(m.created_at), recalled, m.space, m.entity, m.content, m.state,
            m.f, m.sigma, m.k, list(m.derived_from), tag_key(m.space, m.entity))


_SNAPSHOT = pa.schema([("id", pa.string()), ("level", pa.string()), ("created_us", pa.int64()),
                       ("last_recalled_us", pa.int64()), ("space", pa.string()), ("entity", pa.string()),
                       ("content", pa.string()), ("state", pa.string()), ("f", pa.float64()),
                       ("sigma", pa.float64()), ("k", pa.float64()), ("derived_from", pa.list_(pa.string())),
                       ("tag", pa.int64())])

_FROM_SNAPSHOT = """INSERT INTO megrams SELECT id, level, make_timestamp(created_us),
    CASE WHEN last_recalled_us IS NULL THEN NULL ELSE make_timestamp(last_recalled_us) END,
    space, entity, content, state, f, sigma, k, derived_from, tag FROM snapshot"""

_AFTER = """SELECT id, level, epoch_us(created_at), epoch_us(last_recalled_at), space, entity, content, state,
    f, sigma, k, derived_from, tag FROM megrams"""


def _load(duck: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    snapshot = pa.Table.from_pylist([dict(zip(pg_sql.COLUMNS, r, strict=True)) for r in rows], schema=_SNAPSHOT)
    duck.register("snapshot", snapshot)
    duck.execute(_FROM_SNAPSHOT)
    duck.unregister("snapshot")


def _write_back(pg: psycopg.Connection, duck: duckdb.DuckDBPyConnection, before: list[tuple]) -> None:
    """Apply the working copy's changes to PostgreSQL (inside the caller's transaction)."""
    old = {r[0]: r for r in before}
    new = {r[0]: r for r in duck.execute(_AFTER).fetchall()}
    gone = [i for i in old if i not in new]
    added = [tuple(r[:11]) + (list(r[11]), r[12]) for i, r in new.items() if i not in old]
    index = [pg_sql.COLUMNS.index(c) for c in _MUTABLE]
    changed = [[new[i][j] for j in index] + [i] for i in new
               if i in old and any(new[i][j] != old[i][j] for j in index)]
    with pg.cursor() as cur:
        if gone:
            cur.execute("DELETE FROM megrams WHERE id = ANY(%s)", [gone])
        if added:
            cur.executemany(pg_sql.INSERT, added)
        if changed:
            sets = ", ".join(f"{c} = %s" for c in _MUTABLE)
            cur.executemany(f"UPDATE megrams SET {sets} WHERE id = %s", changed)
        journal = duck.execute("SELECT * FROM memory_ops").fetchall()
        if journal:
            cur.executemany("INSERT INTO memory_ops VALUES (%s, %s, %s, %s, %s, %s)", journal)
    if gone or added or changed:
        log.info("memory (postgres): %d forgotten, %d added, %d changed", len(gone), len(added), len(changed))
