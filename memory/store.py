"""R5's MemoryService over DuckDB: spooled writes, SQL potentials, one writer at a time.

Design (why it is safe with many processes):

* **Writes never touch DuckDB.**  ``write()`` appends one JSON line to this process's
  own O_APPEND spool file (see artoo.memory.spool): microseconds, durable against SIGKILL.
* **Exactly one process holds DuckDB read-write at a time**, and only for ``ingest``,
  the Dreamer, import and export.  Readers hold a read-only connection.  Who may open
  what is decided by flock locks *before* DuckDB is opened (artoo.memory.locks), so DuckDB's
  own "file is locked" error never happens and nobody retries opening a file.
* **Readers keep their connection open** (opening costs ~20 ms at 10⁷ rows; a point
  query ~2 ms) while they are busy, step aside before a query when a writer waits, and a
  daemon thread closes a connection idle for ``reader_idle_s`` — or idle at all while a
  writer waits — so writers are not starved by a process that stopped querying.  A task
  run keeps its reader across rounds (``open_store(..., reader_idle_s=…)``): reopening it
  every round cost ~20 ms between two LLM calls.
* **Queries see fresh experience at once**: potentials are one SQL statement over the
  pair's M/K rows united with the not-yet-ingested spool lines (artoo.memory.pending).
* ``ingest`` moves spools into DuckDB exactly once (artoo.memory.ingest).

Forking: a child process gets a fresh spool file and no locks; DuckDB objects that were
open in the parent are kept but never used nor closed in the child (closing them there
crashes), and a store that had a connection open at fork time refuses DuckDB work in
the child with a clear error — open stores after forking, or use ``spawn``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from artoo.config.contracts import Megram, Potentials, SOPRecord
from artoo.config.settings import MemoryParams
from artoo.memory.ingest import IngestResult, ingest_spools
from artoo.memory.locks import StoreLock
from artoo.memory.pending import PendingMegram, PendingView
from artoo.memory.potentials import NEGATIVE_FEEDBACK, make_potentials, now_us, to_us
from artoo.memory.queries import (
    C_PREFIX_SQL,
    C_SQL,
    EPISODES_SQL,
    MK_PENDING_SQL,
    MK_SQL,
    RECENT_SQL,
    SPACE_SQL,
    pending_params,
)
from artoo.memory.schema import LATEST_VERSION, compact, migrate, needs_compaction, schema_version, tag_key
from artoo.memory.spool import ROTATE_BYTES, SpoolWriter, encode_megram, encode_recall, megram_problem

log = logging.getLogger("artoo.memory")
WRITER_CHECK_S = 0.2
"""How often an idle reader checks for a waiting writer (only readers kept open longer than this check)."""

_STORES: weakref.WeakSet[MemoryStore] = weakref.WeakSet()
_FORK_LEFTOVERS: list[object] = []
"""DuckDB connections inherited by a forked child: never used, never closed there."""


def _after_fork_in_child() -> None:
    for store in list(_STORES):
        store._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)



def _from_pending(m: PendingMegram) -> Megram:
    """A spooled Megram not yet ingested, as the store returns stored ones."""
    return Megram(id=m.id, level=m.level, space=m.space, entity=m.entity, content=m.content,
                  created_at=datetime.fromtimestamp(m.created_us / 1e6, UTC), state=m.state, f=m.f, sigma=m.sigma,
                  k=m.k)

class MemoryStore:
    """The MKCT store under ``<home>/memory``: spool directory, DuckDB file, lock files."""

    def __init__(
        self,
        home: Path,
        params: MemoryParams | None = None,
        *,
        reader_idle_s: float = 0.5,
        lock_timeout_s: float = 600.0,
        rotate_bytes: int = ROTATE_BYTES,
    ) -> None:
        self.root = Path(home) / "memory"
        self.spool_dir = self.root / "spool"
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "memory.duckdb"
        self.quarantine_path = self.root / "quarantine.jsonl"
        self.params = params or MemoryParams()
        self._idle_s = reader_idle_s
        self._lock = StoreLock(self.root, lock_timeout_s)
        self._writer = SpoolWriter(self.spool_dir, rotate_bytes)
        self._cv = threading.Condition(threading.RLock())
        self._ro: duckdb.DuckDBPyConnection | None = None
        self._pending: PendingView | None = None
        self._reaper: threading.Thread | None = None
        self._last_use = 0.0
        self._closed = False
        self._fork_tainted = False
        _STORES.add(self)

    # ── write path ────────────────────────────────────────────────────────────────

    def write(self, m: Megram) -> None:
        """Append a Megram to this process's spool; durable once it returns (no DuckDB)."""
        if self._closed:
            raise RuntimeError("MemoryStore is closed")
        problem = megram_problem(m)
        if problem:
            raise ValueError(f"Megram {m.id!r} cannot be stored: {problem}")
        self._writer.append(encode_megram(m))

    def record_negative_feedback(self, rule_id: str, content: str) -> Megram:
        """Append a negative-σ Megram on the rule's tag pair; the rule itself is never changed."""
        with self._reading() as con:
            row = con.execute("SELECT space, entity FROM megrams WHERE id = ? LIMIT 1", [rule_id]).fetchone()
            if row is None and (pending := self._pending.refresh().get(rule_id)) is not None:
                row = (pending.space, pending.entity)
        if row is None:
            raise ValueError(f"no Megram with id {rule_id!r}: cannot record feedback against it")
        feedback = Megram(
            id=str(uuid.uuid4()),
            level="M",
            created_at=datetime.now(UTC),
            space=row[0],
            entity=row[1],
            content=f"feedback on rule {rule_id}: {content}",
            state="negative_feedback",
            **NEGATIVE_FEEDBACK,
        )
        self.write(feedback)
        return feedback

    # ── read path ─────────────────────────────────────────────────────────────────

    def query_mk(self, space: str, entity: str, at: datetime | None = None) -> Potentials:
        """Live attention/decision over the pair's M and K Megrams (DuckDB ∪ spool), in SQL."""
        params: dict = {
            "tag": tag_key(space, entity),
            "space": space,
            "entity": entity,
            "at": now_us() if at is None else to_us(at),
        }
        with self._reading() as con:
            pending = self._pending.refresh().of_pair(space, entity, ("M", "K"))
            if pending:
                row = con.execute(MK_PENDING_SQL, params | pending_params(pending)).fetchone()
            else:
                row = con.execute(MK_SQL, params).fetchone()
        return make_potentials(row[0], row[1], self.params)

    def query_c(self, space: str, entity: str, *, recall: bool = True) -> list[SOPRecord]:
        """C-level rules of the pair; each hit is recorded as a recall (resets its decay clock)."""
        with self._reading() as con:
            pair = {"tag": tag_key(space, entity), "space": space, "entity": entity}
            rows = con.execute(C_SQL, pair).fetchall()
            seen = {r[0] for r in rows}
            pending = self._pending.refresh().of_pair(space, entity, ("C",))
        rows += [
            (m.id, m.content, m.sigma)
            for m in sorted(pending, key=lambda m: m.created_us)
            if m.id not in seen
        ]
        records = [SOPRecord(id=i, space=space, entity=entity, content=c, sigma=s) for i, c, s in rows]
        if recall and records and not self._closed:
            at = now_us()
            self._writer.append(b"".join(encode_recall(r.id, space, entity, at) for r in records))
        return records

    def query_c_prefix(self, prefix: str, *, recall: bool = True) -> list[SOPRecord]:
        """C-level rules of every pair whose space starts with ``prefix`` (e.g. the tool-pair SOPs); recalled."""
        with self._reading() as con:
            rows = con.execute(C_PREFIX_SQL, {"prefix": prefix}).fetchall()
            seen = {r[0] for r in rows}
            pending = self._pending.refresh().with_space(prefix, True, ("C",))
        rows += [(m.id, m.space, m.entity, m.content, m.sigma)
                 for m in sorted(pending, key=lambda m: m.created_us) if m.id not in seen]
        records = [SOPRecord(id=i, space=sp, entity=e, content=c, sigma=sg) for i, sp, e, c, sg in rows]
        if recall and records and not self._closed:
            at = now_us()
            self._writer.append(b"".join(encode_recall(r.id, r.space, r.entity, at) for r in records))
        return records

    def recent(self, space: str, entity: str, limit: int = 3) -> list[Megram]:
        """The pair's newest M/K Megrams (DuckDB ∪ spool), newest first: what happened, to quote."""
        pair = {"tag": tag_key(space, entity), "space": space, "entity": entity, "limit": limit}
        with self._reading() as con:
            rows = con.execute(RECENT_SQL, pair).fetchall()
            pending = self._pending.refresh().of_pair(space, entity, ("M", "K"))
        found = {r[0]: Megram(id=r[0], level=r[1], created_at=r[2].replace(tzinfo=UTC), space=space,
                              entity=entity, content=r[3], state=r[4], f=r[5], sigma=r[6], k=r[7]) for r in rows}
        for m in pending:
            found.setdefault(m.id, _from_pending(m))
        return sorted(found.values(), key=lambda m: (m.created_at, m.id), reverse=True)[:limit]

    def episodes(self, prefix: str, states: list[str], limit: int = 200) -> list[Megram]:
        """The newest M/K Megrams in ``states`` of every space starting with ``prefix`` (DuckDB ∪ spool), newest
        first: the successes of every intent, which calibration matches by kind (artoo.memory.kinds)."""
        params = {"prefix": prefix, "states": list(states), "limit": limit}
        with self._reading() as con:
            rows = con.execute(EPISODES_SQL, params).fetchall()
            pending = self._pending.refresh().with_space(prefix, True, ("M", "K"))
        found = {r[0]: Megram(id=r[0], level=r[1], created_at=r[2].replace(tzinfo=UTC), space=r[3], entity=r[4],
                              content=r[5], state=r[6], f=r[7], sigma=r[8], k=r[9]) for r in rows}
        for m in pending:
            if m.state in states:
                found.setdefault(m.id, _from_pending(m))
        return sorted(found.values(), key=lambda m: (m.created_at, m.id), reverse=True)[:limit]

    def pairs_with_space_prefix(
        self, prefix: str, at: datetime | None = None
    ) -> list[tuple[str, str, Potentials]]:
        """(space, entity, potentials) of every pair whose space starts with ``prefix``."""
        params: dict = {"prefix": prefix, "at": now_us() if at is None else to_us(at)}
        with self._reading() as con:
            pending = self._pending.refresh().with_space(prefix, True, ("M", "K"))
            rows = con.execute(SPACE_SQL, params | pending_params(pending)).fetchall()
        return [(s, e, make_potentials(a, d, self.params)) for s, e, a, d in rows]

    def stats(self) -> dict:
        """Counts per level, pending spool records, file sizes, journal size, schema version."""
        with self._reading() as con:
            levels = dict(con.execute("SELECT level, count(*) FROM megrams GROUP BY level").fetchall())
            ops = dict(con.execute("SELECT op, count(*) FROM memory_ops GROUP BY op").fetchall())
            version = schema_version(con)
            pending = self._pending.refresh()
            spool = {
                "files": pending.files,
                "bytes": pending.bytes,
                "megrams": pending.count,
                "levels": pending.level_counts(),
            }

        def size(path: Path) -> int:
            return path.stat().st_size if path.exists() else 0

        return {
            "levels": {level: int(levels.get(level, 0)) for level in ("M", "K", "C", "T")},
            "total": int(sum(levels.values())),
            "pending": spool,
            "journal": {op: int(n) for op, n in ops.items()},
            "db_bytes": size(self.db_path),
            "wal_bytes": size(self.db_path.with_name(self.db_path.name + ".wal")),
            "quarantined_lines": _count_lines(self.quarantine_path),
            "schema_version": version,
            "path": str(self.root),
        }

    # ── single-writer operations ──────────────────────────────────────────────────

    def ingest(self) -> int:
        """Move every spool into DuckDB exactly once; returns how many Megrams were inserted."""
        with self.exclusive() as con:
            return self.ingest_locked(con).inserted

    def ingest_locked(self, con: duckdb.DuckDBPyConnection) -> IngestResult:
        """ingest() for a caller already inside ``exclusive()`` (the Dreamer)."""
        result = ingest_spools(con, self.spool_dir, self.quarantine_path)
        if result.inserted or result.torn_lines or result.quarantined:
            log.info(
                "ingested %d megram(s), %d duplicate(s), %d recall(s), %d spool(s) retired",
                result.inserted,
                result.duplicates,
                result.recalls,
                result.files_deleted,
            )
        return result

    def compact(self, force: bool = False) -> bool:
        """Re-cluster the table by tag when many rows were appended since the last time."""
        with self.exclusive() as con:
            if not (force or needs_compaction(con)):
                return False
            con.execute("BEGIN TRANSACTION")
            compact(con)
            con.execute("COMMIT")
            return True

    def export_parquet(self, path: Path) -> int:
        """Ingest, then write every Megram to a Parquet file; returns the row count."""
        from artoo.memory import transfer  # Parquet is for export and import only: a run never pays for it
        with self.exclusive() as con:
            self.ingest_locked(con)
            return transfer.export_parquet(con, Path(path))

    def import_parquet(self, path: Path) -> int:
        """Validate a Parquet export whole, then add its Megrams (new ids only); returns how many."""
        from artoo.memory import transfer
        table = transfer.read_and_validate(Path(path))
        with self.exclusive() as con:
            self.ingest_locked(con)
            return transfer.import_table(con, table)

    @contextmanager
    def exclusive(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The single-writer lock with a read-write connection (memory-internal maintenance)."""
        with self._cv:
            self._usable()
            self._close_reader()
            self._lock.acquire_exclusive()
            try:
                con = duckdb.connect(str(self.db_path))
                try:
                    migrate(con)
                    yield con
                finally:
                    con.close()
            finally:
                self._lock.release()

    def close(self) -> None:
        """Close the spool (it becomes ingestible) and the reader connection."""
        with self._cv:
            self._closed = True
            self._writer.close()
            if not self._fork_tainted:
                self._close_reader()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── reader connection lifecycle ───────────────────────────────────────────────

    @contextmanager
    def _reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._cv:
            self._usable()
            if self._ro is not None and self._lock.writer_waiting():
                self._close_reader()
            if self._ro is None:
                self._open_reader()
            try:
                yield self._ro
            finally:
                self._last_use = time.monotonic()

    def _open_reader(self) -> None:
        for _ in range(2):
            if self.db_path.exists():
                self._lock.acquire_shared()
                try:
                    con = duckdb.connect(str(self.db_path), read_only=True)
                except BaseException:
                    self._lock.release()
                    raise
                if schema_version(con) == LATEST_VERSION:
                    break
                con.close()
                self._lock.release()
            with self.exclusive():
                pass  # creates the database and applies migrations
        else:
            raise RuntimeError("memory database schema did not reach the expected version")
        self._ro = con
        committed = dict(con.execute("SELECT file, byte_offset FROM spool_offsets").fetchall())
        self._pending = PendingView(self.spool_dir, committed)
        self._last_use = time.monotonic()
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap, name="artoo-memory-idle", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        """Close the reader once idle for ``reader_idle_s``, or at once when a writer waits (checked every
        ``WRITER_CHECK_S``): a reader kept open for a long idle time (a task run's rounds) never makes a writer
        wait for it."""
        with self._cv:
            while self._ro is not None:
                remaining = self._last_use + self._idle_s - time.monotonic()
                if remaining <= 0 or (remaining > WRITER_CHECK_S and self._lock.writer_waiting()):
                    self._close_reader()
                    return
                self._cv.wait(min(remaining, WRITER_CHECK_S))

    def _close_reader(self) -> None:
        if self._ro is not None:
            self._ro.close()
            self._ro, self._pending = None, None
            self._lock.release()
            self._cv.notify_all()

    def _usable(self) -> None:
        if self._closed:
            raise RuntimeError("MemoryStore is closed")
        if self._fork_tainted:
            raise RuntimeError(
                "this MemoryStore had a DuckDB connection open when the process forked; DuckDB cannot be "
                "used from the child (write() still works) — open the store after forking or use spawn"
            )

    def _after_fork(self) -> None:
        self._cv = threading.Condition(threading.RLock())
        if self._ro is not None:
            _FORK_LEFTOVERS.append(self._ro)
            self._fork_tainted = True
        self._ro, self._pending, self._reaper = None, None, None
        self._lock.forget_after_fork()
        self._writer.forget_after_fork()
