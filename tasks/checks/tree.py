"""A folder's state and what changed in it: snapshots, change sets and their comparison.

Why: a reference run is judged by what it changed, as InterCode scores a command by its gold
command's effect, so both runs' effects must be the same kind of typed record.  A snapshot is a
plain copy of the folder taken before the work (a copy, not hard links: a commit rewrites files in
place); a change set is the difference between two states, path by path, with each file's size, hash
and head; ``compare`` says whether two change sets agree, and if not, whether they differ in which
paths changed (a plain fail) or only in what a file holds (a question for a check or a judge).
Pure apart from reading and copying directories.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Comparison", "Entry", "PathChange", "TooLarge", "changes", "compare", "copy_tree", "side_by_side",
           "state"]

HEAD_CHARS = 400
"""Characters of a changed file's text kept in its record (what a judge and a correction are shown)."""
_TOKEN = re.compile(r"[^\s,;:|()\[\]{}\"'`]+")
"""A word, number or path of a file's text: what stays when only its layout changes."""
HASH_LIMIT = 16 * 1024 * 1024
"""Files larger than this are compared by size and modification time only, never read whole."""

Node = Literal["file", "dir", "link", "other"]


class TooLarge(Exception):
    """The folder is too large to snapshot within the configured bounds."""


@dataclass(frozen=True)
class Entry:
    """One path's state: its kind, and for a file its size, content hash and text head."""

    node: Node
    size: int = 0
    digest: str = ""
    head: str = ""
    loose: str = ""
    """The hash of the text with its whitespace runs folded: two files that differ only in spacing match."""
    tokens: str = ""
    """The hash of the text's words and numbers, sorted: two files that differ only in order or layout match."""
    target: str = ""
    """A symlink's target."""


class PathChange(BaseModel):
    """One path a run changed, relative to the folder (the typed record both runs are compared by)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    change: Literal["created", "modified", "deleted"]
    node: Node = "file"
    """What the path is after the change (before it, for a deletion)."""
    size: int = 0
    digest: str = ""
    head: str = ""
    """The start of the file's text after the change (empty for a deletion, a directory or binary data)."""
    loose: str = ""
    """The hash of its text with whitespace folded (empty for binary data)."""
    tokens: str = ""
    """The hash of its words and numbers, sorted (empty for binary data)."""

    def line(self) -> str:
        """``created backup/a.csv (12 bytes)``: how a change reads in evidence."""
        what = f"{self.node} " if self.node != "file" else ""
        size = f" ({self.size} bytes)" if self.node == "file" and self.change != "deleted" else ""
        return f"{self.change} {what}{self.path}{size}"


def _entry(path: str, info: os.stat_result) -> Entry:
    if stat.S_ISLNK(info.st_mode):
        return Entry("link", target=os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return Entry("dir")
    if not stat.S_ISREG(info.st_mode):
        return Entry("other")
    if info.st_size > HASH_LIMIT:
        return Entry("file", info.st_size, f"size:{info.st_size}:mtime:{info.st_mtime_ns}")
    with open(path, "rb") as handle:
        data = handle.read()
    if b"\x00" in data[:8192]:
        return Entry("file", info.st_size, hashlib.sha256(data).hexdigest())
    text = data.decode("utf-8", "replace")
    loose = hashlib.sha256(_norm(text).encode()).hexdigest()
    tokens = hashlib.sha256("\n".join(sorted(_TOKEN.findall(text))).encode()).hexdigest()
    return Entry("file", info.st_size, hashlib.sha256(data).hexdigest(), text[:HEAD_CHARS], loose, tokens)


def state(root: Path, max_files: int | None = None, hidden: tuple[str, ...] = ()) -> dict[str, Entry]:
    """Every path under ``root`` (relative, ``/``-separated) with its state; ``hidden`` names are skipped."""
    found: dict[str, Entry] = {}
    base = os.path.realpath(root)
    if not os.path.isdir(base):
        return found
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in hidden)
        for name in [*dirs, *sorted(files)]:
            if name in hidden:
                continue
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                rel = os.path.relpath(path, base).replace(os.sep, "/")
                found[rel] = _entry(path, info)
            except OSError:
                continue
            if max_files is not None and len(found) > max_files:
                raise TooLarge(f"{root} holds more than {max_files} entries")
    return found


def changes(before: dict[str, Entry], after: dict[str, Entry]) -> list[PathChange]:
    """What turned ``before`` into ``after``, path by path, in path order (a directory's mere listing is no change)."""
    out = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None:
            out.append(PathChange(path=path, change="deleted", node=old.node))
        elif old is None:
            out.append(PathChange(path=path, change="created", node=new.node, size=new.size, digest=new.digest,
                                  head=new.head, loose=new.loose, tokens=new.tokens))
        elif old.node == "dir" and new.node == "dir":
            continue
        else:
            out.append(PathChange(path=path, change="modified", node=new.node, size=new.size, digest=new.digest,
                                  head=new.head, loose=new.loose, tokens=new.tokens))
    return out


def copy_tree(source: Path, target: Path, max_bytes: int, max_files: int) -> None:
    """Copy ``source`` to ``target`` (which must not exist) with modes and times; ``TooLarge`` past the bounds."""
    total, count = 0, 0
    for folder, dirs, files in os.walk(source):
        count += len(dirs) + len(files)
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
        if count > max_files or total > max_bytes:
            raise TooLarge(f"{source} is larger than {max_bytes // (1024 * 1024)} MB or {max_files} entries")
    shutil.copytree(source, target, symlinks=True, copy_function=shutil.copy2)


def _norm(text: str) -> str:
    """A file's text with its whitespace runs folded and its ends trimmed (formatting aside)."""
    return " ".join(text.split())


class Comparison(BaseModel):
    """How the executor's change set stands against a reference run's."""

    model_config = ConfigDict(extra="forbid")

    outcome: Literal["agree", "paths", "values", "layout"]
    """agree: same paths, kinds and contents (whitespace aside); paths: a path or kind differs; values: a file
    holds other words or numbers than the reference's; layout: the same words and numbers in another order or
    arrangement (the one difference a judge is asked about)."""
    missing: list[PathChange] = Field(default_factory=list)
    """What the reference changed that the executor did not (or changed otherwise in kind)."""
    unwanted: list[PathChange] = Field(default_factory=list)
    """What the executor changed and the reference left alone: a file that existed before, or a new path inside a
    folder the reference wrote into (an extra file among the deliverables)."""
    extra: list[PathChange] = Field(default_factory=list)
    """New paths only the executor created, outside every folder the reference wrote into (noted: a scratch file
    beside the deliverables is no fail by itself)."""
    differing: list[tuple[PathChange, PathChange]] = Field(default_factory=list)
    """(reference, executor) pairs of one path whose contents differ."""
    values: list[str] = Field(default_factory=list)
    """The differing paths whose words or numbers differ (not only their layout)."""


def compare(reference: list[PathChange], executor: list[PathChange], scope: set[str] | None = None) -> Comparison:
    """The executor's changes against the reference's.  ``scope`` limits the comparison to those paths (a
    criterion's check compares only what it wrote); None compares whole change sets."""
    ref = {c.path: c for c in reference}
    exe = {c.path: c for c in executor if scope is None or c.path in scope}
    missing, unwanted, extra, differing, values = [], [], [], [], []
    for path, want in ref.items():
        got = exe.get(path)
        if got is None or got.change != want.change or got.node != want.node:
            missing.append(want)
        elif want.node == "file" and want.change != "deleted" and not _same_text(want, got):
            differing.append((want, got))
            if not (want.tokens and want.tokens == got.tokens):
                values.append(path)
    made = {os.path.dirname(c.path) for c in reference if c.change != "deleted"} - {""}
    made |= {c.path for c in reference if c.node == "dir" and c.change == "created"}
    for path, got in exe.items():
        if path in ref:
            continue
        inside = os.path.dirname(path) in made
        (extra if got.change == "created" and not inside else unwanted).append(got)
    outcome = "paths" if missing or unwanted else "values" if values else "layout" if differing else "agree"
    return Comparison(outcome=outcome, missing=missing, unwanted=unwanted, extra=extra, differing=differing,
                      values=values)


def _same_text(a: PathChange, b: PathChange) -> bool:
    """Whether two files hold the same bytes, or the same text apart from whitespace."""
    return a.digest == b.digest or bool(a.loose) and a.loose == b.loose


def side_by_side(comparison: Comparison, limit: int = 1500, reveal: bool = True) -> str:
    """Both change sets where they differ, in words a judge (``reveal``) or a correction can use.

    A correction is not shown what the reference run wrote into a file (``reveal`` off), not even how much, only
    that it differs: an executor shown the reference's text, or its size, would copy it (one told the reference
    wrote 0 lines wrote an empty file), and an agreement between two runs is evidence only while they stay
    independent."""
    lines = []
    if comparison.missing:
        lines.append("The reference run made these changes, which your run did not make:")
        lines += [f"  - {c.line()}" for c in comparison.missing]
    if comparison.unwanted:
        lines.append("Your run made these changes, which the reference run did not make:")
        lines += [f"  - {c.line()}" for c in comparison.unwanted]
    for want, got in comparison.differing:
        if reveal:
            lines.append(f"{want.path} differs. The reference run wrote:\n{_block(want.head)}\nYour run wrote:\n"
                         f"{_block(got.head)}")
        else:
            lines.append(f"{want.path} differs from what an independent run of the request wrote there. "
                         f"Your run wrote:\n{_block(got.head)}")
    if comparison.extra:
        lines.append("Only your run created: " + ", ".join(c.path for c in comparison.extra[:10]))
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _block(text: str) -> str:
    return "\n".join(f"    | {line}" for line in (text.rstrip("\n") or "(empty)").split("\n")[:20])
