"""Tool calls without native ``tools``: the JSON-in-content protocol, and tool calls found in content.

Why: not every server takes ``tools`` (Ollama for a model whose template has none, llama.cpp's
``llama-server`` started with ``--no-jinja``, vLLM without a tool parser), and some that take it do
not parse the model's answer: Qwen2.5's chat template makes the model write Hermes-style
``<tool_call>{"name": …, "arguments": …}</tool_call>`` blocks into the content, which
llama-cpp-python's server hands back as plain text.

The **content protocol** (tool mode ``content``): no ``tools`` field; the tools are described in the
system message (``tools_note``) and the model answers with exactly one JSON object, either
``{"done": false, "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}`` or the final
ExecutionResult object ``{"done": true, "status": …, "output": …}`` (``done`` may be left out).  Where
the server holds answers to a JSON schema (``json_schema``, or llama.cpp's ``json_object`` + ``schema``),
each turn is sent with ``turn_schema``: a grammar then makes every call name an offered tool with its
own arguments, and makes every answer begin by saying whether the subtask is done.

The conversation the executor keeps stays in the OpenAI wire format (assistant ``tool_calls``,
``role: tool`` results) whatever the mode; ``content_messages`` renders it as plain user/assistant text
only for the request, so a switch of mode in the middle of an attempt loses nothing.

Pure functions, tested table-driven.  The JSON is found the way every answer's is
(``extract.candidates``: fences, prefixes, trailing prose, <think>): no second extractor.
"""

from __future__ import annotations

import json
import re
import uuid

from artoo.tasks.llm.extract import candidates
from artoo.tasks.llm.parsing import parse_arguments, strict_schema

TOOL_MODES = ("native", "content")
"""Tool-call modes, best first: the ``tools`` request field, then the JSON-in-content protocol."""

TURN_SCHEMA = "ExecutorTurn"
"""The schema name of one content-protocol turn, when the server holds answers to a schema."""
PROTOCOL_KEYS = frozenset({"done", "tool_calls"})
"""Keys of a content-protocol answer that are not part of the final ExecutionResult object."""
TOOLS_NOTE_HEAD = "You can call these tools"
"""How the content protocol's system note begins (the scripted server routes such a request as a tool turn)."""
NEXT_STEP = ("Next: is the subtask done? Answer with only one JSON object: {\"done\": true, \"status\": …, "
             "\"output\": …} once the results above show it is done or cannot be done, else {\"done\": false, "
             "\"tool_calls\": […]} with a different call.")
"""Closes the last tool result of a content-protocol request.  Why: Qwen2.5-Coder-1.5B, handed glob's output
as a bare user message, asked for the same glob again on both attempts (one identical call ends an attempt)."""
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)


def tools_note(tools: list[dict]) -> str:
    """The system-message text of the content protocol: the tools, and the two answers allowed."""
    specs = [t.get("function", t) for t in tools]
    listed = "\n".join(json.dumps({"name": s.get("name"), "description": s.get("description", ""),
                                   "parameters": s.get("parameters", {})}) for s in specs)
    statuses = " | ".join(f'"{s}"' for s in strict_schema("ExecutionResult")["properties"]["status"]["enum"])
    return (f"{TOOLS_NOTE_HEAD} (one JSON object per tool: name, description, JSON-schema parameters):\n"
            f"{listed}\n\n"
            "Answer with only one JSON object (no prose, no code fences), one of:\n"
            '1. to call tools: {"done": false, "tool_calls": [{"name": "<tool name>", "arguments": {<arguments>}}]}\n'
            '2. the final result (the ExecutionResult object), when the subtask is done or cannot be done and you '
            f'call no more tools: {{"done": true, "status": {statuses}, "output": "<the result itself>"}}\n'
            "Tool results come back in the next user message.")


def turn_schema(tools: list[dict]) -> dict:
    """The JSON schema of one content-protocol turn: calls of the offered tools, or the final result.

    Why: without it Qwen2.5-Coder-1.5B fenced every answer, called ``glob`` with ``locate``'s ``query``
    argument and then named tools that do not exist, and kept calling tools after the subtask was done
    (#25, run t7).  A server's grammar holds the answer to this shape: each call names an offered tool
    with that tool's own parameters, and ``done`` comes first, so every turn opens with the decision
    to stop or go on.  No length or number constraints (not every server takes them).
    """
    specs = [t.get("function", t) for t in tools]
    call = [{"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
             "properties": {"name": {"type": "string", "enum": [s.get("name")]},
                            "arguments": s.get("parameters") or {"type": "object"}}} for s in specs]
    final = strict_schema("ExecutionResult")["properties"]
    going = {"type": "object", "additionalProperties": False, "required": ["done", "tool_calls"],
             "properties": {"done": {"type": "boolean", "enum": [False]},
                            "tool_calls": {"type": "array", "minItems": 1, "items": {"anyOf": call}}}}
    done = {"type": "object", "additionalProperties": False, "required": ["done", "status", "output"],
            "properties": {"done": {"type": "boolean", "enum": [True]}, "status": final["status"],
                           "output": final["output"]}}
    return {"anyOf": [going, done]}


def content_messages(messages: list[dict]) -> list[dict]:
    """The wire-format conversation as plain text turns (assistant tool calls, tool results)."""
    names: dict[str, str] = {}
    out: list[dict] = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls:
            names.update({c.get("id", ""): c["function"]["name"] for c in calls})
            wanted = [{"name": c["function"]["name"], "arguments": parse_arguments(c["function"]["arguments"])}
                      for c in calls]
            out.append({"role": "assistant", "content": json.dumps({"tool_calls": wanted})})
        elif message.get("role") == "tool":
            call_id = message.get("tool_call_id", "")
            name = names.get(call_id, "tool")
            out.append({"role": "user", "content": f"Result of the {name} call ({call_id}):\n{message.get('content')}"})
        else:
            out.append(message)
    if messages and messages[-1].get("role") == "tool":
        out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{NEXT_STEP}"}
    return out


def content_tool_calls(content: str | None, names: set[str] | frozenset[str] = frozenset()) -> list[dict] | None:
    """Tool calls written into content, as [{"name", "arguments"}]; None when it holds none.

    Hermes ``<tool_call>`` blocks first (any mode), else one JSON object with a ``tool_calls`` list,
    else one bare ``{"name": …, "arguments": {…}}`` object naming one of the offered tools ``names``
    (Qwen2.5-Coder-1.5B on ``llama-server --jinja`` answered a tool request with exactly that, fenced).
    """
    if not content:
        return None
    blocks = _HERMES.findall(content)
    if blocks:
        calls = [_call(_loads(block)) for block in blocks]
        return [c for c in calls if c is not None] or None
    found = candidates(content)
    data = found[0].value if found else None
    if isinstance(data, dict) and isinstance(data.get("tool_calls"), list):
        calls = [_call(item) for item in data["tool_calls"]]
        return [c for c in calls if c is not None] or None
    if isinstance(data, dict) and data.get("name") in names and "arguments" in data:
        return [c for c in [_call(data)] if c is not None] or None
    return None


def wire_calls(calls: list[dict]) -> list[dict]:
    """Calls read from content in the OpenAI wire format, each with a fresh id."""
    return [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in calls]


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _call(item: object) -> dict | None:
    """One {"name", "arguments"} call (OpenAI's nested "function" form too); None when it names no tool."""
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        arguments = parse_arguments(arguments)
    elif not isinstance(arguments, dict):
        arguments = {"_invalid": json.dumps(arguments)}
    return {"name": item["name"], "arguments": arguments}
