"""An endpoint that goes away mid-run (a local server restarting) is waited for; one never reached is not.

Real HTTP both ways: the scripted server is stopped and a new one started on the same port, as a person
restarting llama-server does (run t5 of #25 lost its run to that: four rounds abandoned in seconds).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time

import pytest

from artoo.config.errors import EnvironmentalFailure
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

ANSWER = {"kind": "constraint", "content": "Never run rm -rf in $HOME."}
SCRIPT = {"answers": {"Consolidation": [{"answer": ANSWER, "repeat": True}]}}
ASK = [{"role": "user", "content": "distil"}]


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path / "home"))


def _llm(base_url: str, reconnect_s: float) -> OpenAICompatLLM:
    settings = load_settings(brain_base_url=base_url, brain_model="m", tool_base_url=base_url, tool_model="m",
                             openai_base_url=None, openai_model=None, llm_timeout_s=10,
                             llm={"reconnect_s": reconnect_s})
    return OpenAICompatLLM(settings, max_retries=1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ask_twice_across_a_restart(reconnect_s: float, down_s: float):
    """One answer, the server stopped, a second request while it is down; it comes back after ``down_s``."""
    port = _free_port()
    restarted: list[ScriptedLLMServer] = []

    def come_back():
        time.sleep(down_s)
        restarted.append(ScriptedLLMServer(SCRIPT, port=port).__enter__())

    async def go(llm):
        try:
            first = await llm.structured("dreamer", "Consolidation", ASK)
            first_server.__exit__(None, None, None)
            threading.Thread(target=come_back, daemon=True).start()
            started = time.monotonic()
            try:
                return first, await llm.structured("dreamer", "Consolidation", ASK), time.monotonic() - started
            except EnvironmentalFailure as exc:
                return first, exc, time.monotonic() - started
        finally:
            await llm.aclose()

    first_server = ScriptedLLMServer(SCRIPT, port=port).__enter__()
    llm = _llm(first_server.base_url, reconnect_s)
    try:
        return asyncio.run(go(llm)), llm
    finally:
        for server in restarted:
            server.__exit__(None, None, None)


def test_an_endpoint_that_answered_is_waited_for_while_it_restarts(caplog):
    caplog.set_level(logging.WARNING, logger="artoo.llm")
    (first, second, _), llm = _ask_twice_across_a_restart(reconnect_s=30, down_s=2.0)
    assert first.content == second.content == ANSWER["content"]
    failed = [r for r in llm.records if not r.ok]
    assert failed and all("cannot connect" in r.error for r in failed)
    assert any("is unreachable" in r.getMessage() and "retrying for up to 30 s" in r.getMessage()
               for r in caplog.records)


def test_the_wait_is_bounded_and_zero_switches_it_off():
    (_, second, waited), llm = _ask_twice_across_a_restart(reconnect_s=0, down_s=30.0)
    assert isinstance(second, EnvironmentalFailure) and "cannot connect" in str(second)
    assert len([r for r in llm.records if not r.ok]) == 2      # the request and its one transport retry
    (_, second, waited), _ = _ask_twice_across_a_restart(reconnect_s=1.5, down_s=30.0)
    assert isinstance(second, EnvironmentalFailure) and 1.5 <= waited < 10


def test_an_endpoint_never_reached_fails_at_once():
    port = _free_port()
    llm = _llm(f"http://127.0.0.1:{port}/v1", reconnect_s=60)
    started = time.monotonic()
    with pytest.raises(EnvironmentalFailure, match="cannot connect"):
        asyncio.run(llm.structured("dreamer", "Consolidation", ASK))
    assert time.monotonic() - started < 10 and len(llm.records) == 2
