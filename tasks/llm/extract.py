"""Finding the JSON object a model meant, in the text it actually wrote.

Models asked for "only a JSON object" still write ```` ```json ```` fences, "Here is the plan:" in
front, a sentence after, a ``<think>`` block first, or two objects (a draft and the answer).  Each
is found here and named as a ``Repair`` so the decision log says what was cut.

Objects are found by a balanced-brace scan that skips braces inside JSON strings, then parsed by
``json``: a regex cannot tell a ``}`` in ``"echo }"`` from the object's end.  Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from artoo.tasks.llm.base import Repair

_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?[ \t]*$")
_FENCE_CLOSE = re.compile(r"^[ \t]*\n?[ \t]*```")
SNIPPET_CHARS = 40
"""Characters of cut text quoted in a repair's detail."""


@dataclass(frozen=True)
class Candidate:
    """One JSON object found in an answer, with the text-level repairs that taking it alone means."""

    value: dict
    repairs: tuple[Repair, ...]


def candidates(content: str) -> list[Candidate]:
    """Every top-level JSON object in ``content``, in order; [] when there is none."""
    text, think = _without_think(content)
    spans = object_spans(text)
    found = []
    for start, end, value in spans:
        repairs = [*think, *_surroundings(text[:start], text[end:])]
        found.append(Candidate(value, tuple(repairs)))
    return found


def object_spans(text: str) -> list[tuple[int, int, dict]]:
    """(start, end, object) of each top-level JSON object; text between them is skipped."""
    found: list[tuple[int, int, dict]] = []
    position = 0
    while (start := text.find("{", position)) != -1:
        end = balanced_end(text, start)
        value = _loads(text[start:end]) if end is not None else None
        if isinstance(value, dict):
            found.append((start, end, value))
            position = end
        else:  # a brace in prose ("use {name}") or a broken object: look inside it
            position = start + 1
    return found


def balanced_end(text: str, start: int) -> int | None:
    """The index after the ``}`` closing the ``{`` at ``start``; None when it never closes.

    Braces inside a JSON string (between unescaped double quotes) do not count.
    """
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def no_object_reason(content: str) -> str:
    """Why ``content`` holds no usable JSON object, in words the model can act on in a re-ask."""
    text, _ = _without_think(content)
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        value = None
    else:
        return f"expected a JSON object, got {type(value).__name__}"
    start = stripped.find("{")
    if start == -1:
        return f"no JSON object in the answer; it began: {_snippet(stripped)}"
    try:
        json.JSONDecoder().raw_decode(stripped, start)
    except json.JSONDecodeError as exc:
        return f"not valid JSON: {exc}"
    return "no JSON object in the answer"


def _without_think(content: str) -> tuple[str, list[Repair]]:
    """The text after a leading <think>…</think> block (reasoning models write one first)."""
    head = content.lstrip()
    if head.startswith("<think>") and "</think>" in head:
        thought, rest = head[len("<think>"):].split("</think>", 1)
        return rest, [Repair("think_block", f"dropped a <think> block of {len(thought.strip())} characters")]
    return content, []


def _surroundings(before: str, after: str) -> list[Repair]:
    """The repairs that cutting ``before`` and ``after`` away from an object amounts to."""
    repairs = []
    opened, closed = _FENCE_OPEN.search(before), _FENCE_CLOSE.search(after)
    if opened and closed:
        before, after = before[:opened.start()], after[closed.end():]
        repairs.append(Repair("fenced_json", "took the JSON inside a ``` fence"))
    if before.strip():
        repairs.append(Repair("prefixed_json", f"skipped text before the JSON object: {_snippet(before)}"))
    if after.strip():
        repairs.append(Repair("trailing_prose", f"dropped text after the JSON object: {_snippet(after)}"))
    return repairs


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _snippet(text: str) -> str:
    words = " ".join(text.split())
    return repr(words if len(words) <= SNIPPET_CHARS else words[:SNIPPET_CHARS] + "…")
