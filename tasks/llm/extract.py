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
_SIGNIFICANT = re.compile(r'[{}"\\]')
SNIPPET_CHARS = 40
"""Characters of cut text quoted in a repair's detail."""
MAX_OBJECTS = 20
"""Objects of one answer considered at most (a degenerate answer can hold a million ``{}``)."""
MAX_SCAN_CHARS = 256 * 1024
"""Characters of an answer searched for objects: a real answer is far shorter (a plan has at most 20
subtasks), and a degenerate one ("{{{{…" for megabytes) must not cost seconds of scanning."""


@dataclass(frozen=True)
class Candidate:
    """One JSON object found in an answer, with the text-level repairs that taking it alone means."""

    value: dict
    repairs: tuple[Repair, ...]


def candidates(content: str) -> list[Candidate]:
    """The top-level JSON objects in ``content`` (the first MAX_OBJECTS), in order; [] when there is none."""
    text, think = _without_think(content)
    text = text[:MAX_SCAN_CHARS]
    spans = object_spans(text, MAX_OBJECTS)
    found = []
    for start, end, value in spans:
        repairs = [*think, *_surroundings(text[:start], text[end:])]
        found.append(Candidate(value, tuple(repairs)))
    return found


def object_spans(text: str, limit: int | None = None) -> list[tuple[int, int, dict]]:
    """(start, end, object) of each top-level JSON object (the first ``limit``), in order; a ``{…}`` that
    does not parse (a brace in prose, a broken object) is skipped and the objects inside it are tried."""
    found: list[tuple[int, int, dict]] = []
    position = 0
    for start, end in brace_pairs(text):
        if start < position:
            continue
        if limit is not None and len(found) >= limit:
            break
        value = _loads(text[start:end])
        if isinstance(value, dict):
            found.append((start, end, value))
            position = end
    return found


def brace_pairs(text: str) -> list[tuple[int, int]]:
    """(start, end) of every matched ``{…}``, ordered by start, found in one pass.

    Braces inside a JSON string do not count.  Quotes count only inside braces: outside they are
    prose (He said "hi), not JSON.  An unclosed ``{`` matches nothing, so a degenerate answer
    ("{{{{…", megabytes of it) costs one pass, not one per brace.
    """
    if "{" not in text:
        return []
    pairs: list[tuple[int, int]] = []
    opened: list[int] = []
    in_string, escaped_at = False, -1
    for match in _SIGNIFICANT.finditer(text):  # only these characters matter; the rest is skipped in C
        index, char = match.start(), match.group()
        if in_string:
            if index == escaped_at:
                continue
            if char == "\\":
                escaped_at = index + 1
            elif char == '"':
                in_string = False
        elif char == '"' and opened:
            in_string = True
        elif char == "{":
            opened.append(index)
        elif char == "}" and opened:
            pairs.append((opened.pop(), index + 1))
    return sorted(pairs)


def broken_object(content: str) -> str | None:
    """The JSON error of the object the answer opens with, when it does not parse and every object found
    lies inside it: those are fragments (a subtask of a plan cut off by the token limit), and the re-ask
    must say the JSON is broken, not that a fragment is not a Plan.  None otherwise."""
    text = _without_think(content)[0][:MAX_SCAN_CHARS]
    start = text.find("{")
    spans = object_spans(text, MAX_OBJECTS)
    if start == -1 or not spans or spans[0][0] == start:
        return None
    end = dict(brace_pairs(text)).get(start, len(text))
    if any(span_end > end for _, span_end, _ in spans):
        return None
    try:
        json.loads(text[start:end])
    except json.JSONDecodeError as exc:
        return f"not valid JSON: {exc}"
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
    words = " ".join(text.strip()[:SNIPPET_CHARS * 4].split())
    return repr(words if len(words) <= SNIPPET_CHARS else words[:SNIPPET_CHARS] + "…")
