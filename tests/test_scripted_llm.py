"""The scripted OpenAI-compatible server over real HTTP: routing, exhaustion, concurrency, log."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer, message_text, route_name


def _chat(base_url: str, body: dict) -> httpx.Response:
    return httpx.post(f"{base_url}/chat/completions", json=body, timeout=10)


def _schema_body(name: str, text: str = "hello") -> dict:
    spec = {"name": name, "schema": {}, "strict": True}
    return {"model": "m", "messages": [{"role": "user", "content": text}],
            "response_format": {"type": "json_schema", "json_schema": spec}}


def _content(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return json.loads(response.json()["choices"][0]["message"]["content"])


@pytest.mark.parametrize("body, expected", [
    ({"tools": [{"type": "function"}], "response_format": {"type": "json_schema",
                                                           "json_schema": {"name": "Plan"}}}, "tools"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "Plan"}}}, "Plan"),
    ({"response_format": {"type": "json_object", "schema": {"title": "TaskSpec"}}}, "TaskSpec"),
    ({"response_format": {"type": "json_object", "schema": {"title": "TaskSpecAnswer"}},
      "messages": [{"role": "system", "content": 'use the schema named "TaskVerdict": {}'}]}, "TaskVerdict"),
    ({"response_format": {"type": "json_object"},
      "messages": [{"role": "system", "content": "x schema named Consolidation"}]}, "Consolidation"),
    ({"messages": [{"role": "user", "content": 'schema named "Plan"'}]}, None),
    ({}, None),
])
def test_route_name(body, expected):
    assert route_name(body, {"TaskSpec", "Plan", "TaskVerdict", "Consolidation"}) == expected


def test_message_text_joins_string_and_part_contents():
    messages = [{"role": "system", "content": "a"},
                {"role": "user", "content": [{"type": "text", "text": "b"}]},
                {"role": "assistant", "content": None}]
    assert message_text(messages) == "a\nb"


def test_match_routes_each_request_to_its_own_answer_regardless_of_order():
    scenario = {"answers": {"Plan": [{"match": "alpha", "answer": {"who": "alpha"}},
                                     {"match": "beta", "answer": {"who": "beta"}},
                                     {"answer": {"who": "anyone"}, "repeat": True}]}}
    with ScriptedLLMServer(scenario) as srv:
        assert _content(_chat(srv.base_url, _schema_body("Plan", "task beta please"))) == {"who": "beta"}
        assert _content(_chat(srv.base_url, _schema_body("Plan", "task alpha please"))) == {"who": "alpha"}
        assert _content(_chat(srv.base_url, _schema_body("Plan", "task alpha again"))) == {"who": "anyone"}
        assert _content(_chat(srv.base_url, _schema_body("Plan", "and again"))) == {"who": "anyone"}
        assert srv.unused() == {}


def test_exhausted_queue_is_a_500_naming_the_schema():
    with ScriptedLLMServer({"answers": {"Plan": [{"answer": {"n": 1}}]}}) as srv:
        assert _content(_chat(srv.base_url, _schema_body("Plan"))) == {"n": 1}
        response = _chat(srv.base_url, _schema_body("Plan"))
        missing = _chat(srv.base_url, _schema_body("TaskVerdict"))
    assert response.status_code == 500
    assert "ran out of answers for schema 'Plan'" in response.json()["error"]["message"]
    assert missing.status_code == 500
    assert "'TaskVerdict'" in missing.json()["error"]["message"]


def test_unroutable_request_is_a_500_saying_why():
    with ScriptedLLMServer({"answers": {}}) as srv:
        response = _chat(srv.base_url, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 500
    assert "cannot route" in response.json()["error"]["message"]


def test_unused_counts_entries_never_consumed():
    scenario = {"answers": {"Plan": [{"answer": {}}, {"answer": {}}],
                            "TaskSpec": [{"answer": {}, "repeat": True}]}}
    with ScriptedLLMServer(scenario) as srv:
        _chat(srv.base_url, _schema_body("Plan"))
        assert srv.unused() == {"Plan": 1}


@pytest.mark.parametrize("status, kind", [(401, "invalid_request_error"), (429, "rate_limit_error"),
                                          (500, "server_error"), (503, "server_error")])
def test_status_entry_replies_with_an_openai_error_body(status, kind):
    with ScriptedLLMServer({"answers": {"Plan": [{"status": status}]}}) as srv:
        response = _chat(srv.base_url, _schema_body("Plan"))
    assert response.status_code == status
    assert response.json()["error"]["type"] == kind
    assert response.json()["error"]["message"]


def test_status_entry_carries_a_custom_error_message():
    with ScriptedLLMServer({"answers": {"Plan": [{"status": 400, "error": "context too long"}]}}) as srv:
        response = _chat(srv.base_url, _schema_body("Plan"))
    assert (response.status_code, response.json()["error"]["message"]) == (400, "context too long")


def test_reject_json_schema_behaves_like_llama_cpp():
    scenario = {"reject_json_schema": True, "answers": {"Plan": [{"answer": {"ok": True}}]}}
    json_object = {"model": "m", "messages": [{"role": "user", "content": "x"}],
                   "response_format": {"type": "json_object", "schema": {"title": "Plan"}}}
    with ScriptedLLMServer(scenario) as srv:
        rejected = _chat(srv.base_url, _schema_body("Plan"))
        accepted = _chat(srv.base_url, json_object)
    assert rejected.status_code == 400
    assert "json_schema" in rejected.json()["error"]["message"]
    assert _content(accepted) == {"ok": True}


def test_tool_calls_and_raw_and_refusal_entries():
    scenario = {"answers": {"tools": [{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}},
                                                      {"name": "read", "arguments": "{broken"}]}],
                            "Plan": [{"raw": "not json"}, {"refusal": "I cannot help"}]}}
    tools_body = {"model": "m", "messages": [{"role": "user", "content": "go"}],
                  "tools": [{"type": "function", "function": {"name": "shell", "parameters": {}}}]}
    with ScriptedLLMServer(scenario) as srv:
        tool_message = _chat(srv.base_url, tools_body).json()["choices"][0]
        raw = _chat(srv.base_url, _schema_body("Plan")).json()["choices"][0]["message"]
        refusal = _chat(srv.base_url, _schema_body("Plan")).json()["choices"][0]["message"]
    calls = tool_message["message"]["tool_calls"]
    assert tool_message["finish_reason"] == "tool_calls"
    assert [c["function"]["name"] for c in calls] == ["shell", "read"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "ls"}
    assert calls[1]["function"]["arguments"] == "{broken"
    assert calls[0]["id"] != calls[1]["id"]
    assert raw["content"] == "not json"
    assert refusal["content"] is None and refusal["refusal"] == "I cannot help"


def test_usage_counts_tokens_from_text_length():
    text = "x" * 400
    with ScriptedLLMServer({"answers": {"Plan": [{"raw": "y" * 80}]}}) as srv:
        usage = _chat(srv.base_url, _schema_body("Plan", text)).json()["usage"]
    assert usage == {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def test_request_log_records_schema_body_status_and_times():
    with ScriptedLLMServer({"answers": {"Plan": [{"answer": {}}]}}) as srv:
        body = _schema_body("Plan", "log me")
        _chat(srv.base_url, body)
        _chat(srv.base_url, body)
        log = srv.requests
    assert [entry["schema"] for entry in log] == ["Plan", "Plan"]
    assert [entry["status"] for entry in log] == [200, 500]
    assert log[0]["body"] == body
    assert all(entry["received"] <= entry["answered"] for entry in log)


def test_requests_with_latency_are_served_concurrently():
    scenario = {"latency_s": 0.5, "answers": {"Plan": [{"match": "one", "answer": {"n": 1}},
                                                       {"match": "two", "answer": {"n": 2}}]}}

    async def both(base_url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=10) as client:
            url = f"{base_url}/chat/completions"
            return await asyncio.gather(client.post(url, json=_schema_body("Plan", "one")),
                                        client.post(url, json=_schema_body("Plan", "two")))

    with ScriptedLLMServer(scenario) as srv:
        responses = asyncio.run(both(srv.base_url))
        log = srv.requests
    assert sorted(_content(r)["n"] for r in responses) == [1, 2]
    assert len(log) == 2
    # Overlap: the second request arrived before the first one was answered.
    assert max(e["received"] for e in log) < min(e["answered"] for e in log)


def test_entry_latency_overrides_scenario_default():
    scenario = {"latency_s": 5.0, "answers": {"Plan": [{"answer": {}, "latency_s": 0.0}]}}
    with ScriptedLLMServer(scenario) as srv:
        response = httpx.post(f"{srv.base_url}/chat/completions", json=_schema_body("Plan"), timeout=3)
    assert response.status_code == 200


def test_models_endpoint_and_scenario_from_json_file(tmp_path):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"answers": {"Plan": [{"answer": {"from": "file"}}]}}), encoding="utf-8")
    with ScriptedLLMServer(path) as srv:
        models = httpx.get(f"{srv.base_url}/models", timeout=5).json()
        answer = _content(_chat(srv.base_url, _schema_body("Plan")))
    assert models["data"][0]["id"] == "scripted"
    assert answer == {"from": "file"}


def test_stop_frees_the_port_and_bad_body_is_a_400():
    srv = ScriptedLLMServer(Scenario()).start()
    bad = httpx.post(f"{srv.base_url}/chat/completions", content=b"{nope", timeout=5)
    srv.stop()
    assert bad.status_code == 400
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{srv.base_url}/models", timeout=2)


_TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {}}}]
_SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "Plan", "schema": {}, "strict": True}}
_OBJECT_FORMAT = {"type": "json_object", "schema": {"title": "Plan"}}


@pytest.mark.parametrize("profile, extra, status, body", [
    # llama-cpp-python 0.3.36: FastAPI's validation error wrapped by its RouteErrorHandler (HTTP 500), the body
    # captured from that server on this machine (/work/models/refusal-llama-cpp-python-json_schema.json)
    ("llama-cpp-python", {"response_format": _SCHEMA_FORMAT}, 500,
     b'{"error":{"message":"1 validation error:\\n  {\'type\': \'literal_error\', \'loc\': (\'body\', '
     b'\'response_format\', \'type\'), \'msg\': \\"Input should be \'text\' or \'json_object\'\\", \'input\': '
     b'\'json_schema\', \'ctx\': {\'expected\': \\"\'text\' or \'json_object\'\\"}}\\n\\n  File \\"/work/models/'
     b'lcp-venv/lib/python3.11/site-packages/llama_cpp/server/app.py\\", line 376, in create_chat_completion\\n'
     b'    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}'),
    ("llama-cpp-python", {"response_format": _OBJECT_FORMAT, "tools": _TOOLS}, 200, None),
    # llama-server --no-jinja: runtime_error → 500 server_error, nlohmann's sorted keys
    ("llama-server-no-jinja", {"tools": _TOOLS, "response_format": _SCHEMA_FORMAT}, 500,
     b'{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}'),
    ("llama-server-no-jinja", {"tool_choice": "required"}, 500,
     b'{"error":{"code":500,"message":"tool_choice param requires --jinja flag","type":"server_error"}}'),
    ("llama-server-no-jinja", {"response_format": {"type": "xml"}}, 400,
     b'{"error":{"code":400,"message":"response_format type must be one of \\"text\\" or \\"json_object\\", '
     b'but got: xml","type":"invalid_request_error"}}'),
    ("llama-server-no-jinja", {"response_format": _SCHEMA_FORMAT}, 200, None),
    # llama-server of 2024 (ggml-org/llama.cpp#9522)
    ("llama-server-2024", {"response_format": _SCHEMA_FORMAT}, 500,
     b'{"error":{"code":500,"message":"response_format type must be one of \\"text\\" or \\"json_object\\", '
     b'but got: json_schema","type":"server_error"}}'),
    ("llama-server-2024", {"response_format": _OBJECT_FORMAT}, 200, None),
    # Ollama: the model's full name, Go's encoder (trailing newline)
    ("ollama-no-tools", {"tools": _TOOLS}, 400,
     b'{"error":{"message":"registry.ollama.ai/library/m:latest does not support tools",'
     b'"type":"invalid_request_error","param":null,"code":null}}\n'),
    ("ollama-no-tools", {"response_format": _SCHEMA_FORMAT}, 200, None),
    # vLLM without a tool parser: a top-level error object
    # OpenAI, a model without Structured Outputs: pretty-printed bodies
    ("openai-without-structured-outputs", {"response_format": _OBJECT_FORMAT}, 400,
     b'{\n  "error": {\n    "message": "Unknown parameter: \'response_format.schema\'.",\n    "type": '
     b'"invalid_request_error",\n    "param": "response_format.schema",\n    "code": "unknown_parameter"\n  }\n}\n'),
    ("openai-without-structured-outputs", {"response_format": {"type": "json_object"}, "tools": _TOOLS}, 200, None),
    ("vllm-no-tool-parser", {"tools": _TOOLS}, 400,
     b'{"object":"error","message":"\\"auto\\" tool choice requires --enable-auto-tool-choice and '
     b'--tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}'),
])
def test_refusal_profiles_answer_real_status_and_bytes(profile, extra, status, body):
    scenario = {"refuse": profile, "answers": {"Plan": [{"answer": {"ok": 1}, "repeat": True}],
                                               "tools": [{"answer": {"ok": 2}, "repeat": True}]}}
    request = {"model": "m", "messages": [{"role": "system", "content": 'schema named "Plan"'},
                                          {"role": "user", "content": "x"}], **extra}
    with ScriptedLLMServer(scenario) as srv:
        response = _chat(srv.base_url, request)
    assert response.status_code == status
    if body is None:
        assert json.loads(response.json()["choices"][0]["message"]["content"])["ok"] in (1, 2)
    else:
        assert response.content == body
        assert response.headers["content-type"] == "application/json"


def test_tool_calls_answer_a_content_protocol_request_in_the_content():
    scenario = {"answers": {"tools": [{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}]}}
    request = {"model": "m", "messages": [{"role": "system", "content": "You can call these tools (…)"},
                                          {"role": "user", "content": "go"}]}
    with ScriptedLLMServer(scenario) as srv:
        message = _chat(srv.base_url, request).json()["choices"][0]["message"]
        assert srv.requests[0]["schema"] == "tools"
    assert "tool_calls" not in message
    assert json.loads(message["content"]) == {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}
