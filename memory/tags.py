"""Memory tag and content conventions shared by the GGS (writer) and calibration (reader).

Kept in one place so the writer and the reader can never disagree on a tag, or on how an
intent Megram's content says what was tried and what happened.
"""

from __future__ import annotations

import re

ENV_LOCAL = "env:local"


def intent_slug(intent: str) -> str:
    """First three words of the intent, lower-cased and underscored (spec R2)."""
    words = re.findall(r"[a-z0-9]+", intent.lower())
    return "_".join(words[:3]) or "unknown"


def intent_space(intent: str) -> str:
    """The macro-event space ``intent:<slug>``."""
    return f"intent:{intent_slug(intent)}"


def tool_space(tool: str) -> str:
    """The micro-event space ``tool:<name>``."""
    return f"tool:{tool}"


ACCESS_PREFIXES = ("read", "write", "execute", "delete")
"""Entity prefixes of a pair blamed for one access, so the other accesses stay open: ``write:/w/data.csv``."""


def path_entity(target: str, access: str = "all") -> str:
    """The micro-event entity: ``path:<target>`` for every access, ``<access>:<target>`` for one.

    Why two spellings: a Megram written before blame told accesses apart says ``path:…`` and meant
    every access; it keeps that meaning with no rewrite, and a new one blamed for a single access is a
    pair of its own, so a refused write never lowers the potentials of reading the same file.
    """
    return f"path:{target}" if access == "all" else f"{access}:{target}"


def entity_target(entity: str) -> tuple[str, str]:
    """(target, access) of a tool pair's entity; ``path:`` (and anything else) is every access."""
    head, sep, rest = entity.partition(":")
    if sep and head in ACCESS_PREFIXES:
        return rest, head
    return (rest if sep and head == "path" else entity), "all"


EPISODE_TRIED = "tried: "
EPISODE_RESULT = "result: "
NOTHING_TRIED = "(no tool calls)"


def episode_content(state: str, intent: str, tried: list[str], result: str) -> str:
    """An intent Megram's content: what was tried and what happened, one labelled line each.

    The GGS writes it at a terminal state; calibration quotes it in the planner's Avoid or
    Exploit line, so the next plan knows *which* approach failed or worked, not only that one did.
    """
    calls = "; ".join(" ".join(c.split()) for c in tried) or NOTHING_TRIED
    return f"{state}: {intent}\n{EPISODE_TRIED}{calls}\n{EPISODE_RESULT}{' '.join(result.split())}"


def episode_quote(content: str, limit: int = 600) -> str:
    """The part of an intent Megram's content worth quoting to a planner, at most ``limit`` characters.

    ``tried … | result …`` for contents written by ``episode_content``; the whole text (one
    line) for older ones, which said only the state, intent and summary.
    """
    lines = content.splitlines()
    tried = next((ln[len(EPISODE_TRIED):] for ln in lines if ln.startswith(EPISODE_TRIED)), None)
    result = next((ln[len(EPISODE_RESULT):] for ln in lines if ln.startswith(EPISODE_RESULT)), None)
    text = f"tried {tried} | what happened: {result or '?'}" if tried is not None else " ".join(content.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
