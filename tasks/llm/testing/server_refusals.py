"""How real OpenAI-compatible servers refuse what they do not support: status codes and bodies, byte for byte.

The scripted server (``Scenario.refuse``) replays one of these profiles so that artoo's negotiation
is tested against what the servers really send, not against a convenient imitation.  Each profile
is a function of the request body: the refusal the real server gives for that request shape (the
first one it would hit, in its own order of checks), or None when it would accept the request.
Where each body comes from is written beside it; the JSON is serialised as each server does
(FastAPI and nlohmann compact, nlohmann with sorted keys, Go's encoder with a trailing newline,
OpenAI pretty-printed).
"""

from __future__ import annotations

import json
from collections.abc import Callable

__all__ = ["PROFILES", "Refusal", "llama_cpp_python", "llama_server_2024", "llama_server_no_jinja", "ollama_no_tools",
           "openai_reasoning_sampling", "openai_without_structured_outputs", "vllm_no_tool_parser"]

Refusal = tuple[int, bytes]
"""HTTP status and the exact response body (always served as application/json)."""


def _compact(data: dict) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def llama_cpp_python(body: dict) -> Refusal | None:
    """llama-cpp-python 0.3.36's ``python -m llama_cpp.server`` (FastAPI 0.165, pydantic 2.14).

    ``response_format`` is a TypedDict whose ``type`` is ``Literal["text", "json_object"]``
    (llama_cpp/llama_types.py); FastAPI's RequestValidationError is caught by the server's
    ``RouteErrorHandler`` (llama_cpp/server/errors.py), which matches none of its patterns and wraps
    ``str(error)`` as ``internal_server_error`` with HTTP 500.  The body is the one captured from that
    server on this machine for ``json_schema`` (/work/models/refusal-llama-cpp-python-json_schema.json,
    2026-11-24), verbatim, the site-packages path included; ggml-org/llama.cpp issue 23463 reports the same
    500 from 0.3.23.  ``tools`` is accepted: the chat template renders it, and Qwen2.5 answers with
    ``<tool_call>`` text in the content (no ``tool_calls``).
    """
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if fmt is None or kind in ("text", "json_object"):
        return None
    message = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
               f"'msg': \"Input should be 'text' or 'json_object'\", 'input': {kind!r}, "
               "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n"
               '  File "/work/models/lcp-venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, '
               "in create_chat_completion\n    POST /v1/chat/completions")
    return 500, _compact({"error": {"message": message, "type": "internal_server_error", "param": None,
                                    "code": None}})


def llama_server_no_jinja(body: dict) -> Refusal | None:
    """llama.cpp's ``llama-server`` started with ``--no-jinja`` (the build vendored by llama-cpp-python 0.3.36).

    ``oaicompat_chat_params_parse`` (tools/server/server-common.cpp) throws ``std::runtime_error``
    for ``tools`` and a non-auto ``tool_choice`` before it reads ``response_format``; server.cpp's
    ``ex_wrapper`` turns runtime_error into ERROR_TYPE_SERVER (HTTP 500, ``server_error``) and
    invalid_argument into ERROR_TYPE_INVALID_REQUEST (400); ``format_error_response`` builds
    {code, message, type}, dumped by nlohmann with sorted keys.  ``json_schema`` is accepted.
    """
    if isinstance(body.get("tools"), list) and body["tools"]:
        return 500, _compact({"error": {"code": 500, "message": "tools param requires --jinja flag",
                                        "type": "server_error"}})
    if body.get("tool_choice", "auto") != "auto":
        return 500, _compact({"error": {"code": 500, "message": "tool_choice param requires --jinja flag",
                                        "type": "server_error"}})
    fmt = body.get("response_format")
    kind = fmt.get("type", "") if isinstance(fmt, dict) else ""
    if kind not in ("", "text", "json_object", "json_schema"):
        message = f'response_format type must be one of "text" or "json_object", but got: {kind}'
        return 400, _compact({"error": {"code": 400, "message": message, "type": "invalid_request_error"}})
    return None


def llama_server_2024(body: dict) -> Refusal | None:
    """``llama-server`` before it took ``json_schema`` (b3777, September 2024; ik_llama.cpp in 2025).

    Quoted from ggml-org/llama.cpp#9522 and ikawrakow/ik_llama.cpp#778:
    ``{'error': {'code': 500, 'message': 'response_format type must be one of "text" or
    "json_object", but got: json_schema', 'type': 'server_error'}}``.
    """
    fmt = body.get("response_format")
    kind = fmt.get("type", "") if isinstance(fmt, dict) else ""
    if kind in ("", "text", "json_object"):
        return None
    message = f'response_format type must be one of "text" or "json_object", but got: {kind}'
    return 500, _compact({"error": {"code": 500, "message": message, "type": "server_error"}})


def ollama_no_tools(body: dict) -> Refusal | None:
    """Ollama's ``/v1`` for a model whose template has no tools (llama2, gemma3, stablelm2 …).

    The native handler answers 400 ``{"error": "<model> does not support tools"}`` with the model's
    full name (ollama/ollama#14795: ``registry.ollama.ai/library/Qwen3.5:0.8b does not support
    tools``); the OpenAI middleware (middleware/openai.go ``writeError``) rewraps it with
    ``openai.NewError(400, …)``: type ``invalid_request_error`` (older releases said ``api_error``,
    louisho5/picobot#6), encoded by Go's json.Encoder (trailing newline).  json_schema is accepted.
    """
    if not (isinstance(body.get("tools"), list) and body["tools"]):
        return None
    model = str(body.get("model") or "")
    name = model if ":" in model else f"{model}:latest"
    name = name if "/" in name else f"registry.ollama.ai/library/{name}"
    error = {"message": f"{name} does not support tools", "type": "invalid_request_error", "param": None,
             "code": None}
    return 400, _compact({"error": error}) + b"\n"


def vllm_no_tool_parser(body: dict) -> Refusal | None:
    """vLLM's OpenAI server started without ``--enable-auto-tool-choice --tool-call-parser``.

    Quoted from langchain4j/langchain4j#3475 (vLLM's ``create_error_response``, top-level body):
    ``{"object":"error","message":"\\"auto\\" tool choice requires --enable-auto-tool-choice and
    --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}``.
    """
    if not (isinstance(body.get("tools"), list) and body["tools"]) or body.get("tool_choice", "auto") != "auto":
        return None
    message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    return 400, _compact({"object": "error", "message": message, "type": "BadRequestError", "param": None,
                          "code": 400})


def openai_without_structured_outputs(body: dict) -> Refusal | None:
    """OpenAI's API (and Azure's) for a model without Structured Outputs (gpt-4, gpt-3.5-turbo-1106 …).

    ``json_schema``: quoted from langchain-ai/langchain#31490; the llama.cpp-style ``schema`` key in
    ``json_object``: quoted from spring-projects/spring-ai issue 2969 (``unknown_parameter``).  Plain
    ``json_object`` and ``tools`` are accepted.  OpenAI pretty-prints its error bodies (2-space indent).
    """
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None
    if fmt.get("type") == "json_schema":
        message = ("Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model. "
                   "Learn more about supported models at the Structured Outputs guide: "
                   "https://platform.openai.com/docs/guides/structured-outputs")
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    elif "schema" in fmt:
        error = {"message": "Unknown parameter: 'response_format.schema'.", "type": "invalid_request_error",
                 "param": "response_format.schema", "code": "unknown_parameter"}
    else:
        return None
    return 400, (json.dumps({"error": error}, indent=2) + "\n").encode()


def openai_reasoning_sampling(body: dict) -> Refusal | None:
    """OpenAI's API (and Azure's) for a reasoning model (o1, o3-mini, gpt-5): sampling fields it does not take.

    ``max_tokens``: quoted from griptape-ai/ComfyUI-Griptape#312 and ITSpecialist111/ai_automation_suggester#38
    (``code: unsupported_parameter``, ``param: max_tokens``); a ``temperature`` other than 1: quoted from
    gabrii/Cursor-Azure-GPT-5#33 and OpenHands/OpenHands#4131 (``code: unsupported_value``, the value as
    sent).  Structured outputs and ``tools`` are accepted.  Pretty-printed, as OpenAI's error bodies are.
    """
    if "max_tokens" in body:
        error = {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                            "Use 'max_completion_tokens' instead.",
                 "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}
    elif "temperature" in body and body["temperature"] != 1:
        error = {"message": f"Unsupported value: 'temperature' does not support {json.dumps(body['temperature'])} "
                            "with this model. Only the default (1) value is supported.",
                 "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}
    else:
        return None
    return 400, (json.dumps({"error": error}, indent=2) + "\n").encode()


PROFILES: dict[str, Callable[[dict], Refusal | None]] = {
    "llama-cpp-python": llama_cpp_python,
    "llama-server-no-jinja": llama_server_no_jinja,
    "llama-server-2024": llama_server_2024,
    "ollama-no-tools": ollama_no_tools,
    "vllm-no-tool-parser": vllm_no_tool_parser,
    "openai-without-structured-outputs": openai_without_structured_outputs,
    "openai-reasoning-sampling": openai_reasoning_sampling,
}
"""Refusal profile name → the refusal of that server for a request body."""
