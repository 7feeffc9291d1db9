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
EPISODE_VERIFIED = "verified: "
NOTHING_TRIED = "(no tool calls)"
CHECKS_JOINED = " ;; "
"""Between two checks on a ``verified:`` line (a check is a shell line and may hold ``;``)."""
BY_REFERENCE = "(an independent run of the request agreed)"
"""The ``verified:`` line of a success every check of which was the plan's reference run (no predicate to quote)."""


def episode_content(state: str, intent: str, tried: list[str], result: str,
                    verified: tuple[str, ...] | None = None) -> str:
    """An intent Megram's content: what was tried and what happened, one labelled line each, and for a success
    code verified, the checks that passed.

    The GGS writes it at a terminal state; calibration quotes it in the planner's Avoid or
    Exploit line, so the next plan knows *which* approach failed or worked, not only that one did.  A
    ``verified:`` line marks the strongest evidence memory holds (code, not a model, said it worked); a content
    without one (every Megram written before checks existed) is a success a model judged.
    """
    calls = "; ".join(" ".join(c.split()) for c in tried) or NOTHING_TRIED
    text = f"{state}: {intent}\n{EPISODE_TRIED}{calls}\n{EPISODE_RESULT}{' '.join(result.split())}"
    if verified is not None:
        checks = CHECKS_JOINED.join(" ".join(c.split()) for c in verified if c.strip()) or BY_REFERENCE
        text += f"\n{EPISODE_VERIFIED}{checks}"
    return text


def episode_verified(content: str) -> tuple[str, ...] | None:
    """The checks of a verified episode (``()`` when a reference run alone verified it), None when unverified."""
    line = next((ln[len(EPISODE_VERIFIED):] for ln in content.splitlines() if ln.startswith(EPISODE_VERIFIED)), None)
    if line is None:
        return None
    return () if line == BY_REFERENCE else tuple(c for c in line.split(CHECKS_JOINED) if c)


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
