"""A local Prefect server on loopback, backed by a private PostgreSQL cluster.

Why Postgres: Prefect 3.8.8's SQLite backend answers concurrent writes (several subtask
subflows starting at once) with ``503 database is locked``, and the client backs off
2ⁿ seconds, so parallel subtasks start seconds apart.  Measured here: four parallel
one-second subflows took 3.6–8 s on SQLite and 1.6 s on Postgres.  The cluster lives in
a directory of ours, listens on 127.0.0.1 only, trusts local connections, and is
stopped with the server.  When no PostgreSQL binaries exist, the server falls back to
SQLite and says so.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from artoo.config.errors import ConfigurationError


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
        # Store events every 0.5 s (default 5 s) so the embedded audit pass after `artoo run` does not wait for them.
        env.setdefault("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL", "0.5")
        if self.database_url:
            env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = self.database_url
        return env

    def start(self, timeout_s: float = 90.0) -> PrefectServer:
        """Start and wait until ``/api/health`` answers."""
        self.home.mkdir(parents=True, exist_ok=True)
        log = (self.home / "server.log").open("ab")
        prefect = str(Path(sys.executable).with_name("prefect"))
        self.process = subprocess.Popen([prefect, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
                                        env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConfigurationError(f"prefect server exited early; see {self.home / 'server.log'}")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise ConfigurationError(f"prefect server did not answer within {timeout_s:.0f} s; see {self.home}/server.log")

    def stop(self) -> None:
        """Terminate the server process group."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)


def start_local(root: Path, use_postgres: bool = True) -> tuple[PrefectServer, Postgres | None]:
    """Start Postgres (when available and wanted) and a Prefect server over it."""
    database = None
    if use_postgres and postgres_bin() is not None:
        database = Postgres(root / "postgres").start()
    server = PrefectServer(root / "prefect", database_url=database.url if database else None)
    try:
        server.start()
    except Exception:
        if database:
            database.stop()
        raise
    return server, database
