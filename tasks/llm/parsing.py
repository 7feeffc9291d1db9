"""Pure rules for talking JSON with a model: request formats, validation messages, the re-ask.

Kept free of I/O so every rule (which structured-output mode to send, what a re-ask prompt
says) is tested table-driven without a server.  Reading an answer out of what the model wrote
is ``extract.py`` and ``repair.py``'s.  The HTTP client in ``client.py`` composes these.
"""

from __future__ import annotations

import copy
import json
from functools import cache

from pydantic import ValidationError

from artoo.tasks.llm.base import answer_model
from artoo.tasks.llm.strict import strict_json_schema

MODES = ("json_schema", "json_object_schema", "json_object", "text")
"""Structured-output modes, best first: OpenAI strict json_schema; llama.cpp's json_object
with a ``schema`` key (the schema's title set to the NAME); plain JSON mode with the schema
described in a system message; no ``response_format`` at all (the schema described in the
system message, the JSON read from the content).  An endpoint falls back along this order when
it refuses a mode (artoo.tasks.llm.refusals), and the mode that worked is remembered
(artoo.tasks.llm.negotiated)."""



STRING_BOUNDS = {"evidence": 300, "what_was_wrong": 400, "what_to_do": 400, "summary": 800}
"""Most characters of the validators' free-text fields, where the server's grammar can hold a model to it.

Why: Qwen2.5-Coder-1.5B as R4a repeated one sentence inside ``evidence`` until ``max_tokens`` (1,024
tokens, 250–300 s on this machine: #25, runs t7 and t9).  Sent only to servers known to take
``maxLength`` in a grammar (llama.cpp); OpenAI's strict mode is not sent length constraints."""


def bounded(schema: dict) -> dict:
    """``schema`` with ``maxLength`` on the free-text fields of STRING_BOUNDS (nullable ones too), in place."""
    for node in [schema, *schema.get("$defs", {}).values()]:
        for name, prop in node.get("properties", {}).items():
            limit = STRING_BOUNDS.get(name)
            for option in [prop, *prop.get("anyOf", [])] if limit else []:
                if option.get("type") == "string":
                    option["maxLength"] = limit
    return schema


class InvalidAnswer(Exception):
    """The model's content is not a valid answer; the message says why."""


@cache
def _strict_schema(name: str) -> str:
    return json.dumps(strict_json_schema(answer_model(name)))


def strict_schema(name: str) -> dict:
    """The strict JSON schema of a schema NAME (a fresh copy each call)."""
    return copy.deepcopy(json.loads(_strict_schema(name)))


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
    raise ValueError(f"unknown structured-output mode {mode!r}; known: {', '.join(MODES)}")




def describe_validation(exc: ValidationError, limit: int = 5) -> str:
    """A compact one-line account of a pydantic ValidationError."""
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors[:limit]]
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


def parse_arguments(raw: str | None) -> dict:
    """Tool-call arguments as a dict; {"_invalid": raw} when not a JSON object."""
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_invalid": raw}
    return data if isinstance(data, dict) else {"_invalid": raw}


def repair_messages(messages: list[dict], name: str, content: str | None, reason: str) -> list[dict]:
    """The conversation sent back for the one repair attempt."""
    return [
        *messages,
        {"role": "assistant", "content": content or ""},
        {"role": "user", "content": (
            f"Your previous answer is not a valid {name} object: {reason}. "
            f"Reply with only the corrected JSON object for the schema {name}, nothing else.")},
    ]


def normalize_tools(tools: list[dict]) -> list[dict]:
    """Tools in the wire format; bare {name, description, parameters} dicts are wrapped."""
    return [t if t.get("type") == "function" else {"type": "function", "function": t} for t in tools]
