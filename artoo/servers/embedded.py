"""artoo's embedded Prefect API: Prefect's own one-shot local server, started by artoo.

With no Prefect API configured, Prefect starts an ephemeral server itself: a uvicorn
subprocess serving Prefect's API app over SQLite.  artoo starts that same server (same app,
built by artoo.config.compat.prefect_server_app, same database) itself, for two reasons
measured on `artoo run` (``server.embedded = "prefect"`` leaves it to Prefect instead):

* **SQLite lock collisions cost 2 s each.**  Concurrent writes (parallel subflows, Prefect's
  own log and event writers) meet "database is locked"; the server answers HTTP 503, and
  Prefect's client sleeps 2ⁿ s unless the response says ``Retry-After``, which it never does.
  The app here adds ``Retry-After`` to every 503: 0.25 s for a lone collision, doubling with
  each further 503 of the last two seconds (up to 4 s), so a crowd still backs off as
  Prefect's own schedule would, only starting at a quarter second.  Clients of this server
  retry up to 10 times (Prefect's default is 5, sized for its 2ⁿ s waits).
* **Write transactions queue instead of colliding.**  Prefect opens its SQLite write
  transactions ``BEGIN DEFERRED``: two that read first and then write deadlock, and SQLite
  fails one at once with "database is locked" (its busy timeout cannot help a deadlock), which
  the API turns into a 503 and a retry.  ``compat.sqlite_immediate_writes`` makes every transaction Prefect
  opens ``BEGIN IMMEDIATE``: it takes the write lock first, so the next one waits in SQLite's
  busy handler (milliseconds) instead of failing.  Parallel subflows on this server went from
  colliding on nearly every start to overlapping (bench/README.md, ``parallel``).
* **Start-up overlaps the imports.**  Prefect starts its server at the first API call, after
  `artoo run` has imported the flows (1–2 s); ``start_early`` launches it first (the server
  spends ~3 s importing Prefect's server in its own process meanwhile).

The server dies with the process that started it: at exit, and — when that process is
killed — because the server watches its parent and exits when it is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from artoo.config.compat import note_prefect_version
from artoo.config.errors import EnvironmentalFailure
from artoo.servers.app import server_env
from artoo.servers.log import ServerLogWatcher, last_error
from artoo.servers.prefect_sources import startup_timeout_s, surely_unconfigured
from artoo.servers.process import api_url, free_port, healthy, port_taken

CLIENT_MAX_RETRIES = 10
PORT_TAKEN_EXIT = 3
"""uvicorn's exit code when it cannot bind, but also when the app's start-up fails."""
MAX_RELAUNCHES = 3
LINGER_START_S = 120.0
"""Least time a command waits for a lingering server it started to answer."""
LOG_MAX_BYTES = 5_000_000
"""The server's log (PREFECT_HOME/embedded-server.log) starts afresh when it is this large."""

_SHARED: EmbeddedServer | None = None
_EARLY: _Lookup | None = None
_LOCK = threading.Lock()


class EmbeddedServer:
    """One uvicorn subprocess serving the wrapped app on a free loopback port."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.ready = False
        self.launches = 0
        self.log_start = 0
        self.log: Any = None
        self.watcher: Any = None
        """Says each failure the server logs in one line on stderr (artoo.servers.log.ServerLogWatcher)."""

    @property
    def api_url(self) -> str:
        """Where Prefect's client finds it."""
        return api_url(self.port)

    def launch(self, port: int | None = None) -> EmbeddedServer:
        """Start the process on ``port`` (a free one by default) and return at once (``wait_ready`` waits)."""
        note_prefect_version()
        self.port = port or free_port()
        self.launches += 1
        self._watch_log()
        command = [sys.executable, "-m", "uvicorn", "--factory", "artoo.servers.app:create_app", "--host", "127.0.0.1",
                   "--port", str(self.port), "--log-level", "error", "--lifespan", "on"]
        # its output goes to its log; each service failure is said on our stderr in one line (`artoo run --json`
        # prints exactly one JSON object on stdout)
        self.process = subprocess.Popen(command, env=server_env(parent=os.getpid()), stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def _watch_log(self) -> None:
        """Open the server's log (beside Prefect's database; restarted past 5 MB) and follow it."""
        from prefect.settings import get_current_settings

        seen = set()
        if self.watcher is not None:  # a relaunch (the port was taken): the old process is gone
            self.watcher.stop()
            self.log.close()
            seen = self.watcher.seen  # a failure already said is not said again
        path = get_current_settings().home / "embedded-server.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.log = path.open("ab" if path.exists() and path.stat().st_size < LOG_MAX_BYTES else "wb")
        self.log_start = self.log.tell()
        self.watcher = ServerLogWatcher(path, _say, prefix="artoo", offset=self.log_start)
        self.watcher.seen = seen
        self.watcher.start()

    def wait_ready(self, timeout_s: float) -> None:
        """Block until ``/health`` answers; a clear EnvironmentalFailure when it never does."""
        deadline = time.monotonic() + timeout_s
        while not self.ready:
            code = self.process.poll()
            if code == PORT_TAKEN_EXIT and port_taken(self.port) and self.launches <= MAX_RELAUNCHES:
                self.launch()  # uvicorn could not bind: the port was taken since we picked it
                continue
            if code is not None or time.monotonic() > deadline:
                log, start = self.watcher.log, self.log_start
                self.stop()
                why = f"exited with code {code}" if code is not None else f"did not answer within {timeout_s:.0f} s"
                if code == PORT_TAKEN_EXIT:
                    why = (f"failed to start (exit {code}; port {self.port} is free, so Prefect's app itself "
                           "failed: a damaged or newer database under PREFECT_HOME is the usual cause)")
                cause = last_error(log, start)
                raise EnvironmentalFailure(
                    f"the embedded Prefect server {why}{': ' + cause if cause else ''} (its own errors are in "
                    f"{log}). Point "
                    "artoo at a running server instead (`artoo server`, then PREFECT_API_URL), or raise "
                    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.")
            self.ready = healthy(self.api_url)
            if not self.ready:
                time.sleep(0.1)

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 5 s)."""
        process, self.process, self.ready = self.process, None, False
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()  # a failure logged just before the end is still said
            self.log.close()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _api_configured() -> bool:
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return bool(settings.api.url) or not settings.server.ephemeral.enabled


def start_early() -> None:
    """Find or launch the server now, unless a Prefect API is configured.

    With ``server.linger_s`` > 0 (the default) that is this home's lingering server, looked up or
    started in a thread while the caller imports its flows; with 0, a one-shot server of this process.
    When Prefect is surely unconfigured (artoo.servers.prefect_sources) the lookup starts before Prefect's
    settings are imported (0.5–0.8 s sooner on a cold command); otherwise Prefect is asked first.
    """
    global _SHARED, _EARLY
    note_prefect_version()
    with _LOCK:
        if _SHARED is not None or _EARLY is not None or _left_to_prefect():
            return
        home, linger_s = _lingering()
        if linger_s > 0 and surely_unconfigured():
            _EARLY = _Lookup(home, linger_s, max(startup_timeout_s(), LINGER_START_S))
            return
        if _api_configured():
            return
        if linger_s > 0:
            _EARLY = _Lookup(home, linger_s)
        else:
            _SHARED = EmbeddedServer().launch()
            atexit.register(stop_shared)


class _Lookup(threading.Thread):
    """This home's lingering server, found or started in the background."""

    def __init__(self, home: Any, linger_s: float, timeout_s: float | None = None) -> None:
        super().__init__(name="artoo-server-lookup", daemon=True)
        self.home, self.linger_s, self.timeout_s = home, linger_s, timeout_s
        self.api_url: str | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        from artoo.servers import lingering

        try:
            lingering.attach(self.home)
            # a first start imports Prefect's whole server: on a busy machine that alone can pass the
            # one-shot server's 20 s, and a lingering server is started once, so allow it more
            timeout = self.timeout_s if self.timeout_s is not None else max(_startup_timeout(), LINGER_START_S)
            self.api_url = lingering.ensure(self.home, self.linger_s, timeout)
        except BaseException as exc:  # re-raised in the caller's thread by result()
            self.error = exc

    def result(self) -> str:
        self.join()
        if self.error is not None:
            raise self.error
        return str(self.api_url)


def _startup_timeout() -> float:
    from prefect.settings import get_current_settings
    return get_current_settings().server.ephemeral.startup_timeout_seconds


def _left_to_prefect() -> bool:
    """``server.embedded = "prefect"``: Prefect starts its own ephemeral server at the first API call."""
    from artoo.config.settings import load_settings

    return load_settings().server.embedded == "prefect"


def _lingering() -> tuple[Any, float]:
    """ARTOO_HOME and server.linger_s from the settings."""
    from artoo.config.settings import load_settings

    settings = load_settings()
    return settings.home_dir, settings.server.linger_s


def stop_shared() -> None:
    """Stop this process's embedded server, if it started one."""
    global _SHARED
    with _LOCK:
        server, _SHARED = _SHARED, None
    if server is not None:
        server.stop()


@contextlib.contextmanager
def prefect_api() -> Iterator[str]:
    """Run Prefect in this block against the configured API, or else this process's embedded server."""
    from prefect.settings import PREFECT_API_URL, get_current_settings

    if _api_configured() or _left_to_prefect():
        note_prefect_version()
        yield str(PREFECT_API_URL.value() or "")  # "" with server.embedded = "prefect": Prefect's own server
        return
    start_early()
    watcher = None
    if _EARLY is not None:
        from artoo.servers.lingering import Paths

        url = _EARLY.result()
        # the lingering server's failures while this command uses it: one line each on stderr
        watcher = ServerLogWatcher(Paths.of(_EARLY.home).log, _say, prefix="artoo").start()
    else:
        _SHARED.wait_ready(get_current_settings().server.ephemeral.startup_timeout_seconds)
        url = _SHARED.api_url
    try:
        with _pointed_at(url):
            yield url
    finally:
        if watcher is not None:
            watcher.stop()


@contextlib.contextmanager
def _pointed_at(api_url: str) -> Iterator[None]:
    """Every thread of this process (Prefect's event and log workers too) uses ``api_url`` in the block,
    with the retry budget the short Retry-After waits are meant for."""
    from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

    from artoo.config.compat import process_wide_settings

    retries = max(CLIENT_MAX_RETRIES, PREFECT_CLIENT_MAX_RETRIES.value())
    with (temporary_settings(updates={PREFECT_API_URL: api_url, PREFECT_CLIENT_MAX_RETRIES: retries}),
          process_wide_settings()):
        yield
