"""Law 1's text judge: the verdict on a command line or a file write, before it runs.

Beside a copy-on-write overlay the change set decides (``changes``) and the text keeps only what no
overlay observes: data sent off the machine, a daemon's changes (``judge_unobservable``).  Without
one, every command not known to only read asks (``judge_command``, also ``artoo policy check``):
guessing from the text which writes are safe never covered a script, ``make`` or an interpreter.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from artoo.tasks.law1.changes import under
from artoo.tasks.law1.core import UNOBSERVABLE, Category, Ctx
from artoo.tasks.law1.rules import judge_script

Exists = Callable[[Path], bool]
SYSTEM_DIRS = ("/etc", "/usr", "/boot", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
               "/sys", "/proc", "/dev", "/srv", "/snap", "/System", "/Library", "/private")
NOT_SYSTEM = ("/var/tmp", "/dev/shm", "/private/tmp")


class PolicyVerdict(BaseModel):
    """The Law-1 answer for one action."""

    irreversible: bool = Field(description="True when the action needs the user's explicit approval.")
    reason: str = Field(description="Why: each danger's category, command and targets, or why it is safe.")
    targets: list[str] = Field(default_factory=list, description="The paths, hosts or items at risk.")
    categories: list[Category] = Field(default_factory=list, description="The kinds of danger, as the reason has them.")


def judge_command(command: str) -> PolicyVerdict:
    """Where no overlay shows a command's effect: it asks unless it only reads, and for what leaves the machine."""
    return _verdict(command, keep=None)


def judge_unobservable(command: str) -> PolicyVerdict:
    """Beside an overlay, with the network on: only data sent off the machine and a daemon's changes ask."""
    return _verdict(command, keep=UNOBSERVABLE)


def judge_write(path: Path, exists: Exists | None = None) -> PolicyVerdict:
    """Writing a whole file (write_file): a new file is reversible; replacing one, or a system path, is not."""
    shown = os.path.normpath(path)
    if (under(shown, SYSTEM_DIRS) and not under(shown, NOT_SYSTEM)) or os.path.dirname(shown) == "/":
        return PolicyVerdict(irreversible=True, reason=f"may change: write_file writes into system path {shown}",
                             targets=[shown], categories=["may change"])
    state = None if exists is None else bool(exists(Path(shown)))
    if state is False:
        return PolicyVerdict(irreversible=False, reason=f"write_file creates new file {shown}", targets=[shown])
    why = "overwrites existing file" if state else "may overwrite (cannot check whether it exists)"
    return PolicyVerdict(irreversible=True, reason=f"may change: write_file {why} {shown}", targets=[shown],
                         categories=["may change"])


def _verdict(command: str, keep: tuple[Category, ...] | None) -> PolicyVerdict:
    if not command.strip():
        return PolicyVerdict(irreversible=False, reason="empty command: nothing runs")
    ctx = Ctx()
    dangers = [d for d in judge_script(command, ctx) if keep is None or d.category in keep]
    if not dangers:
        names = ", ".join(dict.fromkeys(ctx.seen)) or "no command"
        what = "only reads" if keep is None else "sends nothing off the machine and asks no daemon for a change"
        return PolicyVerdict(irreversible=False, reason=f"{what} ({names})")
    return PolicyVerdict(irreversible=True, reason="; ".join(dict.fromkeys(d.reason() for d in dangers)),
                         targets=list(dict.fromkeys(t for d in dangers for t in d.targets)),
                         categories=list(dict.fromkeys(d.category for d in dangers)))
