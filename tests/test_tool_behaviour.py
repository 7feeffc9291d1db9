"""Tool-call negotiation by behaviour: a model that accepts native ``tools`` but never calls one moves to
the JSON-in-content protocol, and the home remembers it.

The silent answers are the real ones: Qwen2.5-Coder-1.5B's first R3 answers of
tests/transcripts/llama-server-count-lines-2.jsonl (native tools accepted, a final answer with invented
counts, no tool call), served byte for byte by the scripted server to the real client.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.behaviour import SilentToolWatch
from artoo.tasks.llm.negotiated import NegotiationStore, negotiated_path
from artoo.tasks.llm.scripted_server import Scenario, ScriptedLLMServer
from artoo.tasks.llm.tool_protocol import NEXT_STEP, TOOLS_NOTE_HEAD
from artoo.tasks.llm.transcript import entry_of, read_transcript

TRANSCRIPT = Path(__file__).parent / "transcripts" / "llama-server-count-lines-2.jsonl"
GLOB = {"type": "function", "function": {"name": "glob", "description": "Find files", "parameters": {
    "type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}}
KEY = ("http://127.0.0.1:1/v1", "qwen")


def _silent_answers() -> list:
    """The recorded first-turn R3 answers that called no tool (native tools were offered and accepted)."""
    entries = []
    for record in read_transcript(TRANSCRIPT):
        request = record.get("request") or {}
        if request.get("tools") and record.get("status") == 200 and len(request["messages"]) == 2:
            message = json.loads(record["response"])["choices"][0]["message"]
            if not message.get("tool_calls") and '"status"' in (message.get("content") or ""):
                entries.append(entry_of(record))
    return entries


SILENT = _silent_answers()


@pytest.mark.parametrize("limit, answers, switched_at", [
    (3, ["final", "final", "final"], 3),
    (3, ["final", "final", "call", "final", "final"], None),           # a tool call starts the count again
    (3, ["final", "final", "later_final", "final"], 4),                # a later turn's answer neither counts nor resets
    (3, ["final", "final", "call", "final", "final", "final"], 6),
    (1, ["final"], 1),
    (0, ["final"] * 5, None),                                          # 0: behaviour never moves the mode
    (3, ["final"] * 5, 3),                                             # reported once, when the limit is reached
])
def test_silent_tool_watch(limit: int, answers: list[str], switched_at: int | None):
    watch = SilentToolWatch(limit)
    fired = [i for i, kind in enumerate(answers, 1)
             if watch.observe(KEY, called=kind == "call", first_turn=kind != "later_final")]
    assert fired == ([] if switched_at is None else [switched_at])


def test_the_watch_counts_each_endpoint_and_model_apart():
    watch = SilentToolWatch(2)
    assert not watch.observe(KEY, called=False, first_turn=True)
    assert not watch.observe((KEY[0], "other"), called=False, first_turn=True)
    assert watch.observe(KEY, called=False, first_turn=True)
    assert watch.count((KEY[0], "other")) == 1


def _llm(srv: ScriptedLLMServer, home: Path, silent: int = 3) -> OpenAICompatLLM:
    settings = load_settings(home=home, brain_base_url=srv.base_url, brain_model="qwen", tool_base_url=srv.base_url,
                             tool_model="qwen", openai_base_url=None, openai_model=None, llm_timeout_s=10,
                             llm={"silent_tool_answers": silent})
    return OpenAICompatLLM(settings, max_retries=0)


def _attempts(llm: OpenAICompatLLM, n: int) -> list:
    """n fresh executor attempts (the first turn of each), as R3 opens them."""
    async def go():
        try:
            return [await llm.tool_turn("R3", [{"role": "system", "content": "R3"},
                                                {"role": "user", "content": f"count the lines, attempt {i}"}], [GLOB])
                    for i in range(n)]
        finally:
            await llm.aclose()
    return asyncio.run(go())


def test_the_transcript_holds_three_silent_first_answers():
    assert len(SILENT) >= 3


def test_a_model_that_never_calls_native_tools_moves_to_the_content_protocol(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="artoo.llm")
    glob_call = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]}
    with ScriptedLLMServer(Scenario(answers={"tools": [*SILENT[:3], glob_call]})) as srv:
        turns = _attempts(_llm(srv, tmp_path), 4)
        sent = [r["body"] for r in srv.requests]
        remembered = _llm(srv, tmp_path).tool_mode("tool")
        stored = NegotiationStore(negotiated_path(tmp_path)).get(srv.base_url, "qwen")
    assert [t.final is not None for t in turns[:3]] == [True, True, True]
    assert [(c.name, c.arguments) for c in turns[3].tool_calls] == [("glob", {"pattern": "*.txt"})]
    assert all(body["tools"] == [GLOB] for body in sent[:3])
    assert "tools" not in sent[3] and sent[3]["messages"][0]["content"].count(TOOLS_NOTE_HEAD) == 1
    assert remembered == "content"
    assert stored["tools"] == "content" and stored["tools_because"].startswith("behaviour: 3 executor attempts")
    assert any("tools mode native -> content, because behaviour" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("silent, answers_first", [(0, 3), (3, 2)])
def test_no_move_when_switched_off_or_when_the_model_calls_tools(tmp_path, silent, answers_first):
    """Switched off, three silent answers move nothing; on, a native tool call between silent answers resets."""
    call = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]}
    script = [*SILENT[:answers_first], call, *SILENT[:2]] if answers_first == 2 else [*SILENT[:3], *SILENT[:1]]
    with ScriptedLLMServer(Scenario(answers={"tools": script})) as srv:
        llm = _llm(srv, tmp_path, silent)
        _attempts(llm, len(script))
        sent = [r["body"] for r in srv.requests]
        mode = llm.tool_mode("tool")
    assert mode == "native" and all(body.get("tools") == [GLOB] for body in sent)
    assert NegotiationStore(negotiated_path(tmp_path)).get(srv.base_url, "qwen")["tools"] == "native"


def test_the_content_protocol_closes_the_last_tool_result_with_the_next_step():
    """Handed glob's output as a bare user message, the real model asked for the same glob again (ls4)."""
    from artoo.tasks.llm.tool_protocol import content_messages

    call = {"id": "c1", "type": "function", "function": {"name": "glob", "arguments": '{"pattern": "*.txt"}'}}
    wire = [{"role": "user", "content": "count"}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}]
    rendered = content_messages(wire)
    assert rendered[-1]["content"].endswith(NEXT_STEP) and rendered[-1]["content"].startswith("Result of the glob")
    assert NEXT_STEP not in json.dumps(content_messages([*wire, {"role": "user", "content": "go on"}]))
