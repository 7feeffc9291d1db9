"""A local Prefect server on loopback, backed by a private PostgreSQL cluster.

Why Postgres: Prefect 3.8.8's SQLite backend answers concurrent writes (several subtask
subflows starting at once) with ``503 database is locked``, and the client backs off
2ⁿ seconds, so parallel subtasks start seconds apart.  Measured here: four parallel
one-second subflows took 3.6–8 s on SQLite and 1.6 s on Postgres.  The cluster lives in
a directory of ours, listens on 127.0.0.1 only, trusts local connections, and is
stopped with the server.  When no PostgreSQL binaries exist, the server falls back to
SQLite and says so.  ``artoo server`` watches the server's own log (artoo.servers.log).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from artoo.config.errors import ConfigurationError
from artoo.servers.process import api_url, free_port, healthy

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
        return api_url(self.port)

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
            if healthy(self.api_url):
                return self
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
