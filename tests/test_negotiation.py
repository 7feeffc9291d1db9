"""Negotiating structured output and tool calls per endpoint and model, against real servers' refusals.

Pure rules (which HTTP error refuses which feature, tool calls written into content) are tables of
the bodies real servers send; the client stories go over real HTTP to the scripted server replaying
those servers' refusal profiles (artoo.tasks.llm.testing.server_refusals) through the real ``openai`` client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing

import pytest

from artoo.config.errors import EnvironmentalFailure
from artoo.config.protocol import SCHEMAS, ExecutionAnswer
from artoo.config.settings import load_settings
from artoo.tasks.llm import TOOLS_SCHEMA, OpenAICompatLLM
from artoo.tasks.llm.output.extract import content_tool_calls
from artoo.tasks.llm.output.modes import NEXT_STEP, content_messages, tool_request
from artoo.tasks.llm.profile_store import ProfileStore, store_path
from artoo.tasks.llm.refusals import refused_feature
from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer
from artoo.tasks.llm.testing.server_refusals import PROFILES
from artoo.timeline import render
from tests.conftest import run_cli

SPEC = {"task_id": "count_lines", "intent": "count the lines", "constraints": {"scope": ".", "deadline": None}}
SHELL = {"type": "function", "function": {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}
FINAL = {"status": "completed", "output": "a.txt 3"}
# llama-cpp-python 0.3.x's message for json_schema (server_refusals.llama_cpp_python has the provenance)
LCP_BODY = PROFILES["llama-cpp-python"]({"response_format": {"type": "json_schema"}})[1]
LCP_MESSAGE = json.loads(LCP_BODY)["error"]["message"]


@pytest.mark.parametrize("status, message, sent_format, sent_tools, expected", [
    # llama-cpp-python 0.3.x, json_schema: HTTP 500 internal_server_error (ggml-org/llama.cpp#23463)
    (500, LCP_MESSAGE, True, False, "response_format"),
    # llama-server before json_schema support (ggml-org/llama.cpp#9522, ikawrakow/ik_llama.cpp#778)
    (500, 'response_format type must be one of "text" or "json_object", but got: json_schema', True, False,
     "response_format"),
    # OpenAI, a schema its strict mode does not take
    (400, "Invalid schema for response_format 'Plan': In context=(), 'additionalProperties' is required to be "
          "supplied and to be false.", True, False, "response_format"),
    (422, "unsupported field: response_format", True, False, "response_format"),
    # OpenAI, a model without Structured Outputs (langchain-ai/langchain#31490, spring-projects/spring-ai#2969)
    (400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", True,
     False, "response_format"),
    (400, "Unknown parameter: 'response_format.schema'.", True, False, "response_format"),
    # llama-server --no-jinja (tools/server/server-common.cpp, HTTP 500 server_error)
    (500, "tools param requires --jinja flag", False, True, "tools"),
    (500, "tool_choice param requires --jinja flag", False, True, "tools"),
    # Ollama's /v1 for a model without tools in its template (ollama/ollama#14795, HTTP 400)
    (400, "registry.ollama.ai/library/qwen2.5-coder:1.5b does not support tools", False, True, "tools"),
    (400, "llama3 does not support tools", False, True, "tools"),  # ollama/ollama#5793, Ollama 0.2.7
    # vLLM without a tool parser (langchain4j/langchain4j#3475, HTTP 400)
    (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', False, True,
     "tools"),
    # not refusals: what was not sent cannot be refused, and errors that name no feature
    (500, "tools param requires --jinja flag", True, False, None),
    (500, LCP_MESSAGE, False, True, None),
    (400, "maximum context length exceeded", True, True, None),
    # OpenAI: a conversation error that merely mentions tool calls
    (400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
          "'tool_calls'.", False, True, None),
    # llama-server: the model's output failed its parser (plastic-labs/honcho#1174): a run failure, not a refusal
    (500, "The model produced output that does not match the expected peg-native format", True, True, None),
    (500, "failed to parse grammar from the json schema", True, False, None),  # a 500 naming only "schema"
    (500, "Internal Server Error", True, True, None),
    (503, "response_format type must be one of text or json_object", True, False, None),
])
def test_refused_feature(status, message, sent_format, sent_tools, expected):
    assert refused_feature(status, message, sent_format, sent_tools) == expected


SHELL_LS = {"name": "shell", "arguments": {"command": "ls"}}


# Qwen2.5-Coder-1.5B on llama-server --jinja, asked with a get_time tool: the content of the answer captured on this
# machine (/work/models/refusal-llama-server-tools.json, HTTP 200, finish_reason "stop", no tool_calls)
LLAMA_SERVER_BARE_CALL = '```json\n{\n  "name": "get_time",\n  "arguments": {}\n}\n```'


@pytest.mark.parametrize("content, expected", [
    (LLAMA_SERVER_BARE_CALL, [{"name": "get_time", "arguments": {}}]),
    ('{"name": "shell", "arguments": {"command": "ls"}}', [SHELL_LS]),
    ('{"name": "rm_everything", "arguments": {}}', None),  # a bare object naming no offered tool
    ('{"name": "shell"}', None),  # no arguments: not a call
    # Qwen2.5's chat template (Hermes format), left in content by llama-cpp-python's server
    ('<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>', [SHELL_LS]),
    ('Let me look.\n<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>\n'
     '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
     [SHELL_LS, {"name": "read_file", "arguments": {"path": "a.txt"}}]),
    ('<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}', [SHELL_LS]),  # stopped before the end tag
    ('<tool_call>{"name": "shell", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>', [SHELL_LS]),
    ('<tool_call>{"name": "shell", "arguments": [1]}</tool_call>',
     [{"name": "shell", "arguments": {"_invalid": "[1]"}}]),
    ("<tool_call>{not json</tool_call>", None),
    # the JSON-in-content protocol
    ('{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}', [SHELL_LS]),
    ('```json\n{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}\n```', [SHELL_LS]),
    ('{"tool_calls": [{"type": "function", "function": {"name": "shell", "arguments": "{\\"command\\": \\"ls\\"}"}}]}',
     [SHELL_LS]),
    ('{"tool_calls": [{"name": "shell", "parameters": {"command": "ls"}}]}', [SHELL_LS]),
    ('{"tool_calls": [{"arguments": {"command": "ls"}}]}', None),  # names no tool
    ('{"status": "completed", "output": "3"}', None),  # the final answer
    ("I will run ls now.", None),
    ("", None),
    (None, None),
])
def test_content_tool_calls(content, expected):
    assert content_tool_calls(content, {"shell", "read_file", "get_time"}) == expected


def test_content_messages_render_tool_calls_and_results_as_text():
    wire = [{"role": "system", "content": "S"}, {"role": "user", "content": "count"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}]
    assert content_messages(wire) == [
        {"role": "system", "content": "S"}, {"role": "user", "content": "count"},
        {"role": "assistant", "content": json.dumps({"tool_calls": [SHELL_LS]})},
        {"role": "user", "content": f"Result of the shell call (call_1):\na.txt\n\n{NEXT_STEP}"}]


@pytest.mark.parametrize("mode, has_tools, first_system", [("native", True, "S"), ("content", False, None)])
def test_tool_request_modes(mode, has_tools, first_system):
    request = tool_request(mode, [{"role": "system", "content": "S"}, {"role": "user", "content": "u"}], [SHELL])
    assert ("tools" in request) is has_tools
    system = request["messages"][0]["content"]
    if first_system is not None:
        assert system == first_system
    else:
        assert system.startswith("S\n\nYou can call these tools") and '"name": "shell"' in system
        assert '{"done": false, "tool_calls": [' in system and "ExecutionResult" in system
        assert '{"done": true, "status": "completed" | "uncertain" | "failed", "output": ' in system


def test_unknown_tool_mode_and_unknown_refusal_profile_are_clear_errors():
    with pytest.raises(ValueError, match="unknown tool mode 'xml'; known: native, content"):
        tool_request("xml", [], [SHELL])
    with pytest.raises(ValueError, match="unknown refusal profile 'lmstudio'; known: llama-cpp-python"):
        Scenario.model_validate({"refuse": "lmstudio"})


_CALL = {"kind": "llm", "role": "R1", "model": "qwen", "prompt_tokens": 9, "completion_tokens": 3, "latency_s": 0.5}


@pytest.mark.parametrize("record, shown", [
    ({"schema": "TaskSpec", "ok": False, "error": "HTTP 500: …", "refused": "response_format",
      "negotiated": {"structured": "json_schema", "tools": "native"}},
     "FAILED: HTTP 500: … · response_format refused: the next request falls back"),
    ({"schema": "TaskSpec", "ok": True, "negotiated": {"structured": "json_object_schema", "tools": "native"}},
     "ok · structured mode json_object_schema"),
    ({"schema": "tools", "ok": True, "negotiated": {"structured": "json_object_schema", "tools": "content"}},
     "ok · tools mode content"),
    ({"schema": "Plan", "ok": True, "negotiated": {"structured": "json_schema", "tools": "content"}}, "ok"),
    ({"schema": "Plan", "ok": True}, "ok"),  # a log written before negotiation was recorded
])
def test_artoo_log_shows_the_negotiated_mode_and_refusals(record, shown):
    (line,) = render([{**_CALL, **record}])
    assert line.endswith(f"0.50 s · {shown}")


# --- the client over real HTTP ------------------------------------------------------------------

def _llm(srv: ScriptedLLMServer, home) -> OpenAICompatLLM:
    settings = load_settings(home=home, brain_base_url=srv.base_url, brain_model="qwen", tool_base_url=srv.base_url,
                             tool_model="qwen", openai_base_url=None, openai_model=None, llm_timeout_s=10)
    return OpenAICompatLLM(settings, max_retries=0)


def _use(llm: OpenAICompatLLM, coro_factory):
    async def go():
        try:
            return await coro_factory(llm)
        finally:
            await llm.aclose()

    return asyncio.run(go())


def _spec(llm):
    return llm.structured("R1", "TaskSpec", [{"role": "user", "content": "count the lines"}])


def test_llama_cpp_python_500_on_json_schema_falls_back_once_and_is_remembered(tmp_path, caplog):
    scenario = {"refuse": "llama-cpp-python", "answers": {"TaskSpec": [{"answer": SPEC, "repeat": True}]}}
    seen: list[dict] = []
    with ScriptedLLMServer(scenario) as srv, caplog.at_level(logging.INFO, logger="artoo.llm"):
        first = _llm(srv, tmp_path)
        first.observer = seen.append
        answer = _use(first, _spec)
        second = _llm(srv, tmp_path)  # the next run on this home
        assert second.format_mode("brain") == "json_object_schema"
        assert second.send_early("R1", "TaskSpec", [{"role": "user", "content": "again"}])
        again = _use(second, lambda llm: llm.structured("R1", "TaskSpec", [{"role": "user", "content": "again"}]))
        log = srv.requests
    assert answer == again == SCHEMAS["TaskSpec"].model_validate(SPEC)
    assert [(e["status"], e["body"].get("response_format", {}).get("type")) for e in log] == [
        (500, "json_schema"), (200, "json_object"), (200, "json_object")]  # one refusal across two runs
    assert [(r["negotiated"]["structured"], r["ok"], r.get("refused")) for r in seen] == [
        ("json_schema", False, "response_format"), ("json_object_schema", True, None)]
    assert "HTTP 500" in seen[0]["error"] and "Input should be 'text' or 'json_object'" in seen[0]["error"]
    entry = ProfileStore(store_path(tmp_path)).get(srv.base_url, "qwen")
    assert entry["structured"] == "json_object_schema"
    assert "Input should be 'text' or 'json_object'" in entry["structured_because"]
    assert any("structured mode json_schema -> json_object_schema" in r.getMessage()
               and "HTTP 500" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)


def test_openai_without_structured_outputs_settles_on_plain_json_mode_after_two_refusals(tmp_path):
    scenario = {"refuse": "openai-without-structured-outputs", "answers": {"TaskSpec": [{"answer": SPEC}]}}
    with ScriptedLLMServer(scenario) as srv:
        llm = _llm(srv, tmp_path)
        answer = _use(llm, _spec)
        log = srv.requests
    assert answer == SCHEMAS["TaskSpec"].model_validate(SPEC)
    assert [e["status"] for e in log] == [400, 400, 200]
    assert log[2]["body"]["response_format"] == {"type": "json_object"}
    assert llm.format_mode("brain") == "json_object"
    because = ProfileStore(store_path(tmp_path)).get(srv.base_url, "qwen")["structured_because"]
    assert because == "HTTP 400: Error code: 400 - Unknown parameter: 'response_format.schema'."


def test_an_unknown_500_is_environmental_and_changes_no_mode(tmp_path):
    scenario = {"answers": {"TaskSpec": [{"status": 500, "error": "llama_decode returned -3"}]}}
    with ScriptedLLMServer(scenario) as srv, pytest.raises(EnvironmentalFailure, match="HTTP 500"):
        _use(_llm(srv, tmp_path), _spec)
    assert len(srv.requests) == 1
    assert ProfileStore(store_path(tmp_path)).entries() == {}


@pytest.mark.parametrize("profile, status", [("ollama-no-tools", 400), ("llama-server-no-jinja", 500),
                                             ("vllm-no-tool-parser", 400)])
def test_refused_tools_fall_back_to_the_content_protocol_for_the_whole_conversation(tmp_path, profile, status):
    scenario = {"refuse": profile, "answers": {"tools": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "wc -l a.txt"}}]},
        {"match": "Result of the shell call", "answer": FINAL}]}}

    async def attempt(llm):
        messages = [{"role": "system", "content": "R3"}, {"role": "user", "content": "count the lines"}]
        turn = await llm.tool_turn("R3", messages, [SHELL])
        messages.append(turn.assistant_message)
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "3 a.txt"} for c in turn.tool_calls]
        return turn, await llm.tool_turn("R3", messages, [SHELL]), llm.tool_mode("tool")

    with ScriptedLLMServer(scenario) as srv:
        first, final, mode = _use(_llm(srv, tmp_path), attempt)
        log = srv.requests
        remembered = _llm(srv, tmp_path).tool_mode("tool")
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("shell", {"command": "wc -l a.txt"})]
    assert final.final == ExecutionAnswer(**FINAL)
    assert [e["status"] for e in log] == [status, 200, 200]
    assert "tools" in log[0]["body"] and all("tools" not in e["body"] for e in log[1:])
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in log[2]["body"]["messages"])
    assert (mode, remembered) == ("content", "content")


BARE_SHELL_CALL = '```json\n{\n  "name": "shell",\n  "arguments": {"command": "wc -l *.txt"}\n}\n```'


@pytest.mark.parametrize("refuse, content", [
    ("llama-cpp-python", '<tool_call>\n{"name": "shell", "arguments": {"command": "wc -l *.txt"}}\n</tool_call>'),
    (None, BARE_SHELL_CALL),  # llama-server --jinja takes tools and json_schema: no refusal, the call in content
])
def test_a_tool_call_written_into_content_is_a_tool_call_in_native_mode(tmp_path, refuse, content):
    scenario = {"refuse": refuse, "answers": {"tools": [{"raw": content}]}}
    with ScriptedLLMServer(scenario) as srv:
        llm = _llm(srv, tmp_path)
        turn = _use(llm, lambda llm: llm.tool_turn("R3", [{"role": "user", "content": "count"}], [SHELL]))
        body = srv.requests[0]["body"]
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("shell", {"command": "wc -l *.txt"})]
    assert turn.assistant_message["tool_calls"][0]["id"] == turn.tool_calls[0].id
    assert body["tools"] == [SHELL] and llm.tool_mode("tool") == "native"


def test_an_early_tool_turn_is_sent_in_the_remembered_mode_and_taken_by_the_turn(tmp_path):
    scenario = {"refuse": "ollama-no-tools", "answers": {"tools": [{"answer": FINAL}]}}
    messages = [{"role": "user", "content": "count"}]
    with ScriptedLLMServer(scenario) as srv:
        ProfileStore(store_path(tmp_path)).remember(srv.base_url, "qwen", "tools", "content", "HTTP 400")
        llm = _llm(srv, tmp_path)
        assert llm.send_early("R3", TOOLS_SCHEMA, messages, [SHELL])
        turn = _use(llm, lambda llm: llm.tool_turn("R3", messages, [SHELL]))
        log = srv.requests
    assert turn.final == ExecutionAnswer(**FINAL)
    assert [e["status"] for e in log] == [200] and "tools" not in log[0]["body"]


# --- the store ----------------------------------------------------------------------------------

def test_a_corrupt_store_is_ignored_with_a_warning_and_kept_aside(tmp_path, caplog):
    path = store_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{half a file", encoding="utf-8")
    store = ProfileStore(path)
    with caplog.at_level(logging.WARNING, logger="artoo.llm"):
        assert store.get("http://x/v1", "m") == {}
    assert any("ignoring" in r.getMessage() and "not JSON" in r.getMessage() for r in caplog.records)
    store.remember("http://x/v1", "m", "tools", "content", "HTTP 400: does not support tools")
    assert store.get("http://x/v1", "m")["tools"] == "content"
    assert path.with_name("negotiated.json.corrupt").read_text(encoding="utf-8") == "{half a file"


def test_an_unusable_home_costs_the_memory_of_formats_not_the_call(tmp_path, caplog):
    home = tmp_path / "not-a-directory"
    home.write_text("x", encoding="utf-8")
    scenario = {"refuse": "llama-cpp-python", "answers": {"TaskSpec": [{"answer": SPEC}]}}
    with ScriptedLLMServer(scenario) as srv, caplog.at_level(logging.WARNING, logger="artoo.llm"):
        answer = _use(_llm(srv, home), _spec)
    assert answer == SCHEMAS["TaskSpec"].model_validate(SPEC)
    assert any("negotiated formats are not remembered" in r.getMessage() and "ARTOO_HOME" in r.getMessage()
               for r in caplog.records)


def _remember_many(path: str, model: str) -> None:
    store = ProfileStore(__import__("pathlib").Path(path))
    for i in range(20):
        store.remember("http://shared/v1", model, "structured", "json_object", f"try {i}")
        store.remember("http://shared/v1", model, "tools", "content", f"try {i}")


def test_concurrent_runs_on_one_home_keep_every_entry(tmp_path):
    path = store_path(tmp_path)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_remember_many, args=(str(path), f"model-{n}")) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * 4
    entries = json.loads(path.read_text(encoding="utf-8"))["http://shared/v1"]
    assert sorted(entries) == [f"model-{n}" for n in range(4)]
    assert {(e["structured"], e["tools"], e["tools_because"]) for e in entries.values()} == {
        ("json_object", "content", "try 19")}


def test_artoo_config_prints_each_endpoints_profile(artoo_env, monkeypatch):
    home = artoo_env / "home"
    store = ProfileStore(store_path(home))
    store.remember("http://127.0.0.1:8080/v1", "qwen", "structured", "json_object_schema",
                   "HTTP 500: Input should be 'text'")
    store.update("http://127.0.0.1:8080/v1", "qwen", {
        "sampling_refused": {"temperature": "HTTP 400: Unsupported value: 'temperature'"},
        "grammar": True, "window": {"tokens": 4096, "source": "server http://127.0.0.1:8080/props n_ctx"},
        "cache": {"prompt_cache": True, "id_slot": True, "slots": 2, "reports_cache_n": True}})
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")  # configured, never reached yet
    monkeypatch.setenv("OPENAI_MODEL", "gpt-x")
    code, out, _ = run_cli("config")
    assert code == 0
    section = out[out.index("LLM endpoint profiles"):].splitlines()
    assert section[1:] == [
        "  http://127.0.0.1:8080/v1  model 'qwen'",
        "    structured json_object_schema  (HTTP 500: Input should be 'text')",
        "    tools      native  (not used yet)",
        "    sampling   temperature not sent  (HTTP 400: Unsupported value: 'temperature')",
        "    window     4096 tokens  (server http://127.0.0.1:8080/props n_ctx; its grammar takes maxLength)",
        "    cache      prompt cache reused, id_slot over 2 slot(s), answers report timings.cache_n",
        "  http://127.0.0.1:9999/v1  model 'gpt-x'",
        "    structured json_schema  (not used yet)",
        "    tools      native  (not used yet)"]
    code, out, _ = run_cli("config", "--json")
    profiles = json.loads(out)["llm_profiles"]
    assert profiles["http://127.0.0.1:8080/v1"]["qwen"]["structured"] == "json_object_schema"
    assert profiles["http://127.0.0.1:8080/v1"]["qwen"]["window"]["tokens"] == 4096
    assert profiles["http://127.0.0.1:9999/v1"]["gpt-x"]["tools_because"] is None


def test_artoo_config_says_when_no_endpoint_is_known(artoo_env):
    code, out, _ = run_cli("config")
    assert code == 0 and out[out.index("LLM endpoint profiles"):].splitlines()[1] == (
        "  none yet: the first request to an endpoint tries json_schema and native tools")


# --- a whole run ----------------------------------------------------------------------------------

def _hermes(entry: dict) -> dict:
    """A scripted tool-call turn as llama-cpp-python returns Qwen2.5's: <tool_call> text in the content."""
    if "tool_calls" not in entry:
        return entry
    text = "\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in entry["tool_calls"])
    return {**{k: v for k, v in entry.items() if k != "tool_calls"}, "raw": text}


@pytest.mark.usefixtures("prefect_api")
@pytest.mark.parametrize("profile, modes", [
    ("llama-cpp-python", {"structured": "json_object_schema", "tools": "native", "turn": "json_schema"}),
    ("llama-server-no-jinja", {"structured": "json_schema", "tools": "content", "turn": "json_schema"}),
])
def test_a_run_against_a_refusing_server_completes_and_its_decision_log_shows_the_negotiation(
        scripted, artoo_env, profile, modes):
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run
    from tests.conftest import final_from
    from tests.scenario_kit import change_path_scenario

    story = change_path_scenario(artoo_env / "workspace")
    if profile == "llama-cpp-python":
        story["answers"]["tools"] = [_hermes(e) for e in story["answers"]["tools"]]
    server = scripted({**story, "refuse": profile})
    code, out, _ = run_cli("run", "--json", "count the lines in notes.txt")
    assert (code, final_from(out)["directive"]) == (0, "accept")
    assert [r["status"] for r in server.requests if r["status"] != 200] == [500]  # one refusal in the whole run
    _, records = load_run(load_settings().home_dir)
    calls = [r for r in records if r["kind"] == "llm"]
    assert [r["refused"] for r in calls if r.get("refused")] == ["response_format" if modes["tools"] == "native"
                                                                 else "tools"]
    assert calls[-1]["negotiated"] == modes
    stored = ProfileStore(store_path(load_settings().home_dir)).get(server.base_url, "scripted")
    assert {k: stored[k] for k in modes if k != "turn"} == {k: v for k, v in modes.items() if k != "turn"}
    assert "turn" not in stored  # the content turns' schema was taken: nothing moved, nothing stored
