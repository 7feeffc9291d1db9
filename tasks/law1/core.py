"""Shared vocabulary of the Law-1 rules: a Danger, the judging context, paths, options.

Paths are resolved lexically (``~``, ``$HOME``, ``..``, the command's cwd) and never
touched: whether something exists is asked of the injected ``exists`` callable, and
when there is none — or the path is only known at run time (``$VAR``, ``$( … )``,
``{}`` from find, items from xargs' stdin) — the answer is "unknown", which the rules
treat as "may exist".  Law 1 errs on the side of asking.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from artoo.tasks.shell.parse import PLACEHOLDER, Simple

STDIN = "__ARTOO_STDIN__"
"""Operand standing for the items xargs reads from stdin."""
FOUND = "{}"
"""Operand standing for the files find -exec runs on."""

SYSTEM_DIRS = ("/etc", "/usr", "/boot", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
               "/opt", "/sys", "/proc", "/dev", "/srv", "/snap", "/System", "/Library", "/private")
NOT_SYSTEM = ("/var/tmp", "/dev/shm", "/dev/fd", "/proc/self/fd", "/private/tmp")
HARMLESS_SINKS = {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty",
                  "/dev/random", "/dev/urandom", "-"}

Exists = Callable[[Path], bool]


@dataclass
class Danger:
    """One irreversible action found: what kind, which command, why, on what."""

    category: str
    command: str
    detail: str
    targets: list[str] = field(default_factory=list)

    def reason(self) -> str:
        """``deletion: `rm -rf build` deletes build``."""
        return f"{self.category}: `{self.command}` {self.detail}"


@dataclass
class Ctx:
    """Where and how a command would run, as far as the text tells."""

    cwd: Path | None
    exists: Exists | None
    recurse_argv: Callable[[list[str], Ctx], list[Danger]]
    recurse_text: Callable[[str, Ctx], list[Danger]]
    via: str = ""
    stdin_paths: list[str] = field(default_factory=list)
    found_roots: list[str] = field(default_factory=list)
    simple: Simple | None = None
    depth: int = 0
    seen: list[str] = field(default_factory=list)
    known: dict[str, str] = field(default_factory=dict)
    """Shell variables the script itself set to literal values, as far as the text tells (variables)."""

    def child(self, via: str, **changes) -> Ctx:
        """The context of a wrapped command (sudo, xargs, find -exec, sh -c …)."""
        joined = f"{self.via} → {via}" if self.via else via
        return replace(self, via=joined, depth=self.depth + 1, **changes)


def display(words: list[str], limit: int = 90) -> str:
    """A short, readable rendering of a command's words."""
    text = " ".join(_show_word(w) for w in words)
    return text if len(text) <= limit else text[: limit - 1] + "…"


SHOWN = {"PIN": "<(…)", "POUT": ">(…)"}


def show_placeholders(word: str) -> str:
    """``__ARTOO_SUB0__`` → ``$(…)``, ``__ARTOO_PIN1__`` → ``<(…)``: what a person wrote there."""
    return PLACEHOLDER.sub(lambda m: SHOWN.get(m.group(1), "$(…)"), word)


def _show_word(word: str) -> str:
    word = show_placeholders(word)
    if not word or (re.search(r"[\s'\"\\;&|<>()]", word) and len(word) > 2):
        word = shlex.quote(word)
    return word.replace(STDIN, "<stdin>")


def danger(category: str, words: list[str], detail: str, targets: list[str], ctx: Ctx) -> Danger:
    """Build a Danger naming the command (and the wrapper it hides in) and its targets."""
    via = f" (via {ctx.via})" if ctx.via else ""
    shown = [describe_target(t, ctx) for t in targets]
    return Danger(category, display(words), f"{via} {detail}".strip(), shown)


def describe_target(word: str, ctx: Ctx) -> str:
    """A target as a person should read it."""
    if word == FOUND:
        roots = ", ".join(ctx.found_roots) or "."
        return f"files found under {roots}"
    if word == STDIN:
        return "paths read from stdin"
    return show_placeholders(word).replace(STDIN, "<stdin>")


def targets_text(words: list[str], ctx: Ctx) -> str:
    """Comma-separated targets for a reason."""
    return ", ".join(describe_target(w, ctx) for w in words) or "(no operand)"


def is_dynamic(word: str) -> bool:
    """True when the word's value is only known at run time."""
    if STDIN in word or word == FOUND or PLACEHOLDER.search(word):
        return True
    rest = word.replace("$HOME", "").replace("${HOME}", "")
    return "$" in rest or "`" in rest or any(ch in rest for ch in "*?[")


def resolve(word: str, ctx: Ctx) -> Path | None:
    """The lexical absolute path of a word, or None when it cannot be known from the text."""
    if is_dynamic(word):
        return None
    home = os.path.expanduser("~")
    text = word.replace("${HOME}", home).replace("$HOME", home)
    if text == "~" or text.startswith("~/"):
        text = home + text[1:]
    elif text.startswith("~"):
        text = "/home/" + text[1:]
    if not text.startswith("/"):
        if ctx.cwd is None:
            return None
        text = str(ctx.cwd / text)
    return Path(posixpath.normpath(text).replace("//", "/"))


def exists_state(word: str, ctx: Ctx) -> bool | None:
    """True/False when known, None when the path or the answer is unknown."""
    if word == FOUND:
        return True
    path = resolve(word, ctx)
    if path is None or ctx.exists is None:
        return None
    return bool(ctx.exists(path))


def is_harmless_sink(word: str) -> bool:
    """/dev/null, stdout and friends: writing there loses nothing."""
    return word in HARMLESS_SINKS or word.startswith(("/dev/fd/", "/proc/self/fd/"))


def is_system_path(path: Path) -> bool:
    """The root, a top-level entry of it, or anything under a system directory."""
    text = str(path)
    if text in HARMLESS_SINKS or _under(text, NOT_SYSTEM):
        return False
    return text == "/" or path.parent == Path("/") or _under(text, SYSTEM_DIRS)


def holds_system_paths(path: Path) -> bool:
    """True when entries *under* this directory are system paths (``/``, ``/etc``, ``/usr/…``)."""
    text = str(path)
    return not _under(text, NOT_SYSTEM) and (text == "/" or _under(text, SYSTEM_DIRS))


def _under(text: str, roots: tuple[str, ...]) -> bool:
    return any(text == r or text.startswith(r + "/") for r in roots)


def system_targets(words: list[str], ctx: Ctx) -> list[str]:
    """The words naming system paths; a run-time path counts when its known prefix holds system paths."""
    hits = []
    for word in words:
        if is_harmless_sink(word):
            continue
        if word == STDIN:
            parents = [_prefix_dir(p, ctx) for p in ctx.stdin_paths]
            if any(p is not None and holds_system_paths(p) for p in parents):
                hits.append(word)
            continue
        path = resolve(word, ctx)
        if path is not None:
            if is_system_path(path):
                hits.append(word)
            continue
        parent = _prefix_dir(word, ctx)
        if parent is not None and holds_system_paths(parent):
            hits.append(word)
    return hits


def _prefix_dir(word: str, ctx: Ctx) -> Path | None:
    """For ``/etc/*.conf`` or ``/usr/$X``: the literal directory before the first run-time part."""
    literal = re.split(r"[$`*?\[]|__ARTOO_", word, maxsplit=1)[0]
    if word == FOUND:
        return None
    if literal == word:
        return resolve(word, ctx)
    if "/" not in literal:
        return None if not literal.startswith("~") else resolve("~", ctx)
    return resolve(literal[: literal.rindex("/") + 1] or "/", ctx)


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
    flags: set[str] = set()
    values: dict[str, list[str]] = {}
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            operands.extend(args[i + 1:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, eq, val = arg.partition("=")
            if eq:
                values.setdefault(name, []).append(val)
            elif name in long_values and i + 1 < len(args):
                values.setdefault(name, []).append(args[i + 1])
                i += 1
            else:
                flags.add(name)
        elif arg.startswith("-") and len(arg) > 1 and arg not in (STDIN, FOUND):
            i += _cluster(arg, args, i, short_values, flags, values)
        else:
            operands.append(arg)
        i += 1
    return Options(flags, values, operands)


def _cluster(arg: str, args: list[str], i: int, short_values: str, flags: set[str],
             values: dict[str, list[str]]) -> int:
    for k, letter in enumerate(arg[1:], start=1):
        if letter in short_values:
            rest = arg[k + 1:]
            if rest:
                values.setdefault("-" + letter, []).append(rest)
                return 0
            if i + 1 < len(args):
                values.setdefault("-" + letter, []).append(args[i + 1])
                return 1
            flags.add("-" + letter)
            return 0
        flags.add("-" + letter)
    return 0


def write_dangers(words: list[str], targets: list[str], ctx: Ctx, verb: str = "overwrites",
                  append: bool = False) -> list[Danger]:
    """Writing to files: system paths always count; existing (or maybe-existing) files unless appending."""
    out = []
    for target in targets:
        if is_harmless_sink(target):
            continue
        if system_targets([target], ctx):
            out.append(danger("system", words, f"writes into system path {describe_target(target, ctx)}",
                              [target], ctx))
            continue
        state = False if append else exists_state(target, ctx)
        if state is False:
            continue
        shown = describe_target(target, ctx)
        why = f"{verb} existing file {shown}" if state else f"{verb} {shown}, which may already exist"
        out.append(danger("overwrite", words, why, [target], ctx))
    return out


def system_dest(dest: str, dir_hint: bool, ctx: Ctx) -> bool:
    """Whether what lands at ``dest`` (or inside it, when it is a directory) is a system path."""
    if not dir_hint:
        return bool(system_targets([dest], ctx))
    path = resolve(dest, ctx)
    if path is None:
        parent = _prefix_dir(dest, ctx)
        return parent is not None and holds_system_paths(parent)
    return holds_system_paths(path)
