"""The everyday suite's mechanics: a task, its folder laid out fresh, a command run confined in it, the judgement.

A task is what a person types on an ordinary day (find, copy, rename, edit a config, count, ...), with a small
folder to lay out, our own GOLD bash command that does it, plausible WRONG commands that must not pass, and
end-state checks written by us (artoo.eval.checks).  Right means every check passes on the final folder AND
every laid-out file the request does not touch is unchanged, byte for byte.  Commands run the way artoo runs
the shell: bubblewrap (read-only root, only the folder writable, no network, Unix sockets refused, artoo's home
hidden), resource limits, a scrubbed environment, a wall-clock timeout.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from artoo.config.errors import ConfigurationError
from artoo.eval.checks import Check, untouched_problems
from artoo.tasks.tools import doors, sandbox, shell

KINDS = ("find", "copy", "move", "config", "extract", "count", "sort", "merge", "mkdir", "report", "delete")
"""The kinds of everyday request the suite covers (``delete`` is Law 1's: deleting user files asks)."""
RUN_TIMEOUT_S = 30.0
OUTPUT_LIMIT = 4000


@dataclass(frozen=True)
class EverydayTask:
    """One everyday request, its folder, our gold and wrong commands, and our checks."""

    id: str
    kind: str
    steps: int
    """How many things the request asks for in a row (filter, then copy, then count: 3)."""
    request: str
    """In a user's words, relative to the folder it is typed in."""
    layout: Mapping[str, str]
    """Relative path → text; a path ending in ``/`` is an empty folder."""
    gold: str
    """Our bash command that does it, run in the folder."""
    checks: tuple[Check, ...]
    wrong: tuple[str, ...]
    """Plausible wrong results as commands (every name instead of the matching ones, copied instead of moved,
    a folder made as a file): each must fail the judgement."""
    touches: tuple[str, ...] = ()
    """Patterns (fnmatch, on the relative path) of laid-out files the request may change or remove."""
    index: int = field(default=0, compare=False)
    """Its place in the suite (seeds the simulated brain's draws)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"task {self.id}: unknown kind {self.kind!r}")
        if self.steps not in (1, 2, 3) or not self.checks or not self.wrong or not self.layout:
            raise ValueError(f"task {self.id}: needs 1-3 steps, a layout, checks and at least one wrong command")


@dataclass(frozen=True)
class Judgement:
    """What the final folder shows: the end-state problems and the untouched-file problems (none: right)."""

    end_state: list[str]
    untouched: list[str]

    @property
    def right(self) -> bool:
        return not self.end_state and not self.untouched


def lay_out(task: EverydayTask, root: Path) -> None:
    """``root`` emptied and the task's folder written into it."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for path, content in task.layout.items():
        target = root / path
        if path.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")


def judge(task: EverydayTask, root: Path) -> Judgement:
    """Run every check of the task on the final folder, and the untouched-file check."""
    end = [problem for check in task.checks for problem in check.problems(root, task.layout)]
    return Judgement(end, untouched_problems(root, task.layout, task.touches))


def require_bubblewrap() -> str:
    """The bubblewrap binary; ConfigurationError when it cannot run here (model-written commands must not
    touch this machine, and we may be root)."""
    binary = sandbox.find_bwrap()
    if binary is None:
        raise ConfigurationError(f"artoo eval everyday needs a working bubblewrap: {sandbox.bwrap_problem()}")
    return binary


@dataclass(frozen=True)
class Ran:
    """One command's end: its capped output (stdout and stderr merged), exit code (None: timed out)."""

    output: str
    exit_code: int | None
    timed_out: bool


async def run_confined(command: str, root: Path, timeout_s: float = RUN_TIMEOUT_S, limit: int = OUTPUT_LIMIT,
                       hidden: tuple[Path, ...] = ()) -> Ran:
    """Run one bash command in ``root`` as artoo's shell tool does, without its overlay and Law 1 (a peer has
    neither): bubblewrap with only ``root`` writable, no network, no Unix sockets, limits, a timeout."""
    binary = require_bubblewrap()
    fd = doors.filter_fd()
    try:
        box = sandbox.Sandbox(root, False, sandbox.Limits(), binary, hidden, fd)
        done = await shell.run_capped(shell.build_shell_argv(command, box), root, timeout_s, limit,
                                      env=sandbox.scrubbed_env(os.environ), pass_fds=() if fd is None else (fd,))
    finally:
        if fd is not None:
            os.close(fd)
    return Ran(done.output, done.returncode, done.timed_out)
