"""One real Prefect server for the end-to-end tests, with its own PREFECT_HOME (and PostgreSQL).

Not the session's ``prefect_api`` server: these tests serve deployments, run a worker and
start the Auditor, which reads every ``artoo.*`` event on its server, so they get a server
of their own.  It persists events every half second (the default is five) so the tests can
read them back soon after a run.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

FLUSH_ENV = "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL"


@pytest.fixture(scope="session")
def e2e_server() -> Iterator:
    """``prefect server start`` on a free loopback port over a private PostgreSQL (artoo.servers.local)."""
    from artoo.servers.local import start_local

    root = Path(tempfile.mkdtemp(prefix="artoo-e2e-server-"))
    root.chmod(0o755)  # the postgres user must reach its data directory
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FLUSH_ENV, "0.5")
        server, database = start_local(root)
    try:
        yield server
    finally:
        server.stop()
        if database:
            database.stop()
        shutil.rmtree(root, ignore_errors=True)
