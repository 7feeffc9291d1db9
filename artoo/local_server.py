"""A local Prefect server on loopback, backed by a private PostgreSQL cluster.

Why Postgres: Prefect 3.8.8's SQLite backend answers concurrent writes (several subtask
subflows starting at once) with ``503 database is locked``, and the client backs off
2ⁿ seconds, so parallel subtasks start seconds apart.  Measured here: four parallel
one-second subflows took 3.6–8 s on SQLite and 1.6 s on Postgres.  The cluster lives in
a directory of ours, listens on 127.0.0.1 only, trusts local connections, and is
stopped with the server.  When no PostgreSQL binaries exist, the server falls back to
SQLite and says so.

The server's own log (``server.log`` in its PREFECT_HOME) is where Prefect's background
services (the scheduler, the late-runs marker, the event persister…) report their failures,
and nobody reads it: a scheduler that failed on every loop once left every schedule dead
(issue #19).  ``ServerLogWatcher`` follows that log and says each distinct service failure
in one terminal line that points at the full log; ``artoo server`` and the embedded server
both use it.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from artoo.config.errors import ConfigurationError

SCHEDULER_DEFAULTS = {
    "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "60",
    "PREFECT_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS": "5",
    "PREFECT_SERVER_SERVICES_SCHEDULER_MIN_RUNS": "3",
    "PREFECT_SERVER_SERVICES_SCHEDULER_MIN_SCHEDULED_TIME": "PT1H",
}
"""The scheduler settings ``artoo server`` runs with (Prefect's own defaults, spelled out; each yields to the
environment): a full pass every 60 s, a pass over deployments created or changed in the last seconds every 5 s
(so the Dreamer's and the Auditor's first runs exist within seconds of ``artoo serve``), and at least 3 runs /
one hour scheduled ahead of every schedule."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL server bin directory, if any."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("postgres")
    return Path(found).parent if found else None


def _as_owner(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the ``postgres`` user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


@dataclass
class Postgres:
    """A private cluster: ``start()`` initialises it on first use."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    bin_dir: Path | None = field(default_factory=postgres_bin)

    @property
    def url(self) -> str:
        """SQLAlchemy URL Prefect's server uses."""
        return f"postgresql+asyncpg://prefect@127.0.0.1:{self.port}/prefect"

    def _run(self, *argv: str) -> None:
        result = subprocess.run(_as_owner([str(self.bin_dir / argv[0]), *argv[1:]]), capture_output=True, text=True)
        if result.returncode != 0:
            raise ConfigurationError(f"PostgreSQL {argv[0]} failed: {result.stderr.strip() or result.stdout.strip()}")

    def start(self) -> Postgres:
        """Initialise (once), start, and create the ``prefect`` database."""
        if self.bin_dir is None:
            raise ConfigurationError("PostgreSQL is not installed (apt-get install postgresql)")
        fresh = not (self.data_dir / "PG_VERSION").exists()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.data_dir, "postgres")
            self.data_dir.chmod(0o700)
        if fresh:
            self._run("initdb", "-D", str(self.data_dir), "-A", "trust", "-U", "prefect", "--no-sync")
        options = f"-p {self.port} -k {self.data_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", str(self.data_dir / "server.log"),
                  "-w", "start")
        self._ensure_database()  # also after a first start that was interrupted before createdb
        return self

    def _ensure_database(self) -> None:
        argv = [str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "prefect", "prefect"]
        result = subprocess.run(_as_owner(argv), capture_output=True, text=True)
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise ConfigurationError(f"PostgreSQL createdb failed: {result.stderr.strip()}")

    def stop(self) -> None:
        """Stop the cluster (fast shutdown); data stays for the next start."""
        if self.bin_dir is not None and (self.data_dir / "postmaster.pid").exists():
            subprocess.run(_as_owner([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "stop"]),
                           capture_output=True)


@dataclass
class PrefectServer:
    """``prefect server start`` on a free loopback port with its own PREFECT_HOME."""

    home: Path
    port: int = field(default_factory=free_port)
    database_url: str | None = None
    process: subprocess.Popen | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    """Settings for this server only (tests shorten the scheduler's loop with it); they win over the rest."""
    log_offset: int = 0
    """Where this start's output begins in ``server.log`` (earlier starts append to the same file)."""

    @property
    def log_path(self) -> Path:
        """The server's own log: its output and every background service's errors."""
        return self.home / "server.log"

    @property
    def api_url(self) -> str:
        """The API URL clients use (``PREFECT_API_URL``)."""
        return f"http://127.0.0.1:{self.port}/api"

    def env(self) -> dict[str, str]:
        """Environment of the server process."""
        env = dict(os.environ, PREFECT_HOME=str(self.home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
        env.pop("PREFECT_API_URL", None)
        # The UI asks /ui-settings where the API is; without this it answers port 4200 whatever --port says.
        env["PREFECT_UI_API_URL"] = self.api_url
        env.setdefault("PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT", "false")
        # Store events every 0.1 s (default 5 s) so the embedded audit pass after `artoo run` hardly waits for them.
        env.setdefault("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL", "0.1")
        for key, value in SCHEDULER_DEFAULTS.items():
            env.setdefault(key, value)
        if self.database_url:
            env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = self.database_url
        return {**env, **self.extra_env}

    def start(self, timeout_s: float = 90.0) -> PrefectServer:
        """Start and wait until ``/api/health`` answers."""
        self.home.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.log_offset = log.tell()
        prefect = str(Path(sys.executable).with_name("prefect"))
        self.process = subprocess.Popen([prefect, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
                                        env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConfigurationError(f"prefect server exited early; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise ConfigurationError(f"prefect server did not answer within {timeout_s:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        """Terminate the server process group."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)


def start_local(root: Path, use_postgres: bool = True,
                extra_env: dict[str, str] | None = None) -> tuple[PrefectServer, Postgres | None]:
    """Start Postgres (when available and wanted) and a Prefect server over it (``extra_env``: its settings)."""
    database = None
    if use_postgres and postgres_bin() is not None:
        database = Postgres(root / "postgres").start()
    server = PrefectServer(root / "prefect", database_url=database.url if database else None,
                           extra_env=dict(extra_env or {}))
    try:
        server.start()
    except Exception:
        if database:
            database.stop()
        raise
    return server, database


RECORD = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| (?P<level>[A-Z]+)\s*\| (?P<logger>\S+) - (?P<message>.*)$")
"""One record in Prefect's standard log format: ``12:00:00.123 | ERROR   | docket.worker - message``."""
EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")
"""The line a traceback ends with: ``sqlalchemy.exc.InvalidRequestError: Can't evaluate…``."""
FAILED = ("ERROR", "CRITICAL")


@dataclass(frozen=True)
class ServiceError:
    """One failure the server logged: where, and the exception (or message) that says why."""

    logger: str
    """The logger that wrote the record (``docket.worker``, ``prefect.server.services.foreman``…)."""
    service: str | None
    """The background service that failed (``schedule_deployments``), when the record names one."""
    error: str
    """The last exception line of the record's traceback (``OverflowError: date value out of range``),
    else the record's message."""


def _service(logger: str, message: str) -> str | None:
    """Docket names the failed service function (``↩ [100ms] schedule_deployments(){…}``); Prefect's
    services log under ``prefect.server.services.<name>``."""
    if logger.startswith("docket"):
        found = re.search(r"(\w+)\(", message)
        return found.group(1) if found else None
    if logger.startswith("prefect.server.services."):
        return logger.removeprefix("prefect.server.services.")
    return None


def service_errors(lines: Iterable[str]) -> list[ServiceError]:
    """Every ERROR/CRITICAL record in these server log lines, each with the exception its traceback ends in."""
    found: list[ServiceError] = []
    record: re.Match | None = None  # the failed record being read
    error: str | None = None
    in_traceback = False
    for raw in [*lines, "00:00:00.000 | INFO    | end - of lines"]:
        line = raw.rstrip("\n")
        started = RECORD.match(line)
        if started:
            if record:
                found.append(ServiceError(record["logger"], _service(record["logger"], record["message"]),
                                          error or record["message"].strip()))
            record, error = (started if started["level"] in FAILED else None), None
            in_traceback = started["message"].startswith("Traceback (most recent call last)")  # uvicorn's way
        elif record and line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif record and in_traceback and EXCEPTION.match(line):
            error, in_traceback = line.strip(), False  # a chained traceback's last exception wins
    return found


def error_line(prefix: str, error: ServiceError, log: Path) -> str:
    """The one terminal line for a service failure: what failed, why, and where the whole story is."""
    what = f"'s {error.service} service failed" if error.service else f" logged an error ({error.logger})"
    why = error.error if len(error.error) <= 200 else error.error[:199] + "…"
    return f"{prefix}: the Prefect server{what}: {why} (full log: {log})"


class ServerLogWatcher:
    """Follows a server log from its current end and says each distinct service failure once.

    ``poll()`` reads the whole lines appended since the last call.  The last record read stays
    pending while the log still grows (its traceback may be half written) and is parsed once
    the next record starts or the log stops growing.  ``start()`` polls on a daemon thread.
    """

    def __init__(self, log: Path, say: Callable[[str], None], prefix: str = "artoo server",
                 every_s: float = 1.0, offset: int | None = None) -> None:
        self.log, self.say, self.prefix, self.every_s = log, say, prefix, every_s
        self.offset = offset if offset is not None else log.stat().st_size if log.exists() else 0
        self.pending: list[str] = []
        self.seen: set[ServiceError] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> list[ServiceError]:
        """Say the failures completed since the last poll; returns the ones said now."""
        try:
            with self.log.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        self.pending += complete.decode("utf-8", "replace").splitlines()
        cut = len(self.pending)
        if complete:  # still growing: keep the last record back until the next one starts
            cut = max((i for i, line in enumerate(self.pending) if RECORD.match(line)), default=0)
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        new = [e for e in dict.fromkeys(service_errors(ready)) if e not in self.seen]
        for failure in new:
            self.seen.add(failure)
            self.say(error_line(self.prefix, failure, self.log))
        return new

    def start(self) -> ServerLogWatcher:
        """Poll every ``every_s`` seconds on a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="artoo-server-log", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.poll()

    def stop(self) -> None:
        """Stop the thread after a last look (a failure that ended the server is still said)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poll()
        self.poll()  # the log no longer grows: what was held back is complete now
