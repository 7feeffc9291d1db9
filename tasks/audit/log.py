"""The append-only audit log on disk: one writer at a time, nothing observed twice.

Files under ``ARTOO_HOME/audit/`` (never the memory store's directory):

- ``audit.jsonl``: the hash-chained records (artoo.tasks.audit.chain).
- ``audit.lock``: an exclusive ``fcntl.flock`` taken around every append and every
  statistics update, so the auditor deployment, ``artoo run``'s embedded pass and the
  CLI never interleave.
- ``audit.head.json``: the record count and last link, so a truncated tail is detected.
- ``checkpoint.json``: the latest ``occurred`` time observed, where the next catch-up starts.

The seen-id index (Prefect event ids) is rebuilt from the log on start and kept in step
with appends made by other processes: under the lock, the writer first reads whatever
was appended since it last looked.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from artoo.tasks.audit.chain import GENESIS, line_of, link_of, seal


class AuditLogError(RuntimeError):
    """The log on disk is not what this writer appended (it shrank or was replaced)."""


@dataclass(frozen=True)
class AuditPaths:
    """Where the Auditor keeps its files under ARTOO_HOME."""

    home: Path

    @property
    def dir(self) -> Path:
        """``ARTOO_HOME/audit``."""
        return self.home / "audit"

    @property
    def log(self) -> Path:
        """The hash-chained JSONL log."""
        return self.dir / "audit.jsonl"

    @property
    def lock(self) -> Path:
        """The single-writer lock file."""
        return self.dir / "audit.lock"

    @property
    def head(self) -> Path:
        """Record count and last link."""
        return self.dir / "audit.head.json"

    @property
    def checkpoint(self) -> Path:
        """Latest observed ``occurred`` time."""
        return self.dir / "checkpoint.json"

    @property
    def stats(self) -> Path:
        """Persisted window statistics."""
        return self.dir / "audit_stats.json"

    @property
    def request(self) -> Path:
        """Present when the operator asked for a report the running auditor should publish."""
        return self.dir / "report.request"

    @property
    def reports(self) -> Path:
        """Every report published, one JSON object per line."""
        return self.dir / "reports.jsonl"


@contextlib.contextmanager
def locked(paths: AuditPaths) -> Iterator[None]:
    """Hold the Auditor's exclusive lock (blocking) for the duration."""
    paths.dir.mkdir(parents=True, exist_ok=True)
    with open(paths.lock, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def iter_lines(path: Path, offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """Complete lines from ``offset``: (offset after the line, the line without newline)."""
    if not path.exists():
        return
    with open(path, "rb") as handle:
        handle.seek(offset)
        position = offset
        for raw in handle:
            if not raw.endswith(b"\n"):
                return  # an incomplete tail is not a record
            position += len(raw)
            yield position, raw[:-1]


def iter_records(path: Path, offset: int = 0) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    """(offset after, parsed record or None when unreadable, raw line) for each complete line."""
    for position, line in iter_lines(path, offset):
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        yield position, (record if isinstance(record, dict) else None), line


def follow(path: Path, last: int = 10, once: bool = False, poll_s: float = 0.5) -> Iterator[bytes]:
    """The last ``last`` complete lines, then (unless ``once``) every line appended, like ``tail -f``."""
    recent: deque[bytes] = deque(maxlen=max(last, 0))
    offset = 0
    for end, line in iter_lines(path):
        recent.append(line)
        offset = end
    yield from recent
    while not once:
        time.sleep(poll_s)
        size = path.stat().st_size if path.exists() else 0
        start = 0 if size < offset else offset  # replaced or truncated: start again
        for end, line in iter_lines(path, start):
            offset = end
            yield line


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def load_checkpoint(paths: AuditPaths) -> datetime | None:
    """The latest ``occurred`` time observed, or None before the first observation."""
    try:
        data = json.loads(paths.checkpoint.read_text(encoding="utf-8"))
        return datetime.fromisoformat(data["occurred"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_checkpoint(paths: AuditPaths, occurred: datetime) -> None:
    """Move the checkpoint forward (never back)."""
    current = load_checkpoint(paths)
    if current is None or occurred > current:
        write_atomic(paths.checkpoint, json.dumps({"occurred": occurred.isoformat()}))


class AuditLog:
    """The single writer of ``audit.jsonl``; duplicates are ignored by Prefect event id."""

    def __init__(self, home: Path) -> None:
        self.paths = AuditPaths(Path(home))
        self._ids: set[str] = set()
        self._count = 0
        self._link = GENESIS
        self._offset = 0

    @property
    def count(self) -> int:
        """Records in the log as of the last sync."""
        return self._count

    def seen(self, event_id: str) -> bool:
        """True when this event is already in the log (as of the last sync)."""
        return event_id in self._ids

    def sync(self) -> None:
        """Read records appended since the last look (rebuilds the index on first use)."""
        with locked(self.paths):
            self._sync()

    def append(self, observations: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Seal and append the observations not yet in the log; returns the new records."""
        with locked(self.paths):
            self._sync()
            new: list[dict[str, Any]] = []
            for fields in observations:
                if fields["event_id"] in self._ids:
                    continue
                record = seal(fields, self._count + 1, self._link)
                line = line_of(record)
                self._ids.add(record["event_id"])
                self._count, self._link = record["seq"], link_of(line)
                new.append(record)
            if new:
                self._write(b"".join(line_of(r) for r in new))
            return new

    def _write(self, data: bytes) -> None:
        with open(self.paths.log, "ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        self._offset += len(data)
        write_atomic(self.paths.head, json.dumps({"records": self._count, "link": self._link}))

    def _sync(self) -> None:
        path = self.paths.log
        size = path.stat().st_size if path.exists() else 0
        if size < self._offset:
            raise AuditLogError(f"{path} shrank from {self._offset} to {size} bytes since it was read; "
                                "run `artoo audit verify`")
        self._repair_torn_tail(size)
        for position, record, line in iter_records(path, self._offset):
            self._offset = position
            self._count += 1
            self._link = link_of(line)
            if record is not None and "event_id" in record:
                self._ids.add(str(record["event_id"]))

    def _repair_torn_tail(self, size: int) -> None:
        """Cut an incomplete last line: a write that crashed midway (whole lines are written under the lock)."""
        path = self.paths.log
        if size == 0:
            return
        with open(path, "rb") as handle:
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
        data = path.read_bytes()
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as handle:
            handle.truncate(keep)
