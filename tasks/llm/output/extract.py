"""Reading what a model wrote: the JSON object it meant, the tool calls it asked for, the turn they make.

Why: models asked for "only a JSON object" still write ```` ```json ```` fences, "Here is the plan:" in
front, a sentence after, a ``<think>`` block first, or two objects (a draft and the answer); and tool
calls come back as native ``tool_calls``, as Hermes ``<tool_call>`` blocks left in the content (Qwen2.5's
chat template on llama-cpp-python's server), as the content protocol's ``{"tool_calls": [...]}``, or as
one bare ``{"name": …, "arguments": …}``.  Each is found here once, for every mode, and each text-level
cut is named as a ``Repair`` so the decision log says what was cut.

Objects are found by a balanced-brace scan that skips braces inside JSON strings, then parsed by
``json``: a regex cannot tell a ``}`` in ``"echo }"`` from the object's end.  Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from artoo.config.protocol import ExecutionAnswer
from artoo.tasks.llm.base import Repair, ToolCallRequest, ToolTurn

__all__ = [
    "MAX_OBJECTS", "MAX_SCAN_CHARS", "SHELL_TAGS", "Candidate", "bash_block", "bash_turn", "brace_pairs",
    "broken_object", "candidates", "content_tool_calls", "lone_command",
    "first_message", "no_object_reason", "object_spans", "parse_arguments", "tool_call_turn", "tool_names",
    "wire_calls", "written_call_turn",
]

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


# ---- tool calls and turns -----------------------------------------------------------------------------------

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_EMPTY = SimpleNamespace(content=None, refusal=None, tool_calls=None)


def parse_arguments(raw: str | None) -> dict:
    """Tool-call arguments as a dict; {"_invalid": raw} when not a JSON object."""
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_invalid": raw}
    return data if isinstance(data, dict) else {"_invalid": raw}


def content_tool_calls(content: str | None, names: set[str] | frozenset[str] = frozenset()) -> list[dict] | None:
    """Tool calls written into content, as [{"name", "arguments"}]; None when it holds none.

    Hermes ``<tool_call>`` blocks first (any mode), else one JSON object with a ``tool_calls`` list,
    else one bare ``{"name": …, "arguments": {…}}`` object naming one of the offered tools ``names``
    (a small model behind ``llama-server --jinja`` may answer a tool request with just that object, fenced).
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


def wire_calls(calls: list[dict]) -> list[dict]:
    """Calls read from content in the OpenAI wire format, each with a fresh id."""
    return [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in calls]


def tool_names(tools: list[dict]) -> frozenset[str]:
    """The names of the tools offered (wire format or bare)."""
    return frozenset(str(t.get("function", t).get("name")) for t in tools)


def first_message(response: Any) -> Any:
    """The first choice's message of a chat completion; an empty one when the server sent none."""
    choices = getattr(response, "choices", None) or []
    return choices[0].message if choices and choices[0].message is not None else _EMPTY


_CODE_BLOCK = re.compile(r"```[ \t]*(?P<lang>[A-Za-z0-9_+-]*)[^\n]*\n(?P<body>.*?)(?:\n[ \t]*```|\Z)", re.S)
SHELL_TAGS = frozenset({"", "bash", "sh", "shell", "console", "zsh", "terminal"})
"""Code-block tags whose body is run as a shell command (a block tagged python or json is not a command)."""
_PROMPT = re.compile(r"^\s*\$ ", re.M)
_BLOCK_FENCES = re.compile(r"^[ \t]*```[A-Za-z0-9_+-]*[ \t]*$", re.M)
_ENDING = re.compile(r"^[ \t`*]*(?P<word>DONE|FAILED)\b[ \t]*[:.\-–—]?[ \t]*(?P<rest>.*)$", re.M | re.I | re.S)


def bash_block(content: str | None) -> str | None:
    """The fenced blocks of a shell tag (or none) with a command in them, ``$ `` prompts taken off, one after the
    other; else None.  A small model splits one command line over several blocks (``mkdir backup`` in one,
    ``cp *.csv backup/`` in the next): taking the first alone ran half of what it meant."""
    bodies = [_PROMPT.sub("", found.group("body")).strip() for found in _CODE_BLOCK.finditer(content or "")
              if found.group("lang").casefold() in SHELL_TAGS]
    bodies = [body for body in bodies if body and not _ENDING.match(body)]
    return "\n".join(bodies) or None


_BUILTINS = frozenset({"cd", "echo", "printf", "test", "[", "for", "if", "while", "export", "set", "read", "true",
                       "false", ":", "."})
"""Words a command line may start with that are the shell's own, not a program on PATH."""


def lone_command(content: str | None) -> str | None:
    """An answer that is one line beginning with a program this machine has or a shell builtin
    (``grep -l x *.log > out.txt``), as a command; else None (a sentence about a command is not one)."""
    lines = [line.strip() for line in (content or "").strip().strip("`").splitlines() if line.strip()]
    if len(lines) != 1 or _ENDING.match(lines[0]):
        return None
    line = _PROMPT.sub("", lines[0]).strip()
    first = line.split(maxsplit=1)[0] if line else ""
    return line if first in _BUILTINS or shutil.which(first) else None


def bash_turn(content: str | None) -> ToolTurn | None:
    """One bash-block protocol answer: its first shell block as a shell call, else a ``DONE:``/``FAILED:`` line as
    the final answer (the rest of the answer after the word is its output); None when it holds neither."""
    command = bash_block(content)
    if command is not None:
        return written_call_turn([{"name": "shell", "arguments": {"command": command}}])
    ending = _ENDING.search(_BLOCK_FENCES.sub("", content or ""))  # a DONE line put in a block is still the end
    if ending is None:
        return None
    status = "completed" if ending.group("word").upper() == "DONE" else "failed"
    output = ending.group("rest").strip() or (content or "").strip()
    return ToolTurn(final=ExecutionAnswer(status=status, output=output),
                    assistant_message={"role": "assistant", "content": content})


def tool_call_turn(content: str | None, calls: list[Any]) -> ToolTurn:
    """A turn of native tool calls, kept in the wire format for the conversation."""
    requests = [ToolCallRequest(id=c.id, name=c.function.name,
                                arguments=parse_arguments(c.function.arguments)) for c in calls]
    wire = [{"id": c.id, "type": "function",
             "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]
    return ToolTurn(tool_calls=requests,
                    assistant_message={"role": "assistant", "content": content, "tool_calls": wire})


def written_call_turn(calls: list[dict]) -> ToolTurn:
    """A turn whose tool calls were written into the content: kept in the wire format like native ones."""
    wire = wire_calls(calls)
    requests = [ToolCallRequest(id=w["id"], name=c["name"], arguments=c["arguments"])
                for w, c in zip(wire, calls, strict=True)]
    return ToolTurn(tool_calls=requests, assistant_message={"role": "assistant", "content": None, "tool_calls": wire})
