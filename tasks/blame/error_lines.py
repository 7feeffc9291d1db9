"""What a failed command's error lines say about its paths: which path failed, and how.

Why: when a command with several paths fails, the GGS must block the path that failed and
leave its neighbours usable.  ``cp notes.txt backup/notes.txt`` failing with "cannot create
regular file 'backup/notes.txt'" says nothing against the user's ``notes.txt``; ``python3
analyze.py data.csv`` failing with "[Errno 2] ... 'data.csv'" says nothing against the
script.  The failure model is pure (no file system), so the error's own words are the
evidence, read the way coreutils, bash, dash, find, tar, sed, sort and Python write them.

And a write whose *folder* is missing (``echo x > reports/r.md`` → "No such file or
directory"; ``mv a.log archive/`` → "cannot move 'a.log' to 'archive/': Not a directory",
GNU's wording when ``archive/`` does not exist) is not a failed target at all: the fix is to
create the folder and write the same path, often the very deliverable the user asked for.
Blocking it would make the task impossible, so such a path is marked ``missing_parent``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

ERRNO_TEXTS: tuple[str, ...] = (
    "No such file or directory", "Permission denied", "Not a directory", "Is a directory",
    "Read-only file system", "File exists", "Directory not empty", "No space left on device",
    "Operation not permitted", "Disk quota exceeded", "File name too long", "Directory nonexistent",
    "Too many levels of symbolic links", "No such file",
)
"""strerror texts (and dash's "Directory nonexistent" and "No such file"): a line carrying one is an error line."""
ERRNO_LINE = re.compile("|".join(re.escape(t) for t in ERRNO_TEXTS))
"""Finds an errno text in a line: such a line is an error line."""
_MISSING = ("No such file or directory", "Directory nonexistent", "No such file")
_QUOTED = re.compile(r"['‘`\"]([^'’`\"\n]+)['’`\"]")
_CONTRACTION = re.compile(r"(?<=[A-Za-z])'(?=[a-z])")  # can't, doesn't: not a quote
_MOVED_TO = re.compile(r"cannot (?:move|copy|rename|overwrite)\b.*? to ['‘`\"]([^'’`\"\n]+)['’`\"]")
_CREATES = re.compile(r"\b(?:cannot (?:create|touch|overwrite)|failed to create)\b|^(?:mv|cp|ln|install): target ")
"""Wordings of a failed write: the named path was to be made (cp, mkdir, touch, ln, dash's ``>``; the
folder several files were moved or copied into: ``mv: target 'archive/': No such file or directory``)."""
_VERB_PREFIX = re.compile(r"^(?:cannot|failed to|couldnt)(?: (?:create|read|open|access|stat|remove|write|touch|make|"
                          r"directory|regular|file|symbolic|hard|link|temporary))+ ")
"""The verb before a path (sed's ``couldn't open temporary file X``: its own temp file beside the input)."""
_LINE_NO = re.compile(r"^(?:line )?\d+$")
_ERRNO_2 = re.compile(r"\[Errno 2\]")
"""Python's (and its libraries') wording of a missing path, for reads and writes alike."""
_CD = re.compile(r"(?:^|: )cd: ")
"""bash's word for a folder ``cd`` could not enter: ``bash: line 1: cd: reports: No such file or directory``."""


_MISSING_SCRIPT = re.compile(r"^Error: Cannot find module '(/[^'\n]+)'|^(?:\S+: )?\d+: Can't open (\S+)$"
                             r"|No such file or directory -- (\S+) \(LoadError\)")
"""Interpreters that could not find the script they were given, in words without (or around) an errno:
node (its main module, always absolute), old dash (``sh: 0: Can't open x.sh``), ruby (``-- x.rb (LoadError)``)."""
_MISSING_PACKAGE = re.compile(r"\bNo module named\b|^Error: Cannot find module '(?![/.~])", re.MULTILINE)
"""A program that started but lacks a package (``ModuleNotFoundError: No module named 'pandas'``, node's
``Cannot find module 'lodash'``, ``python3 -m tools.x`` with no such module): its paths did nothing wrong."""


def missing_package(output: str) -> bool:
    """True when ``output`` says a package or module (not a file the command named) is missing."""
    return _MISSING_PACKAGE.search(output) is not None


@dataclass(frozen=True)
class ErrorPath:
    """One path an error line names."""

    path: str
    """As the error wrote it (relative ones are relative to the command's directory)."""
    missing_parent: bool
    """A write that failed because the path's folder does not exist: the path itself is usable."""
    opened: bool = False
    """A missing path an interpreter could not open (``[Errno 2]``): an input that is not there, or an
    output into a missing folder; its words cannot say which."""


def error_paths(output: str, written: Collection[str] = ()) -> list[ErrorPath]:
    """The paths ``output``'s error lines name, first seen first.

    ``written`` are the paths the command writes as its words spell them (redirection
    targets, ``tee`` files): bash reports a failed ``> out/r.md`` as ``out/r.md: No such file
    or directory``, exactly as it reports a missing input, so only the command tells them apart.
    A folder ``cd`` could not enter is where a command that writes anything would have written.
    """
    found: dict[str, ErrorPath] = {}
    for line in output.splitlines():
        script = _MISSING_SCRIPT.search(line)
        if script is not None:  # the script an interpreter was given is not there: that path failed
            path = next(g for g in script.groups() if g)
            found.setdefault(path, ErrorPath(path, missing_parent=False))
            continue
        errno = ERRNO_LINE.search(line)
        if errno is None:
            continue
        line = _CONTRACTION.sub("", line.replace("can't", "cannot"))
        paths, creates = _line_paths(line)
        entered = bool(written) and _CD.search(line) is not None  # ``cd reports && … > summary.md``
        for path in paths:
            written_here = creates or entered or path in written or line.startswith("tee: ")
            missing = errno.group(0) in _MISSING or (creates and _into_missing_folder(path, errno.group(0)))
            entry = ErrorPath(path, missing_parent=written_here and missing,
                              opened=not written_here and _ERRNO_2.search(line) is not None)
            found.setdefault(path, entry)
    return list(found.values())


def _into_missing_folder(path: str, errno: str) -> bool:
    """``mv a archive/`` / ``cp a archive/`` into a folder that is not there: "'archive/': Not a directory"."""
    return path.endswith("/") and errno == "Not a directory"


def _line_paths(line: str) -> tuple[list[str], bool]:
    """The paths one error line names, and whether its wording says they were being created."""
    moved = _MOVED_TO.search(line)
    if moved:  # "cannot move 'a' to 'b'": a missing source is reported as "cannot stat 'a'", so b failed
        return [moved.group(1)], True
    creates = _CREATES.search(line) is not None
    quoted = [q for q in _QUOTED.findall(line) if q.strip() and not ERRNO_LINE.search(q)]
    if quoted:
        return quoted, creates
    fields = line.split(": ")
    for i in range(2, len(fields)):  # "prog: [line N: ][verb ]PATH: [Cannot open: ]ERRNO"
        if ERRNO_LINE.match(fields[i]) or fields[i].startswith("Cannot "):
            candidate = _VERB_PREFIX.sub("", fields[i - 1].strip())
            if _LINE_NO.match(candidate) or candidate.startswith("Cannot "):
                return [], creates
            return [candidate], creates
    return [], creates
