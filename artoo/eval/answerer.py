"""The eval's Law-1 answerer: nobody is at the keyboard, so a stated rule answers.

The rule: approve exactly the changes the gold command's own run makes, deny the rest.  A
shell action is tried first on a copy of the current tree (confined by bubblewrap, the tree's
path rewritten to the copy's); it is approved when every path it changed is one the gold
changed, ending in the same state (deleted, or the same kind, content and permissions).  A
``write_file`` is approved when the gold changed that file.  So a correct deletion succeeds
and a wrong or unneeded one is refused, and every question is recorded for the report.

artoo's gate calls ``answer`` when ``law1_mode = "policy"`` and ``law1_policy`` names it;
the harness sets the current task's ``Oracle`` with ``activate`` before each run.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from artoo.eval.suite import diff, run_confined, snapshot

POLICY = "artoo.eval.answerer:answer"
"""What the eval sets as ``law1_policy``."""


@dataclass
class Oracle:
    """The current task's gold change set, and the questions asked so far."""

    base: Path
    gold_changes: dict[str, str]
    questions: list[dict] = field(default_factory=list)


_active: Oracle | None = None


def activate(oracle: Oracle | None) -> None:
    """Make ``oracle`` answer the next questions (None: deny everything)."""
    global _active
    _active = oracle


def would_change(oracle: Oracle, command: str) -> dict[str, str]:
    """The change set ``command`` makes on a copy of the current tree."""
    scratch = oracle.base.with_name(oracle.base.name + "-law1")
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(oracle.base, scratch, symlinks=True)
    try:
        before = snapshot(scratch)
        run_confined(command.replace(str(oracle.base), str(scratch)), scratch)
        return diff(before, snapshot(scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def within_gold(changes: dict[str, str], gold: dict[str, str]) -> bool:
    """True when every change is one the gold made, ending in the same state."""
    return all(gold.get(path) == state for path, state in changes.items())


def decide(oracle: Oracle, action) -> tuple[bool, dict[str, str]]:
    """(approve?, the change set judged) for one PendingAction."""
    if action.tool == "write_file":
        target = next(iter(action.targets), "")
        rel = str(Path(target).relative_to(oracle.base)) if target.startswith(str(oracle.base)) else target
        changed = oracle.gold_changes.get(rel, "deleted") != "deleted"
        return changed, {rel: "written"}
    changes = would_change(oracle, action.command)
    return within_gold(changes, oracle.gold_changes), changes


async def answer(action) -> bool:
    """The gate's policy: the rule above for the active task; no active task denies."""
    oracle = _active
    if oracle is None:
        return False
    approved, changes = await asyncio.to_thread(decide, oracle, action)
    oracle.questions.append({"command": action.command, "approved": approved,
                             "changes": sorted(changes)[:20], "shown": list(getattr(action, "changes", []))[:20]})
    return approved
