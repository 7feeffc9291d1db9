"""The write path: one append-only spool file per writing process, one JSON line per record.

Why a spool and not DuckDB: the GGS writes fire-and-forget, many processes may write at
once, and DuckDB admits a single read-write process.  So ``write()`` never touches
DuckDB: it appends one complete line with a single ``os.write`` to a file opened with
O_APPEND that only this process writes.  Once ``os.write`` returned the bytes are in the
page cache, which survives the death of the process (SIGKILL included) — durable
against process crashes without an fsync per write (not against a power cut).

Liveness is a lock: a writer holds ``flock(LOCK_EX)`` on its own spool file for as long
as it may append to it.  A file is created under a hidden temporary name, locked, and
only then renamed into view, so the ingester can never mistake a file that is being born
for the file of a dead writer.  The ingester deletes a spool only when it can take that
lock (the writer is gone or rotated away) *and* every byte of it is committed.

Records: ``{"op": "m", …Megram…}`` is a Megram; ``{"op": "r", "id", "space", "entity",
"created_at"}`` is a recall (QueryC hit) of an existing Megram, applied at ingest.  Times are integer
microseconds since the epoch (UTC).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import secrets
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from artoo.config.contracts import Megram
from artoo.memory.potentials import to_us
from artoo.memory.schema import EXPORT_SCHEMA, LEVELS

SPOOL_SUFFIX = ".jsonl"
ROTATE_BYTES = 64 << 20
"""A writer starts a new spool file past this size, so ingested files can be deleted."""

LINE_SCHEMA = pa.schema(
    [("op", pa.string())]
    + [(f.name, pa.int64() if pa.types.is_timestamp(f.type) else f.type) for f in EXPORT_SCHEMA]
)
"""Arrow schema of one spool line: ``op`` then the export columns, times as µs integers
(recall lines leave the Megram fields null)."""


def megram_problem(m: Megram) -> str | None:
    """Why a Megram cannot be stored, or None."""
    if not m.id:
        return "empty id"
    if not m.space or not m.entity:
        return "empty space or entity tag"
    for name in ("f", "sigma", "k"):
        if not math.isfinite(getattr(m, name)):
            return f"{name} is not a finite number"
    return None


def encode_megram(m: Megram) -> bytes:
    """One spool line for a Megram (a null recall time and empty derived_from are left out)."""
    record = {
        "op": "m",
        "id": m.id,
        "level": m.level,
        "created_at": to_us(m.created_at),
        "space": m.space,
        "entity": m.entity,
        "content": m.content,
        "state": m.state,
        "f": m.f,
        "sigma": m.sigma,
        "k": m.k,
    }
    if m.last_recalled_at is not None:
        record["last_recalled_at"] = to_us(m.last_recalled_at)
    if m.derived_from:
        record["derived_from"] = m.derived_from
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def encode_recall(megram_id: str, space: str, entity: str, at_us: int) -> bytes:
    """One spool line recording a QueryC hit (the tags let ingest find the row without a full scan)."""
    record = {"op": "r", "id": megram_id, "space": space, "entity": entity, "created_at": at_us}
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class SpoolWriter:
    """This process's append-only spool file, opened lazily, rotated by size."""

    def __init__(self, spool_dir: Path, rotate_bytes: int = ROTATE_BYTES) -> None:
        self._dir = spool_dir
        self._rotate_bytes = rotate_bytes
        self._fd: int | None = None
        self._size = 0
        self._seq = 0
        self._token = secrets.token_hex(4)
        self._mutex = threading.Lock()

    def append(self, data: bytes) -> None:
        """Append complete lines; returns once the kernel has all of them."""
        with self._mutex:
            if self._fd is None or self._size >= self._rotate_bytes:
                self._open_next()
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:  # e.g. disk full: cut the partial line off (only we write this file)
                os.ftruncate(self._fd, self._size)
                raise
            self._size += len(data)

    def _open_next(self) -> None:
        self._close()
        self._seq += 1
        name = f"{os.getpid()}-{self._token}-{self._seq:05d}"
        hidden = self._dir / f".{name}.tmp"
        fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(hidden, self._dir / f"{name}{SPOOL_SUFFIX}")
        self._fd, self._size = fd, 0

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Stop appending; the file becomes eligible for ingest-and-delete."""
        with self._mutex:
            self._close()

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's file (its lock stays the parent's) and start afresh."""
        self._mutex = threading.Lock()
        self._close()
        self._token = secrets.token_hex(4)
        self._seq = 0


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "op": str,
    "id": str,
    "level": str,
    "created_at": int,
    "last_recalled_at": int,
    "space": str,
    "entity": str,
    "content": str,
    "state": str,
    "f": (int, float),
    "sigma": (int, float),
    "k": (int, float),
    "derived_from": list,
}


def line_problem(obj: object) -> str | None:
    """Why one decoded spool line is not a valid record, or None (slow path, per line)."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    unknown = set(obj) - set(_FIELD_TYPES)
    if unknown:
        return f"unknown fields {sorted(unknown)}"
    for name, value in obj.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, _FIELD_TYPES[name])):
            return f"{name} has the wrong type"
    if obj.get("op") not in ("m", "r"):
        return "unknown op"
    for name in ("id", "space", "entity"):
        if not obj.get(name):
            return f"missing {name}"
    if obj.get("created_at") is None:
        return "missing created_at"
    if obj["op"] == "r":
        return None
    if obj.get("level") not in LEVELS:
        return "bad level"
    for name in ("content", "state"):
        if obj.get(name) is None:
            return f"missing {name}"
    for name in ("f", "sigma", "k"):
        if obj.get(name) is None or not math.isfinite(obj[name]):
            return f"{name} is not a finite number"
    if not all(isinstance(x, str) for x in obj.get("derived_from") or ()):
        return "derived_from is not a list of strings"
    return None


def _arrow_parse(data: bytes) -> pa.Table:
    """Arrow's JSON reader over the bytes in place, with the process allocator.

    Arrow's default pool (mimalloc) made the first large parse in a process take 1–3x as long
    as later ones (fresh arenas); the system allocator parses a 100k-line batch in a steady
    ~70 ms, first call or not, and an ingester is often a short-lived process.
    """
    options = pj.ParseOptions(explicit_schema=LINE_SCHEMA, unexpected_field_behavior="error")
    return pj.read_json(
        pa.BufferReader(data),
        parse_options=options,
        read_options=pj.ReadOptions(block_size=4 << 20),
        memory_pool=pa.system_memory_pool(),
    )


def split_lines(data: bytes) -> list[bytes]:
    """The non-empty lines of complete spool data (Arrow skips empty lines too, so indices agree)."""
    return [line for line in data.split(b"\n") if line]


def _semantic_mask(table: pa.Table) -> pa.Array:
    """True for rows whose values make a valid record (the fast path's per-row check)."""

    def present(name: str) -> pa.Array:
        return pc.fill_null(pc.greater(pc.utf8_length(table[name]), 0), False)

    def finite(name: str) -> pa.Array:
        return pc.fill_null(pc.is_finite(table[name]), False)

    is_m = pc.fill_null(pc.equal(table["op"], "m"), False)
    is_r = pc.fill_null(pc.equal(table["op"], "r"), False)
    common = pc.and_(
        pc.and_(present("id"), pc.is_valid(table["created_at"])), pc.and_(present("space"), present("entity"))
    )
    megram_ok = pc.and_(
        pc.fill_null(pc.is_in(table["level"], pa.array(LEVELS)), False),
        pc.and_(pc.is_valid(table["content"]), pc.is_valid(table["state"])),
    )
    megram_ok = pc.and_(megram_ok, pc.and_(pc.and_(finite("f"), finite("sigma")), finite("k")))
    return pc.and_(common, pc.or_(is_r, pc.and_(is_m, megram_ok)))


def _reason(line: bytes) -> str | None:
    try:
        return line_problem(json.loads(line))
    except ValueError:
        return "not valid JSON"


def parse_spool(data: bytes) -> tuple[pa.Table, list[tuple[int, str]]]:
    """Complete spool lines → (valid records as Arrow, [(line index, reason)] of the bad ones).

    The fast path hands the bytes to Arrow's JSON reader whole; only when that fails, or
    some row's values are invalid, are lines looked at one by one, so a single bad line
    can cost neither the good ones nor a clear reason in the quarantine.
    """
    if not data:
        return LINE_SCHEMA.empty_table().append_column("seq", pa.array([], pa.int64())), []
    lines: list[bytes] | None = None
    try:
        table = _arrow_parse(data)
        kept: list[int] | None = None  # every line
        bad: list[tuple[int, str]] = []
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        lines = split_lines(data)
        bad = [(i, problem) for i, line in enumerate(lines) if (problem := _reason(line))]
        rejected = {i for i, _ in bad}
        kept = [i for i in range(len(lines)) if i not in rejected]
        try:
            good = b"".join(lines[i] + b"\n" for i in kept)
            table = _arrow_parse(good) if kept else LINE_SCHEMA.empty_table()
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # e.g. an integer beyond 64 bits: line by line
            table, kept = _parse_one_by_one(lines, kept, bad)
    mask = _semantic_mask(table)
    index = _positions(table.num_rows) if kept is None else pa.array(kept, pa.int64())
    if pc.all(mask).as_py() is not False:  # the common case: every row is valid, nothing to copy
        return table.append_column("seq", index), sorted(bad)
    rejected_rows = pc.filter(index, pc.invert(mask)).to_pylist()
    if rejected_rows:
        lines = lines if lines is not None else split_lines(data)
        bad += [(i, _reason(lines[i]) or "invalid field values") for i in rejected_rows]
    table = table.filter(mask).append_column("seq", pc.filter(index, mask))
    return table, sorted(bad)


def _positions(count: int) -> pa.Array:
    """0, 1, …, count-1 as int64 (a cumulative sum: ~10x faster than converting a Python range)."""
    return pc.subtract(pc.cumulative_sum(pa.repeat(1, count).cast(pa.int64())), 1)


def _parse_one_by_one(
    lines: list[bytes], kept: list[int], bad: list[tuple[int, str]]
) -> tuple[pa.Table, list]:
    tables, parsed = [], []
    for i in kept:
        try:
            tables.append(_arrow_parse(lines[i] + b"\n"))
            parsed.append(i)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            bad.append((i, f"unreadable: {exc}"))
    return (pa.concat_tables(tables) if tables else LINE_SCHEMA.empty_table()), parsed
