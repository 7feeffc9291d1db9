"""What every Law-1 rule shares: a Danger, the judging context, options, how a command is shown.

The judge reads text only, except that a context given the workspace may ask whether a path exists there,
since only that tells a new file (reversible) from one a person keeps."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from artoo.tasks.shell.parse import PLACEHOLDER, Simple

Category = Literal["network", "daemon", "may change", "cannot parse"]
"""``network``: data leaves the machine; ``daemon``: a server changes what it holds (both out of any
overlay's sight); ``may change``: not known to only read; ``cannot parse``: not valid shell."""
UNOBSERVABLE: tuple[Category, ...] = ("network", "daemon")
STDIN = "__ARTOO_STDIN__"
"""Operand standing for the items xargs reads from stdin."""
FOUND = "{}"
"""Operand standing for the files find -exec runs on."""


@dataclass
class Danger:
    """One action that needs a person's yes: what kind, which command, why, on what."""

    category: Category
    command: str
    detail: str
    targets: list[str] = field(default_factory=list)
    creates: bool = False
    """Only creates new paths: reversible, so it asks nobody, yet it is no read (a check that creates acts)."""

    def reason(self) -> str:
        """``network: `git push` sends commits off this machine``."""
        return f"{self.category}: `{self.command}` {self.detail}"


@dataclass
class Ctx:
    """Where a command sits in the line: the wrappers around it, the pipe it reads, the roots find walks."""

    via: str = ""
    depth: int = 0
    simple: Simple | None = None
    found_roots: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)  # every program judged: the reason when nothing asks
    workspace: str | None = None
    """The real path commands start in; None when unknown (then no path is known to be new)."""
    cwd_known: bool = True
    """False once a ``cd`` (or ``-C DIR``) may have moved away: relative paths then land where the text does not say."""
    made: list[tuple[str, str]] = field(default_factory=list)  # (path, kind) each creation, shared by the whole line

    def child(self, via: str, **changes) -> Ctx:
        """The context of a wrapped command (sudo, xargs, find -exec, sh -c …)."""
        return replace(self, via=f"{self.via} → {via}" if self.via else via, depth=self.depth + 1, **changes)


Rule = Callable[[list[str], Ctx], list[Danger]]  # one command's words (words[0] the program) → its dangers


def show(word: str) -> str:
    """A word as a person wrote it: ``$(…)``, ``<(…)`` and ``>(…)`` for the placeholders."""
    return PLACEHOLDER.sub(lambda m: {"PIN": "<(…)", "POUT": ">(…)"}.get(m.group(1), "$(…)"), word)


def display(words: list[str], limit: int = 90) -> str:
    """A short, readable rendering of a command's words."""
    text = " ".join(shlex.quote(w) if not w or (re.search(r"[\s'\"\\;&|<>()]", w) and len(w) > 2) else w
                    for w in map(show, words)).replace(STDIN, "<stdin>")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_target(word: str, ctx: Ctx) -> str:
    """A target as a person should read it."""
    if word == FOUND:
        return f"files found under {', '.join(ctx.found_roots) or '.'}"
    return "paths read from stdin" if word == STDIN else show(word).replace(STDIN, "<stdin>")


def danger(category: Category, words: list[str], detail: str, targets: list[str], ctx: Ctx,
           creates: bool = False) -> Danger:
    """A Danger naming the command (and the wrapper it hides in) and its targets."""
    via = f"(via {ctx.via}) " if ctx.via else ""
    return Danger(category, display(words), via + detail, [describe_target(t, ctx) for t in targets], creates)


def shown_stdin(ctx: Ctx) -> str | None:
    """The text a stdin-reading program would get, when the command line shows it (here-input, ``echo … |``)."""
    simple = ctx.simple
    if simple is None or simple.here_input is not None:
        return None if simple is None else simple.here_input
    prev = simple.pipe_from
    shown = prev is not None and prev.words[:1] in (["echo"], ["printf"])
    return " ".join(w for w in prev.words[1:] if not w.startswith("-")) if shown else None


@dataclass
class Options:
    """Parsed command-line options: flags seen, values given, and the operands."""

    flags: set[str]
    values: dict[str, list[str]]
    operands: list[str]

    def has(self, *names: str) -> bool:
        """True when any of the flags or valued options was given."""
        return any(n in self.flags or n in self.values for n in names)

    def value(self, *names: str) -> str | None:
        """The last value given to any of the options."""
        found = [v for n in names for v in self.values.get(n, [])]
        return found[-1] if found else None


def parse_options(args: list[str], short_values: str = "", long_values: tuple[str, ...] = ()) -> Options:
    """GNU-style option parsing: clusters (-rf), -tDIR / -t DIR, --opt=v / --opt v, ``--``."""
    opts, i = Options(set(), {}, []), 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            opts.operands.extend(args[i + 1:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, eq, val = arg.partition("=")
            if eq or (name in long_values and i + 1 < len(args)):
                opts.values.setdefault(name, []).append(val if eq else args[i + 1])
                i += 0 if eq else 1
            else:
                opts.flags.add(name)
        elif arg.startswith("-") and len(arg) > 1 and arg not in (STDIN, FOUND):
            for k, letter in enumerate(arg[1:], start=1):
                if letter not in short_values:
                    opts.flags.add("-" + letter)
                    continue
                rest = arg[k + 1:] or (args[i + 1] if i + 1 < len(args) else None)
                if rest is None:
                    opts.flags.add("-" + letter)
                else:
                    opts.values.setdefault("-" + letter, []).append(rest)
                    i += 0 if arg[k + 1:] else 1
                break
        else:
            opts.operands.append(arg)
        i += 1
    return opts
