"""Law 1 for what a command creates: a new path is reversible (the spec's Law 1: "creating new files" needs no
confirmation), so a creation runs unasked once the judge can tell that it makes only new paths in the workspace.

A directory (``mkdir``) never replaces anything, so only where it lands matters.  A file written whole, appended
to, or copied to must not exist yet, which only a context given the workspace can tell; without one it asks.
A hidden path (``.git/config``, ``.envrc``) asks even when new: it configures programs that later run unasked.
Paths named at run time (``$OUT``, ``*.txt``, ``$(…)``) and relative paths after a ``cd`` ask.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from artoo.tasks.law1.changes import under
from artoo.tasks.law1.core import FOUND, STDIN, Ctx, Danger, danger, describe_target
from artoo.tasks.law1.readonly import harmless_sink
from artoo.tasks.shell.parse import PLACEHOLDER

Kind = Literal["dir", "file", "copy", "place"]
"""``dir``: a directory made (mkdir); ``file``: a file written, appended or created (must be new); ``copy``: a
copy's destination (must be new; what the copy brings may hold links, so later writes under it ask);
``place``: a directory a program creates files in under names of its own that never replace one (wget, mktemp)."""
TEMP = ("/tmp", "/var/tmp")
"""Temporary folders: a new path there is a creation like one in the workspace."""
RUN_TIME = re.compile(r"[$`*?\[\\]")
"""A word the shell still expands (a variable, a substitution, a glob) or that escapes: its path is not known."""
MAX_EXPANSIONS = 64


def check(word: str, kind: Kind, ctx: Ctx, keeps: bool = False) -> str | None:
    """Why creating ``word`` may be more than creating a new path; None when it surely only creates.

    ``keeps``: the program never replaces what exists (``cp -n``), so only where the path lands matters."""
    if kind in ("file", "copy") and (harmless_sink(word) or PLACEHOLDER.fullmatch(word) and "POUT" in word):
        return None  # /dev/null, stdout, a process substitution ``>(…)``: nothing anyone keeps
    if at_run_time(word, ctx):
        return "is named only at run time"
    paths = _expansions(word)
    if paths is None:
        return "is named only at run time"
    for path in paths:
        why = _one(path, kind, ctx, keeps)
        if why is not None:
            return why
    return None


def at_run_time(word: str, ctx: Ctx) -> bool:
    """Whether the shell, xargs or find decides what the word names (``$X``, ``*.txt``, ``$(…)``, ``{}``)."""
    found = FOUND in word and (bool(ctx.found_roots) or word == FOUND)
    return bool(PLACEHOLDER.search(word) or STDIN in word or found or RUN_TIME.search(word))


def made(words: list[str], targets: list[tuple[str, Kind]], ctx: Ctx) -> Danger:
    """The record of a creation the judge let pass: no question, but no read either (see ``Danger.creates``)."""
    for word, kind in targets:
        ctx.made.append((resolve(word, ctx) or word, kind))
    shown = [f"new files in {w}" if kind == "place" else w for w, kind in targets]
    return danger("may change", words, "creates only new paths", shown, ctx, creates=True)


def refused(words: list[str], word: str, why: str, ctx: Ctx) -> Danger:
    """A creation the judge cannot call new: it writes ``word``, which ``why``."""
    return danger("may change", words, f"writes {describe_target(word, ctx)}, which {why}", [word], ctx)


def resolve(word: str, ctx: Ctx) -> str | None:
    """The absolute, normalised path a word names in the workspace; None when the workspace is not known."""
    path = os.path.expanduser(word) if word.startswith("~") else word
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(ctx.workspace, path)) if ctx.workspace and ctx.cwd_known else None


def existing_dir(word: str, ctx: Ctx) -> bool | None:
    """Whether ``word`` is a directory now; None when the judge cannot look."""
    path = resolve(word, ctx)
    if path is None or check(word, "dir", ctx) is not None:
        return None
    return os.path.isdir(path)


def clashes(ctx: Ctx) -> list[Danger]:
    """Files written under what the same line copies: a copied tree may hold links that point anywhere."""
    roots = [path for path, kind in ctx.made if kind == "copy"]
    return [Danger("may change", path, f"is written after being copied in the same line, and a copy may bring links "
                   f"that point anywhere ({root})", [path])
            for path, kind in ctx.made if kind == "file" for root in roots if under(path, [root])]


def _one(path: str, kind: Kind, ctx: Ctx, keeps: bool) -> str | None:
    if path.startswith("~"):
        path = os.path.expanduser(path)
    absolute = os.path.isabs(path)
    if not absolute and not ctx.cwd_known:
        return "lands where an earlier `cd` (or `-C`) went, which the judge does not follow"
    if ctx.workspace is None:
        shown = os.path.normpath(path)
        if kind in ("file", "copy") and not keeps:
            return "may already exist (the judge was not told the workspace, so it cannot look)"
        if absolute:
            return None if _inside(shown, TEMP) else "lies outside the workspace"
        return "lies outside the workspace" if shown.split("/")[0] == ".." else _hidden(shown, kind)
    full = resolve(path, ctx) or path
    real = os.path.realpath(full)
    root = next((r for r in (ctx.workspace, *TEMP) if under(real, [r])), None)
    if root is None:
        return "lies outside the workspace"
    hidden = _hidden(os.path.relpath(full, root) if under(full, [root]) else os.path.relpath(real, root), kind)
    if hidden is not None:
        return hidden
    if kind in ("file", "copy") and not keeps and os.path.lexists(full):
        return "already exists"
    return None


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(under(path, [r]) for r in roots)


def _hidden(relative: str, kind: Kind) -> str | None:
    """A file under a hidden name configures some program (``.git/config``, ``.envrc``); a directory alone does not."""
    if kind in ("dir", "place"):
        return None
    hidden = any(part.startswith(".") and part not in (".", "..") for part in relative.split("/"))
    return "is hidden, and a hidden file configures programs that later run unasked" if hidden else None


def _expansions(word: str) -> list[str] | None:
    """The word as written and each brace expansion (``out/{a,b}``), or None when there are too many."""
    found, todo = [word], [word]
    while todo:
        current = todo.pop()
        parts = _first_brace(current)
        if parts is None:
            continue
        for part in parts:
            found.append(part)
            todo.append(part)
        if len(found) > MAX_EXPANSIONS:
            return None
    return found


def _first_brace(word: str) -> list[str] | None:
    """The expansions of the first ``{a,b}`` in the word; None when it has none (``{}`` and ``{x}`` are literal)."""
    depth, start = 0, -1
    for i, char in enumerate(word):
        if char == "{":
            start, depth = (i if depth == 0 else start), depth + 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                inner, pieces, level, at = word[start + 1:i], [], 0, 0
                for j, c in enumerate(inner):
                    level += {"{": 1, "}": -1}.get(c, 0)
                    if c == "," and level == 0:
                        pieces.append(inner[at:j])
                        at = j + 1
                pieces.append(inner[at:])
                if len(pieces) > 1:
                    return [word[:start] + p + word[i + 1:] for p in pieces]
                if ".." in inner:  # ``{1..9}``: names alike, none of them a parent
                    return [word[:start] + inner.split("..")[0] + word[i + 1:]]
    return None
