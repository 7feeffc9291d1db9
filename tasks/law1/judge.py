"""Law 1's text judge: the verdict on a command line or a file write, before it runs.

Beside a copy-on-write overlay the change set decides (``changes``) and the text keeps only what no
overlay observes: data sent off the machine, a daemon's changes (``judge_unobservable``).  Without
one, every command asks (``judge_command``, also ``artoo policy check``) unless it only reads or only
creates new paths: guessing which writes are safe never covered a script, ``make`` or an interpreter,
so only reading forms (``forms``) and creations known to be new (``create``) pass.
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


def judge_command(command: str, workspace: str | Path | None = None) -> PolicyVerdict:
    """Where no overlay shows a command's effect: it asks unless it only reads or only creates new paths, and for
    what leaves the machine.  ``workspace`` (where the command starts) lets it see which files are new; without it
    writing any file asks."""
    return _verdict(command, keep=None, workspace=workspace)


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


def _verdict(command: str, keep: tuple[Category, ...] | None, workspace: str | Path | None = None) -> PolicyVerdict:
    if not command.strip():
        return PolicyVerdict(irreversible=False, reason="empty command: nothing runs")
    ctx = Ctx(workspace=os.path.realpath(workspace) if workspace is not None else None)
    found = [d for d in judge_script(command, ctx) if keep is None or d.category in keep]
    dangers = [d for d in found if not d.creates]
    if not dangers:
        names = ", ".join(dict.fromkeys(ctx.seen)) or "no command"
        what = "only reads" if keep is None else "sends nothing off the machine and asks no daemon for a change"
        made = list(dict.fromkeys(t for d in found if d.creates for t in d.targets))
        if made:
            shown = ", ".join(made[:6]) + (", …" if len(made) > 6 else "")
            what = f"creates only new paths ({shown}) and otherwise {what}"
        return PolicyVerdict(irreversible=False, reason=f"{what} ({names})")
    return PolicyVerdict(irreversible=True, reason="; ".join(dict.fromkeys(d.reason() for d in dangers)),
                         targets=list(dict.fromkeys(t for d in dangers for t in d.targets)),
                         categories=list(dict.fromkeys(d.category for d in dangers)))
