"""artoo's embedded Prefect server: 503s carry a short Retry-After, writes queue instead of colliding,
and the server dies with its parent.

The ASGI wrapper is tested on plain ASGI messages; the lifecycle with real processes: a parent
that starts the embedded server is SIGKILLed, and the server must not outlive it.  ``artoo run``
and ``artoo demo`` on the embedded server are covered end to end in test_audit_ephemeral.py and
test_cli.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from artoo.config.compat import immediate_begin as immediate
from artoo.servers.app import RetryAfter503, retry_after
from tests.processes import alive

ROOT = Path(__file__).resolve().parents[1]


def _responding(status: int, headers: list[tuple[bytes, bytes]]):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    return app


def _call(app, scope_type: str = "http") -> list[dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": scope_type}, receive, send))
    return sent


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (503, [(b"content-type", b"application/json")],
         [(b"content-type", b"application/json"), (b"retry-after", b"0.25")]),
        (503, [(b"Retry-After", b"30")], [(b"retry-after", b"0.25")]),
        (200, [(b"content-type", b"application/json")], [(b"content-type", b"application/json")]),
        (500, [], []),
        (429, [(b"retry-after", b"5")], [(b"retry-after", b"5")]),
    ],
)
def test_only_503_responses_get_a_retry_after(status, headers, expected):
    start, body = _call(RetryAfter503(_responding(status, headers)))
    assert (start["status"], start["headers"]) == (status, expected)
    assert body == {"type": "http.response.body", "body": b"{}"}


@pytest.mark.parametrize(
    ("times", "waits"),
    [
        ([0.0], ["0.25"]),
        ([0.0, 5.0, 10.0], ["0.25", "0.25", "0.25"]),  # lone collisions: a quarter second each
        ([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], ["0.25", "0.5", "1", "2", "4", "4", "4"]),  # a crowd backs off
        ([0.0, 1.0, 2.5], ["0.25", "0.5", "0.5"]),  # only the last two seconds count
    ],
)
def test_crowded_503s_double_the_wait_up_to_a_cap(times, waits):
    clock = iter(times)
    app = RetryAfter503(_responding(503, []), clock=lambda: next(clock))
    assert [dict(_call(app)[0]["headers"])[b"retry-after"].decode() for _ in times] == waits


@pytest.mark.parametrize(("recent", "seconds"), [(0, 0.25), (1, 0.5), (3, 2.0), (4, 4.0), (9, 4.0)])
def test_retry_after_schedule(recent, seconds):
    assert retry_after(recent) == seconds


def test_non_http_scopes_pass_through_untouched():
    seen: list[str] = []

    async def app(scope, receive, send):
        seen.append(scope["type"])
        await send({"type": "lifespan.startup.complete"})

    assert _call(RetryAfter503(app), "lifespan") == [{"type": "lifespan.startup.complete"}]
    assert seen == ["lifespan"]



async def _read_then_write(path: Path, wrapped: bool, writers: int = 8) -> list[str]:
    """``writers`` concurrent Prefect-style transactions that read, then write; the errors they meet."""
    import sqlalchemy as sa
    from prefect.server.database.configurations import AioSqliteConfiguration

    config = AioSqliteConfiguration(connection_url=f"sqlite+aiosqlite:///{path}")
    engine = await config.engine()
    async with engine.begin() as connection:
        await connection.execute(sa.text("CREATE TABLE runs (n INTEGER)"))
    begin = AioSqliteConfiguration.begin_transaction
    begin = immediate(begin) if wrapped else begin
    errors: list[str] = []

    async def one(n: int) -> None:
        async with await config.session(engine) as session:
            try:
                async with begin(config, session):
                    await session.execute(sa.text("SELECT count(*) FROM runs"))
                    await asyncio.sleep(0.01)  # the others read meanwhile, as concurrent API requests do
                    await session.execute(sa.text("INSERT INTO runs VALUES (:n)"), {"n": n})
            except Exception as exc:  # what the API would answer with a 503
                errors.append(str(exc).splitlines()[0])

    await asyncio.gather(*(one(n) for n in range(writers)))
    async with engine.connect() as connection:
        stored = (await connection.execute(sa.text("SELECT count(*) FROM runs"))).scalar()
    await engine.dispose()
    assert stored == writers - len(errors)
    return errors


def test_prefects_deferred_sqlite_writes_collide_and_immediate_ones_queue(tmp_path):
    deferred = asyncio.run(_read_then_write(tmp_path / "deferred.db", wrapped=False))
    assert deferred and all("database is locked" in e for e in deferred)  # the cause of the 503s
    assert asyncio.run(_read_then_write(tmp_path / "immediate.db", wrapped=True)) == []


PARENT = """
import os, sys
from artoo.servers.embedded import EmbeddedServer
server = EmbeddedServer().launch()
server.wait_ready(120)
print(server.process.pid, server.api_url, flush=True)
sys.stdin.read()  # until killed
"""


def test_the_embedded_server_answers_and_dies_with_a_killed_parent(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PYTHONPATH=str(ROOT))
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        pid_text, api_url = parent.stdout.readline().split()
        server_pid = int(pid_text)
        with urllib.request.urlopen(f"{api_url}/health", timeout=10) as response:
            assert response.status == 200
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(server_pid), "the embedded server outlived the process that started it"
    finally:
        parent.kill()


def test_a_server_that_cannot_start_is_a_clear_environmental_failure_and_is_stopped(tmp_path, monkeypatch):
    from artoo.config.errors import EnvironmentalFailure
    from artoo.servers.embedded import EmbeddedServer

    (tmp_path / "prefect.db").write_bytes(b"not a database")  # Prefect cannot migrate it: start-up fails
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    server = EmbeddedServer().launch()
    process = server.process
    started = time.monotonic()
    with pytest.raises(EnvironmentalFailure, match=r"embedded Prefect server .*PREFECT_API_URL") as failure:
        server.wait_ready(120)
    assert process.poll() is not None and server.process is None
    # the real cause, at once: not read as a port clash and relaunched until the deadline
    assert "failed to start" in str(failure.value) and f"port {server.port} is free" in str(failure.value)
    assert "DatabaseError) file is not a database" in str(failure.value), str(failure.value)  # the server's own
    assert server.launches == 1 and time.monotonic() - started < 100


def test_a_port_taken_under_the_server_is_a_relaunch_on_another_port(tmp_path, monkeypatch):
    import socket

    from artoo.servers.embedded import EmbeddedServer
    from artoo.servers.process import port_taken

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert port_taken(port)
        server = EmbeddedServer().launch(port=port)
        try:
            server.wait_ready(120)
            assert server.ready and server.port != port and server.launches == 2
        finally:
            server.stop()
    assert not port_taken(port)


def test_server_embedded_prefect_leaves_the_server_to_prefect(monkeypatch, tmp_path):
    # in a fresh interpreter: this session's Prefect settings already name the test server's API
    probe = ("import artoo.servers.embedded as e\n"
             "with e.prefect_api() as url: print(repr(url), e._SHARED is None, e._EARLY is None)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(ARTOO_HOME=str(tmp_path), PREFECT_HOME=str(tmp_path / "prefect"), ARTOO_SERVER__EMBEDDED="prefect")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["''", "True", "True"]  # no URL of ours, no server of ours started
    monkeypatch.setenv("ARTOO_SERVER__EMBEDDED", "uvicorn")
    from artoo.config.settings import load_settings

    with pytest.raises(Exception, match="embedded"):
        load_settings()
