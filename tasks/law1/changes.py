"""Law 1 by effect: which of the changes a command made on its copy-on-write view need the user's approval.

A judge of command text can never be complete (a script, an interpreter or ``make`` runs code the
text does not show), so the transactional shell reports what a command changed and this pure rule
splits it.  A task owns what it creates: new files, and later changes to them (also in later rounds),
commit quietly.  Deleting, overwriting, renaming away or re-moding what existed before the task, and
any change outside the workspace, is a question.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

Kind = Literal["created", "modified", "deleted", "renamed", "mode"]


class Change(BaseModel):
    """One path a command changed, as observed in the overlay's upper directory."""

    kind: Kind = Field(description="created, modified (content), deleted, renamed (from ``source``) or mode.")
    path: str = Field(description="The real absolute path the change lands on.")
    is_dir: bool = Field(False, description="True when the path is a directory.")
    size: int | None = Field(None, description="Bytes after the change (None when deleted).")
    old_size: int | None = Field(None, description="Bytes before the change (None when created); for a "
                                 "deleted directory the total of its files.")
    source: str | None = Field(None, description="For a rename: the path it came from.")
    old_mode: int | None = Field(None, description="Permission bits before (mode changes).")
    new_mode: int | None = Field(None, description="Permission bits after (mode changes).")

    def line(self) -> str:
        """``deleted /w/keep.txt (5 B)``: one line of the exact list a person approves."""
        what = f"{self.path}/" if self.is_dir else self.path
        if self.kind == "created":
            return f"created {what} ({_size(self.size)})"
        if self.kind == "deleted":
            return f"deleted {what} ({_size(self.old_size)}{' in total' if self.is_dir else ''})"
        if self.kind == "renamed":
            return f"renamed {self.source} → {what} ({_size(self.size)})"
        if self.kind == "mode":
            return f"mode of {what}: {_octal(self.old_mode)} → {_octal(self.new_mode)}"
        return f"modified {what} ({_size(self.old_size)} → {_size(self.size)})"


class Ruling(BaseModel):
    """What to do with one command's change set."""

    quiet: list[Change] = Field(default_factory=list, description="Changes committed without a question.")
    ask: list[Change] = Field(default_factory=list, description="Changes that need the user's approval.")
    reasons: list[str] = Field(default_factory=list, description="One line per asked change: why.")


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies beneath one (plain path prefixes, already real): with the
    task's created set, whether the task owns it."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def rule(changes: list[Change], created: set[str], workspace: str) -> Ruling:
    """Split a change set into quiet commits and Law-1 questions (pure)."""
    ruling = Ruling()
    for change in changes:
        why = _why_ask(change, created, workspace)
        if why is None:
            ruling.quiet.append(change)
        else:
            ruling.ask.append(change)
            ruling.reasons.append(f"{change.path} {why}")
    return ruling


def _why_ask(change: Change, created: set[str], workspace: str) -> str | None:
    paths = [change.path] + ([change.source] if change.source else [])
    outside = [p for p in paths if not under(p, [workspace])]
    if outside:
        return f"outside the workspace {workspace}"
    if change.kind == "created":
        return None
    if change.kind == "renamed":
        return None if under(change.source or "", created) else "moves away a file that existed before the task"
    if under(change.path, created):
        return None
    verb = {"deleted": "deletes", "modified": "overwrites", "mode": "changes the mode of"}[change.kind]
    return f"{verb} something that existed before the task"


def after_commit(changes: list[Change], created: set[str]) -> set[str]:
    """The task's created set once ``changes`` are committed: new paths join it, deleted ones leave it."""
    result = set(created)
    for change in changes:
        if change.kind in ("created", "renamed"):
            result.add(change.path)
        if change.kind == "renamed" and change.source:
            result.discard(change.source)
        if change.kind == "deleted":
            result = {p for p in result if not under(p, [change.path])}
    return result


def summary(changes: list[Change], limit: int = 40) -> str:
    """The change set as lines for the model's output (capped)."""
    lines = [c.line() for c in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"… and {len(changes) - limit} more changes")
    return "\n".join(lines)


def _size(value: int | None) -> str:
    if value is None:
        return "? B"
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value} B"


def _octal(mode: int | None) -> str:
    return "?" if mode is None else oct(mode & 0o7777)[2:].zfill(4)
