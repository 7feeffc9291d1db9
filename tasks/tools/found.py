"""The files a subtask's criteria name, as they are now: read by code for the Agent-Validator.

Why: R4a judges an attempt against evidence, and the executor's answer is only a claim.  The recorded tool
calls are often the wrong evidence for a file criterion: a command redirected into the file
(``cat *.txt | wc -l >> totals.md``) prints nothing, so a small validator sees no content and guesses, and it
may pass a claim "totals.md exists" with no call behind it.  The file itself settles
both.  Code reads each named file from the workspace after the attempt (the shell's changes are
committed there by then) and R4a sees its state beside the tool calls: absent, or its size, line
count and head.  Reading is confined to the workspace like the read tool, never follows a symlink
out of it, never reads a device or FIFO, and is capped, so a criterion cannot turn this into a leak.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from artoo.tasks.tools.files import confine, read_text, resolve_path
from artoo.tasks.tools.models import ToolError

SHOWN_CHARS = 1200
"""Characters of each named file shown to the validator."""
COUNTED_BYTES = 65536
"""A file up to this size has its lines counted; a bigger one is shown by its head and size only."""
MOST_FILES = 3
"""At most this many named files are read per attempt (the first the criteria name)."""


def _state(name: str, workspace: Path, chars: int) -> str:
    path = resolve_path(name, workspace)
    try:
        real = confine(path, [workspace], "reading")
    except ToolError as exc:
        return f"{name}: not read ({exc})"
    if not os.path.lexists(real):
        return f"{name}: does not exist in {workspace}"
    if real.is_dir():
        return f"{name}: is a directory"
    size = real.stat().st_size
    if size == 0:
        return f"{name}: exists, empty (0 bytes)"
    try:
        text = read_text(real, cap=COUNTED_BYTES)
    except ToolError as exc:
        return f"{name}: not read ({exc})"
    if text.startswith(f"binary file {real}"):
        return f"{name}: exists, {text}"
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    counted = f"{lines} line{'' if lines == 1 else 's'}" if size <= COUNTED_BYTES else "lines not counted"
    more = "" if len(text) <= chars and size <= COUNTED_BYTES else f"\n… (cut here: the file has {size} bytes)"
    return f"{name}: exists, {size} bytes, {counted}:\n{text[:chars]}{more}"


def named_files_now(names: list[str], workspace: Path | str, chars: int = SHOWN_CHARS,
                    most: int = MOST_FILES) -> list[str]:
    """One line block per distinct named file: whether it exists in the workspace and its head."""
    root = Path(workspace).expanduser()
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return [_state(name, root, chars) for name in seen[:most]]


def named_files_brief(names: list[str], workspace: Path | str, most: int = MOST_FILES) -> list[str]:
    """One line per named file, no content: "totals.md: does not exist in /w" or "totals.md: exists, 24 bytes,
    3 lines" (what R3's checklist shows after each tool result, so the model sees what is still missing)."""
    return [state.split("\n", 1)[0].rstrip(":") for state in named_files_now(names, workspace, chars=0, most=most)]


SEARCHED = 5000
"""Entries of the workspace looked at for a relative name that lives deeper than its criterion says."""


def _deeper(name: str, root: Path) -> bool:
    """Whether a path ending in ``/name`` exists under ``root``: a criterion that says "notes.txt" of a file the
    work found at ``data/notes.txt`` names it by a shorter path, and that file is not absent."""
    if os.path.isabs(name) or name.startswith(("~", "..")):
        return False
    tail = os.sep + os.path.normpath(name)
    seen = 0
    for folder, dirs, files in os.walk(root):
        for entry in [*dirs, *files]:
            seen += 1
            if os.path.join(folder, entry).endswith(tail):
                return True
        if seen > SEARCHED:
            return False
    return False


def absent_names(names: list[str], workspace: Path | str) -> list[str]:
    """The distinct names with nothing at their path in the workspace nor deeper in it (a name code may not read,
    outside it or behind a symlink out of it, is not counted absent: code cannot say)."""
    root = Path(workspace).expanduser()
    out: list[str] = []
    for name in dict.fromkeys(names):
        try:
            real = confine(resolve_path(name, root), [root], "reading")
        except ToolError:
            continue
        if not os.path.lexists(real) and not _deeper(name, root):
            out.append(name)
    return out


GLANCE_FILES = 25
"""Files a glance shows (the rest are counted)."""
GLANCE_LINES = 3
"""First lines shown of each text file."""
GLANCE_LINE_CHARS = 100
"""Characters kept of each line shown."""


def glance(workspace: Path | str, most: int = GLANCE_FILES, lines: int = GLANCE_LINES) -> str:
    """``glance_lines`` as one text, or why there is nothing to see."""
    if not Path(workspace).expanduser().is_dir():
        return "(the folder does not exist yet)"
    return "\n".join(glance_lines(workspace, most, lines)) or "(the folder is empty)"


def glance_lines(workspace: Path | str, most: int = GLANCE_FILES, lines: int = GLANCE_LINES) -> tuple[str, ...]:
    """What a person looks at first in a folder: each file's name, size and first lines, bounded.

    Why: a command written from the request alone guesses the data's shape (which column holds the amounts);
    one written after a glance at the files reads it, and a small model's first command is right far more often."""
    root = Path(workspace).expanduser()
    if not root.is_dir():
        return ()
    files: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files += [Path(folder) / n for n in sorted(names) if not n.startswith(".")]
        if len(files) > 10 * most:
            break
    files.sort()
    shown = []
    for path in files[:most]:
        rel = path.relative_to(root).as_posix()
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):  # a link, a FIFO or a device: named, never opened (a FIFO blocks)
                shown.append(f"{rel} ({'link' if stat.S_ISLNK(info.st_mode) else 'not a regular file'})")
                continue
            with open(path, "rb") as handle:
                data = handle.read(4096)
        except OSError:
            continue
        mode = " executable" if info.st_mode & 0o111 else ""
        shown.append(f"{rel} ({info.st_size} bytes{mode})")
        if b"\x00" in data:
            shown.append("  (binary)")
            continue
        for line in data.decode("utf-8", "replace").splitlines()[:lines]:
            shown.append("  | " + line[:GLANCE_LINE_CHARS])
    if len(files) > most:
        shown.append(f"… and {len(files) - most} more files")
    return tuple(shown)
