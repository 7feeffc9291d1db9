"""Traversal noise: what a command that walks a tree could not read is no failed target.

Why: ``find / -name '*.conf'``, ``grep -r TODO ~``, ``du -sh /var/*`` and ``ls -R /etc`` print
their results and, beside them, lines such as ``find: '/proc/1/task/1/fd': Permission denied``,
then exit 1.  A person reads those lines as "some places could not be read on the way", not
as "this target failed".  Blaming every path they name blocked dozens of system paths, crowded
the planner's prompt, wrote a Megram against each, and refused the next round's ``find … -prune``
of the very folder it could not read.  So a line is noise when the walking program wrote it,
says the place could not be read (or, under /proc, vanished while walking), and names a path strictly
*inside* a root the command was asked to walk.  A root that is itself unreadable (``find /root
-name x`` → ``find: '/root': Permission denied``) is no noise: that target failed.  What the
noise said survives as one short note per walk ("find skipped 37 unreadable paths under /").

Everything here is pure: paths are compared lexically (a walk's roots and its error lines are
both relative to the same folder), never looked up on disk.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from artoo.tasks.blame.error_lines import error_paths
from artoo.tasks.shell.parse import PLACEHOLDER, ParseError, parse, strip_prefix

NOISE_ERRNOS = re.compile(r"Permission denied|Operation not permitted|Too many levels of symbolic links")
"""What a walk meets on the way: an unreadable folder, a symlink loop."""
_VANISHED = re.compile(r"No such file or directory")
"""Under /proc a process that ended while the walk passed (elsewhere a vanished path is the command's own doing:
``find … -exec rm -r {} ;`` then descending into what it removed, which artoo.tasks.blame.failure blames)."""
WALKERS = frozenset({"find", "grep", "egrep", "fgrep", "rg", "du", "ls"})
"""Programs that read a tree (grep and ls only with their recursive flag; rg, du and find always)."""
_WRAPPERS = frozenset({"sudo", "nice", "time", "command", "nohup"})
_GREP_ARG = frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--regexp", "--file", "--include",
                       "--exclude", "--exclude-dir", "-g", "--glob", "-t", "--type", "-T", "--type-not"})
"""grep/rg options that take the next word as their value."""
_DU_ARG = frozenset({"-d", "-B", "-t", "-X", "--exclude"})
_FIND_START = re.compile(r"^(?:-|\(|\)|!|,)")
_GLOB = re.compile(r"[*?\[]")
_CWD = "/\x00cwd"
"""Anchor for relative paths when the command's folder is unknown: both sides are relative to it."""


@dataclass
class Walk:
    """One walking command of a shell line: its program and the roots it was asked to walk."""

    program: str
    roots: list[str]
    """As the command spells them (a glob's folder for ``/var/*``); ``.`` when none was named."""
    skipped: list[str] = field(default_factory=list)
    """The paths inside a root its error lines said it could not read."""


def _recursive(program: str, flags: list[str]) -> bool:
    """find, rg and du always walk; grep with -r/-R, ls with -R."""
    if program in ("find", "rg", "du"):
        return True
    letters = "R" if program == "ls" else "rR"
    longs = {"--recursive"} if program == "ls" else {"--recursive", "--dereference-recursive"}
    return any(f in longs or (not f.startswith("--") and any(c in f[1:] for c in letters)) for f in flags)


def _operands(program: str, args: list[str]) -> tuple[list[str], list[str]]:
    """(flags, operands) of one walking command; grep's and rg's pattern is no operand."""
    if program == "find":
        i = 0
        while i < len(args) and args[i] in ("-H", "-L", "-P"):
            i += 1
        roots = []
        while i < len(args) and not _FIND_START.match(args[i]):
            roots.append(args[i])
            i += 1
        return [], roots
    takes = _GREP_ARG if program in ("grep", "egrep", "fgrep", "rg") else _DU_ARG if program == "du" else set()
    flags, words, skip = [], [], False
    for word in args:
        if skip:
            skip = False
        elif word.startswith("-") and word != "-":
            flags.append(word)
            skip = word in takes
        else:
            words.append(word)
    patterned = program in ("grep", "egrep", "fgrep", "rg")
    if patterned and not any(f.split("=")[0] in ("-e", "-f", "--regexp", "--file") for f in flags):
        words = words[1:]  # the first word is the pattern
    return flags, words


def walks(command: str) -> list[Walk]:
    """The walking commands of a shell line, in order (none when the grammar cannot read it)."""
    try:
        script = parse(command, partial=True)
    except ParseError:  # partial reading never raises; kept so a grammar change cannot break attribution
        return []
    found = []
    for simple in script.commands:
        words = strip_prefix(simple.words)
        while words and words[0] in _WRAPPERS:
            words = words[1:]
        program = os.path.basename(words[0]) if words else ""
        if program not in WALKERS:
            continue
        flags, roots = _operands(program, words[1:])
        if not _recursive(program, flags) or any(PLACEHOLDER.search(r) for r in roots):
            continue
        found.append(Walk(program, [_glob_folder(r) for r in roots] or ["."]))
    return found


def _glob_folder(root: str) -> str:
    """``/var/*`` walks what /var holds: its root is the folder before the first wildcard."""
    if not _GLOB.search(root):
        return root
    parts = root.split("/")
    head = parts[: next(i for i, p in enumerate(parts) if _GLOB.search(p))]
    return "/".join(head) or ("/" if root.startswith("/") else ".")


def _place(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def _strictly_inside(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip("/") + "/")


def split_noise(command: str, output: str, cwd: str | None = None) -> tuple[str, list[Walk]]:
    """``output`` without its traversal noise, and the walks with what each skipped.

    A line is noise when it starts with a walking program's name, carries a read errno, and
    every path it names lies strictly inside one of that program's roots.  ``cwd`` anchors
    relative paths (any folder will do when unknown: roots and errors share it).
    """
    found = walks(command)
    if not found or not output:
        return output, found
    anchor = cwd or _CWD
    kept = []
    for line in output.splitlines():
        walk = _noise_of(line, found, anchor)
        if walk is None:
            kept.append(line)
    return "\n".join(kept), found


def _noise_of(line: str, found: list[Walk], anchor: str) -> Walk | None:
    """The walk ``line`` is noise of, or None when it is a line to keep."""
    vanished = NOISE_ERRNOS.search(line) is None
    if vanished and _VANISHED.search(line) is None:
        return None
    for walk in found:
        if not re.match(rf"(?:\S*/)?{re.escape(walk.program)}: ", line):
            continue
        paths = [p.path for p in error_paths(line)]
        roots = [_place(r, anchor) for r in walk.roots]
        placed = [_place(p, anchor) for p in paths]
        if vanished and not all(p.startswith("/proc/") for p in placed):
            return None
        if placed and all(any(_strictly_inside(p, r) for r in roots) for p in placed):
            walk.skipped += paths
            return walk
    return None


def walk_notes(command: str, output: str, cwd: str | None = None) -> list[str]:
    """One short note per walk that skipped something: ``find skipped 37 unreadable paths under /``."""
    _, found = split_noise(command, output, cwd)
    notes = []
    for walk in found:
        n = len(dict.fromkeys(walk.skipped))
        if n:
            where = ", ".join(_place(r, cwd) if cwd else r for r in walk.roots)
            notes.append(f"{walk.program} skipped {n} unreadable path{'s' if n > 1 else ''} under {where}")
    return notes
