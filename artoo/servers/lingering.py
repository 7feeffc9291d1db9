"""One Prefect server per ARTOO_HOME that outlives the command that started it.

Why: starting the embedded server costs every `artoo run` seconds, and six commands started
together each started their own server on one SQLite database, colliding at start-up
("database is locked") until five of them failed.  So the first command starts a server in
its own session, and later commands (run, chat, demo, eval, several at once) reuse it.

Everything that says "alive" is a `flock`, never a pid or a file's mere presence, so a crash
leaves nothing stale: the kernel drops a dead process's locks.

* ``server.lock``: held exclusively by the serving process for its whole life.  Its
  ``server.json`` beside it (pid, API URL, kind) is trusted only while that lock is held.
  ``artoo server`` takes the same lock, so commands find it without being told.
* ``start.lock``: serialises starters, so eight commands at once start one server.
* ``users.lock``: every command using the server holds it shared; the server counts as idle
  only when it can take it exclusively *and* no request came for ``linger_s`` seconds (a
  long model call makes no API request, but its command still holds the lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from artoo.config.errors import EnvironmentalFailure
from artoo.servers.app import server_env
from artoo.servers.process import api_url, free_port, healthy

IDLE_POLL_S = 1.0


@dataclass(frozen=True)
class Paths:
    """The files of one home's server record."""

    root: Path

    @classmethod
    def of(cls, home: Path) -> Paths:
        root = Path(home) / "server" / "current"
        root.mkdir(parents=True, exist_ok=True)
        return cls(root)

    @property
    def lock(self) -> Path:
        return self.root / "server.lock"

    @property
    def record(self) -> Path:
        return self.root / "server.json"

    @property
    def start(self) -> Path:
        return self.root / "start.lock"

    @property
    def users(self) -> Path:
        return self.root / "users.lock"

    @property
    def log(self) -> Path:
        return self.root / "server.log"


def _try_lock(path: Path, mode: int) -> int | None:
    """An fd holding ``mode`` on ``path`` (non-blocking), or None when someone else holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def live_record(home: Path) -> dict | None:
    """The running server of this home (its server.json), or None when no process holds the lock."""
    paths = Paths.of(home)
    fd = _try_lock(paths.lock, fcntl.LOCK_SH)
    if fd is not None:  # nobody holds it exclusively: no server, whatever files lie around
        os.close(fd)
        return None
    try:
        return json.loads(paths.record.read_text())
    except (OSError, ValueError):
        return None  # holder still starting up: its record is not written yet


CLAIM_WAIT_S = 1.0
"""How long a claim retries the lock: a command's ``live_record`` holds it shared for an instant while it
polls for the server it spawned, and a claim failing on that made the new server leave at once, as if
another had won (exit 0, no output: the command then failed with "artoo's Prefect server exited")."""


def claim(home: Path, api_url: str, kind: str) -> int | None:
    """Become this home's server: hold the lock and publish the record; None when one already runs.

    The returned fd is the claim: keep it open for the life of the server (closing it, or dying,
    releases it).
    """
    paths = Paths.of(home)
    deadline = time.monotonic() + CLAIM_WAIT_S
    while (fd := _try_lock(paths.lock, fcntl.LOCK_EX)) is None:
        if time.monotonic() > deadline:  # held all along: a server runs
            return None
        time.sleep(0.02)  # or a command's live_record held it shared for an instant
    tmp = paths.record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "api_url": api_url, "kind": kind, "started": time.time()}))
    tmp.replace(paths.record)
    return fd


def ensure(home: Path, linger_s: float, timeout_s: float) -> str:
    """The API URL of this home's server, starting a lingering one when none runs."""
    paths = Paths.of(home)
    deadline = time.monotonic() + timeout_s
    with _held(paths.start, fcntl.LOCK_EX):  # one starter at a time; the others then find its server
        record = live_record(home)
        if record is None:
            process = _spawn(paths, linger_s)
            record = _wait_for_record(home, process, deadline)
        while not healthy(record["api_url"]):
            if time.monotonic() > deadline:
                raise EnvironmentalFailure(f"artoo's Prefect server at {record['api_url']} did not answer within "
                                           f"{timeout_s:.0f} s: {_log_tail(paths.log)} (full log: {paths.log}; "
                                           "artoo stop ends it)")
            time.sleep(0.1)
        return record["api_url"]


_USER_FDS: dict[Path, int] = {}


def attach(home: Path) -> None:
    """Hold the users lock (shared) for the rest of this process: its server is not idle meanwhile.

    Taken before the server is looked up, so it cannot go idle between being found and used;
    the kernel releases it when the process ends, however it ends.
    """
    paths = Paths.of(home)
    if paths.users not in _USER_FDS:
        fd = os.open(paths.users, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _USER_FDS[paths.users] = fd


@contextlib.contextmanager
def _held(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)


def _spawn(paths: Paths, linger_s: float) -> subprocess.Popen:
    """Start ``python -m artoo.servers.lingering`` in its own session, its output appended to server.log."""
    with paths.log.open("ab") as log:
        argv = [sys.executable, "-m", "artoo.servers.lingering", str(paths.root.parents[1]), str(linger_s)]
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                env=server_env(parent=None))  # it outlives its starter by design


def _wait_for_record(home: Path, process: subprocess.Popen, deadline: float) -> dict:
    """The record of the server just spawned, or of the one that won the home from it.

    The new server takes the lock a moment before its record replaces the last server's, so a
    record is trusted only when it names the spawned process, or once that process has exited
    (it lost the race, and the record read under the lock is the winner's).
    """
    while True:
        record = live_record(home)
        code = process.poll()
        if record is not None and (record.get("pid") == process.pid or code is not None):
            return record
        if code is not None or time.monotonic() > deadline:
            log = Paths.of(home).log
            why = f"exited with code {code}" if code is not None else "did not start in time"
            raise EnvironmentalFailure(f"artoo's Prefect server {why}: {_log_tail(log)} (full log: {log})")
        time.sleep(0.05)


def _log_tail(log: Path, lines: int = 3) -> str:
    """The server log's last lines on one line, for an error message."""
    tail = log.read_text(errors="replace").strip().splitlines()[-lines:] if log.exists() else []
    return " | ".join(tail) or "no output"


def in_use(home: Path) -> bool:
    """Whether a command (run, chat, eval, …) holds this home's users lock right now."""
    return _held_by_someone(Paths.of(home).users)


def _held_by_someone(users: Path) -> bool:
    """Whether any process holds the users lock (shared, as every command using the server does)."""
    if not users.exists():
        return False
    fd = _try_lock(users, fcntl.LOCK_EX)
    if fd is None:
        return True
    os.close(fd)
    return False


def stop(home: Path, timeout_s: float = 15.0, force: bool = True) -> dict | None:
    """End this home's lingering server (SIGTERM); the record of what was stopped, or None.

    With ``force`` False a server that a running command uses is left alone (EnvironmentalFailure
    saying so): stopping it would fail that command half-way.
    """
    record = live_record(home)
    if record is None:
        return None
    if record.get("kind") != "embedded":
        raise EnvironmentalFailure(f"the server at {record['api_url']} is an `artoo server` (pid {record['pid']}): "
                                   "stop it where it runs (Ctrl-C)")
    if not force and in_use(home):
        raise EnvironmentalFailure(f"the server at {record['api_url']} is in use by a running artoo command; it "
                                   "stops by itself once idle (server.linger_s), or `artoo stop --force` ends it "
                                   "now and that command fails")
    with contextlib.suppress(ProcessLookupError):
        os.kill(int(record["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while live_record(home) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    return record


class Activity:
    """ASGI wrapper noting when the last request came, for the idle check."""

    def __init__(self, app) -> None:
        self.app = app
        self.last = time.monotonic()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            self.last = time.monotonic()
        await self.app(scope, receive, send)


def idle(activity: Activity, users: Path, linger_s: float) -> bool:
    """True when no request came for ``linger_s`` and no command holds the users lock.

    A home that was deleted (a test's or the bench's temporary one) has no users left to come back.
    """
    if time.monotonic() - activity.last < linger_s:
        return False
    if not users.parent.is_dir():
        return True
    return not _held_by_someone(users)


def serve(home: Path, linger_s: float) -> int:
    """The server process: claim the home, serve until idle for ``linger_s`` or SIGTERM."""
    import uvicorn

    from artoo.servers.app import create_app

    paths = Paths.of(home)
    port = free_port()
    url = api_url(port)
    activity = Activity(create_app(ephemeral=False))
    server = uvicorn.Server(uvicorn.Config(activity, host="127.0.0.1", port=port, log_level="error",
                                           lifespan="on"))

    def watch() -> None:
        while not server.started:
            time.sleep(0.05)
        claim_fd = claim(home, url, "embedded")
        if claim_fd is None:  # another server won the race: leave it the home
            server.should_exit = True
            return
        while not server.should_exit:
            if idle(activity, paths.users, linger_s):
                print(f"artoo: idle for {linger_s:g} s, stopping", file=sys.stderr, flush=True)
                server.should_exit = True
            time.sleep(IDLE_POLL_S)

    threading.Thread(target=watch, name="artoo-linger", daemon=True).start()
    server.run()
    return 0


if __name__ == "__main__":  # python -m artoo.servers.lingering HOME LINGER_S (started by ensure)
    sys.exit(serve(Path(sys.argv[1]), float(sys.argv[2])))
