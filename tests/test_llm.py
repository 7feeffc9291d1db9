"""The LLM layer: the real openai client over real HTTP against the scripted server, plus pure rules."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from artoo.config.errors import ConfigurationError, EnvironmentalFailure, LLMOutputError, RunFailure
from artoo.config.protocol import SCHEMAS, ExecutionAnswer
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM, ToolTurn, cost_report
from artoo.tasks.llm.output.extract import parse_arguments
from artoo.tasks.llm.output.modes import strict_schema, structured_request, with_system_note
from artoo.tasks.llm.testing.fake import ScriptedLLM, ScriptExhausted
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

VERDICT = {"criterion": "file exists", "verdict": "pass", "failure_class": None, "evidence": "ls shows it"}
SAMPLES = {
    "TaskSpec": ("R1", {"task_id": "list_files", "intent": "list the files",
                        "constraints": {"scope": "~/src", "deadline": None}}),
    "Plan": ("R2", {"task_criteria": [{"criterion": "all listed", "mode": "verifiable"}],
                    "subtasks": [{"sequence": 1, "intent": "run ls", "context": "in ~/src",
                                  "success_criteria": [{"criterion": "non-empty", "mode": "plausible"}]}]}),
    "AgentVerdict": ("R4a", {"verdicts": [VERDICT], "what_was_wrong": None, "what_to_do": None}),
    "TaskVerdict": ("R4b", {"verdicts": [VERDICT], "summary": "All files were listed."}),
    "Consolidation": ("dreamer", {"kind": "constraint", "content": "Never run rm -rf in $HOME."}),
}
TOOL = {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    """Each test its own ARTOO_HOME: negotiated formats are remembered there, never in the real home."""
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path / "home"))


def _settings(base_url: str, timeout: float = 10.0, **overrides):
    values = {"brain_base_url": base_url, "brain_model": "brain-m", "brain_api_key": "sk-brain",
              "tool_base_url": base_url, "tool_model": "tool-m", "tool_api_key": None,
              "openai_base_url": None, "openai_model": None, "openai_api_key": None, "llm_timeout_s": timeout}
    return load_settings(**{**values, **overrides})


def _run(base_url: str, coro_factory, max_retries: int = 0, **settings):
    """Run ``coro_factory(llm)`` on a fresh client, closing it afterwards; returns (result, llm)."""
    llm = OpenAICompatLLM(_settings(base_url, **settings), max_retries=max_retries)

    async def go():
        try:
            return await coro_factory(llm)
        finally:
            await llm.aclose()

    return asyncio.run(go()), llm


def _ask(srv, role: str, schema: str, text: str = "do it", **kw):
    messages = [{"role": "user", "content": text}]
    return _run(srv.base_url, lambda llm: llm.structured(role, schema, messages), **kw)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_structured_round_trip_per_schema(name):
    role, answer = SAMPLES[name]
    with ScriptedLLMServer({"answers": {name: [{"answer": answer}]}}) as srv:
        result, llm = _ask(srv, role, name)
        body = srv.requests[0]["body"]
    assert result == SCHEMAS[name].model_validate(answer)
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": name, "schema": strict_schema(name), "strict": True}}
    assert body["model"] == ("tool-m" if role == "R4a" else "brain-m")
    assert [(r.role, r.schema, r.ok) for r in llm.records] == [(role, name, True)]
    assert llm.records[0].prompt_tokens > 0 and llm.records[0].completion_tokens > 0


def test_execution_result_arrives_as_tool_turn_final_content():
    answer = {"status": "completed", "output": "3 files"}
    with ScriptedLLMServer({"answers": {"tools": [{"answer": answer}]}}) as srv:
        turn, llm = _run(srv.base_url, lambda llm: llm.tool_turn(
            "R3", [{"role": "user", "content": "count"}], [TOOL]))
        body = srv.requests[0]["body"]
    assert turn.final == ExecutionAnswer(**answer) and turn.tool_calls == []
    assert turn.assistant_message == {"role": "assistant", "content": json.dumps(answer)}
    assert "response_format" not in body
    assert body["tools"] == [{"type": "function", "function": TOOL}]
    assert (llm.records[0].schema, llm.records[0].model) == ("tools", "tool-m")


def test_tool_calls_are_parsed_and_the_conversation_continues():
    scenario = {"answers": {"tools": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}},
                        {"name": "shell", "arguments": "{bad"}]},
        {"match": "a.txt", "answer": {"status": "completed", "output": "a.txt"}}]}}

    async def converse(llm):  # tools in the wire format are sent as they are
        messages, tools = [{"role": "user", "content": "list"}], [{"type": "function", "function": TOOL}]
        first = await llm.tool_turn("R3", messages, tools)
        messages.append(first.assistant_message)
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "a.txt"} for c in first.tool_calls]
        return first, await llm.tool_turn("R3", messages, tools)

    with ScriptedLLMServer(scenario) as srv:
        (first, second), _ = _run(srv.base_url, converse)
        sent, tools_sent = srv.requests[1]["body"]["messages"], srv.requests[1]["body"]["tools"]
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("shell", {"command": "ls"}),
                                                                 ("shell", {"_invalid": "{bad"})]
    assert first.final is None
    assert [c["id"] for c in first.assistant_message["tool_calls"]] == [c.id for c in first.tool_calls]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "shell"
    assert sent[2] == {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "a.txt"}
    assert second.final == ExecutionAnswer(status="completed", output="a.txt")
    assert tools_sent == [{"type": "function", "function": TOOL}]


@pytest.mark.parametrize("bad, reason", [
    ({"raw": '{"kind": "constraint", '}, "not valid JSON"),
    ({"answer": {"kind": "maybe", "content": "x"}}, "kind"),
    ({"raw": ""}, "empty"),
    ({"refusal": "I will not"}, "refused"),
    ({"raw": "[1, 2]"}, "expected a JSON object"),
])
def test_invalid_answer_is_repaired_once(bad, reason):
    good = {"kind": "best_practice", "content": "Check the path first."}
    with ScriptedLLMServer({"answers": {"Consolidation": [bad, {"answer": good}]}}) as srv:
        result, llm = _ask(srv, "dreamer", "Consolidation", text="distil")
        log = srv.requests
    assert result == SCHEMAS["Consolidation"](**good)
    assert len(log) == 2
    repair = log[1]["body"]["messages"]
    assert repair[0] == {"role": "user", "content": "distil"}
    assert repair[1]["role"] == "assistant"
    assert reason in repair[2]["content"] and "Consolidation" in repair[2]["content"]
    assert [r.ok for r in llm.records] == [False, True]
    assert reason in llm.records[0].error


@pytest.mark.parametrize("schema, role, bad, reason", [
    ("Plan", "R2", {"raw": "{not json at all"}, "not valid JSON"),
    ("Plan", "R2", {"answer": {"task_criteria": [{"criterion": "x", "mode": "sometimes"}], "subtasks": []}},
     "task_criteria.0.mode"),
])
def test_invalid_twice_raises_llm_output_error(schema, role, bad, reason):
    with ScriptedLLMServer({"answers": {schema: [bad, bad]}}) as srv, pytest.raises(LLMOutputError) as err:
        _ask(srv, role, schema)
    message = str(err.value)
    assert f"{role} gave an invalid {schema} answer twice" in message
    assert reason in message
    start = bad["raw"] if "raw" in bad else json.dumps(bad["answer"])
    assert repr(start[:200]) in message


def test_tool_turn_final_is_repaired_then_fails():
    bad = {"answer": {"status": "done", "output": "x"}}
    with ScriptedLLMServer({"answers": {"tools": [bad, bad]}}) as srv:
        with pytest.raises(LLMOutputError) as err:
            _run(srv.base_url, lambda llm: llm.tool_turn("R3", [{"role": "user", "content": "x"}], [TOOL]))
        assert len(srv.requests) == 2
        assert "status" in srv.requests[1]["body"]["messages"][-1]["content"]
    assert "R3 gave an invalid ExecutionResult answer twice" in str(err.value)
    assert "status" in str(err.value)


@pytest.mark.parametrize("raw", [
    '```json\n{"kind": "constraint", "content": "c"}\n```',
    'Here it is:\n```\n{"kind": "constraint", "content": "c"}\n```\n',
    '<think>hmm</think>\n{"kind": "constraint", "content": "c"}',
])
def test_fenced_content_is_accepted_without_repair(raw):
    with ScriptedLLMServer({"answers": {"Consolidation": [{"raw": raw}]}}) as srv:
        result, _ = _ask(srv, "dreamer", "Consolidation")
        assert len(srv.requests) == 1
    assert result.content == "c"


def test_timeout_is_environmental():
    scenario = {"answers": {"Plan": [{"answer": {}, "latency_s": 1.5}]}}
    with ScriptedLLMServer(scenario) as srv, pytest.raises(EnvironmentalFailure) as err:
        _ask(srv, "R2", "Plan", timeout=0.3)
    assert "timed out after 0.3s" in str(err.value)
    assert "R2 (brain tier, model 'brain-m' at http://127.0.0.1:" in str(err.value)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limit_and_server_errors_are_environmental(status):
    scenario = {"answers": {"TaskSpec": [{"status": status}]}}
    with ScriptedLLMServer(scenario) as srv, pytest.raises(EnvironmentalFailure) as err:
        _ask(srv, "R1", "TaskSpec")
    assert f"HTTP {status}" in str(err.value) and "R1 (brain tier" in str(err.value)


def test_environmental_failure_is_retried_and_every_request_recorded():
    answer = SAMPLES["TaskSpec"][1]
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"status": 500}, {"answer": answer}]}}) as srv:
        result, llm = _ask(srv, "R1", "TaskSpec", max_retries=1)
    assert result.task_id == "list_files"
    assert [(r.ok, r.prompt_tokens > 0) for r in llm.records] == [(False, False), (True, True)]
    assert "HTTP 500" in llm.records[0].error


@pytest.mark.parametrize("status, role, names", [
    (401, "R1", "BRAIN_API_KEY / OPENAI_API_KEY"),
    (403, "R4a", "TOOL_API_KEY / OPENAI_API_KEY"),
    (404, "R2", "BRAIN_MODEL / OPENAI_MODEL"),
])
def test_auth_and_missing_model_are_configuration_errors(status, role, names):
    schema = {"R1": "TaskSpec", "R4a": "AgentVerdict", "R2": "Plan"}[role]
    with ScriptedLLMServer({"answers": {schema: [{"status": status}]}}) as srv:
        with pytest.raises(ConfigurationError) as err:
            _ask(srv, role, schema, max_retries=2)
        assert len(srv.requests) == 1
    assert names in str(err.value)


def test_one_client_object_serves_successive_event_loops():
    answer = SAMPLES["Consolidation"][1]
    with ScriptedLLMServer({"answers": {"Consolidation": [{"answer": answer, "repeat": True}]}}) as srv:
        llm = OpenAICompatLLM(_settings(srv.base_url), max_retries=0)
        messages = [{"role": "user", "content": "distil"}]
        results = [asyncio.run(llm.structured("dreamer", "Consolidation", messages)) for _ in range(3)]
    assert results == [SCHEMAS["Consolidation"](**answer)] * 3


def test_unreachable_endpoint_is_environmental():
    with socket.socket() as sock:  # bound but never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        llm = OpenAICompatLLM(_settings(f"http://127.0.0.1:{sock.getsockname()[1]}/v1"), max_retries=1)
        with pytest.raises(EnvironmentalFailure) as err:
            asyncio.run(llm.structured("R1", "TaskSpec", [{"role": "user", "content": "x"}]))
    assert "cannot connect" in str(err.value)
    assert [(r.role, r.ok) for r in llm.records] == [("R1", False), ("R1", False)]


@pytest.mark.parametrize("missing, names", [
    ({"brain_base_url": None}, "BRAIN_BASE_URL (or OPENAI_BASE_URL)"),
    ({"brain_model": None}, "BRAIN_MODEL (or OPENAI_MODEL)"),
])
def test_missing_tier_settings_are_configuration_errors(missing, names):
    llm = OpenAICompatLLM(_settings("http://127.0.0.1:9/v1", **missing))
    with pytest.raises(ConfigurationError) as err:
        asyncio.run(llm.structured("R1", "TaskSpec", []))
    assert names in str(err.value) and "brain tier" in str(err.value)


def test_json_schema_rejection_falls_back_and_is_remembered_per_tier():
    answer = SAMPLES["Consolidation"][1]
    scenario = {"reject_json_schema": True,
                "answers": {"Consolidation": [{"answer": answer, "repeat": True}]}}

    async def twice(llm):
        first = await llm.structured("dreamer", "Consolidation", [{"role": "user", "content": "a"}])
        second = await llm.structured("dreamer", "Consolidation", [{"role": "user", "content": "b"}])
        return first, second, llm.format_mode("brain"), llm.format_mode("tool")

    with ScriptedLLMServer(scenario) as srv:
        (first, second, brain_mode, tool_mode), llm = _run(srv.base_url, twice)
        log = srv.requests
    assert first == second == SCHEMAS["Consolidation"](**answer)
    assert [e["status"] for e in log] == [400, 200, 200]
    fallback = log[1]["body"]
    assert fallback["response_format"]["type"] == "json_object"
    assert fallback["response_format"]["schema"]["title"] == "Consolidation"
    assert 'schema named "Consolidation"' in fallback["messages"][0]["content"]
    assert (brain_mode, tool_mode) == ("json_object_schema", "json_schema")
    assert [r.ok for r in llm.records] == [False, True, True]


def test_fallback_reaches_text_mode_when_every_response_format_is_refused():
    answer = SAMPLES["Plan"][1]
    refusals = [{"status": 400, "error": f"response_format {kind} is not supported"}
                for kind in ("json_schema", "schema", "json_object")]
    with ScriptedLLMServer({"answers": {"Plan": [*refusals, {"answer": answer}]}}) as srv:
        result, llm = _ask(srv, "R2", "Plan")
        plain, text = srv.requests[2]["body"], srv.requests[3]["body"]
    assert result == SCHEMAS["Plan"].model_validate(answer)
    assert plain["response_format"] == {"type": "json_object"}
    assert "response_format" not in text
    assert 'schema named "Plan"' in text["messages"][0]["content"]
    assert llm.format_mode("brain") == "text"
    refused_always = {"status": 422, "error": "response_format unsupported", "repeat": True}
    with ScriptedLLMServer({"answers": {"Plan": [refused_always]}}) as srv:
        with pytest.raises(RunFailure, match="HTTP 422"):  # text mode sends no format: nothing left to refuse
            _ask(srv, "R2", "Plan")
        assert len(srv.requests) == 4
        assert "response_format" not in srv.requests[3]["body"]


@pytest.mark.parametrize("status, error", [(400, "maximum context length exceeded"), (422, "bad messages")])
def test_other_client_errors_are_logical_run_failures(status, error):
    with ScriptedLLMServer({"answers": {"Plan": [{"status": status, "error": error}]}}) as srv:
        with pytest.raises(RunFailure) as err:
            _ask(srv, "R2", "Plan", max_retries=2)
        assert len(srv.requests) == 1
    assert not isinstance(err.value, EnvironmentalFailure | LLMOutputError)
    assert err.value.failure_class == "logical" and error in str(err.value)


def test_parallel_requests_get_their_own_answers_and_records():
    scenario = {"latency_s": 0.2, "answers": {"AgentVerdict": [
        {"match": "sub-A", "answer": {**SAMPLES["AgentVerdict"][1], "what_to_do": "A"}},
        {"match": "sub-B", "answer": {**SAMPLES["AgentVerdict"][1], "what_to_do": "B"}}]}}

    async def both(llm):
        return await asyncio.gather(*(llm.structured("R4a", "AgentVerdict", [{"role": "user", "content": t}])
                                      for t in ("check sub-B", "check sub-A")))

    with ScriptedLLMServer(scenario) as srv:
        results, llm = _run(srv.base_url, both)
    assert [r.what_to_do for r in results] == ["B", "A"]
    assert cost_report(llm.records)["R4a"]["calls"] == 2



@pytest.mark.parametrize("raw, expected", [
    ('{"command": "ls"}', {"command": "ls"}), ("", {}), (None, {}),
    ("{bad", {"_invalid": "{bad"}), ("[1]", {"_invalid": "[1]"}),
])
def test_parse_arguments(raw, expected):
    assert parse_arguments(raw) == expected


@pytest.mark.parametrize("messages, first", [
    ([{"role": "user", "content": "u"}], {"role": "system", "content": "NOTE"}),
    ([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}],
     {"role": "system", "content": "S\n\nNOTE"}),
])
def test_with_system_note(messages, first):
    noted = with_system_note(messages, "NOTE")
    assert noted[0] == first and noted[-1] == {"role": "user", "content": "u"}
    assert len([m for m in noted if m["role"] == "system"]) == 1


@pytest.mark.parametrize("mode, fmt_type, noted", [
    ("json_schema", "json_schema", False), ("json_object_schema", "json_object", True),
    ("json_object", "json_object", True), ("text", None, True),
])
def test_structured_request_modes(mode, fmt_type, noted):
    request = structured_request(mode, "Plan", [{"role": "user", "content": "u"}])
    assert request.get("response_format", {}).get("type") == fmt_type
    assert (request["messages"][0]["role"] == "system") is noted
    with pytest.raises(ValueError, match="unknown structured-output mode"):
        structured_request("xml", "Plan", [])


def test_scripted_fake_implements_the_protocol():
    fake = ScriptedLLM(
        answers={"Plan": [SAMPLES["Plan"][1], lambda messages: {**SAMPLES["Plan"][1], "subtasks": []},
                          EnvironmentalFailure("down")]},
        tool_turns=[[{"name": "shell", "arguments": {"command": "ls"}}],
                    {"status": "failed", "output": "no"}])

    async def script():
        first = await fake.structured("R2", "Plan", [{"role": "user", "content": "p"}])
        second = await fake.structured("R2", "Plan", [])
        with pytest.raises(EnvironmentalFailure):
            await fake.structured("R2", "Plan", [])
        with pytest.raises(ScriptExhausted, match="no Plan answer left for role R2"):
            await fake.structured("R2", "Plan", [])
        calls = await fake.tool_turn("R3", [], [TOOL])
        final = await fake.tool_turn("R3", [], [TOOL])
        return first, second, calls, final

    first, second, calls, final = asyncio.run(script())
    assert len(first.subtasks) == 1 and second.subtasks == []
    assert isinstance(calls, ToolTurn) and calls.tool_calls[0].arguments == {"command": "ls"}
    assert final.final == ExecutionAnswer(status="failed", output="no")
    assert [r.ok for r in fake.records] == [True, True, False, True, True]
    assert [c["schema"] for c in fake.calls] == ["Plan"] * 4 + ["tools"] * 2
