"""Where the benchmarks run: an isolated artoo home, a private Prefect home, and two Prefect modes.

A benchmark must measure artoo, not the user's machine state, so every run gets its own
``ARTOO_HOME``, workspace and ``PREFECT_HOME`` under one temporary root; no user config,
LLM endpoint or Prefect server leaks in from the environment.  ``PREFECT_HOME`` is read
when Prefect is imported, so :func:`isolate` must run first (``artoo bench`` and
``python -m artoo.bench`` do that).

The two modes are the two ways a user runs artoo: ``ephemeral`` (no ``PREFECT_API_URL``:
artoo's embedded server — Prefect's SQLite server, started by ``artoo.servers.embedded`` on the
first run in this process, exactly as ``artoo run`` starts it) and ``local``
(``artoo.servers.local.start_local``: ``prefect server start`` over a private PostgreSQL,
or a server the caller already runs, passed as ``api_url``).  Switching is a Prefect
settings context made process-wide, as Prefect's own test harness does, so the threads
Prefect starts see the same API.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

EPHEMERAL, LOCAL = "ephemeral", "local"
CLEARED_PREFIXES = ("ARTOO_", "OPENAI_", "BRAIN_", "TOOL_")
CLEARED = ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_HOME", "PREFECT_PROFILES_PATH")


def clean_environ(base: dict[str, str]) -> dict[str, str]:
    """``base`` without artoo/LLM settings or a Prefect API: what an isolated run starts from."""
    return {k: v for k, v in base.items() if not k.startswith(CLEARED_PREFIXES) and k not in CLEARED}


def homes(root: Path, name: str) -> dict[str, str]:
    """The environment of one isolated artoo installation under ``root/name`` (directories created).

    The ephemeral server's start-up timeout is raised from 20 s: a fresh ``PREFECT_HOME``
    migrates its database on the first start, which a busy 2-core machine can take longer
    than that to do.  It changes no timing, only how long Prefect waits before giving up.
    """
    base = root / name
    paths = {"ARTOO_HOME": base / "artoo-home", "ARTOO_WORKSPACE": base / "workspace",
             "PREFECT_HOME": base / "prefect-home"}
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    return {**{k: str(v) for k, v in paths.items()}, "ARTOO_LAW1_MODE": "deny",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"}


def llm_env(base_url: str) -> dict[str, str]:
    """Point both tiers at a scripted endpoint; one transport attempt, as the tests do.  The call budget is
    lifted: a benchmark measures what orchestration adds to a scenario's calls, not where a budget cuts them; and
    the scripted validators' pass accepts (``ggs.accept_judged``), so "1 subtask accept" ends the way it is named."""
    return {"OPENAI_BASE_URL": base_url, "OPENAI_MODEL": "scripted", "OPENAI_API_KEY": "bench",
            "ARTOO_LLM_MAX_RETRIES": "0", "ARTOO_GGS__MAX_CALLS": "100000", "ARTOO_GGS__ACCEPT_JUDGED": "true"}


def isolate(root: Path) -> dict[str, str]:
    """Make this process an isolated artoo installation; returns the environment it started with."""
    if "prefect" in sys.modules:
        raise RuntimeError("the benchmarks must isolate PREFECT_HOME before Prefect is imported: "
                           "run them through `artoo bench` or `python -m artoo.bench`")
    original = dict(os.environ)
    os.environ.clear()
    os.environ.update(clean_environ(original))
    os.environ.update(homes(root, "in-process"))
    return original


@dataclass
class Servers:
    """The Prefect servers one bench process uses (the ephemeral one is started by the first run)."""

    root: Path
    api_url: str | None = None
    """An already-running server to use as the ``local`` candidate (nothing is started then)."""
    started: list = field(default_factory=list)
    backend: str | None = None
    """What the local mode ran on: "postgresql", "sqlite" (no PostgreSQL here) or "given" (``api_url``)."""

    def start_local(self) -> str:
        """The ``local`` mode's API URL, starting Postgres + ``prefect server start`` when none was given."""
        if self.api_url:
            self.backend = self.backend or "given"
            return self.api_url
        from artoo.servers.local import start_local

        where = self.root / "local-server"
        where.mkdir(parents=True, exist_ok=True)
        for path in (self.root, where):
            path.chmod(0o755)  # the postgres user must reach its data directory
        server, database = start_local(where)
        self.backend = "postgresql" if database is not None else "sqlite"
        self.started += [s for s in (server, database) if s is not None]
        self.api_url = server.api_url
        return self.api_url

    def stop(self) -> None:
        """Stop what this object started (Prefect first, then its database)."""
        for thing in self.started:
            with contextlib.suppress(Exception):
                thing.stop()
        self.started.clear()


def stop_ephemeral() -> None:
    """Stop the embedded Prefect server the in-process runs used (after draining what it was sent).

    That is the in-process home's lingering server (or a one-shot one with ``server.linger_s`` = 0):
    left running it would serve nothing yet share the CPUs with the whole-process runs, and outlive
    the bench by ``linger_s``.
    """
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    from artoo.config.compat import stop_prefect_ephemeral_server

    for worker in (EventsWorker, APILogWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=10)
    stop_prefect_ephemeral_server()
    from artoo.config.settings import load_settings
    from artoo.servers import lingering
    from artoo.servers.embedded import stop_shared

    stop_shared()
    with contextlib.suppress(Exception):
        lingering.stop(load_settings().home_dir)


def stop_lingering(root: Path) -> None:
    """End the lingering server of every home the bench made under ``root``.

    A section run after :func:`stop_ephemeral` may start one again, and ``clean_environ`` drops the caller's
    ``server.linger_s``: left alone, each would serve nothing for ten minutes after the bench, sharing the
    CPUs with whatever the person runs next.
    """
    from artoo.servers import lingering

    for home in root.glob("*/artoo-home"):
        with contextlib.suppress(Exception):
            lingering.stop(home)


@contextlib.contextmanager
def prefect_mode(api_url: str | None) -> Iterator[None]:
    """Run Prefect against ``api_url``, or against the embedded server when None, for this process."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from artoo.config.compat import process_wide_settings

    saved = os.environ.get("PREFECT_API_URL")
    if api_url:
        os.environ["PREFECT_API_URL"] = api_url
        settings = temporary_settings(updates={PREFECT_API_URL: api_url})
    else:
        os.environ.pop("PREFECT_API_URL", None)
        settings = temporary_settings(restore_defaults={PREFECT_API_URL})
    try:
        with settings, process_wide_settings():
            if api_url:
                yield
            else:  # the server `artoo run` uses when no API is configured
                from artoo.servers.embedded import prefect_api

                with prefect_api():
                    yield
    finally:
        if saved is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = saved


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """Send file descriptor 2 (Prefect's console logs, artoo's progress lines) to ``path``."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("ab") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def temp_root() -> Path:
    """A fresh temporary directory for one bench process."""
    return Path(tempfile.mkdtemp(prefix="artoo-bench-"))
