"""The task's votes as the flows use them: drawn through the votes task, a winner laid on the folder through Law 1,
and what the person is told about the folder, in code's words.

Why here: drawing a vote asks the model (a Prefect task) and laying a winner may ask the person (the Law-1 gate),
so both are the flows' business; the checks layer only decides on votes and calls back for them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from prefect.logging import get_run_logger

from artoo.config.contracts import FinalResult, TaskSpec
from artoo.tasks.checks import tree
from artoo.tasks.checks.apply import lay, restore
from artoo.tasks.checks.evaluate import Ballot
from artoo.tasks.checks.votes import Quorum, Vote
from artoo.tasks.law1.changes import Change
from artoo.tasks.roles.runtime import get_runtime
from artoo.tasks.roles.task import votes_task
from artoo.tasks.tools.gate import Law1Gate
from artoo.tasks.tools.models import ToolError

__all__ = ["ballot_for", "on_disk", "unsure_result", "what_decided"]

SHOWN_FILES = 8
"""Changed paths named in the result's summary (the rest are counted)."""


def _law1_change(workspace: Path, change: tree.PathChange) -> Change:
    return Change(kind=change.change, path=str(workspace / change.path), is_dir=change.node == "dir",
                  size=None if change.change == "deleted" else change.size)


async def ballot_for(runtime_id: str, spec: TaskSpec) -> Ballot | None:
    """The task's ballot, its first votes drawn on first use; None where votes cannot run (no confinement, no copy
    of the folder as it was, or votes switched off)."""
    run = get_runtime(runtime_id)
    record, settings = run.record, run.deps.settings
    if record.ballot is not None or record.no_votes:
        return record.ballot
    checks = settings.checks
    if not (checks.enabled and checks.reference_call and record.confined is not None
            and record.confined.bwrap is not None and record.before is not None and record.before.path is not None):
        return None
    folder, request = str(record.before.path), (spec.raw_input or spec.intent)
    first = await votes_task(runtime_id, request, folder, checks.votes_initial, True)
    if not first:  # the endpoint gave no vote at all: the task is decided without votes, never unsure for want of one
        record.no_votes = True
        get_run_logger().warning("no vote could be drawn: this task is decided by its checks and validators alone")
        return None

    async def draw(count: int) -> list[str]:
        drawn = len(record.ballot.commands) if record.ballot is not None else len(first)
        return await votes_task(runtime_id, request, folder, count, False, drawn)

    async def adopt(winner: Vote, result: Path, executor_changes: list[tree.PathChange]) -> bool:
        return await _lay_winner(runtime_id, winner, result, executor_changes)

    quorum = Quorum(needed=checks.quorum, margin=checks.quorum_margin, max_votes=max(checks.votes_max, len(first)))
    record.ballot = Ballot(commands=first, quorum=quorum, draw=draw, adopt=adopt, batch=checks.votes_batch)
    return record.ballot


async def _lay_winner(runtime_id: str, winner: Vote, result: Path, executor_changes: list[tree.PathChange]) -> bool:
    """The winning group's change set on the folder in place of the executor's, after Law 1's question on what it
    changes that the task does not own; False (nothing changed) when the person says no."""
    run = get_runtime(runtime_id)
    deps, record = run.deps, run.record
    workspace = Path(deps.workspace)
    found = [_law1_change(workspace, c) for c in winner.changes]
    gate = Law1Gate(deps.gate, workspace, record.created)
    what = f"lay the change set the votes agreed on (`{winner.command}`)"
    try:
        await gate.approve_changes(what, found, "")
    except ToolError:
        record.law1_events.append(f"denied: {what}")
        get_run_logger().warning("Law 1: the person did not approve laying the votes' change set; nothing changed")
        return False
    await asyncio.to_thread(lay, workspace, record.before.path, executor_changes, result, list(winner.changes))
    gate.own(found)
    deps.decisions.write("votes_laid", command=winner.command, changes=[c.line() for c in winner.changes])
    get_run_logger().info("the votes' change set was laid on the folder: %s",
                          "; ".join(c.line() for c in winner.changes[:SHOWN_FILES]))
    return True


def on_disk(workspace: Path, before: Path | None) -> list[str]:
    """What the task changed in the folder, as code reads it now: each path, its size and its first line."""
    if before is None:
        return []
    found = tree.changes(tree.state(before), tree.state(workspace))
    lines = []
    for change in found[:SHOWN_FILES]:
        first = next((line.strip() for line in change.head.splitlines() if line.strip()), "")
        lines.append(change.line() + (f": {first[:100]}" if first else ""))
    if len(found) > SHOWN_FILES:
        lines.append(f"… and {len(found) - SHOWN_FILES} more changes")
    return lines


def what_decided(ballot: Ballot | None) -> str:
    """Which votes decided, in one sentence ("" when no vote took part)."""
    if ballot is None or ballot.decision is None:
        return ""
    how = "laid in place of the executor's work" if ballot.adopted else ""
    return f"Decided by votes: {ballot.decision.reason}{'; ' + how if how else ''}."


def with_disk_summary(final: FinalResult, workspace: Path, before: Path | None, ballot: Ballot | None) -> FinalResult:
    """The result's summary: the GGS's own account, then what is on disk as code reads it and what decided it; a
    model's sentence about a file never reaches the person unchecked."""
    lines = on_disk(workspace, before)
    if before is None:
        return final
    disk = ("On disk: " + "; ".join(lines) + ".") if lines else "On disk: nothing in the folder changed."
    decided = what_decided(ballot) if final.directive != "abandon" else ""
    return final.model_copy(update={"summary": " ".join(filter(None, [final.summary.strip(), disk, decided]))})


def unsure_result(final_like: FinalResult, workspace: Path, before: Path, ballot: Ballot) -> FinalResult:
    """The task's result when the votes split: the folder back as the person left it, the alternatives side by
    side (what each group would change), never an accept."""
    executor = next((v for v in ballot.votes if v.source == "executor"), None)
    if executor is not None and executor.changes:
        restore(workspace, before, executor.changes)
    alternatives = []
    for group in ballot.decision.groups:
        members = [ballot.votes[i] for i in group.members]
        alternatives.append({"votes": group.size,
                             "by": ["the executor's work" if v.source == "executor" else v.command for v in members],
                             "would_change": [c.line() for c in members[0].changes]
                             or [("prints " + " ".join(members[0].printed[0].split())[:200]) if members[0].printed
                                 else "nothing"]})
    summary = (f"Unsure: the independent runs of the request disagree ({ballot.decision.reason}). Nothing was "
               f"applied: the folder is as you left it. {len(alternatives)} alternative(s) are in the result.")
    return final_like.model_copy(update={"directive": "unsure", "summary": summary,
                                         "output": {"alternatives": alternatives}, "next_steps": []})
