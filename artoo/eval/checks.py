"""End-state checks of the everyday suite: what the folder must hold once a request is done.

Each check is a small typed object written by us with its task, never by a model.  ``problems(root, layout)``
reads the final folder (``layout`` is the folder as it was laid out, for checks that compare with an
original file) and says in words what is wrong; no words means the check passes.  The checks tolerate
formatting that no request fixes (a trailing newline, spaces at a line's end, blank lines, ``./`` before a
name, the order of lines where the request names none) and nothing else.
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Layout = Mapping[str, str]
"""A folder as laid out: relative path → text content; a path ending in ``/`` is an empty folder."""

NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.]*\w)")
"""A whole number standing alone (not part of a name such as ``app1.log`` or ``v2``)."""
SHOWN = 6
"""Lines quoted in a problem, at most."""


def read_text(root: Path, path: str) -> tuple[str | None, str | None]:
    """(the file's text, None) or (None, why it cannot be read as a file)."""
    target = root / path
    if not os.path.lexists(target):
        return None, f"{path} is missing"
    if target.is_symlink() or not target.is_file():
        return None, f"{path} is {'a folder' if target.is_dir() else 'not a regular file'}, not a file"
    return target.read_bytes().decode("utf-8", "replace"), None


def content_lines(text: str) -> list[str]:
    """The non-blank lines, each stripped of spaces at both ends."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def as_name(line: str) -> str:
    """A listed path reduced to its file name: ``./logs/web.log`` and ``/x/logs/web.log`` are ``web.log``."""
    return line.strip().rstrip("/").rsplit("/", 1)[-1]


def numbers(text: str) -> list[int]:
    """The whole numbers written in ``text``, in order."""
    return [int(n) for n in NUMBER.findall(text)]


def _shown(lines: list[str]) -> str:
    more = f" … (+{len(lines) - SHOWN})" if len(lines) > SHOWN else ""
    return "[" + ", ".join(repr(line) for line in lines[:SHOWN]) + more + "]"


@dataclass(frozen=True)
class Lines:
    """A file whose non-blank lines are exactly ``expected``: in this order when ``ordered``, else in any order
    (each as often as listed); ``names``: each line is compared by its file name only; ``head``: a first line
    that must come before the rest (a CSV header)."""

    path: str
    expected: tuple[str, ...]
    ordered: bool = False
    names: bool = False
    head: str | None = None

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        got = content_lines(text)
        if self.head is not None:
            if not got or got[0] != self.head:
                return [f"{self.path} must start with the line {self.head!r}, got {_shown(got[:1])}"]
            got = got[1:]
        if self.names:
            got = [as_name(line) for line in got]
        want = list(self.expected)
        same = got == want if self.ordered else sorted(got) == sorted(want)
        if same:
            return []
        order = "in this order" if self.ordered else "in any order"
        return [f"{self.path} should hold {_shown(want)} ({order}), got {_shown(got)}"]


@dataclass(frozen=True)
class Text:
    """A file with exactly this text, but for spaces at line ends and blank lines at the end."""

    path: str
    expected: str

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]

        def norm(value: str) -> list[str]:
            return [line.rstrip() for line in value.rstrip().splitlines()]

        if norm(text) == norm(self.expected):
            return []
        changed = [f"{i + 1}: {line!r}" for i, line in enumerate(norm(text))
                   if i >= len(norm(self.expected)) or line != norm(self.expected)[i]]
        return [f"{self.path} differs from what was asked, first differing lines {_shown(changed)}"]


@dataclass(frozen=True)
class Number:
    """A file holding one number, ``expected``, and no other (words around it are fine)."""

    path: str
    expected: int

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        found = numbers(text)
        if found == [self.expected]:
            return []
        return [f"{self.path} should hold the number {self.expected} alone, found {found or 'no number'}"]


@dataclass(frozen=True)
class SameAs:
    """A file with the same bytes as ``source`` had when the folder was laid out (a copy or a move)."""

    path: str
    source: str

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        if (root / self.path).read_bytes() == layout[self.source].encode("utf-8"):
            return []
        return [f"{self.path} is not a copy of the original {self.source}"]


@dataclass(frozen=True)
class Folder:
    """A folder (not a file) whose entries, when given, are exactly these names."""

    path: str
    entries: frozenset[str] | None = None

    def problems(self, root: Path, layout: Layout) -> list[str]:
        target = root / self.path
        if not os.path.lexists(target):
            return [f"the folder {self.path} is missing"]
        if target.is_symlink() or not target.is_dir():
            return [f"{self.path} is a file, not a folder"]
        if self.entries is None:
            return []
        got = sorted(os.listdir(target))
        if set(got) == self.entries:
            return []
        return [f"{self.path} should hold exactly {sorted(self.entries)}, holds {got}"]


@dataclass(frozen=True)
class Gone:
    """A path that must no longer exist (moved away or deleted)."""

    path: str

    def problems(self, root: Path, layout: Layout) -> list[str]:
        return [f"{self.path} is still there"] if os.path.lexists(root / self.path) else []


@dataclass(frozen=True)
class NoneNamed:
    """No file or folder anywhere in the folder has a name matching ``pattern``."""

    pattern: str

    def problems(self, root: Path, layout: Layout) -> list[str]:
        left = sorted(str((Path(here) / name).relative_to(root)) for here, dirs, files in os.walk(root)
                      for name in dirs + files if fnmatch.fnmatchcase(name, self.pattern))
        return [f"still there, named {self.pattern}: {_shown(left)}"] if left else []


@dataclass(frozen=True)
class Empty:
    """A file that exists and holds nothing (whitespace at most)."""

    path: str

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        return [] if not text.strip() else [f"{self.path} should be empty, holds {_shown(content_lines(text))}"]


@dataclass(frozen=True)
class Ini:
    """An INI file whose sections and keys hold exactly these values (spacing around ``=`` is free)."""

    path: str
    expected: Mapping[str, Mapping[str, str]]

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        parser = configparser.ConfigParser(interpolation=None, strict=True)
        try:
            parser.read_string(text)
        except configparser.Error as exc:
            return [f"{self.path} is no longer a valid INI file: {' '.join(str(exc).split())[:200]}"]
        got = {section: dict(parser[section]) for section in parser.sections()}
        want = {section: dict(values) for section, values in self.expected.items()}
        return [] if got == want else [f"{self.path} holds {got}, should hold {want}"]


@dataclass(frozen=True)
class Json:
    """A JSON file whose value equals ``expected`` (any layout, key order free)."""

    path: str
    expected: Any

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        try:
            value = json.loads(text)
        except ValueError as exc:
            return [f"{self.path} is no longer valid JSON: {exc}"]
        return [] if value == self.expected else [f"{self.path} holds {value!r}, should hold {self.expected!r}"]


@dataclass(frozen=True)
class KeyValues:
    """A ``KEY=value`` file (``.env``) with exactly these keys and values, each key once."""

    path: str
    expected: Mapping[str, str]

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        pairs = [line.split("=", 1) for line in content_lines(text) if not line.startswith("#")]
        keys = [pair[0].strip() for pair in pairs]
        if any(len(pair) != 2 for pair in pairs) or len(set(keys)) != len(keys):
            return [f"{self.path} has a line without '=' or a key set twice: {_shown(content_lines(text))}"]
        got = {pair[0].strip(): pair[1].strip() for pair in pairs}
        return [] if got == dict(self.expected) else [f"{self.path} holds {got}, should hold {dict(self.expected)}"]


@dataclass(frozen=True)
class Mentions:
    """A short report: for each (name, count), some line names it and holds that count as its only number
    (the name's own digits aside); ``only``: no other non-blank line."""

    path: str
    counts: tuple[tuple[str, int], ...]
    only: bool = False

    def problems(self, root: Path, layout: Layout) -> list[str]:
        text, missing = read_text(root, self.path)
        if text is None:
            return [missing]
        lines = content_lines(text)
        out = [f"{self.path} has no line giving {name} with {count} (and no other number)"
               for name, count in self.counts
               if not any(re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", line)
                          and numbers(line.replace(name, " ")) == [count] for line in lines)]
        if self.only and len(lines) != len(self.counts):
            out.append(f"{self.path} should have {len(self.counts)} lines, has {len(lines)}: {_shown(lines)}")
        return out


Check = Lines | Text | Number | SameAs | Folder | Gone | NoneNamed | Empty | Ini | Json | KeyValues | Mentions
"""Every kind of end-state check."""


def untouched_problems(root: Path, layout: Layout, touches: tuple[str, ...]) -> list[str]:
    """Every laid-out file the task may not touch (no ``touches`` pattern matches it) is still there, byte for
    byte, and every laid-out folder is still a folder."""
    out = []
    for path, content in layout.items():
        if any(fnmatch.fnmatchcase(path.rstrip("/"), pattern) for pattern in touches):
            continue
        target = root / path
        if path.endswith("/"):
            if not target.is_dir():
                out.append(f"the folder {path} was removed")
        elif not os.path.lexists(target):
            out.append(f"{path} was removed")
        elif target.is_symlink() or not target.is_file() or target.read_bytes() != content.encode("utf-8"):
            out.append(f"{path} was changed")
    return out
