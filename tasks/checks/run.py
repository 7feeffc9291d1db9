"""Running a check: confined, on a view whose writes cannot reach the folder, with no network and a timeout.

Why here and not in the shell tool: a check decides a verdict, so it must never change what it judges and
never wait on a person.  A check runs under bubblewrap with the folder bound read-only, so a write is refused
by the kernel and said; a reference run (a command that does the work) runs on a throwaway copy of the folder
as it was before the work, bound where the folder is, and what it changed is read back as a change set
(``tree``).  What a check's run means for its criterion is ``decide``'s business, not this module's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from artoo.tasks.checks import tree
from artoo.tasks.tools import sandbox, shell

__all__ = ["Confined", "Ran", "WRITE_REFUSED", "run_confined", "run_reference"]

WRITE_REFUSED = "Read-only file system"
"""How the kernel refuses a write on a read-only bind (messages are in English: sandbox.scrubbed_env)."""
OUTPUT_CHARS = 2000
"""Characters of a check's output kept (head and tail)."""


@dataclass(frozen=True)
class Confined:
    """How checks are confined here: bubblewrap's binary, the limits, what stays hidden, the timeout."""

    bwrap: str | None
    """None: bubblewrap cannot run here, so no check can be confined and none runs."""
    timeout_s: float = 10.0
    limits: sandbox.Limits = field(default_factory=lambda: sandbox.Limits(cpu_s=20, memory_mb=1024, file_mb=64))
    hidden: tuple[Path, ...] = ()
    max_bytes: int = 64 * 1024 * 1024
    """Largest folder copied for a reference run."""
    max_files: int = 5000
    """Most entries copied for a reference run."""


class Ran(BaseModel):
    """One confined run of a command: how it ended and what it printed (and changed, for a reference run)."""

    model_config = ConfigDict(extra="forbid")

    command: str
    exit_code: int | None
    """None when it timed out or was killed."""
    output: str = ""
    timed_out: bool = False
    wrote: bool = False
    """It tried to write where it may only read (the kernel refused)."""
    changes: list[tree.PathChange] = []
    """What it changed, for a run on a writable copy."""
    view: Literal["read-only", "copy"] = "read-only"


async def run_confined(command: str, workspace: Path, confined: Confined, *, source: Path | None = None,
                       read_only: bool = True) -> Ran:
    """Run ``command`` in bubblewrap with ``source`` (default: the folder) at the folder's path."""
    if confined.bwrap is None:
        raise RuntimeError("checks need bubblewrap, which cannot run here")
    prefix = sandbox.bwrap_argv(confined.bwrap, workspace, network=False, hidden=confined.hidden, source=source,
                                read_only=read_only)
    argv = [*prefix, *sandbox.limited_argv(["bash", "-c", command], confined.limits)]
    cwd = Path(tempfile.gettempdir())  # bubblewrap changes into the folder itself (--chdir)
    done = await shell.run_capped(argv, cwd, confined.timeout_s, OUTPUT_CHARS,
                                  env=sandbox.scrubbed_env(os.environ))
    return Ran(command=command, exit_code=done.returncode, output=done.output, timed_out=done.timed_out,
               wrote=read_only and WRITE_REFUSED in done.output, view="read-only" if read_only else "copy")


async def run_reference(command: str, workspace: Path, before: Path, confined: Confined) -> Ran:
    """Run ``command`` on a throwaway copy of ``before`` seen at the folder's path; its changes against ``before``."""
    scratch = Path(tempfile.mkdtemp(prefix="artoo-check-"))
    copy = scratch / "folder"
    try:
        await asyncio.to_thread(tree.copy_tree, before, copy, confined.max_bytes, confined.max_files)
        ran = await run_confined(command, workspace, confined, source=copy, read_only=False)
        was, now = await asyncio.gather(asyncio.to_thread(tree.state, before), asyncio.to_thread(tree.state, copy))
        return ran.model_copy(update={"changes": tree.changes(was, now)})
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)
