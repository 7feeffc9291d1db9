"""File tools: read one file, write one file, glob the project.

Reading never dumps binary: a NUL byte or a known magic number gets a one-line summary
instead, and text is decoded with ``errors="replace"`` so a stray Latin-1 byte cannot
break a run.  Writing is plain I/O here; whether it needs the user's approval is the
ToolBox's question (Law 1), asked before this module is called.

Paths are confined: ``confine`` resolves every symlink and ``..`` to the real path and
refuses one outside the allowed roots, so a link planted in the workspace cannot lead a
read or a write elsewhere.  Only regular files are read or written: a device, FIFO or
socket is refused (reading a FIFO would hang the run, writing a device could harm it),
and files are opened without following a last-moment symlink or blocking on a FIFO.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from pathlib import Path

from artoo.tasks.tools.models import ToolError

READ_CAP = 1_000_000
GLOB_CAP = 500
GLOB_VISIT_CAP = 200_000
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox"}
MAGIC = [(b"\x89PNG", "PNG image"), (b"%PDF", "PDF document"), (b"PK\x03\x04", "ZIP archive"),
         (b"\x1f\x8b", "gzip data"), (b"\x7fELF", "ELF executable"), (b"\xff\xd8\xff", "JPEG image"),
         (b"GIF8", "GIF image"), (b"SQLite format 3\x00", "SQLite database"), (b"BZh", "bzip2 data"),
         (b"\xfd7zXZ", "xz data"), (b"OggS", "Ogg media"), (b"RIFF", "RIFF media")]


def resolve_path(raw: str, workspace: Path) -> Path:
    """``~`` expanded; relative paths land in the workspace; ``..`` folded."""
    path = Path(os.path.expanduser(raw.strip()))
    if not path.is_absolute():
        path = workspace / path
    return Path(os.path.normpath(path))


def within(real: str, roots: list[Path]) -> bool:
    """Whether the real path ``real`` is one of ``roots`` or lies beneath one (roots are resolved too)."""
    for root in roots:
        base = os.path.realpath(Path(root).expanduser())
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


def confine(path: Path, roots: list[Path], what: str = "access") -> Path:
    """The real path of ``path`` (symlinks and ``..`` resolved); ToolError when it leaves ``roots``."""
    real = os.path.realpath(path)
    if within(real, roots):
        return Path(real)
    via = "" if real == str(path) else f" (it resolves to {real})"
    names = ", ".join(str(r) for r in roots)
    raise ToolError(f"{what} refused: {path}{via} is outside the allowed roots ({names})", "environmental")


def check_allowed(path: Path, allowed_roots: list[Path] | None) -> None:
    """Refuse a path outside the allowed roots (when roots are set)."""
    if allowed_roots:
        confine(path, allowed_roots)


def special_kind(mode: int) -> str | None:
    """'device', 'FIFO' or 'socket' for a non-regular, non-directory file mode, else None."""
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "socket" if stat.S_ISSOCK(mode) else None


def _refuse_special(path: Path, mode: int, tool: str) -> None:
    kind = special_kind(mode)
    if kind is not None:
        raise ToolError(f"{path} is a {kind}, not a regular file; {tool} handles regular files only", "logical")


def refuse_special(path: Path, tool: str) -> None:
    """ToolError when ``path`` exists and is a device, FIFO or socket (checked before anyone is asked)."""
    if os.path.lexists(path):
        _refuse_special(path, os.lstat(path).st_mode, tool)


def sniff_binary(sample: bytes) -> str | None:
    """A kind name when the bytes are not text, else None."""
    for magic, kind in MAGIC:
        if sample.startswith(magic):
            return kind
    if b"\x00" in sample:
        return "binary data"
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27, 8))
    return "binary data" if sample and controls / len(sample) > 0.3 else None


def read_text(path: Path, cap: int = READ_CAP) -> str:
    """A file's text (decoded with replacement), a summary for binary files, capped at ``cap`` bytes."""
    if not os.path.lexists(path):
        raise ToolError(f"no such file: {path}", "logical")
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file; use glob to list it", "logical")
    refuse_special(path, "read_file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # a FIFO must not hang the run
    except PermissionError as exc:
        raise ToolError(f"permission denied reading {path}: {exc.strerror}", "environmental") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        _refuse_special(path, info.st_mode, "read_file")
        size = info.st_size
        data = handle.read(cap)
    kind = sniff_binary(data[:8192])
    if kind:
        return f"binary file {path}: {size} bytes, {kind}; not shown as text"
    text = data.decode("utf-8", errors="replace")
    if size > len(data):
        text += f"\n… file truncated: showed the first {len(data)} of {size} bytes"
    return text if text else f"(empty file {path})"


def write_text(path: Path, content: str) -> str:
    """Write the whole file (parents created) and say whether it was new."""
    if path.is_dir():
        raise ToolError(f"{path} is a directory; give a file path", "logical")
    existed = os.path.lexists(path)
    refuse_special(path, "write_file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except PermissionError as exc:
        raise ToolError(f"permission denied writing {path}: {exc.strerror}", "environmental") from exc
    with os.fdopen(fd, "wb") as handle:
        _refuse_special(path, os.fstat(fd).st_mode, "write_file")
        handle.write(content.encode("utf-8"))
    verb = "overwrote" if existed else "created"
    return f"{verb} {path} ({len(content)} characters){literal_note(content)}"


_SHELL_SYNTAX = re.compile(r"\$\([^)]*\)|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Z_][A-Z0-9_]+\b")


def literal_note(content: str) -> str:
    """A note when written text looks like shell it expected to run: write_file runs nothing.

    Why: a small model may call ``write_file`` with shell in its content (``total: $(cat *.txt | wc -l)``)
    and go on as if the file held the command's output, when it holds that text.  The tool result is what
    the model reads next, so it says so there.  Only substitutions and variables (``$(…)``, ``${X}``,
    ``$HOME``) count: backquotes are Markdown's code spans far more often than shell."""
    found = _SHELL_SYNTAX.search(content)
    if not found:
        return ""
    return (f". Note: the content was written literally, {found.group(0)[:60]} included: write_file runs no "
            "shell. To put a command's output in a file, run it with the shell tool and redirect (cmd > file).")


def glob_files(pattern: str, root: Path, cap: int = GLOB_CAP, visit_cap: int = GLOB_VISIT_CAP,
               roots: list[Path] | None = None) -> str:
    """Files matching ``pattern`` under ``root`` (recursive when the pattern has no '/'), one per line.

    With ``roots``, the glob's own root must lie inside them and matches that resolve outside
    them (through a symlink or ``..``) are left out.
    """
    pattern = pattern.strip()
    if os.path.isabs(os.path.expanduser(pattern)):
        root, pattern = _split_absolute(os.path.expanduser(pattern))
    if roots:
        confine(root, roots, "glob")
    if not root.is_dir():
        raise ToolError(f"glob root {root} is not a directory", "logical")
    matches, visited, stopped = [], 0, False
    if "/" in pattern:
        for path in root.glob(pattern):
            visited += 1
            if not SKIP_DIRS & set(path.relative_to(root).parts[:-1]):
                matches.append(str(path))
            if len(matches) >= cap or visited >= visit_cap:
                stopped = True
                break
    else:
        matches, stopped = _walk_match(root, pattern, cap, visit_cap)
    kept = [m for m in matches if not roots or within(os.path.realpath(m), roots)]
    left_out, matches = len(matches) - len(kept), kept
    hidden = f"\n({left_out} match(es) resolving outside the allowed roots left out)" if left_out else ""
    if not matches:
        return f"no files match {pattern!r} under {root}{hidden}"
    note = f"\n(stopped after {len(matches)} matches; narrow the pattern for more)" if stopped else ""
    return "\n".join(sorted(matches)) + note + hidden


def _split_absolute(pattern: str) -> tuple[Path, str]:
    parts = Path(pattern).parts
    for i, part in enumerate(parts):
        if any(ch in part for ch in "*?["):
            return Path(*parts[:i]), "/".join(parts[i:])
    return Path(*parts[:-1]), parts[-1]


def _walk_match(root: Path, pattern: str, cap: int, visit_cap: int) -> tuple[list[str], bool]:
    matches: list[str] = []
    visited = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in [*dirs, *files]:
            visited += 1
            if fnmatch.fnmatch(name, pattern):
                matches.append(os.path.join(folder, name))
                if len(matches) >= cap:
                    return matches, True
        if visited >= visit_cap:
            return matches, True
    return matches, False
