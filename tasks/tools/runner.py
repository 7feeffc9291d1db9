"""The transactional shell: which view a command runs on, running it in the sandbox, committing what it changed.

WHY: a judge of command text can never be complete, so where overlayfs works every shell command
runs on a copy-on-write view of the writable areas (overlay.py) and its change set (changeset.py)
goes to the Law-1 gate (gate.py): committed quietly when the task owns what changed, exactly as
approved otherwise, discarded on a no.  The view is chosen once per subtask and the run's log says
which (or why there is none, and the text judge decides).  Commands run in the sandbox of
sandbox.py; an approval never widens it.  Output reaches the model as head and tail, a committed
change list cut before what the command printed (text.with_note).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from pathlib import Path

from artoo.config.settings import Settings
from artoo.tasks.law1.changes import Change, summary
from artoo.tasks.tools import blocks, changeset, doors, overlay, sandbox, shell
from artoo.tasks.tools.gate import Law1Gate
from artoo.tasks.tools.models import ToolError
from artoo.tasks.tools.text import with_note


class ShellRunner:
    """Runs a subtask's shell commands: confined, on an overlay where one works, settled through the gate."""

    def __init__(self, settings: Settings, workspace: Path, gate: Law1Gate, sandbox_mode: str,
                 limits: sandbox.Limits) -> None:
        self.settings, self.workspace, self.gate = settings, workspace, gate
        self.sandbox_mode, self.limits = sandbox_mode, limits
        self.exit_code: int | None = None
        self.last_change_set: list[dict] | None = None
        """What the last command changed on disk (recorded in the decision log as ``change_set``)."""
        self._described = False
        self._law1_said: set[str] = set()
        self._view_choice: overlay.Choice | None = None

    async def by_effect(self) -> str | None:
        """The view Law 1 judges commands on: "kernel", "fuse", or None for the text judge (logged once each)."""
        if self._view_choice is None:  # once per subtask (the owners' scan too): only our commits change files
            off = self.sandbox_mode == "off" or await asyncio.to_thread(sandbox.find_bwrap) is None
            self._view_choice = await asyncio.to_thread(
                overlay.decide, getattr(self.settings.tools, "overlay", "auto"),
                (sandbox.bwrap_problem() or "turned off") if off else None, self._writable())
        choice = self._view_choice
        if choice.line() not in self._law1_said:
            self._law1_said.add(choice.line())
            log(logging.INFO if choice.kind == "kernel" else logging.WARNING, choice.line())
        return choice.kind

    def _writable(self) -> list[Path]:
        """The writable areas, each on an overlay: the workspace, plus your home when configured."""
        home = [Path.home()] if getattr(self.settings.tools, "overlay_home", False) else []
        return [self.workspace, *home]

    async def _sandbox(self, network: bool) -> sandbox.Sandbox:
        """How this command is confined (also after a Law-1 approval: approval never widens it)."""
        binary = None
        if self.sandbox_mode != "off":
            binary = await asyncio.to_thread(sandbox.find_bwrap)
            if binary is None and self.sandbox_mode == "require":
                raise ToolError("shell refused: the sandbox is required (tools.sandbox = \"require\") but "
                                f"bubblewrap cannot run here: {sandbox.bwrap_problem()}. To run commands with limits "
                                "only, unconfined, set ARTOO_TOOLS__SANDBOX=auto", "environmental")
        hidden = (Path(self.settings.home).expanduser(),)  # artoo's home: memory, audit log, settings, history
        box = sandbox.Sandbox(self.workspace, network, self.limits, binary, hidden)
        if not self._described:
            self._described = True
            log(logging.INFO if binary else logging.WARNING, sandbox.describe(box, self.settings.tools.shell_timeout_s))
        return box

    async def run(self, command: str, network: bool) -> str:
        """Run one command; its output (and committed change list) on success, ToolError otherwise."""
        self.exit_code, self.last_change_set = None, None
        self.workspace.mkdir(parents=True, exist_ok=True)
        timeout, prefix = self.settings.tools.shell_timeout_s, ""
        limit = max(self.settings.tools.head_tail_limit - 40, 200)
        box = await self._sandbox(network)
        kind = await self.by_effect() if box.bwrap is not None else None
        done, view = await self._execute(command, box, kind, limit)
        try:
            if view is not None and overlay.copy_up_failed(view.kind, done.output) and not network:
                self._view_choice = None  # a file of another owner or group came after the scan: look again
                if await self.by_effect() == "fuse":  # nothing of that run was kept: run it again, on fuse
                    view.close()
                    done, view = await self._execute(command, box, "fuse", limit)
                    prefix = overlay.RERUN_NOTE + "\n"
            settled = "" if view is None else await self._settle(command, view, done.output)
        finally:
            if view is not None:
                view.close()
        self.exit_code = None if done.timed_out else done.returncode
        blocked = blocks.judge(command, done.output, self.exit_code, box.network) if box.bwrap else blocks.Blocks()
        if done.timed_out:
            raise ToolError(f"{prefix}timed out after {timeout:g}s (the command and its children were killed)"
                            f"\n{done.output}{blocked.told}{settled}", "environmental")
        body = done.output.rstrip("\n")  # then what the sandbox stopped (blocks.py), then the change list
        text = with_note(f"{prefix}{body}{chr(10) if body else ''}[exit code {done.returncode}]{blocked.told}",
                         settled, self.settings.tools.head_tail_limit)  # which never crowds out what it printed
        if done.returncode == 0 and not blocked.failed:  # a pkill that reached nothing fails even on exit 0
            return text
        signum = sandbox.killed_by(done.returncode)
        if signum is not None:  # a limit or a signal ended it: the world stopped it, not the approach
            raise ToolError(f"{text}\n{sandbox.limit_note(signum, self.limits)}", "environmental")
        raise ToolError(text, "environmental" if blocked.notes or done.returncode in (126, 127) else "logical")

    async def _execute(self, command: str, box: sandbox.Sandbox, kind: str | None,
                       limit: int) -> tuple[shell.Completed, overlay.View | None]:
        """Run the command in the sandbox, on a ``kind`` view when given (the caller settles and closes it)."""
        fd = doors.filter_fd() if box.bwrap is not None else None
        view = overlay.open_view(self._writable(), kind=kind) if kind is not None else None
        extra = tuple(layer.root for layer in view.layers) if view is not None else ()
        try:
            argv = shell.build_shell_argv(command, dataclasses.replace(box, seccomp_fd=fd, writable=extra))
            argv = overlay.mount_argv(view, argv) if view is not None else argv
            done = await shell.run_capped(argv, self.workspace, self.settings.tools.shell_timeout_s, limit,
                                          env=sandbox.scrubbed_env(os.environ), pass_fds=() if fd is None else (fd,))
        except BaseException:
            if view is not None:
                view.close()
            raise
        finally:
            if fd is not None:
                os.close(fd)
        return done, view

    async def _settle(self, command: str, view: overlay.View, output: str) -> str:
        """Commit the command's change set: quietly, after the gate's approval, or not at all."""
        fuse = view.kind == "fuse"
        found = await self._changes(view)
        if not found:  # at most new times (``touch`` of an existing file): applied, nothing to rule on
            await asyncio.to_thread(changeset.commit_times, view.layers, fuse)
            return ""
        self.last_change_set = [c.model_dump(mode="json") for c in found]
        refused = await asyncio.to_thread(changeset.unwritable, found)
        if refused:  # only a fuse view can let a command change what its user cannot: commit all or nothing
            raise ToolError(f"not committed: {command}\nIt changed what you may not change outside its view:\n"
                            + "\n".join(refused[:20]) + "\nNothing was changed.", "environmental")
        action = await self.gate.approve_changes(command, found, output)
        if action is not None and [c.line() for c in await self._changes(view)] != action.changes:
            raise ToolError(f"[LAW1] not committed: {command}\nThe workspace changed while the question waited, so "
                            "the approved change set no longer describes what would happen. Nothing was changed; "
                            f"run the command again.\nApproved:\n{summary(found)}", "environmental")
        for layer in view.layers:
            await asyncio.to_thread(changeset.commit, layer.upper, layer.root, fuse)
        self.gate.own(found)
        return f"\n[changes committed]\n{summary(found)}"

    async def _changes(self, view: overlay.View) -> list[Change]:
        return [c for layer in view.layers
                for c in await asyncio.to_thread(changeset.compute, layer.upper, layer.root, view.kind == "fuse")]


def log(level: int, message: str) -> None:
    """Into the Prefect run's log when inside a run, else the ``artoo.tools`` logger."""
    try:
        from prefect.logging import get_run_logger

        logger = get_run_logger()
    except Exception:  # outside a flow or task run
        logger = logging.getLogger("artoo.tools")
    logger.log(level, message)
