"""Prompts that fit the model: estimate a request's size, cut what may be cut, refuse what cannot fit.

Why here and not in each role: every role builds its prompt from the same parts, and everything the
system did not write itself (tool output, memory, session history, earlier results) reaches a model
inside an ``<<<UNTRUSTED:label`` fence (``artoo.tasks.roles.prompting``).  Those fenced bodies are
exactly what may be shortened; the text outside them (the laws, the role, the task's own words, the
criteria, the directive, the JSON schema) is never cut.  So one function over the finished request
budgets R1, R2, R3's growing tool-turn conversation, R4a, R4b and the Dreamer alike.

The size is estimated, not counted: ``ceil(characters / llm.chars_per_token)`` over every message's
text, tool-call arguments and the tool definitions (chat templates render them into the prompt),
plus ``MESSAGE_TOKENS`` per message for the template's role markers.  A ``response_format`` schema is
not counted: servers turn it into a decoding grammar (llama.cpp, vLLM); in JSON mode the schema is
written into the system message and counted there.  The window keeps ``llm.answer_tokens`` free for
the answer.

Cutting order, lowest priority first (``CUT_ORDER``): evidence (tool outputs, validator advice),
memory lines, session history, kept results (earlier rounds' and steps' results).  A kind is
shortened down to ``BLOCK_FLOOR`` characters per block before the next kind is touched; within a
kind the earliest block goes first (``shorten_plan``), keeping its head and tail with a marker saying
how much was cut.  Earliest first, not longest first, because a conversation only grows: R3's next
turn cuts the same early tool outputs to the same text again, so the prompt's head stays identical
and llama.cpp reuses its cached prefix (at ~47 tokens/s of prompt processing on a CPU, re-reading a
4096-token prompt costs a minute and a half per turn); the newest output, the one the model must
act on, is cut last.  When every block is at its floor and
the prompt is still too long, whole blocks go, fence and all (each fence's own lines cost about 150
characters, which a replan quoting 18 tool calls cannot afford in a 4096-token window): again kind
by kind in ``CUT_ORDER``, the earliest block of a kind first, each replaced by ``DROPPED``.  When
even that is not enough the request is refused before it is sent (``PromptTooLong``): a prompt the
server must truncate would be answered as if the cut part had never been written.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field

from artoo.config.errors import RunFailure
from artoo.config.settings import LLMParams
from artoo.tasks.llm.capability import ContextWindow
from artoo.tasks.roles.prompting import FENCE_CLOSE, FENCE_OPEN, cap

__all__ = ["BLOCK_FLOOR", "CUT_ORDER", "DROPPED", "MESSAGE_TOKENS", "Block", "Fit", "PromptTooLong", "block_kind",
           "blocks", "describe_cuts", "estimate_tokens", "fit_messages", "fit_request", "message_chars",
           "shorten_plan", "too_long"]

LOG = logging.getLogger("artoo.llm")

CUT_ORDER = ("evidence", "memory", "history", "results")
"""Kinds of fenced block, in the order they are cut (the first is the first to go)."""
BLOCK_FLOOR = 240
"""Characters a cut block keeps at least (head, marker, tail): the model still sees what it was."""
DROPPED = "[data cut to fit the model's context window]"
"""What stands in for a block dropped whole."""
MESSAGE_TOKENS = 5
"""Tokens a chat template adds per message (ChatML: <|im_start|>role\\n … <|im_end|>\\n)."""

_FENCE = re.compile(re.escape(FENCE_OPEN) + r"(?P<label>[^\n]*)\n(?:\(The lines below[^\n]*\)\n)?"
                    r"(?P<body>.*?)\nEND UNTRUSTED:(?P=label)" + re.escape(FENCE_CLOSE), re.DOTALL)
_MEMORY = {"memory", "past experiences"}
_HISTORY = {"session history", "previous rounds"}
_RESULTS = {"kept results", "merged output", "subtask context"}


class PromptTooLong(RunFailure):
    """A role's prompt cannot fit the model's window even after every cut; nothing was sent."""

    budget: dict | None = None
    """The budget record of the refused request (window, estimate, cuts), for the decision log."""


def block_kind(label: str) -> str:
    """The kind of a fenced block, from its label (anything unnamed is evidence: data from the world)."""
    name = label.casefold().strip()
    if name in _MEMORY:
        return "memory"
    if name in _HISTORY:
        return "history"
    if name in _RESULTS or name.startswith(("result of ", "earlier step output")):
        return "results"
    return "evidence"


@dataclass(frozen=True)
class Block:
    """One fenced body inside a message's content."""

    message: int
    start: int
    end: int
    label: str
    kind: str
    fence_start: int
    fence_end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def blocks(messages: list[dict]) -> list[Block]:
    """Every fenced body in the messages' text contents, in order."""
    found = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            found += [Block(index, m.start("body"), m.end("body"), m.group("label"), block_kind(m.group("label")),
                            m.start(), m.end()) for m in _FENCE.finditer(content)]
    return found


def message_chars(message: dict) -> int:
    """Characters of one message that reach the prompt: its text and its tool calls."""
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    calls = message.get("tool_calls") or []
    return len(text) + sum(len(json.dumps(c.get("function", c), default=str)) for c in calls)


def estimate_tokens(chars: int, messages: int, chars_per_token: float) -> int:
    """Tokens a prompt of ``chars`` characters in ``messages`` messages is estimated to take."""
    return math.ceil(chars / chars_per_token) + MESSAGE_TOKENS * messages


def shorten_plan(sizes: list[int], excess: int, floor: int) -> list[int]:
    """New sizes freeing ``excess`` characters, earliest block first, none below ``floor`` (as far as it goes)."""
    planned = []
    for size in sizes:
        give = min(max(size - floor, 0), max(excess, 0))
        planned.append(size - give)
        excess -= give
    return planned


@dataclass
class Fit:
    """A request's messages after budgeting: the estimate, what was cut, and whether it fits."""

    messages: list[dict]
    prompt_tokens_estimated: int
    fits: bool
    cuts: list[dict] = field(default_factory=list)


def _shorten(found: list[Block], excess: int, limits: dict[int, int | None], cuts: list[dict]) -> int:
    """Stage 1: shorten kinds in CUT_ORDER down to BLOCK_FLOOR until ``excess`` characters are freed."""
    for kind in CUT_ORDER:
        mine = [i for i, b in enumerate(found) if b.kind == kind and b.size > BLOCK_FLOOR]
        if excess <= 0 or not mine:
            continue
        planned = dict(zip(mine, shorten_plan([found[i].size for i in mine], excess, BLOCK_FLOOR), strict=True))
        cut = [i for i in mine if planned[i] < found[i].size]
        limits.update({i: planned[i] for i in cut})
        excess -= sum(found[i].size - planned[i] for i in cut)
        cuts.append({"kind": kind, "blocks": len(cut), "chars_before": sum(found[i].size for i in cut),
                     "chars_after": sum(planned[i] for i in cut), "labels": sorted({found[i].label for i in cut})[:6]})
    return excess


def _drop(found: list[Block], excess: int, limits: dict[int, int | None], cuts: list[dict]) -> int:
    """Stage 2: drop whole blocks (fence and all), kind by kind in CUT_ORDER, the earliest first."""
    for kind in CUT_ORDER:
        dropped = []
        for i in [i for i, b in enumerate(found) if b.kind == kind]:
            if excess <= 0:
                break
            block = found[i]
            kept = limits.get(i, block.size)
            excess -= (block.fence_end - block.fence_start) - (block.size - kept) - len(DROPPED)
            limits[i] = None
            dropped.append(i)
        if dropped:
            labels = sorted({found[i].label for i in dropped})[:6]
            cuts.append({"kind": kind, "dropped": len(dropped), "labels": labels})
    return excess


def _apply(messages: list[dict], found: list[Block], limits: dict[int, int | None]) -> list[dict]:
    """The messages with each limited block capped (head and tail kept) or dropped, back to front per message."""
    out = list(messages)
    for index in sorted(limits, key=lambda i: (found[i].message, -found[i].start)):
        block, limit = found[index], limits[index]
        content = out[block.message]["content"]
        if limit is None:
            content = content[:block.fence_start] + DROPPED + content[block.fence_end:]
        else:
            content = content[:block.start] + cap(content[block.start:block.end], limit) + content[block.end:]
        out[block.message] = {**out[block.message], "content": content}
    return out


def fit_messages(messages: list[dict], extra_chars: int, limit_tokens: int, chars_per_token: float) -> Fit:
    """``messages`` cut (by CUT_ORDER) until the estimate is at most ``limit_tokens``; ``fits`` False when it
    cannot be, every block already at its floor.  ``extra_chars`` counts what is not a message (the tools)."""
    total = sum(message_chars(m) for m in messages) + extra_chars
    allowed = math.floor((limit_tokens - MESSAGE_TOKENS * len(messages)) * chars_per_token)
    if total > allowed:
        found = blocks(messages)
        limits: dict[int, int | None] = {}
        cuts: list[dict] = []
        remaining = _shorten(found, total - allowed, limits, cuts)
        if remaining > 0:
            _drop(found, remaining, limits, cuts)
        messages = _apply(messages, found, limits)
        total = sum(message_chars(m) for m in messages) + extra_chars
    else:
        cuts = []
    estimate = estimate_tokens(total, len(messages), chars_per_token)
    return Fit(messages, estimate, estimate <= limit_tokens, cuts)


def describe_cuts(cuts: list[dict]) -> str:
    """The cuts in one phrase, for the log and the error message."""
    return "; ".join(f"{c['kind']}: {c['dropped']} block(s) dropped" if "dropped" in c else
                     f"{c['kind']}: {c['blocks']} block(s) {c['chars_before']}→{c['chars_after']} chars"
                     for c in cuts) or "nothing to cut"


def too_long(role: str, window: ContextWindow, params: LLMParams, estimate: int, cuts: list[dict]) -> str:
    """What a person reads when a prompt cannot fit: the role, the window and its source, and the ways out."""
    needed = 1 << (estimate + params.answer_tokens - 1).bit_length()
    return (f"{role}'s prompt does not fit the model's context window: about {estimate} tokens estimated after "
            f"every cut ({describe_cuts(cuts)}), and the window is {window.tokens} tokens ({window.source}) with "
            f"{params.answer_tokens} kept for the answer. It was not sent. Give the model a larger window "
            f"(llama-server -c {needed}, Ollama num_ctx {needed}) and, when the server does not report it, set "
            f"llm.context_tokens (ARTOO_LLM__CONTEXT_TOKENS={needed}); or lower llm.answer_tokens.")


def fit_request(role: str, window: ContextWindow, params: LLMParams, request: dict) -> tuple[dict, dict]:
    """The request with its messages fitted to ``window``, and the budget record for the decision log;
    PromptTooLong (nothing sent) when it cannot fit."""
    tools = request.get("tools")
    extra = len(json.dumps(tools, default=str)) if tools else 0
    fitted = fit_messages(request["messages"], extra, window.tokens - params.answer_tokens, params.chars_per_token)
    record = {"context_tokens": window.tokens, "source": window.source, "answer_tokens": params.answer_tokens,
              "prompt_tokens_estimated": fitted.prompt_tokens_estimated, "cuts": fitted.cuts}
    if not fitted.fits and window.known:
        refused = PromptTooLong(too_long(role, window, params, fitted.prompt_tokens_estimated, fitted.cuts))
        refused.budget = record
        raise refused
    if not fitted.fits:  # an assumed window: the real one may be larger (a hosted model), so send and let it say
        record["unfit_assumed_window"] = True
        LOG.warning("%s prompt of about %d tokens exceeds the assumed %d-token window (%s); sent anyway: set "
                    "llm.context_tokens if the model's window is smaller", role, fitted.prompt_tokens_estimated,
                    window.tokens, window.source)
    if fitted.cuts:
        LOG.info("%s prompt cut to fit the %d-token window (%s): %s; about %d tokens now", role, window.tokens,
                 window.source, describe_cuts(fitted.cuts), fitted.prompt_tokens_estimated)
    return {**request, "messages": fitted.messages}, record
