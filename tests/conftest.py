"""Shared fixtures: one Prefect harness per session, isolated artoo homes, the scripted LLM.

Pure-logic tests request none of these and never start Prefect.  Flow tests request
``prefect_api`` (a real Prefect API server in a subprocess, started once) and
``scripted`` (the scripted OpenAI-compatible server on loopback, reached through the real
``openai`` client).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

LLM_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "BRAIN_BASE_URL", "BRAIN_API_KEY", "BRAIN_MODEL",
           "TOOL_BASE_URL", "TOOL_API_KEY", "TOOL_MODEL", "ARTOO_CONFIG")

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Servers started by tests persist events every 0.5 s, so a run's audit catch-up does not wait ~5 s.
os.environ.setdefault("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL", "0.5")
# Commands that start artoo's own (lingering) server in a test home let it go a few seconds after
# their last use, not ten minutes: a suite of them would otherwise leave dozens of servers behind.
os.environ.setdefault("ARTOO_SERVER__LINGER_S", "3")
# The scripted stories queue one executor answer per turn; a content probe (llm.content_probe) after a scripted
# first-turn final answer would take the next turn's answer.  Off here; tests/test_tool_behaviour.py turns it on.
os.environ.setdefault("ARTOO_LLM__CONTENT_PROBE", "false")
# Likewise a validator asked once more after code turned its pass (llm.rejudge_ungrounded) would take the answer a
# scripted story or a replayed real run queued for a later attempt or round.  Off here; the stories of the re-ask
# (tests/test_rejudge.py) turn it on and script that answer.
os.environ.setdefault("ARTOO_LLM__REJUDGE_UNGROUNDED", "false")
# Likewise R2's free-answer request for the task's reference run (checks.reference_call) would meet scripted
# stories and replayed real runs that queued no answer for it.  Off here; the stories of checks turn it on.
os.environ.setdefault("ARTOO_CHECKS__REFERENCE_CALL", "false")
# Most stories script validators that pass criteria no check decides (they are about replans, memory, Law 1): such
# a run ends "done, unverified" by default (ggs.accept_judged).  Those stories keep the spec's accept here; the
# endings table (tests/test_final_endings.py) and the stories of unverified runs turn it off.
os.environ.setdefault("ARTOO_GGS__ACCEPT_JUDGED", "true")
# A suite started in the background without job control (`(… &)` in a script) inherits SIGINT ignored, and
# every child it starts would too (an ignored signal survives exec): the Ctrl-C stories then fail for the
# runner's shell, not for artoo.  Restored here, children start with the default, as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    """The controlling process (not an xdist worker) makes the folder through which its workers share one
    PostgreSQL cluster (each worker starts its own Prefect server over it: tests/shared_servers.py)."""
    if not hasattr(config, "workerinput"):
        from tests.shared_servers import make_shared_folder

        config.artoo_shared = make_shared_folder()


@pytest.fixture(autouse=True)
def _early_requests_forgotten() -> Iterator[None]:
    """No test inherits another's early requests or run context: a request (its endpoint, port included, and its
    words) is sent early once per process (artoo.tasks.llm.transport.early), and a later test's scripted server
    may get the port; the runner sets the run's shared prompt prefix (prompting.RUN) for the rest of its
    process, which a later test's prompts would otherwise begin with."""
    yield
    early = sys.modules.get("artoo.tasks.llm.transport.early")
    if early is not None:
        early.EARLY.clear()
    prompting = sys.modules.get("artoo.tasks.roles.prompting")
    if prompting is not None:
        prompting.RUN.set(None)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session is over in every worker: stop the cluster one of them started."""
    folder = getattr(config, "artoo_shared", None)
    if folder is not None:
        from tests.shared_servers import stop_shared

        stop_shared(folder)


HEAVY = ("tests/test_three_workers.py", "tests/reliability/test_llm_failures.py", "tests/test_bench.py",
         "tests/test_lingering.py", "tests/test_schedules.py")
"""Files whose stories keep both cores busy by themselves (fifteen runs over three Prefect workers, ten ``artoo``
processes at once, the benchmark): two of them side by side made each slower than both in turn and pushed the
scheduler's story past its wait.  So they form one unit of work, run first and one after another on one worker,
while the other workers take the light files."""


def pytest_xdist_make_scheduler(config: pytest.Config, log) -> object:
    """xdist's file-at-a-time scheduling (module fixtures are set up once), with the HEAVY files as one unit."""
    from xdist.scheduler import LoadFileScheduling

    class HeavyTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "heavy" if path in HEAVY else path

    return HeavyTogether(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The HEAVY files first: ``--no-loadscope-reorder`` hands the units out in this order.  A HEAVY path that
    is no file (renamed, moved) would silently leave the unit and run beside the others: it stops the session."""
    gone = [path for path in HEAVY if not (config.rootpath / path).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py HEAVY names files that do not exist: {', '.join(gone)}")
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in HEAVY)


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """A real Prefect server for the whole session: ``prefect server start`` over a private PostgreSQL.

    Postgres, because Prefect's SQLite backend serialises concurrent subflow starts with
    multi-second lock back-offs (see artoo/servers/local.py).  Each xdist worker has its own
    server over a database of its own in the session's one cluster (tests/shared_servers.py).
    Without PostgreSQL binaries each worker falls back to Prefect's SQLite test harness.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from artoo.servers.local import postgres_bin
    from tests.shared_servers import worker_prefect

    if postgres_bin() is None:
        from prefect.testing.utilities import prefect_test_harness

        with prefect_test_harness(server_startup_timeout=60):
            yield PREFECT_API_URL.value()
        return
    server = worker_prefect()
    api_url = server.api_url
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = api_url
    try:
        with temporary_settings(updates={PREFECT_API_URL: api_url}), _global_settings():
            yield api_url
    finally:
        server.stop()
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


@pytest.fixture(scope="session")
def postgres_cluster() -> str:
    """The session's PostgreSQL cluster (the one under its Prefect server): its libpq base URL.

    The shared-memory backend's tests create one database per test in it (``memory_pg_url``).
    """
    from artoo.servers.local import postgres_bin
    from tests.shared_servers import shared_postgres

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    return shared_postgres()


@pytest.fixture
def memory_pg_url(postgres_cluster: str) -> str:
    """A fresh, empty database in the session's cluster, as a postgresql:// URL."""
    import uuid

    from tests.shared_servers import create_database

    return create_database(postgres_cluster, f"memory_{uuid.uuid4().hex[:12]}")


def _global_settings():
    """Make the session's settings the process-wide default, so flows run in threads see the server too.

    Prefect's own test harness does the same (prefect.testing.utilities.prefect_test_harness).
    """
    from artoo.config.compat import process_wide_settings

    return process_wide_settings()


@pytest.fixture
def artoo_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated ARTOO_HOME and workspace; no LLM configured; Law-1 denies (nobody to ask)."""
    for key in LLM_ENV:
        monkeypatch.delenv(key, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("ARTOO_HOME", str(home))
    monkeypatch.setenv("ARTOO_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("ARTOO_LAW1_MODE", "deny")
    monkeypatch.setenv("ARTOO_LLM_TIMEOUT_S", "20")
    monkeypatch.setenv("ARTOO_LLM_MAX_RETRIES", "0")
    return tmp_path


@pytest.fixture
def scripted(artoo_env: Path, monkeypatch: pytest.MonkeyPatch):
    """Start a scripted LLM server for a scenario and point artoo's settings at it."""
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    servers: list[ScriptedLLMServer] = []

    def start(scenario: dict) -> ScriptedLLMServer:
        server = ScriptedLLMServer(scenario).start()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        return server

    yield start
    for server in servers:
        server.stop()


def run_cli(*args: str) -> tuple[int, str, str]:
    """Invoke the real ``artoo`` Typer app in-process; returns (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from artoo.cli import app

    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def final_from(stdout: str) -> dict:
    """The one FinalResult JSON object ``artoo run --json`` prints."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one JSON line on stdout, got: {stdout!r}"
    return json.loads(lines[0])
