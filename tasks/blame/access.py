"""How a tool call uses each of its targets, and which access a failure refused.

Why: before this, a target blamed for an environmental failure was blocked for every use.
A write refused on the user's read-only ``data.csv`` then stopped the next round from even
*reading* it, so "write a sorted copy" was impossible and the task was abandoned.  The
blame now records the access that failed (read, write, execute, delete), and the toolbox,
the plan rules and memory's pair-blocks refuse only that access.

The reading is lexical, from the command's words as the shell grammar sees them
(``artoo.tasks.shell``): redirections and ``tee`` write, ``rm`` deletes, a path run as
a program executes, ``-o FILE`` / ``--output`` and a copy's last path are written,
``sed -i`` reads and writes, a script's own arguments (``python3 fix.py data.csv``) may be used
any way, every other path argument is read.  When one call used a target
two ways (``sort -o data.csv data.csv``), its error line decides: "Permission denied" or
"Read-only file system" refused the write, "No such file" the read; else every access is
blamed, as before.  Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path

from artoo.config.contracts import Access, BlockedTarget, SubTaskOutcome, ToolCall
from artoo.tasks.blame.error_lines import ERRNO_LINE
from artoo.tasks.blame.failure import (
    PATH_TOOLS,
    attributed_calls,
    blamed_targets,
    call_workspace,
    looks_like_path,
    normalise,
)
from artoo.tasks.shell.parse import PLACEHOLDER, ParseError, Simple, parse, strip_prefix

DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})
"""Programs whose path arguments are deleted."""
WRITERS = frozenset({"tee", "touch", "mkdir", "truncate", "chmod", "chown", "chgrp"})
"""Programs whose path arguments are written (created, changed or re-moded)."""
COPIERS = frozenset({"cp", "mv", "ln", "install", "rsync"})
"""Programs whose last path argument is written and the others read."""
IN_PLACE = frozenset({"sed", "perl"})
"""Programs that rewrite their files with ``-i``."""
INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "bash", "sh", "dash", "zsh", "php", "Rscript"})
"""Programs that run a script: what the script does with the other paths, the words cannot say."""
OUTPUT_FLAGS = frozenset({"-o", "--output", "--out", "-O", "--output-document"})
"""A flag whose next word is a file the command writes (sort, curl, wget, gcc)."""
_WRITE_OPS = re.compile(r"^\d*(>|>>|>\||&>|&>>)$")
_REFUSED_WRITE = re.compile(r"Permission denied|Read-only file system|Operation not permitted", re.IGNORECASE)
_MISSING = re.compile(r"No such file or directory|cannot stat|not found", re.IGNORECASE)


def _paths(words: Iterable[str]) -> list[str]:
    return [w for w in words if looks_like_path(w) and not PLACEHOLDER.search(w)]


def _without_script(args: list[str]) -> list[str]:
    """``args`` without the first operand, the script of ``sed`` or ``perl``."""
    index = next((i for i, w in enumerate(args) if not w.startswith("-")), None)
    return args if index is None else args[:index] + args[index + 1:]


def _simple_accesses(simple: Simple) -> dict[str, set[str]]:
    """Each path word of one simple command and how the command uses it (as spelt, not normalised)."""
    used: dict[str, set[str]] = {}
    words = strip_prefix(simple.words)

    def add(path: str, access: str) -> None:
        if path not in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin") and not path.startswith("&"):
            used.setdefault(path, set()).add(access)

    if words:
        program, args = words[0], words[1:]
        if looks_like_path(program) and "/" in program:
            add(program, "execute")
        after_flag = {i + 1 for i, w in enumerate(args[:-1]) if w in OUTPUT_FLAGS}
        for path in _paths([args[i] for i in sorted(after_flag)] + [w.split("=", 1)[1] for w in args
                                                                    if w.startswith(("--output=", "--out="))]):
            add(path, "write")
        plain = [w for i, w in enumerate(args) if i not in after_flag]
        if program in IN_PLACE and "-e" not in args:  # ``sed -i 's/a/b/' f``: the first word is the script
            plain = _without_script(plain)
        paths = _paths(plain)
        for i, path in enumerate(paths):
            if program in DELETERS:
                add(path, "delete")
            elif program in WRITERS or (program in COPIERS and i == len(paths) - 1 and len(paths) > 1):
                add(path, "write")
            elif program in INTERPRETERS and i > 0:  # the script's own arguments: any use
                add(path, "all")
            else:
                add(path, "read")
                if program in IN_PLACE and any(a.startswith("-i") or a == "--in-place" for a in args):
                    add(path, "write")
    for redirect in simple.redirects:
        if not PLACEHOLDER.search(redirect.target):
            add(redirect.target, "write" if _WRITE_OPS.match(redirect.op) else "read")
    for path in simple.reads:
        if not PLACEHOLDER.search(path):
            add(path, "read")
    return used


def command_accesses(command: str) -> dict[str, set[str]]:
    """Every path a shell command names (as spelt) and the accesses it makes to it."""
    try:
        script = parse(command, partial=True)
    except ParseError:  # partial reading never raises; kept so a grammar change cannot break the blame
        return {}
    used: dict[str, set[str]] = {}
    for simple in script.commands:
        for path, accesses in _simple_accesses(simple).items():
            used.setdefault(path, set()).update(accesses)
    for inner in script.substitutions:
        for path, accesses in command_accesses(inner).items():
            used.setdefault(path, set()).update(accesses)
    return used


def call_accesses(tool: str, value: str, workspace: str | Path) -> dict[str, frozenset[str]]:
    """The normalised targets of one call and how it uses each (``all`` when it cannot tell: a query)."""
    value = (value or "").strip()
    if not value:
        return {}
    if tool in PATH_TOOLS:
        return {normalise(value, workspace): frozenset({"write" if tool == "write_file" else "read"})}
    if tool != "shell":
        return {value: frozenset({"all"})}  # search and locate: the query itself
    merged: dict[str, set[str]] = {}
    for path, accesses in command_accesses(value).items():
        merged.setdefault(normalise(path, workspace), set()).update(accesses)
    return {path: frozenset(accesses) for path, accesses in merged.items()}


def access_blocked(blocked: Iterable[str], used: Iterable[str]) -> bool:
    """True when a target blocked for ``blocked`` accesses may not be used the ``used`` ways."""
    blocked, used = set(blocked), set(used)
    if not blocked or not used:
        return False
    return "all" in blocked or "all" in used or bool(blocked & used)


def _normalised(target: str, workspace: str | Path) -> str:
    return normalise(target, workspace) if looks_like_path(target) else target.strip()


def blocked_by_target(items: Iterable[BlockedTarget | str], workspace: str | Path) -> dict[str, set[str]]:
    """Normalised target → the accesses blocked (a bare string, from before accesses were told apart: every access)."""
    found: dict[str, set[str]] = {}
    for item in map(BlockedTarget.of, items):
        if item.target.strip():
            found.setdefault(_normalised(item.target, workspace), set()).add(item.access)
    return found


def pairs_by_access(pairs: Iterable[tuple[str, ...]], workspace: str | Path) -> set[tuple[str, str, str]]:
    """Memory's (tool, target[, access]) pairs, normalised; a pair without an access is every access."""
    return {(pair[0], _normalised(pair[1], workspace), pair[2] if len(pair) > 2 else "all")
            for pair in pairs if pair[0] and pair[1] and pair[1].strip()}


def refusal(tool: str, value: str, used: dict[str, frozenset[str]], blocked_targets: dict[str, set[str]],
            blocked_pairs: Iterable[tuple[str, str, str]]) -> tuple[str, str] | None:
    """Why the call ``tool(value)``, using its targets ``used`` ways, is refused, and the failure class (None:
    it may run).

    Exact normalised targets, never a substring; and only the access that failed: a file whose write was
    refused may still be read, so the next round can write a changed copy beside it.
    """
    for target, ways in used.items():
        blocked = blocked_targets.get(target, set())
        if access_blocked(blocked, ways):
            how = "" if "all" in blocked else f" for {'/'.join(sorted(blocked))}"
            other = "" if "all" in blocked else " (other uses of it are fine: read it, write a new file)"
            return (f"{tool} refused: {value!r} involves {target!r}, a target the GGS blocked{how} for this round "
                    f"(it failed before){other}; use a different target", "environmental")
    for pair_tool, target, access in sorted(blocked_pairs):
        if pair_tool == tool and access_blocked({access}, used.get(target, ())):
            how = "" if access == "all" else f" to {access}"
            return (f"{tool} refused: memory says {tool}{how} on {target!r} failed before; use another tool for "
                    "it, or another target", "logical")
    return None


def refused_access(call: ToolCall, target: str) -> Access:
    """Which access of ``call`` to ``target`` failed: its only one, or the one its error line names."""
    used = _used(call, target)
    if "all" in used or not used:
        return "all"
    if len(used) == 1:
        return next(iter(used))  # type: ignore[return-value]
    name = target.rstrip("/").rsplit("/", 1)[-1]
    lines = [ln for ln in (call.output or "").splitlines() if ERRNO_LINE.search(ln) and name and name in ln]
    if any(_REFUSED_WRITE.search(ln) for ln in lines):
        return next((a for a in ("write", "delete", "execute") if a in used), "all")  # type: ignore[return-value]
    if "read" in used and any(_MISSING.search(ln) for ln in lines):
        return "read"
    return "all"


def _used(call: ToolCall, target: str) -> frozenset[str]:
    """How ``call`` used ``target``: by its own word, or by a glob word that reaches it (``logs/*.log``)."""
    accesses = call_accesses(call.tool, call.input or "", call_workspace(call) or "/")
    if target in accesses:
        return accesses[target]
    globbed = [used for word, used in accesses.items() if any(c in word for c in "*?[") and fnmatchcase(target, word)]
    return frozenset().union(*globbed)


def attributed_blocks(outcomes: Iterable[SubTaskOutcome]) -> list[tuple[BlockedTarget, str]]:
    """(blocked target with its access, tool) of every call an environmental failure belongs to, first first."""
    found: dict[tuple[str, str], str] = {}
    for outcome in outcomes:
        for call in attributed_calls(outcome):
            for target in blamed_targets(call):
                found.setdefault((target, refused_access(call, target)), call.tool)
    return [(BlockedTarget(target=t, access=a), tool) for (t, a), tool in found.items()]
