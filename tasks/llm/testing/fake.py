"""``ScriptedLLM``: an in-process LLM for pure-logic tests that do not need HTTP.

It implements the ``LLM`` protocol from queues of answers, so a role's logic can be
tested without a server.  It is a fake of the *interface*, not of ``openai``: tests that
care about the wire (formats, repair, errors) use ``artoo.tasks.llm.testing.scripted_server`` instead.

A queued item may be an answer model, a dict (validated against the schema), a callable
taking the messages (for answers that depend on the prompt, e.g. parallel subtasks), or
an exception instance, which is raised (to script failures).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from artoo.config.protocol import Answer, ExecutionAnswer
from artoo.tasks.llm.base import TOOLS_SCHEMA, CallRecord, ToolCallRequest, ToolTurn, answer_model, tier_of

__all__ = ["ScriptExhausted", "ScriptedLLM", "as_tool_turn"]


class ScriptExhausted(AssertionError):
    """The test script has no answer left for a request."""


def _tokens(value: Any) -> int:
    return len(json.dumps(value, default=str)) // 4


class ScriptedLLM:
    """Replays queued answers per schema NAME and queued tool turns."""

    def __init__(self, answers: dict[str, list[Any]] | None = None, tool_turns: list[Any] | None = None,
                 model: str = "scripted", mode: str = "native"):
        queues = {name: list(items) for name, items in (answers or {}).items()}
        self.mode = mode
        self.answers: dict[str, list[Any]] = defaultdict(list, queues)
        self.tool_turns: list[Any] = list(tool_turns or [])
        self.model = model
        self.records: list[CallRecord] = []
        self.calls: list[dict] = []
        """Every request: role, schema, the messages it carried and the names of the tools offered."""

    def _next(self, queue: list[Any], role: str, schema: str, messages: list[dict],
              tools: list[dict] | None = None) -> Any:
        tier_of(role)
        offered = [t.get("function", t).get("name") for t in tools or []]
        self.calls.append({"role": role, "schema": schema, "messages": list(messages), "tools": offered})
        if not queue:
            raise ScriptExhausted(f"ScriptedLLM has no {schema} answer left for role {role}")
        item = queue.pop(0)
        item = item(messages) if callable(item) and not isinstance(item, type) else item
        ok = not isinstance(item, BaseException)
        self.records.append(CallRecord(role, self.model, schema, _tokens(messages),
                                       _tokens(item) if ok else 0, 0.0, ok, None if ok else str(item)))
        if not ok:
            raise item
        return item

    async def structured(self, role: str, schema: str, messages: list[dict]) -> Answer:
        """The next queued answer for ``schema``, validated as SCHEMAS[schema]."""
        model = answer_model(schema)
        item = self._next(self.answers[schema], role, schema, messages)
        if isinstance(item, Answer):
            item = item.model_dump()
        return model.model_validate(item)

    def send_early(self, role: str, schema: str, messages: list[dict], tools: list[dict] | None = None) -> bool:
        """Nothing to send ahead: a queued answer is there at once."""
        return False

    async def aclose(self) -> None:
        """Nothing to release: no connection was opened."""

    def tool_mode(self, tier: str) -> str:
        """The tool mode a test chose (``mode``, native by default)."""
        return self.mode

    async def command(self, role: str, messages: list[dict], temperature: float | None = None) -> str | None:
        """The next queued command (schema name ``Command``): a string, or None for an answer holding none."""
        return self._next(self.answers["Command"], role, "Command", messages)

    async def tool_turn(self, role: str, messages: list[dict], tools: list[dict]) -> ToolTurn:
        """The next queued turn: a ToolTurn, an ExecutionAnswer/dict (final), or a list of tool calls."""
        item = self._next(self.tool_turns, role, TOOLS_SCHEMA, messages, tools)
        return as_tool_turn(item)


def as_tool_turn(item: ToolTurn | ExecutionAnswer | dict | list) -> ToolTurn:
    """A ToolTurn from the shorthand forms ScriptedLLM accepts."""
    if isinstance(item, ToolTurn):
        return item
    if isinstance(item, list):
        calls = [c if isinstance(c, ToolCallRequest) else ToolCallRequest(
                     id=c.get("id", f"call_{i}"), name=c["name"], arguments=c.get("arguments", {}))
                 for i, c in enumerate(item)]
        wire = [{"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in calls]
        return ToolTurn(tool_calls=calls,
                        assistant_message={"role": "assistant", "content": None, "tool_calls": wire})
    final = item if isinstance(item, ExecutionAnswer) else ExecutionAnswer.model_validate(item)
    return ToolTurn(final=final, assistant_message={"role": "assistant", "content": final.model_dump_json()})
