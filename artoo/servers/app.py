"""The Prefect API app artoo serves, shared by the one-shot embedded server and the lingering one.

Why its own module: both servers build the same app (Prefect's server app behind a Retry-After on
every 503, SQLite writes that queue instead of deadlocking, an exit when the parent process is gone)
from the same defaults; kept in either server's module, each would import the other (an
``embedded`` ↔ ``lingering`` import circle).  ``python -m uvicorn --factory
artoo.servers.app:create_app`` is what the embedded server runs.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from artoo.config.compat import prefect_server_app, sqlite_immediate_writes

RETRY_AFTER_S = 0.25
"""What a lone 503 tells Prefect's client to wait before its retry (instead of 2, 4, 8… s)."""
RETRY_AFTER_MAX_S = 4.0
CROWD_WINDOW_S = 2.0
"""503s this recent count as one crowd: each doubles the next Retry-After."""

PARENT_ENV = "ARTOO_EMBEDDED_SERVER_PARENT"
"""The pid the server process watches: it exits when that process is gone."""

EPHEMERAL_DEFAULTS = {
    "PREFECT_UI_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_FOREMAN_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_CANCELLATION_CLEANUP_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_REPOSSESSOR_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_EVENT_LOGGER_ENABLED": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "0.1",
}
"""Defaults for a one-shot server (each yields to the user's environment): nothing is scheduled,
no worker polls, nobody opens its UI (~10 s → ~4 s start-up); events are persisted within 0.1 s
(not five) so the run's embedded audit pass hardly waits for them (bench/README.md: the in-process
tail 0.18–0.45 → 0.11–0.30 s against 0.5 s, parallel 8 ÷ 1 unchanged)."""


def server_env(parent: int | None) -> dict[str, str]:
    """The environment of an embedded server process: the ephemeral defaults under the caller's environment,
    no UI, no API URL of its own; ``parent`` is the process it dies with (None: it outlives its starter)."""
    env = {**EPHEMERAL_DEFAULTS, **os.environ, "PREFECT_UI_ENABLED": "0"}
    env.pop("PREFECT_API_URL", None)
    env.pop(PARENT_ENV, None)
    if parent is not None:
        env[PARENT_ENV] = str(parent)
    return env


def retry_after(recent: int) -> float:
    """Seconds a 503 asks the client to wait, given how many 503s came just before it."""
    return min(RETRY_AFTER_S * 2**recent, RETRY_AFTER_MAX_S)


class RetryAfter503:
    """ASGI wrapper: every 503 response gets a ``Retry-After`` header, short unless 503s crowd."""

    def __init__(self, app: Any, clock: Any = time.monotonic) -> None:
        self.app = app
        self._clock = clock
        self._recent: list[float] = []

    def _next_wait(self) -> float:
        now = self._clock()
        self._recent = [t for t in self._recent if now - t < CROWD_WINDOW_S]
        wait = retry_after(len(self._recent))
        self._recent.append(now)
        return wait

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_retry_after(message: dict) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 503:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"retry-after"]
                value = f"{self._next_wait():g}".encode()
                message = {**message, "headers": [*headers, (b"retry-after", value)]}
            await send(message)

        await self.app(scope, receive, send_with_retry_after)


def create_app(ephemeral: bool = True) -> RetryAfter503:
    """The uvicorn factory: Prefect's server app, wrapped; exits with the parent named in the environment.

    ``ephemeral``: only the services Prefect runs in its own one-shot server (the lingering server passes False).
    """
    sqlite_immediate_writes()
    parent = int(os.environ.get(PARENT_ENV, "0"))
    if parent:
        threading.Thread(target=_exit_with_parent, args=(parent,), name="artoo-parent-watch", daemon=True).start()
    return RetryAfter503(prefect_server_app(ephemeral))


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
