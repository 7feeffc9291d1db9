"""A scripted OpenAI-compatible chat server: real HTTP, deterministic answers.

Tests and demos must exercise the real ``openai`` client over real HTTP, yet a real
model is slow, costly and not reproducible.  This server replays a ``Scenario``: queues
of answers keyed by the schema NAME a request asks for.

Routing (how a request finds its queue):

* a request carrying ``tools``, or a system message of the JSON-in-content tool protocol (a server
  without tools), goes to the ``"tools"`` queue (executor turns); there an entry's ``tool_calls``
  are answered the way that protocol asks: as ``{"tool_calls": [...]}`` in the content;
* ``response_format.type == "json_schema"`` → ``response_format.json_schema.name``;
* ``response_format.type == "json_object"`` → the ``title`` of ``response_format.schema``
  when that title is a scenario key, else the NAME written in a system message as
  ``schema named "NAME"`` (the phrase artoo's LLM layer writes in JSON mode);
* within the queue, the first entry whose ``match`` (if any) occurs in the concatenated
  message contents is used, and consumed unless ``repeat`` is set;
* a scenario's ``refuse`` profile (``server_refusals``) answers first, with the real
  status and body of that server, every request shape that server refuses;
* a programmable ``responder(name, body)`` (``artoo eval``'s simulated model) is asked first:
  its ScriptEntry (or dict) answers, None falls through to the queues.

A request the script cannot answer gets HTTP 500 naming the schema, so a test fails
with a clear message instead of hanging.

With ``n_ctx`` set the server also behaves like llama.cpp's ``llama-server -c N`` about its
context window: ``GET /props`` reports it (the real response shape, trimmed), ``/v1/models``
carries ``meta.n_ctx_train`` (the training context, larger, which a client must not take for the
window), and a request whose prompt (counted as ``usage.prompt_tokens`` is: characters ÷ 4) does
not fit is refused with llama.cpp's HTTP 400 ``exceed_context_size_error``.  ``max_model_len``
makes ``/v1/models`` answer like vLLM's.  Handlers are async, so requests with latency
overlap the way parallel subtasks do against a real endpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from pydantic import BaseModel, Field, field_validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from artoo.tasks.llm.output.modes import BASH_NOTE_HEAD, TOOLS_NOTE_HEAD
from artoo.tasks.llm.testing.server_refusals import PROFILES

__all__ = ["KEEP_ALIVE_S", "SCHEMA_NAMED", "Scenario", "ScriptEntry", "ScriptedLLMServer", "message_text", "props",
           "prompt_tokens_of", "route_name", "serve_forever"]

KEEP_ALIVE_S = 60
"""How long an idle client connection stays open (uvicorn's default is 5 s, exactly httpx's keep-alive expiry:
a connection reused just as the server closes it fails with ReadError, as a call 5 s after the last one did)."""
VOTE_HEAD = "Write ONE bash command that does this request in the current folder."
"""How a vote request begins (tasks/roles/voter.VOTE_HEAD): answered from ``Vote``."""
SCHEMA_NAMED = re.compile(r'schema named "?([A-Za-z_][A-Za-z0-9_]*)')
"""How the NAME is read from a system message in JSON-object mode."""

_ERRORS = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "forbidden", "You are not allowed to use this model."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("rate_limit_error", "rate_limit_exceeded", "Rate limit reached, slow down."),
}


class ScriptEntry(BaseModel):
    """One scripted reply."""

    answer: Any = None
    """JSON value returned as message content (json.dumps'd)."""
    raw: str | None = None
    """Content string returned verbatim (for malformed-JSON tests)."""
    refusal: str | None = None
    """A refusal message instead of content."""
    tool_calls: list[dict] | None = None
    """Executor turn: [{"name": "shell", "arguments": {...} or "raw string"}]."""
    match: str | None = None
    """Only answer a request whose message text contains this substring."""
    status: int | None = None
    """Reply with this HTTP error status and an OpenAI-style error body."""
    error: str | None = None
    """The error message sent with ``status`` (a typical one for that status when unset)."""
    latency_s: float | None = None
    """Delay before answering; overrides the scenario default."""
    repeat: bool = False
    """Never consumed: answers forever."""
    body: dict | None = None
    """The whole response body, sent verbatim (a real server's recorded answer or error; see transcript.py)."""
    when_format: str | None = None
    """Only answer a request whose response_format.type is this ("none": a request without one)."""


class Scenario(BaseModel):
    """What the server answers, keyed by schema NAME ("tools" for executor turns)."""

    answers: dict[str, list[ScriptEntry]] = Field(default_factory=dict)
    latency_s: float = 0.0
    reject_json_schema: bool = False
    """Behave like older llama.cpp: 400 on json_schema, accept json_object (+schema)."""
    n_ctx: int | None = None
    """Behave like llama-server started with ``-c n_ctx``: GET /props, and prompts over it refused."""
    max_model_len: int | None = None
    """Behave like vLLM about the window: /v1/models lists the model with this ``max_model_len``."""
    prompt_cache: bool = False
    """Behave like llama-server's prompt cache on one slot: each answer's ``timings`` says how much of its prompt
    began as the last prompt did (``cache_n``) and how much was new (``prompt_n``)."""
    refuse: str | None = None
    """A real server's refusals (a name of ``server_refusals.PROFILES``): its status and body, byte for
    byte, for every request shape it refuses; the rest is answered from the queues."""

    @field_validator("refuse")
    @classmethod
    def _known_profile(cls, name: str | None) -> str | None:
        if name is not None and name not in PROFILES:
            raise ValueError(f"unknown refusal profile {name!r}; known: {', '.join(PROFILES)}")
        return name

    @classmethod
    def load(cls, source: Scenario | dict | str | Path) -> Scenario:
        """A Scenario from itself, a dict, or a JSON file path."""
        if isinstance(source, Scenario):
            return source
        if isinstance(source, dict):
            return cls.model_validate(source)
        return cls.model_validate_json(Path(source).read_text(encoding="utf-8"))


def message_text(messages: list[dict]) -> str:
    """All message contents joined by newlines (text parts of list contents included)."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def route_name(body: dict, known: set[str]) -> str | None:
    """The queue a request belongs to (see the module docstring), or None."""
    if body.get("tools"):
        return "tools"
    system = message_text([m for m in body.get("messages", []) if m.get("role") == "system"])
    if TOOLS_NOTE_HEAD in system or BASH_NOTE_HEAD in system:
        return "tools"
    if message_text([m for m in body.get("messages", []) if m.get("role") == "user"]).startswith(VOTE_HEAD):
        return "Vote"
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("name")
    title = (fmt.get("schema") or {}).get("title") if isinstance(fmt.get("schema"), dict) else None
    if title in known:
        return title
    found = SCHEMA_NAMED.search(system)
    return found.group(1) if found else None


def _error(status: int, message: str, kind: str | None = None, code: str | None = None) -> JSONResponse:
    default_kind, default_code, _ = _ERRORS.get(status, ("server_error", None, ""))
    body = {"error": {"message": message, "type": kind or default_kind, "param": None,
                      "code": code or default_code}}
    return JSONResponse(body, status_code=status)


def _tool_calls(calls: list[dict]) -> list[dict]:
    out = []
    for call in calls:
        args = call.get("arguments", {})
        out.append({"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                    "function": {"name": call["name"],
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


def prompt_text(body: dict) -> str:
    """A request's prompt as one text, in the order a chat template lays it out: tools, then every message."""
    tools = json.dumps(body["tools"]) if body.get("tools") else ""
    return tools + "".join(f"<{m.get('role')}>{message_text([m])}" for m in body.get("messages", []))


def prompt_tokens_of(body: dict) -> int:
    """The prompt tokens this server counts for a request: message text and tool definitions, ÷ 4."""
    tools = json.dumps(body["tools"]) if body.get("tools") else ""
    return max(1, (len(message_text(body.get("messages", []))) + len(tools)) // 4)


def props(n_ctx: int) -> dict:
    """llama-server's ``GET /props`` answer (its README's shape, sampling params trimmed)."""
    return {"default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": n_ctx, "speculative": False,
                                            "is_processing": False, "params": {"n_predict": -1, "max_tokens": -1},
                                            "prompt": "", "next_token": {"has_next_token": True, "n_remain": -1}},
            "total_slots": 1, "model_path": "models/scripted.gguf", "chat_template": "...",
            "build_info": "b0-scripted"}


def bash_text(entry: ScriptEntry) -> str | None:
    """An executor entry as a bash-block protocol answer: a shell call as its ```bash block, a final answer as its
    DONE (or FAILED) line; None for anything else (a raw answer is sent as it is)."""
    if entry.tool_calls and all(c.get("name") == "shell" for c in entry.tool_calls):
        return "\n".join(f"```bash\n{c.get('arguments', {}).get('command', '')}\n```" for c in entry.tool_calls)
    if entry.raw is None and isinstance(entry.answer, dict) and "status" in entry.answer:
        word = "FAILED" if entry.answer["status"] == "failed" else "DONE"
        return f"{word}: {entry.answer.get('output', '')}"
    return None


def _completion(body: dict, entry: ScriptEntry) -> dict:
    native = bool(body.get("tools"))
    bash = BASH_NOTE_HEAD in message_text([m for m in body.get("messages", []) if m.get("role") == "system"])
    tool_calls = _tool_calls(entry.tool_calls) if entry.tool_calls and native else None
    if bash and bash_text(entry) is not None:  # the bash-block protocol: a command block, or a DONE line
        content = bash_text(entry)
    elif entry.tool_calls and not native:  # the JSON-in-content protocol: the calls are the content
        content = json.dumps({"tool_calls": entry.tool_calls})
    elif entry.raw is not None:
        content = entry.raw
    elif entry.answer is not None:
        content = json.dumps(entry.answer)
    else:
        content = None
    produced = (content or "") + (entry.refusal or "") + json.dumps(tool_calls or "")
    prompt_tokens = prompt_tokens_of(body)
    completion_tokens = max(1, len(produced) // 4)
    message = {"role": "assistant", "content": content, "refusal": entry.refusal}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion",
        "created": int(time.time()), "model": body.get("model") or "scripted",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class ScriptedLLMServer:
    """The scripted endpoint on 127.0.0.1, run in a background thread."""

    def __init__(self, scenario: Scenario | dict | str | Path, port: int = 0, host: str = "127.0.0.1",
                 responder: Callable[[str, dict], ScriptEntry | dict | None] | None = None):
        self.scenario = Scenario.load(scenario)
        self.responder = responder
        self.host, self.port = host, port
        self._queues = {name: list(entries) for name, entries in self.scenario.answers.items()}
        self._lock = threading.Lock()
        self._last_prompt = ""
        self._log: list[dict] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/props", self._props, methods=["GET"]),
        ])

    @property
    def base_url(self) -> str:
        """The OpenAI base URL clients should use, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        """A copy of the request log: schema, body, status, received, answered."""
        with self._lock:
            return list(self._log)

    def unused(self) -> dict[str, int]:
        """Per queue, how many consumable (non-repeat) entries were never used."""
        with self._lock:
            counts = {name: sum(not e.repeat for e in q) for name, q in self._queues.items()}
        return {name: n for name, n in counts.items() if n}

    def _take(self, name: str, text: str, fmt: str) -> ScriptEntry | None:
        with self._lock:
            queue = self._queues.get(name, [])
            for index, entry in enumerate(queue):
                if entry.when_format not in (None, fmt):
                    continue
                if entry.match is None or entry.match in text:
                    if not entry.repeat:
                        del queue[index]
                    return entry
        return None

    async def _models(self, request: Request) -> JSONResponse:
        model = {"id": "scripted", "object": "model", "created": 0, "owned_by": "artoo"}
        if self.scenario.n_ctx:  # llama.cpp: the training context, not the served window
            model["meta"] = {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768, "n_embd": 1536}
        if self.scenario.max_model_len:
            model["max_model_len"] = self.scenario.max_model_len
        return JSONResponse({"object": "list", "data": [model]})

    async def _props(self, request: Request) -> JSONResponse:
        if not self.scenario.n_ctx:
            return JSONResponse({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}},
                                status_code=404)
        return JSONResponse(props(self.scenario.n_ctx))

    async def _chat(self, request: Request) -> JSONResponse:
        received = time.time()
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return _error(400, f"request body is not JSON: {exc}")
        name, entry, response = self._answer(body)
        if entry is not None:
            await asyncio.sleep(entry.latency_s if entry.latency_s is not None else self.scenario.latency_s)
        with self._lock:
            self._log.append({"schema": name, "body": body, "status": response.status_code,
                              "received": received, "answered": time.time()})
        return response

    def _answer(self, body: dict) -> tuple[str | None, ScriptEntry | None, Response]:
        """The queue name, the entry used (None on a routing error) and the response."""
        refusal = PROFILES[self.scenario.refuse](body) if self.scenario.refuse else None
        if refusal is not None:
            status, content = refusal
            return "refused", None, Response(content, status_code=status, media_type="application/json")
        fmt = body.get("response_format") or {}
        if self.scenario.reject_json_schema and fmt.get("type") == "json_schema":
            return "json_schema", None, _error(400, "response_format type must be one of \"text\" or "
                                              "\"json_object\", but got: json_schema")
        name = route_name(body, set(self._queues))
        needed, n_ctx = prompt_tokens_of(body), self.scenario.n_ctx
        if n_ctx and needed > n_ctx:  # llama.cpp's words (server-context.cpp)
            return name, None, JSONResponse({"error": {
                "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": needed, "n_ctx": n_ctx,
                "message": f"request ({needed} tokens) exceeds the available context size "
                           f"({n_ctx} tokens), try increasing it"}}, status_code=400)
        if name is None:
            return None, None, _error(500, "scripted LLM cannot route this request: no tools, no "
                                     "response_format.json_schema.name, no schema title or "
                                     'system-message phrase \'schema named "NAME"\'', kind="script_error")
        entry = self._respond(name, body) or self._take(name, message_text(body.get("messages", [])),
                                                         fmt.get("type") or "none")
        if entry is None:
            left = len(self._queues.get(name, []))
            return name, None, _error(500, f"scripted LLM ran out of answers for schema {name!r} "
                                     f"({left} entries left, none matching this request)",
                                kind="script_exhausted")
        if entry.body is not None:
            return name, entry, JSONResponse(entry.body, status_code=entry.status or 200)
        if entry.status is not None:
            default = _ERRORS.get(entry.status, ("", None, f"Scripted error {entry.status}."))[2]
            return name, entry, _error(entry.status, entry.error or default)
        completion = _completion(body, entry)
        if self.scenario.prompt_cache:
            completion["timings"] = self._cached(body, completion["usage"]["prompt_tokens"])
        return name, entry, JSONResponse(completion)

    def _cached(self, body: dict, prompt_tokens: int) -> dict:
        """llama-server's ``timings`` for a one-slot prompt cache: the longest common prefix of this prompt's text
        with the last one's, in the same four-characters-a-token this server counts."""
        text = prompt_text(body)
        with self._lock:
            last, self._last_prompt = self._last_prompt, text
        common = len(os.path.commonprefix([last, text]))
        cache_n = min(common // 4, prompt_tokens)
        return {"cache_n": cache_n, "prompt_n": prompt_tokens - cache_n}

    def _respond(self, name: str, body: dict) -> ScriptEntry | None:
        if self.responder is None:
            return None
        answer = self.responder(name, body)
        return ScriptEntry.model_validate(answer) if isinstance(answer, dict) else answer

    def _config(self) -> uvicorn.Config:
        return uvicorn.Config(self.app, host=self.host, port=self.port, log_level="warning",
                              lifespan="off", timeout_graceful_shutdown=1,
                              timeout_keep_alive=KEEP_ALIVE_S)

    def start(self) -> ScriptedLLMServer:
        """Bind a port (a free one when port is 0) and serve in a daemon thread."""
        # IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto says TCP, and
        # with Nagle on, every answer after a connection's first waited ≈ 40 ms for the client's delayed ACK
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._server = uvicorn.Server(self._config())
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"scripted-llm-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"scripted LLM server on {self.base_url} failed to start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask the server to exit and wait for its thread."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
            self._server = self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve_forever(scenario: Scenario | dict | str | Path, port: int = 8765, host: str = "127.0.0.1") -> None:
    """Serve a scenario in the foreground until interrupted (for a CLI)."""
    server = ScriptedLLMServer(scenario, port=port, host=host)
    print(f"scripted LLM serving {server.base_url} (Ctrl-C to stop)", flush=True)
    uvicorn.Server(server._config()).run()


if __name__ == "__main__":  # python -m artoo.tasks.llm.testing.scripted_server scenario.json [port]
    import sys

    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python -m artoo.tasks.llm.testing.scripted_server SCENARIO.json [PORT]")
    serve_forever(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 8765)
