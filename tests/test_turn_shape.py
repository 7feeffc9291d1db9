"""A content-protocol tool turn held to a schema: what is sent per structured-output mode, what a grammar
lets through, how a shaped answer is read, and what a refusal of the turn's schema moves.

Why (#25, run t7): under the free-text protocol Qwen2.5-Coder-1.5B called ``glob`` with ``locate``'s
``query`` argument, then tools that do not exist, and never stopped calling tools once the subtask was
done.  The client stories go over real HTTP to the scripted server, with real servers' refusals.
"""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest

from artoo.config.protocol import ExecutionAnswer
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.output.extract import content_tool_calls
from artoo.tasks.llm.output.modes import PROTOCOL_KEYS, TURN_SCHEMA, tool_request, turn_format, turn_schema
from artoo.tasks.llm.output.repair import repair_answer
from artoo.tasks.llm.profile_store import ProfileStore, store_path
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

GLOB = {"type": "function", "function": {"name": "glob", "description": "Find files", "parameters": {
    "type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"],
    "additionalProperties": False}}}
SHELL = {"type": "function", "function": {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
    "additionalProperties": False}}}
TOOLS = [GLOB, SHELL]
MESSAGES = [{"role": "system", "content": "R3"}, {"role": "user", "content": "count the lines"}]


@pytest.mark.parametrize("shape, expected", [
    ("json_schema", {"type": "json_schema", "json_schema": {"name": TURN_SCHEMA, "schema": turn_schema(TOOLS),
                                                            "strict": True}}),
    ("json_object_schema", {"type": "json_object", "schema": {**turn_schema(TOOLS), "title": TURN_SCHEMA}}),
    ("json_object", {"type": "json_object"}),
    ("text", None),
])
def test_a_content_turn_is_held_to_the_turn_schema_in_each_structured_mode(shape, expected):
    request = tool_request("content", MESSAGES, TOOLS, shape)
    assert request.get("response_format") == expected
    assert turn_format(shape, TOOLS) == expected
    assert "tools" not in request and "response_format" not in tool_request("native", MESSAGES, TOOLS, shape)


def test_an_unknown_shape_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown structured-output mode 'yaml'; known: json_schema"):
        turn_format("yaml", TOOLS)


@pytest.mark.parametrize("answer, valid", [
    ({"done": False, "tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]}, True),
    ({"done": False, "tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}},
                                    {"name": "shell", "arguments": {"command": "wc -l *.txt"}}]}, True),
    ({"done": True, "status": "completed", "output": "a.txt 3"}, True),
    # what Qwen2.5-Coder-1.5B wrote in run t7, each now outside the grammar:
    ({"done": False, "tool_calls": [{"name": "glob", "arguments": {"query": "*.txt"}}]}, False),  # locate's argument
    ({"done": False, "tool_calls": [{"name": "search", "arguments": {"query": "*.txt"}}]}, False),  # not offered
    ({"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]}, False),  # no decision first
    ({"done": False, "tool_calls": []}, False),  # neither a call nor a result (run t3's empty list)
    ({"done": True, "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}, False),
    ({"done": True, "status": "Completed", "output": "3"}, False),
])
def test_the_turn_schema_admits_calls_of_offered_tools_or_a_result(answer, valid):
    validator = jsonschema.Draft202012Validator(turn_schema(TOOLS))
    assert validator.is_valid(answer) is valid


@pytest.mark.parametrize("content, calls, final", [
    ('{"done": false, "tool_calls": [{"name": "shell", "arguments": {"command": "wc -l *.txt"}}]}',
     [{"name": "shell", "arguments": {"command": "wc -l *.txt"}}], None),
    ('{"done": true, "status": "completed", "output": "a.txt 3"}', None, ("completed", "a.txt 3")),
    ('{"status": "failed", "output": "no such folder"}', None, ("failed", "no such folder")),  # done left out
])
def test_a_shaped_answer_is_read_as_calls_or_a_final_result_without_a_repair(content, calls, final):
    assert content_tool_calls(content, {"shell", "glob"}) == calls
    if final is not None:
        repaired = repair_answer(content, None, ExecutionAnswer, PROTOCOL_KEYS)
        assert (repaired.answer.status, repaired.answer.output, repaired.repairs) == (*final, [])


def test_without_the_protocol_keys_done_is_an_extra_field_repaired_away():
    repaired = repair_answer('{"done": true, "status": "completed", "output": "3"}', None, ExecutionAnswer)
    assert [r.kind for r in repaired.repairs] == ["extra_field"]


# --- the client over real HTTP ------------------------------------------------------------------

def _llm(srv: ScriptedLLMServer, home) -> OpenAICompatLLM:
    settings = load_settings(home=home, brain_base_url=srv.base_url, brain_model="qwen", tool_base_url=srv.base_url,
                             tool_model="qwen", openai_base_url=None, openai_model=None, llm_timeout_s=10)
    return OpenAICompatLLM(settings, max_retries=0)


def _turns(llm: OpenAICompatLLM):
    async def go():
        try:
            messages = list(MESSAGES)
            first = await llm.tool_turn("R3", messages, TOOLS)
            messages.append(first.assistant_message)
            messages += [{"role": "tool", "tool_call_id": c.id, "content": "a.txt"} for c in first.tool_calls]
            return first, await llm.tool_turn("R3", messages, TOOLS)
        finally:
            await llm.aclose()

    return asyncio.run(go())


SHAPED = {"tools": [
    {"raw": '{"done": false, "tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]}'},
    {"match": "Result of the glob call", "raw": '{"done": true, "status": "completed", "output": "a.txt"}'}]}


@pytest.mark.parametrize("refusal", [{"refuse": "llama-cpp-python"}, {"reject_json_schema": True}])
def test_a_refused_turn_schema_moves_only_the_turn_and_the_retry_carries_the_schema_another_way(tmp_path, refusal):
    with ScriptedLLMServer({**refusal, "answers": SHAPED}) as srv:
        store = ProfileStore(store_path(tmp_path))
        store.remember(srv.base_url, "qwen", "tools", "content", "HTTP 400: does not support tools")
        first, final = _turns(_llm(srv, tmp_path))
        log = srv.requests
        entry = ProfileStore(store_path(tmp_path)).get(srv.base_url, "qwen")
        again = _llm(srv, tmp_path)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("glob", {"pattern": "*.txt"})]
    assert final.final == ExecutionAnswer(status="completed", output="a.txt")
    assert [(e["status"], e["body"]["response_format"]["type"]) for e in log] == [
        (log[0]["status"], "json_schema"), (200, "json_object"), (200, "json_object")]
    assert log[0]["status"] >= 400 and log[1]["body"]["response_format"]["schema"]["title"] == TURN_SCHEMA
    assert entry["turn"] == "json_object_schema" and "structured" not in entry  # R1/R2 keep their json_schema
    assert again.negotiator.shape(again.endpoint("tool")) == "json_object_schema"
    assert again.format_mode("brain") == "json_schema"


def test_a_turn_is_never_held_to_more_than_the_roles_structured_mode(tmp_path):
    with ScriptedLLMServer({"answers": SHAPED}) as srv:
        store = ProfileStore(store_path(tmp_path))
        store.remember(srv.base_url, "qwen", "tools", "content", "HTTP 400: does not support tools")
        store.remember(srv.base_url, "qwen", "structured", "json_object", "HTTP 400: Unknown parameter")
        _turns(_llm(srv, tmp_path))
        sent = [json.dumps(e["body"]["response_format"]) for e in srv.requests]
    assert sent == ['{"type": "json_object"}'] * 2
