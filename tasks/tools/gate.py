"""The Law-1 gate in front of the tools: what is asked, of whom, and what a yes or a no does.

Nothing irreversible runs without the person approving that exact action.  A ``write_file`` onto a
file that existed before the task asks; so does a shell command, judged by its observed change set
where it ran on a copy-on-write view (``approve_changes``) and by its text before it runs otherwise
(``check_command``): beside an overlay only what no overlay sees (data sent off the machine, a
daemon's changes, and only with the network on: without it the sandbox reaches neither), without
one every command that does not only read.  A denial is recorded in ``law1_denials`` and raised as
``[LAW1] denied: …``; an approval is recorded in ``approvals``.  A task owns what it creates
(``created``, shared by every subtask of the task): changing it later never asks.
"""

from __future__ import annotations

import os
from pathlib import Path

from artoo.tasks.law1 import changes as law1_changes
from artoo.tasks.law1.changes import Change
from artoo.tasks.law1.judge import judge_command, judge_unobservable, judge_write
from artoo.tasks.tools.models import Gate, PendingAction, ToolError


class Law1Gate:
    """Asks the person (through ``gate``) before anything irreversible, and remembers the answers."""

    def __init__(self, gate: Gate, workspace: Path, created: set[str] | None = None) -> None:
        self.gate = gate
        self.workspace = workspace
        self.created: set[str] = created if created is not None else set()
        """Real paths this task created: its own, which later steps may change without a question."""
        self.law1_denials: list[PendingAction] = []
        self.approvals: list[PendingAction] = []

    async def confirm(self, action: PendingAction) -> None:
        """Ask; raise the [LAW1] denial unless the person explicitly approves."""
        try:
            approved = await self.gate(action) is True
        except Exception as exc:  # a gate that fails has not approved anything
            approved = False
            action = action.model_copy(update={"reason": f"{action.reason} (gate failed: {exc})"})
        if not approved:
            self.law1_denials.append(action)
            refusal = ToolError(f"[LAW1] denied: {action.command}\nThe user did not approve this irreversible "
                                f"action ({action.reason}). Nothing was changed.", "environmental")
            refusal.denied = True
            raise refusal
        self.approvals.append(action)

    async def check_write(self, path: Path) -> None:
        """write_file: a new file, or one this task created, is written unasked; replacing anything else asks."""
        verdict = judge_write(path, exists=os.path.lexists)  # a dangling symlink exists too
        if verdict.irreversible and law1_changes.under(str(path), self.created):
            return
        if not os.path.lexists(path):
            self.created.add(str(path))
        if verdict.irreversible:
            await self.confirm(PendingAction(tool="write_file", command=f"write_file {path}", targets=[str(path)],
                                             reason=verdict.reason))

    async def check_command(self, command: str, by_effect: bool, network: bool) -> bool:
        """Before a shell command runs: True when the text judge asked (and the person approved)."""
        if by_effect and not network:
            return False
        verdict = judge_unobservable(command) if by_effect else judge_command(command, self.workspace)
        if verdict.irreversible:
            await self.confirm(PendingAction(tool="shell", command=command, targets=verdict.targets,
                                             reason=verdict.reason))
        return verdict.irreversible

    async def approve_changes(self, command: str, found: list[Change], output: str) -> PendingAction | None:
        """The question on a change set, asked when it changes what the task does not own; None when nothing asks."""
        ruling = law1_changes.rule(found, self.created, os.path.realpath(self.workspace))
        if not ruling.ask:
            return None
        action = PendingAction(tool="shell", command=command, targets=[c.path for c in ruling.ask],
                               reason="; ".join(ruling.reasons), changes=[c.line() for c in found])
        try:
            await self.confirm(action)
        except ToolError as exc:
            printed = f"\nIt printed:\n{output.rstrip()}" if output.strip() else ""
            refusal = ToolError(f"{exc}\nIts changes were discarded:\n{law1_changes.summary(found)}{printed}",
                                exc.failure_class)
            refusal.denied = True
            raise refusal from None
        return action

    def own(self, found: list[Change]) -> None:
        """Update the created set in place: the runtime shares the same set object across subtasks."""
        updated = law1_changes.after_commit(found, self.created)
        self.created.clear()
        self.created.update(updated)
