"""What a script's own shell variables hold, as far as its text tells (for the Law-1 network rule).

``URL=https://example.com/a; curl "$URL"`` sends nothing computed: the script set URL to
a literal a moment before.  Any other ``$NAME`` (``$HOME``, ``$1``, a variable from the
environment, one assigned ``$( … )``) may hold local data the policy cannot see, and a
network tool sending it counts as sending computed data (``rules_exfil``).  Knowing a
value must never be wrong, so the tracking is deliberately narrow:

* only a plain top-level ``NAME=literal`` (or ``export NAME=literal`` …) teaches a value —
  not one in a pipeline, subshell, branch, loop, function body, or after ``&&``/``||``;
* a command that mentions NAME in any other way (``read NAME``, ``for NAME in``, a
  conditional assignment, ``eval NAME=…``) forgets it;
* a command nested in a block, loop or function may run later or repeatedly, so it only
  sees names the script assigns exactly once;
* ``source``/``.`` or an ``eval``/``export``/``read`` … with computed words could assign
  anything, so a script that has one trusts no variable at all.
"""

from __future__ import annotations

import re

from artoo.tasks.law1.core import STDIN
from artoo.tasks.shell.parse import PLACEHOLDER, Simple, strip_prefix

EXPANSION = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_]\w*)|([0-9@*#?$!-]))")
"""``${…}``, ``$NAME`` or a special parameter (``$1``, ``$@``, ``$$`` …); not ``$'…'`` nor ``$"…"``."""
RAW_SUBSTITUTION = re.compile(r"\$\(|`")
"""``$(`` or a backtick left in a word: single-quoted text the parser kept, which a shell may expand."""
ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)(\+?)=(.*)$", re.DOTALL)
DECLARERS = {"export", "declare", "typeset", "local", "readonly"}
ASSIGNERS = DECLARERS | {"eval", "read", "mapfile", "readarray", "let", "getopts", "unset"}


def unknown_expansion(text: str, known: dict[str, str]) -> str | None:
    """The first ``$…`` expansion in the text whose value is not known, or None."""
    for match in EXPANSION.finditer(text):
        braced, name, _special = match.groups()
        if (name or braced) not in known:
            return match.group(0)
    return None


def literal_value(value: str, known: dict[str, str]) -> str | None:
    """The value an assignment stores, when the text fixes it; None when it is computed or unknown."""
    if PLACEHOLDER.search(value) or RAW_SUBSTITUTION.search(value) or STDIN in value:
        return None
    if value.startswith("~") or ":~" in value or unknown_expansion(value, known) is not None:
        return None  # tilde expansion gives the home directory: local data too
    return EXPANSION.sub(lambda m: known[m.group(1) or m.group(2)], value)


def _mentions(name: str) -> re.Pattern[str]:
    """NAME written other than as an expansion (``$NAME``, ``${NAME}``, ``${#NAME}``)."""
    return re.compile(rf"(?<![\w$#!{{]){re.escape(name)}(?!\w)")


def _assignments(simple: Simple) -> list[tuple[str, str]] | None:
    """(name, value) pairs when the command only assigns variables; None when it does anything else."""
    words = simple.words
    if words and words[0] in DECLARERS:
        flags = [w for w in words[1:] if w.startswith(("-", "+"))]
        if any(set(f[1:]) & set("naAf") for f in flags):
            return None  # namerefs, arrays, functions: not a plain value
        words = [w for w in words[1:] if not w.startswith(("-", "+")) and "=" in w]
    elif strip_prefix(words) or not words:
        return None
    pairs = []
    for word in words:
        match = ASSIGNMENT.match(word)
        if match is None:
            return None
        name, append, value = match.groups()
        pairs.append((name, f"${{{name}}}{value}" if append else value))
    return pairs


def _trusts_nothing(simple: Simple) -> bool:
    """``source``, or an assigning builtin with a computed word other than ``NAME=value``: sets anything."""
    words = simple.words
    if not words:
        return False
    if words[0] in ("source", "."):
        return True
    if words[0] not in ASSIGNERS and not (words[0] == "printf" and "-v" in words):
        return False
    computed = [w for w in words[1:] if PLACEHOLDER.search(w) or "$" in w or "`" in w]
    return any(words[0] == "eval" or not ASSIGNMENT.match(w) for w in computed)


class Scope:
    """The variables a script knows, command by command (see the module docstring)."""

    def __init__(self, commands: list[Simple], inherited: dict[str, str]) -> None:
        self.blind = any(_trusts_nothing(c) for c in commands)
        self.known = {} if self.blind else dict(inherited)
        plain = [[n for n, _ in _assignments(c) or []] if c.plain else [] for c in commands]
        candidates = set(self.known).union(*plain)
        mentions = dict.fromkeys(candidates, 0)
        assigned = dict.fromkeys(candidates, 0)
        for simple, names in zip(commands, plain, strict=True):
            for name in candidates:
                mentions[name] += sum(1 for w in simple.words if _mentions(name).search(w))
            for name in names:
                assigned[name] += 1
        self.stable = {n for n in candidates if mentions[n] == 0 or (mentions[n] == 1 and assigned[n] == 1)}

    def view(self, simple: Simple) -> dict[str, str]:
        """What a command may rely on: everything known if it surely runs now, else the stable names."""
        if simple.plain:
            return dict(self.known)
        return {n: v for n, v in self.known.items() if n in self.stable}

    def after(self, simple: Simple) -> None:
        """Learn from a plain assignment; forget every name the command mentions otherwise."""
        if self.blind:
            return
        pairs = _assignments(simple) if simple.plain else None
        if pairs is not None:
            for name, value in pairs:
                literal = literal_value(value, self.known)
                if literal is None:
                    self.known.pop(name, None)
                else:
                    self.known[name] = literal
            return
        for name in list(self.known):
            if any(_mentions(name).search(w) for w in simple.words):
                self.known.pop(name)
