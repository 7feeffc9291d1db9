"""llm.temperature and llm.max_tokens: sent with every request when set (early or not), never when unset, and
never to an endpoint that refused the field (tests/test_endpoint_profile.py)."""

from __future__ import annotations

import asyncio

import pytest

from artoo.config.settings import LLMParams, load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.requests import sampling

SPEC = {"task_id": "t", "intent": "count lines", "constraints": {"scope": ".", "deadline": None}}
TOOL = {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}


@pytest.mark.parametrize(("params", "refused", "sent"), [
    ({}, set(), {}),
    ({"temperature": 0.2}, set(), {"temperature": 0.2}),
    ({"temperature": 0.0, "max_tokens": 1024}, set(), {"temperature": 0.0, "max_tokens": 1024}),
    ({"max_tokens": 64}, set(), {"max_tokens": 64}),
    ({"temperature": 0.2, "max_tokens": 64}, {"max_tokens"}, {"temperature": 0.2}),  # the endpoint refused it
    ({"temperature": 0.2}, {"temperature", "max_tokens"}, {}),
])
def test_sampling_sends_only_what_is_set_and_not_refused(params: dict, refused: set[str], sent: dict) -> None:
    assert sampling(LLMParams(**params), frozenset(refused)) == sent


def test_every_request_carries_the_chosen_sampling(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ARTOO_LLM__TEMPERATURE", "0.2")
    monkeypatch.setenv("ARTOO_LLM__MAX_TOKENS", "900")
    scenario = {"answers": {"TaskSpec": [{"answer": SPEC}],
                            "tools": [{"answer": {"status": "completed", "output": "3"}}]}}
    with ScriptedLLMServer(scenario) as srv:
        settings = load_settings(openai_base_url=srv.base_url, openai_model="m", openai_api_key="k")
        llm = OpenAICompatLLM(settings, max_retries=0)

        async def go() -> None:
            try:
                await llm.structured("R1", "TaskSpec", [{"role": "user", "content": "count lines"}])
                await llm.tool_turn("R3", [{"role": "user", "content": "count lines"}], [TOOL])
            finally:
                await llm.aclose()

        asyncio.run(go())
        bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == 2
    assert all(b["temperature"] == 0.2 and b["max_tokens"] == 900 for b in bodies)


def test_unset_sampling_leaves_the_server_default(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path / "home"))
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC}]}}) as srv:
        settings = load_settings(openai_base_url=srv.base_url, openai_model="m", openai_api_key="k")
        llm = OpenAICompatLLM(settings, max_retries=0)
        asyncio.run(llm.structured("R1", "TaskSpec", [{"role": "user", "content": "count lines"}]))
        body = srv.requests[0]["body"]
    assert "temperature" not in body and "max_tokens" not in body
