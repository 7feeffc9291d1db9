"""The single-writer protocol around the DuckDB file, built on ``fcntl.flock``.

DuckDB admits one read-write process per file and refuses (rather than waits) when a
reader and a writer collide, so we never let them collide: every process goes through
two lock files before it opens DuckDB at all.

* ``db.lock`` — shared while a process holds a read-only connection, exclusive while
  one holds the read-write connection (ingest, Dreamer, import, export).
* ``intent.lock`` — a writer takes it exclusive *before* waiting for ``db.lock``, and
  keeps it until it is done.  Readers pass through it shared before taking ``db.lock``,
  so no new reader slips in while a writer waits, and a reader that already holds
  ``db.lock`` checks it before each query and steps aside when a writer is waiting.
  Readers also drop an idle connection after a short delay (see MemoryStore), so a
  writer never waits for a process that is not querying.

flock locks belong to the open file description, are released by the kernel when the
process dies (even by SIGKILL), and never need a retry loop that could reopen a file
half-way through someone else's work.  Waits poll with a bounded timeout so a wedged
peer becomes a clear error instead of a hang.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from artoo.config.errors import EnvironmentalFailure


def flock_wait(fd: int, mode: int, timeout_s: float, what: str) -> None:
    """flock with a deadline: poll non-blocking with a short back-off."""
    deadline = time.monotonic() + timeout_s
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise EnvironmentalFailure(
                    f"memory store busy: waited {timeout_s:.0f} s for {what}"
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def try_flock(fd: int, mode: int) -> bool:
    """flock without waiting; True when the lock was taken."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class StoreLock:
    """Shared (reader) / exclusive (writer) access to one store directory's DuckDB file."""

    def __init__(self, root: Path, timeout_s: float = 600.0) -> None:
        self._db_path = root / "db.lock"
        self._intent_path = root / "intent.lock"
        self._timeout_s = timeout_s
        self._db_fd: int | None = None
        self._intent_fd: int | None = None
        self.mode: str | None = None
        """None, "shared" or "exclusive"."""

    def _open(self, path: Path) -> int:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def acquire_shared(self) -> None:
        """Wait until no writer is pending, then hold db.lock shared."""
        assert self.mode is None, "lock already held"
        intent = self._open(self._intent_path)
        try:
            flock_wait(intent, fcntl.LOCK_SH, self._timeout_s, "a pending writer to finish")
            db = self._open(self._db_path)
            try:
                flock_wait(db, fcntl.LOCK_SH, self._timeout_s, "the writer to release the database")
            except BaseException:
                os.close(db)
                raise
        finally:
            os.close(intent)
        self._db_fd, self.mode = db, "shared"

    def acquire_exclusive(self) -> None:
        """Announce the intent to write, then wait for readers to leave and hold db.lock exclusive."""
        assert self.mode is None, "lock already held"
        intent = self._open(self._intent_path)
        try:
            flock_wait(intent, fcntl.LOCK_EX, self._timeout_s, "another writer to finish")
            db = self._open(self._db_path)
            try:
                flock_wait(db, fcntl.LOCK_EX, self._timeout_s, "readers to release the database")
            except BaseException:
                os.close(db)
                raise
        except BaseException:
            os.close(intent)
            raise
        self._intent_fd, self._db_fd, self.mode = intent, db, "exclusive"

    def writer_waiting(self) -> bool:
        """True when some writer holds or waits for the intent lock."""
        fd = self._open(self._intent_path)
        try:
            return not try_flock(fd, fcntl.LOCK_SH)
        finally:
            os.close(fd)

    def release(self) -> None:
        """Drop whatever is held (closing the descriptors releases the locks)."""
        for fd in (self._db_fd, self._intent_fd):
            if fd is not None:
                os.close(fd)
        self._db_fd = self._intent_fd = self.mode = None

    def forget_after_fork(self) -> None:
        """In a forked child: close inherited descriptors without touching the parent's locks."""
        # Closing our copy does not release a flock the parent still holds through its own copy.
        self.release()
