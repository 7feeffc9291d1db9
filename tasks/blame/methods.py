"""A shell command's methods: the programs it runs with the options it gives them.

Why: the shell is the executor's way to act, so a directed replan that blocks ``shell`` after one wrong command
leaves it nothing to act with (real runs then hand-wrote the deliverable or looped on ``glob``).  What failed
was a method, ``grep -E`` or ``mkdir`` without ``-p``, so that is what a directive blocks: the same program with
another option set, or another program, stays open.  A blocked method travels in ``blocked_tools`` as
``shell:<program> <options>`` (``METHOD``).  Pure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from artoo.config.contracts import SubTaskOutcome, ToolCall
from artoo.tasks.shell.parse import ParseError, parse, strip_prefix

__all__ = ["METHOD", "blamed_methods", "blocked_methods", "complained", "method_of", "methods", "refused_method"]

METHOD = "shell:"
"""How a blocked method is written among blocked tools: ``shell:grep -E``."""


def method_of(words: list[str]) -> str | None:
    """``grep -E`` for ``grep -E 'x' data.csv``: the program's name and its options as written, sorted; None for no
    program.  Options are not split into letters: ``-rl`` may be two short options, but ``-name`` is one of
    find's, and only the program knows which."""
    words = strip_prefix(words)
    if not words:
        return None
    options: set[str] = set()
    for word in words[1:]:
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            options.add(word.split("=", 1)[0])
    return " ".join([os.path.basename(words[0]), *sorted(options)])


def methods(command: str) -> list[str]:
    """The methods of every simple command of ``command``, in order; [] when the grammar cannot read it."""
    try:
        script = parse(command)
    except ParseError:
        return []
    return list(dict.fromkeys(m for simple in script.commands if (m := method_of(simple.words))))


def blamed_methods(outcomes: Iterable[SubTaskOutcome]) -> list[str]:
    """``shell:`` entries for the methods of the failing subtasks' failed shell calls (their last shell call when
    none failed but the step did): what a logical failure of the shell blocks instead of the shell."""
    found: list[str] = []
    for outcome in outcomes:
        shell = [c for c in recorded_calls(outcome) if c.tool == "shell" and not c.denied]
        failed = [c for c in shell if not c.ok] or shell[-1:]
        found += [f"{METHOD}{m}" for c in failed for m in complained(c.input, c.output)]
    return list(dict.fromkeys(found))


def recorded_calls(outcome: SubTaskOutcome) -> list[ToolCall]:
    """The outcome's structured calls, else its evidence lines read back (an outcome recorded before calls were
    kept structured: ``tool: input → output``, every such call taken as having worked)."""
    if outcome.calls:
        return list(outcome.calls)
    read = [(line.partition(":"), line) for line in outcome.tool_calls]
    return [ToolCall(tool=tool.strip(), input=rest.partition("→")[0].strip(), output=rest.partition("→")[2].strip())
            for (tool, _, rest), _line in read if tool.strip()]


def complained(command: str, output: str) -> list[str]:
    """The methods of ``command`` whose program wrote an error line (``mkdir: cannot create …``); all of them
    when none did: in ``mkdir archive && mv *.bak archive/`` only the failing ``mkdir`` is to blame."""
    used = methods(command)
    starts = {line.split(":", 1)[0].strip() for line in output.splitlines() if ":" in line}
    named = [m for m in used if m.split(" ", 1)[0] in starts]
    return named or used


def blocked_methods(blocked_tools: Iterable[str]) -> set[str]:
    """The methods among blocked tools (without their ``shell:`` prefix)."""
    return {t[len(METHOD):] for t in blocked_tools if t.startswith(METHOD)}


def refused_method(command: str, blocked: set[str]) -> str | None:
    """The first blocked method ``command`` uses, or None."""
    return next((m for m in methods(command) if m in blocked), None)
