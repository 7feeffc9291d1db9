"""The recording proxy (bench/record_proxy.py) on loopback, between a real client and a real upstream.

Why the disconnect case matters: a count-lines try stopped by hand left llama-server generating for the
proxy, which kept its upstream request alive, and the next try's first answer waited minutes behind it
(#25's runs).  The upstream here is a raw ASGI app that answers at once or, on the slow path, waits
until its own client (the proxy) disconnects, which is what llama-server notices to stop a generation.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from artoo.bench.record_proxy import CLIENT_GONE, build_app


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(app) -> tuple[uvicorn.Server, str]:
    port = _port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "a loopback server did not start"
    return server, f"http://127.0.0.1:{port}"


class Upstream:
    """An OpenAI-like upstream: /v1/fast answers, /v1/slow holds until its caller hangs up."""

    def __init__(self) -> None:
        self.hung_up = threading.Event()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] == "/v1/slow":
            while (await receive())["type"] != "http.disconnect":
                pass
            self.hung_up.set()
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"ok": true}'})


@pytest.fixture
def proxied(tmp_path):
    upstream = Upstream()
    up_server, up_url = _serve(upstream)
    out = tmp_path / "run.jsonl"
    proxy_server, proxy_url = _serve(build_app(up_url, out))
    yield upstream, proxy_url, out
    for server in (proxy_server, up_server):
        server.should_exit = True


def test_an_answer_is_passed_on_and_recorded_raw(proxied):
    _, proxy_url, out = proxied
    answer = httpx.post(f"{proxy_url}/v1/fast", json={"model": "m"}, timeout=10)
    assert (answer.status_code, answer.json()) == (200, {"ok": True})
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["path"], record["request"], record["status"], record["response"]) == (
        "/v1/fast", {"model": "m"}, 200, '{"ok": true}')


def test_a_client_that_goes_away_cancels_the_upstream_request(proxied):
    upstream, proxy_url, out = proxied
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{proxy_url}/v1/slow", json={"model": "m"}, timeout=1.0)
    assert upstream.hung_up.wait(20), "the proxy kept the upstream request alive after its client left"
    deadline = time.monotonic() + 20
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["status"] == CLIENT_GONE and "client went away" in record["response"]
