"""A folder's state and what changed in it: snapshots, change sets and their comparison.

Why: a reference run is judged by what it changed, as InterCode scores a command by its gold
command's effect, so both runs' effects must be the same kind of typed record.  A snapshot is a
plain copy of the folder taken before the work (a copy, not hard links: a commit rewrites files in
place); a change set is the difference between two states, path by path, with each file's size, hash
and head; ``compare`` says whether two change sets agree, and if not, whether they differ in which
paths changed (a plain fail) or only in what a file holds (a question for a check or a judge).  A record
holds a path's permission bits (``chmod +x`` is a change), and an archive's content is its members (names,
kinds, sizes, hashes), not its bytes: two runs that pack the same files at different times made the same archive.
Pure apart from reading and copying directories.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Comparison", "Entry", "PathChange", "TooLarge", "changes", "compare", "copy_tree", "side_by_side",
           "state"]

HEAD_CHARS = 400
"""Characters of a changed file's text kept in its record (what a judge and a correction are shown)."""
_TOKEN = re.compile(r"[^\s,;:|()\[\]{}]+")
"""A word, number or path of a file's text: what stays when only its layout changes.  Quotes stay part of a word:
``"ann@example.com"`` is a JSON string literal, ``ann@example.com`` an address, and a file of the one is not the
other in another layout."""
HASH_LIMIT = 16 * 1024 * 1024
"""Files larger than this are compared by size and modification time only, never read whole; nor is more than
this of an archive's decompressed data read (an archive that holds more is compared by its bytes)."""
_TARS = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
"""Names of tar archives, plain or compressed (the compression is told by the data's first bytes, not the name)."""
_CHUNK = 1024 * 1024

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
    mode: int | None = None
    """All permission bits (``stat.S_IMODE``), not only execute: ``chmod 600 key`` is a request as much as ``chmod
    +x``, and both runs' new files take one umask; None for a link, whose own bits mean nothing."""


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
    """The start of the file's text after the change (empty for a deletion, a directory or binary data); of an
    archive, its members' names, of a ``.gz`` file, its decompressed text."""
    loose: str = ""
    """The hash of its text with whitespace folded (empty for binary data)."""
    tokens: str = ""
    """The hash of its words and numbers, sorted (empty for binary data); of an archive, its members' base names
    and contents, so the same files packed under another folder differ only in layout."""
    mode: int | None = None
    """The permission bits after the change (``stat.S_IMODE``); None for a deletion, a link, or a record written
    before modes were recorded (such a record agrees with any mode: 0 is a real mode, so it cannot mean unknown)."""
    was_mode: int | None = None
    """The permission bits before a modification, only when the change altered them (``chmod``)."""

    def line(self) -> str:
        """``created backup/a.csv (12 bytes)``, ``modified run.sh (9 bytes, mode 0644→0755)``: a change in evidence."""
        what = f"{self.node} " if self.node != "file" else ""
        notes = [f"{self.size} bytes"] if self.node == "file" and self.change != "deleted" else []
        if self.mode is not None and self.was_mode is not None and self.mode != self.was_mode:
            notes.append(f"mode {self.was_mode:04o}→{self.mode:04o}")
        elif self.mode is not None and self.change == "created" and self.node == "file" and self.mode & 0o111:
            notes.append(f"mode {self.mode:04o}")  # an executable made: a plain new file's mode is only the umask
        return f"{self.change} {what}{self.path}" + (f" ({', '.join(notes)})" if notes else "")


def _entry(path: str, info: os.stat_result) -> Entry:
    if stat.S_ISLNK(info.st_mode):
        return Entry("link", target=os.readlink(path))
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        return Entry("dir", mode=mode)
    if not stat.S_ISREG(info.st_mode):
        return Entry("other", mode=mode)
    if info.st_size > HASH_LIMIT:
        return Entry("file", info.st_size, f"size:{info.st_size}:mtime:{info.st_mtime_ns}", mode=mode)
    with open(path, "rb") as handle:
        data = handle.read()
    digest, head, loose, tokens = _archive(os.path.basename(path), data) or _content(data)
    return Entry("file", info.st_size, digest, head, loose, tokens, mode=mode)


def _content(data: bytes) -> tuple[str, str, str, str]:
    """A file's digest, text head, loose hash and token hash (the last three empty for binary data)."""
    digest = hashlib.sha256(data).hexdigest()
    if b"\x00" in data[:8192]:
        return digest, "", "", ""
    text = data.decode("utf-8", "replace")
    loose = hashlib.sha256(_norm(text).encode()).hexdigest()
    tokens = hashlib.sha256("\n".join(sorted(_TOKEN.findall(text))).encode()).hexdigest()
    return digest, text[:HEAD_CHARS], loose, tokens


class _TooMuch(Exception):
    """An archive holds more decompressed data than HASH_LIMIT."""


_MEMBER_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error,
                  lzma.LZMAError, ValueError, RuntimeError, NotImplementedError, KeyError, _TooMuch)
"""What reading a corrupt, encrypted, unsupported or oversized archive raises: its bytes are compared instead."""


def _archive(name: str, data: bytes) -> tuple[str, str, str, str] | None:
    """An archive's content record from its members (None: not an archive by name, or unreadable, or too large).

    Why: an archive's bytes hold times (member mtimes, the gzip header's), so two right runs that pack the same
    files never match byte for byte; what they packed, member by member, does."""
    lower = name.lower()
    try:
        if lower.endswith(_TARS):
            return _tar_record(_inflate(data))
        if lower.endswith(".zip"):
            return _members_record(_zip_members(data))
        if lower.endswith(".gz") and data[:2] == b"\x1f\x8b":  # else not gzip: its bytes, not the text they hold
            plain = _inflate(data)
            if plain[257:262] == b"ustar":  # ``tar cf - x | gzip > x.gz``: a tar all the same
                return _tar_record(plain)
            return _prefixed("gz:", _content(plain))
    except _MEMBER_ERRORS:
        return None
    return None


def _inflate(data: bytes) -> bytes:
    """``data`` decompressed by what its first bytes say it is (gzip, bzip2, xz; else as it is), at most
    HASH_LIMIT bytes of it (``_TooMuch`` past that: a small file may hold a bomb)."""
    opener = (gzip.GzipFile if data[:2] == b"\x1f\x8b" else bz2.BZ2File if data[:3] == b"BZh"
              else lzma.LZMAFile if data[:6] == b"\xfd7zXZ\x00" else None)
    if opener is None:
        return data
    with opener(fileobj=io.BytesIO(data)) if opener is gzip.GzipFile else opener(io.BytesIO(data)) as stream:
        plain = stream.read(HASH_LIMIT + 1)
    if len(plain) > HASH_LIMIT:
        raise _TooMuch
    return plain


def _prefixed(prefix: str, record: tuple[str, str, str, str]) -> tuple[str, str, str, str]:
    """A decompressed file's record, its hashes marked: the plain text under a ``.gz`` name is not its gzip."""
    digest, head, loose, tokens = record
    return prefix + digest, head, prefix + loose if loose else "", prefix + tokens if tokens else ""


_Member = tuple[str, str, int, str]
"""An archive member: normalised name, kind (file, dir, link, other), size and content hash."""


def _member_name(raw: str) -> str:
    """A member's name as two archivers of the same files agree on it: no leading ``./``, no trailing ``/``."""
    name = raw.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    return "" if name == "." else name.rstrip("/")


def _tar_record(plain: bytes) -> tuple[str, str, str, str]:
    """A tar's record from its members (``plain``: already decompressed, so within HASH_LIMIT by construction)."""
    members: list[_Member] = []
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:") as tar:
        for info in tar:
            name = _member_name(info.name)
            if info.isdir():
                members.append((name, "dir", 0, ""))
            elif info.issym() or info.islnk():
                target = ("sym:" if info.issym() else "hard:") + info.linkname
                members.append((name, "link", 0, hashlib.sha256(target.encode()).hexdigest()))
            elif info.isreg():
                handle = tar.extractfile(info)
                if handle is None:
                    raise tarfile.ReadError(f"no data for {info.name}")
                members.append((name, "file", info.size, _hash_stream(handle, [0])))
            else:
                members.append((name, "other", 0, ""))
    return _members_record(members)


def _zip_members(data: bytes) -> list[_Member]:
    """A zip's members, each decompressed only while the whole stays within HASH_LIMIT (a zip inflates per member)."""
    members: list[_Member] = []
    read = [0]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            name = _member_name(info.filename)
            if info.is_dir():
                members.append((name, "dir", 0, ""))
                continue
            with archive.open(info) as handle:
                digest = _hash_stream(handle, read)
            kind = "link" if stat.S_ISLNK(info.external_attr >> 16) else "file"
            members.append((name, kind, 0 if kind == "link" else info.file_size, digest))
    return members


def _hash_stream(handle: IO[bytes], read: list[int]) -> str:
    """A member's content hash, adding what it read to ``read[0]`` (``_TooMuch`` past HASH_LIMIT in all)."""
    digest = hashlib.sha256()
    while chunk := handle.read(_CHUNK):
        read[0] += len(chunk)
        if read[0] > HASH_LIMIT:
            raise _TooMuch
        digest.update(chunk)
    return digest.hexdigest()


def _members_record(members: list[_Member]) -> tuple[str, str, str, str]:
    """Digest, head, loose and token hash of an archive's members, in name order, times and order aside.

    A folder member that holds other members is left out (``tar czf x.tgz logs`` lists ``logs/``, ``tar czf
    x.tgz logs/*`` does not: the same files either way); an empty folder stays."""
    named = [m for m in members if m[0]]
    parents = {"/".join(m[0].split("/")[:i]) for m in named for i in range(1, m[0].count("/") + 1)}
    kept = sorted(m for m in named if not (m[1] == "dir" and m[0] in parents))
    manifest = "\n".join(f"{kind}\t{size}\t{digest}\t{name}" for name, kind, size, digest in kept)
    layout = "\n".join(sorted(f"{kind}\t{digest}\t{name.rsplit('/', 1)[-1]}"
                              for name, kind, _, digest in kept if kind != "dir"))
    shown = [f"{name}/" if kind == "dir" else f"{name} ({size} bytes)" if kind == "file" else f"{name} ({kind})"
             for name, kind, size, _ in kept]
    head = "\n".join([f"archive of {len(kept)} member(s):", *shown])[:HEAD_CHARS]
    return ("members:" + hashlib.sha256(manifest.encode()).hexdigest(), head, "",
            "members:" + hashlib.sha256(layout.encode()).hexdigest())


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
    """What turned ``before`` into ``after``, path by path, in path order (a directory's mere listing is no change,
    its mode is; a mode alone changed is a modification)."""
    out = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None:
            out.append(PathChange(path=path, change="deleted", node=old.node))
        elif old is None:
            out.append(PathChange(path=path, change="created", node=new.node, size=new.size, digest=new.digest,
                                  head=new.head, loose=new.loose, tokens=new.tokens, mode=new.mode))
        elif old.node == "dir" and new.node == "dir" and old.mode == new.mode:
            continue
        else:
            was = old.mode if old.node == new.node and old.mode != new.mode else None
            out.append(PathChange(path=path, change="modified", node=new.node, size=new.size, digest=new.digest,
                                  head=new.head, loose=new.loose, tokens=new.tokens, mode=new.mode, was_mode=was))
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
    """agree: same paths, kinds, contents (whitespace aside) and modes; paths: a path or kind differs; values: a
    file holds other words or numbers than the reference's, or a path has other permission bits; layout: the same
    words and numbers in another order or arrangement (the one difference a judge is asked about)."""
    missing: list[PathChange] = Field(default_factory=list)
    """What the reference changed that the executor did not (or changed otherwise in kind)."""
    unwanted: list[PathChange] = Field(default_factory=list)
    """What the executor changed and the reference left alone: a file that existed before, or a new path inside a
    folder the reference wrote into (an extra file among the deliverables)."""
    extra: list[PathChange] = Field(default_factory=list)
    """New paths only the executor created, outside every folder the reference wrote into (noted: a scratch file
    beside the deliverables is no fail by itself)."""
    differing: list[tuple[PathChange, PathChange]] = Field(default_factory=list)
    """(reference, executor) pairs of one path whose contents or modes differ."""
    values: list[str] = Field(default_factory=list)
    """The differing paths whose words, numbers or modes differ (not only their layout)."""


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
        elif want.change == "deleted":
            continue
        elif not _same_mode(want, got):
            differing.append((want, got))
            values.append(path)
        elif want.node == "file" and not _same_text(want, got):
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


def _same_mode(a: PathChange, b: PathChange) -> bool:
    """Whether two records' permission bits agree (a record without them, written by an older version, agrees)."""
    return a.mode is None or b.mode is None or a.mode == b.mode


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
        if not _same_mode(want, got):
            if reveal:
                lines.append(f"{want.path} has mode {want.mode:04o} in the reference run's result and {got.mode:04o} "
                             "in yours.")
            else:
                lines.append(f"{want.path} has other permissions than an independent run of the request left there: "
                             f"your run left mode {got.mode:04o}.")
            if want.node != "file" or _same_text(want, got):
                continue
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
