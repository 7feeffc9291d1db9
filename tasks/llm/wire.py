"""The wire shapes of one chat completion: the request fields artoo sends and the turns it reads back.

Kept apart from ``client.py`` (which owns the HTTP, the negotiation and the bookkeeping) so that what a
request *is* — its tool mode, its sampling fields — and what an answer *becomes* — a tool turn, an output
error, a back-off — are plain functions, readable and testable without a client.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from artoo.config.errors import LLMOutputError
from artoo.config.settings import LLMParams
from artoo.tasks.llm.base import ToolCallRequest, ToolTurn
from artoo.tasks.llm.endpoint import Endpoint
from artoo.tasks.llm.parsing import MODES, InvalidAnswer, normalize_tools, parse_arguments, with_system_note
from artoo.tasks.llm.tool_protocol import TOOL_MODES, TURN_SCHEMA, content_messages, tools_note, turn_schema, wire_calls

if TYPE_CHECKING:  # openai is imported by the client, never by what builds a request
    import openai

_EMPTY = SimpleNamespace(content=None, refusal=None, tool_calls=None)


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
    raise ValueError(f"unknown tool mode {mode!r}; known: {', '.join(TOOL_MODES)}")


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
    raise ValueError(f"unknown structured-output mode {shape!r}; known: {', '.join(MODES)}")


def sampling(params: LLMParams) -> dict[str, Any]:
    """The sampling fields every request carries: only those the person set (a server's default otherwise)."""
    chosen = {"temperature": params.temperature, "max_tokens": params.max_tokens}
    return {key: value for key, value in chosen.items() if value is not None}


def first_message(response: Any) -> Any:
    choices = getattr(response, "choices", None) or []
    return choices[0].message if choices and choices[0].message is not None else _EMPTY


def tool_call_turn(content: str | None, calls: list[Any]) -> ToolTurn:
    requests = [ToolCallRequest(id=c.id, name=c.function.name,
                                arguments=parse_arguments(c.function.arguments)) for c in calls]
    wire = [{"id": c.id, "type": "function",
             "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]
    return ToolTurn(tool_calls=requests,
                    assistant_message={"role": "assistant", "content": content, "tool_calls": wire})


def tool_names(tools: list[dict]) -> frozenset[str]:
    return frozenset(str(t.get("function", t).get("name")) for t in tools)


def written_call_turn(calls: list[dict]) -> ToolTurn:
    """A turn whose tool calls were written into the content: kept in the wire format like native ones."""
    wire = wire_calls(calls)
    requests = [ToolCallRequest(id=w["id"], name=c["name"], arguments=c["arguments"])
                for w, c in zip(wire, calls, strict=True)]
    return ToolTurn(tool_calls=requests, assistant_message={"role": "assistant", "content": None, "tool_calls": wire})


def output_error(role: str, schema: str, ep: Endpoint, message: Any, exc: InvalidAnswer) -> LLMOutputError:
    began = (message.content or message.refusal or "")[:200]
    return LLMOutputError(f"{role} gave an invalid {schema} answer twice (model {ep.model!r}, "
                          f"{ep.tier} tier): {exc}; the answer began: {began!r}")


def backoff(exc: openai.APIError, attempt: int) -> float:
    """Seconds to wait before retrying: the server's retry-after when given, else exponential."""
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        wait = float(header) if header else 0.25 * 2**attempt
    except ValueError:
        wait = 0.25 * 2**attempt
    return min(max(wait, 0.0), 5.0)
