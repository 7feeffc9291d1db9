"""One PostgreSQL cluster for a whole test session, however many workers run it, and a Prefect server per worker.

The suite runs in two pytest-xdist workers (the README's test command).  Each worker is a pytest session of its
own, so a session-scoped fixture alone would start a cluster per worker; instead the controlling pytest process
makes a folder and names it in ``ARTOO_TEST_SHARED`` (its workers inherit the environment), the first worker that
needs the cluster starts it under a lock on that folder, later workers read its port from the state file, and the
controlling process stops it when the session ends (``pg_ctl`` detaches it, so the worker that happened to start
it can end first).  A plain ``pytest`` run without workers takes the same path in one process.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from artoo.servers.local import PrefectServer

SHARED_ENV = "ARTOO_TEST_SHARED"
STATE = "servers.json"


def make_shared_folder() -> Path:
    """The session's folder (the controlling process, once): readable by the ``postgres`` user."""
    folder = Path(tempfile.mkdtemp(prefix="artoo-test-shared-"))
    folder.chmod(0o755)  # the postgres user must reach its data directory inside
    os.environ[SHARED_ENV] = str(folder)
    return folder


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with (folder / "lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _state(folder: Path) -> dict:
    path = folder / STATE
    return json.loads(path.read_text()) if path.exists() else {}


def shared_postgres() -> str:
    """The session's cluster, started on first use: its libpq base URL (``postgresql://prefect@host:port``)."""
    from artoo.servers.local import Postgres

    folder = Path(os.environ[SHARED_ENV])
    with _locked(folder):
        state = _state(folder)
        if "postgres_port" not in state:
            database = Postgres(folder / "postgres").start()
            state["postgres_port"] = database.port
            (folder / STATE).write_text(json.dumps(state))
    return f"postgresql://prefect@127.0.0.1:{state['postgres_port']}"


def create_database(base: str, name: str) -> str:
    """Database ``name`` in the cluster at ``base`` (made unless it is there): its libpq URL."""
    import psycopg

    with psycopg.connect(f"{base}/prefect", autocommit=True) as con:
        if not con.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            con.execute(f"CREATE DATABASE {name}")
    return f"{base}/{name}"


def worker_prefect() -> PrefectServer:
    """This worker's own Prefect server, over a database of its own in the session's cluster.

    One server per worker, not one for all: the flow tests read a run's graph back as "the newest artoo-task
    run" (tests/run_graph.py), which holds only while one worker's runs are the server's only runs.
    """
    from artoo.servers.local import PrefectServer

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    url = "postgresql+asyncpg://" + create_database(shared_postgres(), f"prefect_{worker}").removeprefix("postgresql://")
    return PrefectServer(Path(os.environ[SHARED_ENV]) / f"prefect-{worker}", database_url=url).start()


def stop_shared(folder: Path) -> None:
    """End the session's cluster (the controlling process, once every worker has stopped its server)."""
    from artoo.servers.local import Postgres

    state = _state(folder)
    if "postgres_port" in state:
        Postgres(folder / "postgres", port=state["postgres_port"]).stop()
    shutil.rmtree(folder, ignore_errors=True)
