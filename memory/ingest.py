"""Ingest: move spooled records into DuckDB exactly once, then retire the spool files.

Exactly-once comes from committing the consumed byte offset of every spool file in the
same DuckDB transaction as the rows read from it: after a crash either both are there
or neither, and the next ingest starts from the committed offset.  Rows are also
de-duplicated by Megram id (within the batch and against the table) so a Megram written
twice — a retried task, an operator re-importing — is stored once (ids are compared within the
Megram's tag pair: the same id under two different pairs is a writer's bug, not a retry).  A file is deleted
only after the commit, and only when its writer is gone (we could take its flock): a
crash between commit and delete leaves a fully-consumed file that the next ingest
deletes.

A dead writer's file may end with a partial line: the process was killed inside
``os.write``.  ``write()`` had not returned, so the record was never acknowledged; it is
skipped and logged.  A complete line that is not a valid record is copied to
``quarantine.jsonl`` beside the database (and logged) rather than lost or ingested.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from artoo.memory.locks import try_flock
from artoo.memory.schema import ROW_GROUP, tag_array
from artoo.memory.spool import SPOOL_SUFFIX, parse_spool, split_lines

log = logging.getLogger("artoo.memory")

STALE_TMP_S = 60.0
"""A hidden spool still unnamed after this long belongs to a writer that died at birth."""


@dataclass
class _Chunk:
    name: str
    fd: int
    dead: bool
    start: int
    end: int
    data: bytes
    """Complete lines read from ``start``."""


@dataclass
class IngestResult:
    """What one ingest did."""

    inserted: int = 0
    duplicates: int = 0
    recalls: int = 0
    files_deleted: int = 0
    torn_lines: int = 0
    quarantined: int = 0
    files: list[str] = field(default_factory=list)


def _claim(spool_dir: Path, offsets: dict[str, int], result: IngestResult) -> list[_Chunk]:
    """Open every spool, note whether its writer is gone, read its complete new lines."""
    chunks: list[_Chunk] = []
    for name in sorted(os.listdir(spool_dir)):
        path = spool_dir / name
        if name.startswith("."):
            _drop_stale_tmp(path)
            continue
        if not name.endswith(SPOOL_SUFFIX):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # removed by hand since the listing
            continue
        dead = try_flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        start = min(offsets.get(name, 0), size)
        data = os.pread(fd, size - start, start) if size > start else b""
        cut = data.rfind(b"\n") + 1
        end = start + cut
        if dead and cut < len(data):
            result.torn_lines += 1
            log.warning(
                "spool %s: skipped a torn last line at byte %d (%d bytes) — its writer died inside "
                "write(), so it was never acknowledged",
                name,
                end,
                len(data) - cut,
            )
            end = size
        chunks.append(_Chunk(name, fd, dead, start, end, data[:cut]))
    return chunks


def _drop_stale_tmp(path: Path) -> None:
    try:
        if time.time() - path.stat().st_mtime < STALE_TMP_S:
            return
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if try_flock(fd, fcntl.LOCK_EX) and os.fstat(fd).st_size == 0:
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _quarantine(path: Path, chunks: list[_Chunk], bad: list[tuple[int, str]]) -> None:
    """Copy the bad lines (indexed over all chunks' non-empty lines) aside, with file and reason."""
    located = [(chunk.name, line) for chunk in chunks for line in split_lines(chunk.data)]
    with open(path, "a", encoding="utf-8") as out:
        for index, reason in bad:
            name, line = located[index]
            record = {"file": name, "reason": reason, "line": line.decode("utf-8", "replace")}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    log.error("quarantined %d invalid spool line(s) into %s", len(bad), path)


_STORED_IDS = "(SELECT id FROM megrams WHERE tag IN (SELECT DISTINCT tag FROM spool_batch WHERE op = 'm'))"
"""Ids already stored under the batch's pairs.  An id always belongs to one tag pair, so this scans
the integer tag column instead of every stored id (~30 ms instead of ~400 ms at 10⁷ rows)."""

_COUNT_MEGRAMS = f"""
SELECT count(*), count(DISTINCT id),
       (SELECT count(*) FROM spool_batch b SEMI JOIN {_STORED_IDS} m ON m.id = b.id WHERE b.op = 'm')
FROM spool_batch WHERE op = 'm'
"""
"""Megram lines, distinct ids among them, and lines whose id is already stored."""

_INSERT = """
INSERT INTO megrams
SELECT b.id, b.level, make_timestamp(b.created_at),
       CASE WHEN b.last_recalled_at IS NULL THEN NULL ELSE make_timestamp(b.last_recalled_at) END,
       b.space, b.entity, b.content, b.state, b.f, b.sigma, b.k,
       coalesce(b.derived_from, []::VARCHAR[]), b.tag
FROM {source} b
{anti_join}
{order}
"""
"""New Megrams only.  Counting first lets the usual batch (no repeats) skip the anti-join, which
halves the insert: DuckDB appends a plain scan in parallel but not a join's output."""
_ANTI_JOIN = f"ANTI JOIN {_STORED_IDS} m ON m.id = b.id"
_ALL_MEGRAMS = "(SELECT * FROM spool_batch WHERE op = 'm')"
_FIRST_OF_EACH_ID = """(SELECT * FROM spool_batch WHERE op = 'm'
                      QUALIFY row_number() OVER (PARTITION BY id ORDER BY seq) = 1)"""

_RECALL = """
UPDATE megrams SET last_recalled_at = r.at
FROM (SELECT id, make_timestamp(max(created_at)) AS at FROM spool_batch WHERE op = 'r' GROUP BY id) r
WHERE megrams.tag IN (SELECT DISTINCT tag FROM spool_batch WHERE op = 'r') AND megrams.id = r.id
  AND (megrams.last_recalled_at IS NULL OR megrams.last_recalled_at < r.at)
"""


def _load(con: duckdb.DuckDBPyConnection, table: pa.Table, result: IngestResult) -> None:
    """Insert the Megrams and apply the recalls of one parsed batch (inside the transaction)."""
    table = table.append_column("tag", tag_array(table["space"], table["entity"]))
    con.register("spool_batch", table)
    try:
        # DuckDB counts in parallel what pyarrow.compute counted on one thread (~3x faster)
        megram_rows, distinct_ids, stored = con.execute(_COUNT_MEGRAMS).fetchone()
        if megram_rows:
            source = _ALL_MEGRAMS if distinct_ids == megram_rows else _FIRST_OF_EACH_ID
            anti_join = _ANTI_JOIN if stored else ""
            # sorting pays only when the batch fills row groups whose zone maps it can then narrow
            order = "ORDER BY b.tag, b.created_at" if megram_rows >= ROW_GROUP else ""
            sql = _INSERT.format(source=source, anti_join=anti_join, order=order)
            result.inserted = con.execute(sql).fetchone()[0]
            result.duplicates = megram_rows - result.inserted
        if megram_rows < table.num_rows:
            result.recalls = con.execute(_RECALL).fetchone()[0]
    finally:
        con.unregister("spool_batch")
    con.execute("UPDATE meta SET value = value + ? WHERE key = 'unsorted_rows'", [result.inserted])


def _commit_with_checkpoint(con: duckdb.DuckDBPyConnection) -> None:
    """COMMIT straight into the database file instead of through the WAL.

    The rows reach the file at the checkpoint DuckDB makes when the connection closes anyway, so
    logging them to the WAL first is extra work: with a zero threshold the commit itself
    checkpoints and skips the WAL (~40 ms of a ~400 ms 100k-Megram ingest).  Atomicity is DuckDB's:
    a crash inside it leaves the old file header, so neither the rows nor their spool offsets are
    there (tests/test_memory_stress.py kills ingesters from parse to checkpoint).
    """
    con.execute("SET checkpoint_threshold = '0b'")
    try:
        con.execute("COMMIT")
    finally:
        con.execute("RESET checkpoint_threshold")


def ingest_spools(con: duckdb.DuckDBPyConnection, spool_dir: Path, quarantine: Path) -> IngestResult:
    """Ingest every spool under ``spool_dir`` in one transaction; caller holds the exclusive lock."""
    result = IngestResult()
    offsets = dict(con.execute("SELECT file, byte_offset FROM spool_offsets").fetchall())
    chunks = _claim(spool_dir, offsets, result)
    try:
        table, bad = parse_spool(b"".join(chunk.data for chunk in chunks))
        if bad:
            _quarantine(quarantine, chunks, bad)
            result.quarantined = len(bad)
        con.execute("BEGIN TRANSACTION")
        try:
            if table.num_rows:
                _load(con, table, result)
            changed = [(c.name, c.end, c.dead) for c in chunks if c.end != offsets.get(c.name, 0) or c.dead]
            if changed:
                con.executemany("INSERT OR REPLACE INTO spool_offsets VALUES (?, ?, ?)", changed)
            con.execute(
                "DELETE FROM spool_offsets WHERE NOT list_contains(?::VARCHAR[], file)",
                [[c.name for c in chunks]],
            )
            _commit_with_checkpoint(con)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for chunk in chunks:
            if chunk.dead:
                (spool_dir / chunk.name).unlink(missing_ok=True)
                result.files_deleted += 1
        result.files = [c.name for c in chunks]
    finally:
        for chunk in chunks:
            os.close(chunk.fd)
    return result
