"""Checks that cannot all pass: a plan whose tests contradict each other on one path is caught before it runs.

Why: a small planner wrote "the folder exists and is empty" beside "every .csv file is copied into it", and the
run spent two replans on a plan no folder could meet.  What each test asserts about a path is read from its
command (the ``test``/``[`` forms and paths used as files), never from the criterion's words; two assertions
contradict when one says a path exists and another that it is absent, or one that a folder is empty and another
that it holds something.  A command this module cannot read asserts nothing here.  Pure.
"""

from __future__ import annotations

import re
import shlex
from typing import Literal

from artoo.config.contracts import REFERENCE_CRITERION, Criterion

__all__ = ["Claim", "claims", "contradictions"]

Kind = Literal["exists", "absent", "empty", "holds"]
Claim = tuple[Kind, str]
"""One assertion a test makes about a path (normalised, relative paths as written)."""

_EXISTS = {"-e", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h"}
_EMPTY_LISTING = re.compile(r"""^\$\(\s*ls(?:\s+-[A-Za-z]+)*\s+(?P<path>[^\s)]+)\s*\)$""")
"""``$(ls -A dir)`` inside ``test -z``/``test -n``: the folder is empty / holds something."""
_SPLIT = re.compile(r"\s*(?:&&|;|\n)\s*")


def _norm(path: str) -> str:
    path = path.strip().strip("'\"")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") or "."


def _test_words(words: list[str]) -> list[str] | None:
    """The operands of a ``test``/``[ … ]`` command, or None when it is not one."""
    if words and words[0] == "test":
        return words[1:]
    if words and words[0] == "[" and words[-1] == "]":
        return words[1:-1]
    return None


def _from_test(operands: list[str], negated: bool) -> list[Claim]:
    if operands[:1] == ["!"]:
        return _from_test(operands[1:], not negated)
    if len(operands) != 2:
        return []
    flag, value = operands
    if flag in _EXISTS:
        path = _norm(value)
        if negated:
            return [("absent", path)]
        out: list[Claim] = [("exists", path)]
        if flag == "-s":
            out.append(("holds", path))
        return out
    listed = _EMPTY_LISTING.match(value.strip())
    if flag in ("-z", "-n") and listed:
        empty = (flag == "-z") != negated
        return [("empty" if empty else "holds", _norm(listed.group("path")))]
    return []


def claims(command: str) -> list[Claim]:
    """What one check command asserts about paths, for the forms it can read (others assert nothing here)."""
    out: list[Claim] = []
    for part in _SPLIT.split(command.strip()):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        negated = bool(words) and words[0] == "!"
        words = words[1:] if negated else words
        operands = _test_words(words)
        if operands is not None:
            out += _from_test(operands, negated)
        elif words and words[0] in ("cmp", "diff") and not negated:
            files = [w for w in words[1:] if not w.startswith("-")]
            out += [("exists", _norm(f)) for f in files]
    for kind, path in list(out):  # a path that exists inside a folder says the folder exists and holds something
        if kind == "exists" and "/" in path:
            folder = path.rsplit("/", 1)[0] or "/"
            out += [("exists", folder), ("holds", folder)]
    return out


OPPOSITE: dict[Kind, Kind] = {"exists": "absent", "absent": "exists", "empty": "holds", "holds": "empty"}


def contradictions(criteria: list[Criterion]) -> list[str]:
    """Each pair of checks that assert opposite things about one path, in words for the planner's re-ask."""
    said: dict[Claim, str] = {}
    found: list[str] = []
    for criterion in criteria:
        if criterion.criterion == REFERENCE_CRITERION or not criterion.check.strip():
            continue
        for kind, path in claims(criterion.check):
            other = said.get((OPPOSITE[kind], path))
            if other is not None and other != criterion.criterion:
                found.append(f"the checks of {other!r} and {criterion.criterion!r} contradict each other on "
                             f"{path} ({OPPOSITE[kind]} vs {kind}): no folder can meet both")
            said.setdefault((kind, path), criterion.criterion)
    return list(dict.fromkeys(found))
