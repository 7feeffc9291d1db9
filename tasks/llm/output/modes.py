"""The request of each output mode: how a structured answer or a tool turn is asked for, field for field.

Why one module: every mode an endpoint may negotiate (artoo.tasks.llm.capability: ``StructuredMode``,
``ToolMode``) is a different request for the same answer, and what each sends must stay byte-identical
whether the role's task sends it or the early lane does (the two are matched by hash).  Pure functions,
tested table-driven; reading the answer back is ``extract``'s and ``repair``'s.

* **Strict schemas.** OpenAI's structured outputs with ``strict: true`` accept a subset of JSON Schema:
  every object lists all its properties as ``required`` and sets ``additionalProperties: false``, and a
  ``$ref`` stands alone.  An optional field stays optional by being nullable, so a ``null`` default says
  nothing and is dropped.  These are the rules the ``openai`` SDK applies to pydantic models itself,
  written here so artoo depends on no private SDK module.
* **Structured modes.** ``json_schema`` sends the strict schema; the others write it into the system
  message (``schema_note``) and send llama.cpp's ``json_object`` + ``schema``, plain ``json_object``, or
  nothing.  Where the server's grammar takes ``maxLength`` (llama.cpp), the validators' free text is
  bounded (``STRING_BOUNDS``).
* **Tool modes.** ``native`` sends ``tools``.  ``content`` (a server without ``tools``, or a model that
  does not use them) describes the tools in the system message (``tools_note``) and asks for one JSON
  object: ``{"done": false, "tool_calls": [...]}`` or the final ExecutionResult ``{"done": true, …}``;
  where the server holds answers to a schema, each turn is sent with ``turn_schema``, so a grammar makes
  every call name an offered tool with its own arguments.  The executor's conversation stays in the
  OpenAI wire format whatever the mode; ``content_messages`` renders it as text only for the request,
  so a switch of mode in the middle of an attempt loses nothing.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from pydantic import BaseModel

from artoo.tasks.llm.base import answer_model
from artoo.tasks.llm.capability import STRUCTURED_MODES, TOOL_MODES
from artoo.tasks.llm.output.extract import parse_arguments

__all__ = [
    "BASH_NEXT", "BASH_NOTE", "BASH_NOTE_HEAD", "NEXT_STEP", "PROTOCOL_KEYS", "STRING_BOUNDS", "TOOLS_NOTE_HEAD",
    "TURN_SCHEMA", "bash_messages", "bounded", "content_messages",
    "normalize_tools", "resolve", "schema_note", "strict_json_schema", "strict_schema", "strictify",
    "structured_request", "tool_request", "tools_note", "turn_format", "turn_schema", "with_system_note",
]

# ---- strict JSON schemas ------------------------------------------------------------------------------------


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema made strict (a new dict; pydantic's own is not touched)."""
    schema = copy.deepcopy(model.model_json_schema())
    return strictify(schema, schema)


def strictify(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Make one schema node strict in place (recursively) and return it; ``root`` resolves ``$ref``."""
    if not isinstance(node, dict):
        raise TypeError(f"a JSON schema node must be an object, got {node!r}")
    for definition in (node.get("$defs") or {}).values():
        strictify(definition, root)
    if node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {key: strictify(value, root) for key, value in properties.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = strictify(node["items"], root)
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [strictify(variant, root) for variant in node["anyOf"]]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1:
            node.update(strictify(node.pop("allOf")[0], root))
        else:
            node["allOf"] = [strictify(part, root) for part in all_of]
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if ref and len(node) > 1:  # a $ref with siblings: inline its target, the siblings win
        node.update({**resolve(root, ref), **node})
        del node["$ref"]
        return strictify(node, root)
    return node


def resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    """The node a local ``#/...`` reference points at (a copy)."""
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref (#/...) can be inlined, got {ref!r}")
    target: Any = root
    for key in ref[2:].split("/"):
        target = target[key]
    if not isinstance(target, dict):
        raise ValueError(f"$ref {ref!r} points at {target!r}, not a schema object")
    return copy.deepcopy(target)


@cache
def _strict_schema(name: str) -> str:
    return json.dumps(strict_json_schema(answer_model(name)))


def strict_schema(name: str) -> dict:
    """The strict JSON schema of a schema NAME (a fresh copy each call)."""
    return copy.deepcopy(json.loads(_strict_schema(name)))


STRING_BOUNDS = {"evidence": 300, "what_was_wrong": 400, "what_to_do": 400, "summary": 800}
"""Most characters of the validators' free-text fields, where the server's grammar can hold a model to it.

Why: a small model can repeat one sentence inside a free-text field until ``max_tokens``, minutes of CPU time
for a field worth a line.  Sent only to servers known to take ``maxLength`` in a grammar
(llama.cpp); OpenAI's strict mode is not sent length constraints."""


def bounded(schema: dict) -> dict:
    """``schema`` with ``maxLength`` on the free-text fields of STRING_BOUNDS (nullable ones too), in place."""
    for node in [schema, *schema.get("$defs", {}).values()]:
        for name, prop in node.get("properties", {}).items():
            limit = STRING_BOUNDS.get(name)
            for option in [prop, *prop.get("anyOf", [])] if limit else []:
                if option.get("type") == "string":
                    option["maxLength"] = limit
    return schema


# ---- structured modes ---------------------------------------------------------------------------------------


def schema_note(name: str) -> str:
    """The system-message text that names and spells out the schema in JSON mode."""
    return (f'Answer with only one JSON object that validates against the JSON schema named "{name}" '
            f"(no prose, no code fences):\n{_strict_schema(name)}")


def with_system_note(messages: list[dict], note: str) -> list[dict]:
    """Messages with ``note`` appended to the leading system message (or a new one in front)."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        first = {**messages[0], "content": messages[0]["content"] + "\n\n" + note}
        return [first, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def structured_request(mode: str, name: str, messages: list[dict], grammar: bool = False) -> dict:
    """The ``messages`` and ``response_format`` arguments for one structured request.

    ``grammar``: the server holds answers to the schema with a grammar that takes ``maxLength``
    (llama.cpp), so the free-text fields are bounded (STRING_BOUNDS)."""
    schema = bounded(strict_schema(name)) if grammar else strict_schema(name)
    if mode == "json_schema":
        spec = {"name": name, "schema": schema, "strict": True}
        return {"messages": messages, "response_format": {"type": "json_schema", "json_schema": spec}}
    noted = with_system_note(messages, schema_note(name))
    if mode == "json_object_schema":
        return {"messages": noted,
                "response_format": {"type": "json_object", "schema": {**schema, "title": name}}}
    if mode == "json_object":
        return {"messages": noted, "response_format": {"type": "json_object"}}
    if mode == "text":
        return {"messages": noted}
    raise ValueError(f"unknown structured-output mode {mode!r}; known: {', '.join(STRUCTURED_MODES)}")


# ---- tool modes ---------------------------------------------------------------------------------------------

TURN_SCHEMA = "ExecutorTurn"
"""The schema name of one content-protocol turn, when the server holds answers to a schema."""
PROTOCOL_KEYS = frozenset({"done", "tool_calls"})
"""Keys of a content-protocol answer that are not part of the final ExecutionResult object."""
TOOLS_NOTE_HEAD = "You can call these tools"
"""How the content protocol's system note begins (the scripted server routes such a request as a tool turn)."""
NEXT_STEP = ("Next: is the subtask done? Answer with only one JSON object: {\"done\": true, \"status\": …, "
             "\"output\": …} once the results above show it is done or cannot be done, else {\"done\": false, "
             "\"tool_calls\": […]} with a different call.")
"""Closes the last tool result of a content-protocol request.  Why: a small model handed a tool's output as a
bare user message tends to ask for the same call again, and one identical call ends an attempt."""


BASH_NOTE_HEAD = "You act by writing shell commands"
"""How the bash-block protocol's system note begins (the scripted server routes such a request as a tool turn)."""
BASH_NOTE = f"""{BASH_NOTE_HEAD}. Each answer is exactly one of:
1. one fenced ```bash block with the command(s) to run next in the working folder; code runs it and shows you its
   exit code and output;
2. one line DONE: <the result, in one sentence> once the outputs so far show the subtask is done, or
   FAILED: <why> when it cannot be done.
A file is written by a command redirected into it (command > file) or a heredoc (cat > file <<'EOF' … EOF)."""
"""The executor's instructions in the bash-block protocol: the model's own language, no tool definitions.  Why: a
small model writes a right command far more often as a fenced block in a free answer than as a JSON tool call, and
the tool definitions it no longer needs were a third of every executor prompt."""
BASH_NEXT = "Next: one ```bash block, or DONE: <result> if the outputs above show the subtask is done."
"""Closes the last command's output in a bash-block request."""


def normalize_tools(tools: list[dict]) -> list[dict]:
    """Tools in the wire format; bare {name, description, parameters} dicts are wrapped."""
    return [t if t.get("type") == "function" else {"type": "function", "function": t} for t in tools]


def tool_request(mode: str, messages: list[dict], tools: list[dict], shape: str = "text") -> dict[str, Any]:
    """The request fields of one executor turn in a tool mode (the same whether sent early or by the turn).

    ``shape``: the structured-output mode a content-protocol turn is held to (``turn_format``)."""
    if not tools:
        return {"messages": messages}
    if mode == "native":
        return {"messages": messages, "tools": normalize_tools(tools)}
    if mode == "content":
        request = {"messages": with_system_note(content_messages(messages), tools_note(tools))}
        held = turn_format(shape, tools)
        return {**request, "response_format": held} if held else request
    if mode == "bash":
        return {"messages": with_system_note(bash_messages(messages), BASH_NOTE)}
    raise ValueError(f"unknown tool mode {mode!r}; known: {', '.join(TOOL_MODES)}")


def bash_messages(messages: list[dict]) -> list[dict]:
    """The wire-format conversation as the bash-block protocol shows it: each shell call as the ```bash block the
    model wrote, any other call as its JSON, each result as a user message with the command's output."""
    out: list[dict] = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls:
            blocks = []
            for call in calls:
                arguments = parse_arguments(call["function"]["arguments"])
                if call["function"]["name"] == "shell" and isinstance(arguments.get("command"), str):
                    blocks.append(f"```bash\n{arguments['command']}\n```")
                else:
                    blocks.append(json.dumps({"tool_calls": [{"name": call["function"]["name"],
                                                              "arguments": arguments}]}))
            out.append({"role": "assistant", "content": "\n".join(blocks)})
        elif message.get("role") == "tool":
            out.append({"role": "user", "content": f"Output:\n{message.get('content')}"})
        else:
            out.append(message)
    if messages and messages[-1].get("role") == "tool":
        out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{BASH_NEXT}"}
    return out


def turn_format(shape: str, tools: list[dict]) -> dict | None:
    """The ``response_format`` of a content-protocol turn in a structured-output mode; None in ``text``."""
    if shape == "json_schema":
        spec = {"name": TURN_SCHEMA, "schema": turn_schema(tools), "strict": True}
        return {"type": "json_schema", "json_schema": spec}
    if shape == "json_object_schema":
        return {"type": "json_object", "schema": {**turn_schema(tools), "title": TURN_SCHEMA}}
    if shape == "json_object":
        return {"type": "json_object"}
    if shape == "text":
        return None
    raise ValueError(f"unknown structured-output mode {shape!r}; known: {', '.join(STRUCTURED_MODES)}")


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

    Why: without it a small model fences its answers, passes one tool's arguments to another (``glob`` with
    ``locate``'s ``query``), names tools that do not exist, and keeps calling tools after the subtask is done.
    A server's grammar holds the answer to this shape: each call names an offered tool with that tool's
    own parameters, and ``done`` comes first, so every turn opens with the decision to stop or go on.
    No length or number constraints (not every server takes them).
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
