"""Checks run for a step or a task: each criterion's command, and the plan's reference run, on their views.

Why a module of its own: the fast loop (after each attempt) and the round (after the subtasks) ask the same
question, which criteria code can decide now, and must get the same answer the same way.  A reference run
depends only on its command and the folder as it was, so its run is kept per command and reused.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from artoo.config.contracts import REFERENCE_CRITERION, Criterion
from artoo.tasks.checks import tree
from artoo.tasks.checks.decide import (
    CheckOutcome,
    acts,
    broken_reason,
    from_predicate,
    from_reference,
    misused_comparison,
    suspect_reference,
)
from artoo.tasks.checks.run import Confined, Ran, run_confined, run_reference
from artoo.tasks.checks.votes import Decision, Quorum, Vote, decide
from artoo.tasks.tools import sandbox

__all__ = ["Ballot", "Snapshot", "check_criteria", "confined_from", "existed_before", "take_snapshot", "vote_of"]

Draw = Callable[[int], Awaitable[list[str]]]
"""Asks for up to N more votes; the commands that came (fewer, or none, when the call budget or the model says no)."""
Adopt = Callable[[Vote, Path, list[tree.PathChange]], Awaitable[bool]]
"""Lays a winning vote's change set (from the copy it ran on) on the folder, the executor's own changes given; True
when it was laid (a person may refuse what is irreversible)."""


@dataclass
class Ballot:
    """The task's votes: the commands drawn so far, the quorum, how more are drawn and a winner laid, and the
    last decision (what the run's result reports)."""

    commands: list[str]
    quorum: Quorum = field(default_factory=Quorum)
    draw: Draw | None = None
    adopt: Adopt | None = None
    batch: int = 2
    """Votes drawn at a time when the first ones do not decide."""
    decision: Decision | None = None
    votes: list[Vote] = field(default_factory=list)
    adopted: str = ""
    """The command whose change set was laid on the folder ("" when the executor's work stands)."""

    def probe(self) -> Ballot:
        """The same votes, deciding only: nothing drawn, nothing laid (the executor's after-call probe)."""
        return replace(self, commands=list(self.commands), draw=None, adopt=None,
                       quorum=self.quorum.model_copy(update={"max_votes": len(self.commands)}))


class Snapshot:
    """A copy of the folder as it was at one moment (before the task, or before a step's group), or why none."""

    def __init__(self, path: Path | None, note: str = "") -> None:
        self.path = path
        self.note = note
        """Why there is no copy (too large, no sandbox), for the run's log."""
        self.references: dict[str, Ran] = {}
        """Reference runs on this copy, by command: they depend on nothing else."""
        self.results: dict[str, Path] = {}
        """Per reference command, the folder as its run left it (what a test of the same plan must pass on)."""

    def close(self) -> None:
        """Remove the copy and the reference runs' results."""
        if self.path is not None:
            shutil.rmtree(self.path.parent, ignore_errors=True)
            self.path = None
        self.results.clear()


def confined_from(settings: object) -> Confined:
    """How checks are confined under ``settings`` (bubblewrap when it works here; else no check runs)."""
    checks = settings.checks
    binary = sandbox.find_bwrap() if checks.enabled and getattr(settings.tools, "sandbox", "auto") != "off" else None
    return Confined(bwrap=binary, timeout_s=checks.timeout_s, hidden=(Path(settings.home).expanduser(),),
                    max_bytes=checks.snapshot_max_mb * 1024 * 1024, max_files=checks.snapshot_max_files)


async def take_snapshot(workspace: Path, confined: Confined) -> Snapshot:
    """A copy of ``workspace`` now, within the bounds; a Snapshot with no path and a note when it cannot be had."""
    if confined.bwrap is None:
        return Snapshot(None, "checks cannot run here: " + (sandbox.bwrap_problem() or "they are turned off "
                        "(checks.enabled or tools.sandbox)") + "; a model judges the criteria, so the run can end "
                        "done, unverified at best, never accepted")
    scratch = Path(tempfile.mkdtemp(prefix="artoo-before-"))
    try:
        await asyncio.to_thread(tree.copy_tree, workspace, scratch / "folder", confined.max_bytes, confined.max_files)
    except (tree.TooLarge, OSError) as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        return Snapshot(None, f"no copy of the folder as it was ({exc}): checks that write are judged by the model")
    return Snapshot(scratch / "folder")


async def _executor_changes(before: Path, workspace: Path) -> list[tree.PathChange]:
    was, now = await asyncio.gather(asyncio.to_thread(tree.state, before), asyncio.to_thread(tree.state, workspace))
    return tree.changes(was, now)


async def _reference(command: str, workspace: Path, before: Snapshot, confined: Confined) -> Ran:
    if command not in before.references:
        keep = before.path.parent / f"reference-{len(before.references)}"
        before.references[command] = await run_reference(command, workspace, before.path, confined, keep=keep)
        if keep.exists():
            before.results[command] = keep
    return before.references[command]


def vote_of(ran: Ran) -> Vote:
    """A drawn command's run as a vote: what it changed and printed, or why it says nothing."""
    broken = broken_reason(ran) or ("" if ran.changes or ran.output.strip() else "it changed and printed nothing")
    return Vote(source="vote", command=ran.command, changes=tuple(ran.changes), printed=(ran.output,),
                broken=broken)


async def _consensus(criterion: Criterion, workspace: Path, before: Snapshot, confined: Confined,
                     printed: list[str], ballot: Ballot) -> CheckOutcome:
    """The votes on the whole request, the executor's work one of them: drawn until a group decides or the
    quorum's budget is spent, a winner other than the executor's laid on the folder (``ballot.adopt``)."""
    base = {"criterion": criterion.criterion, "command": criterion.check.strip(), "form": "reference"}
    executor_changes = await _executor_changes(before.path, workspace)
    executor = Vote(source="executor", changes=tuple(executor_changes), printed=tuple(printed))
    while True:
        runs = [await _reference(command, workspace, before, confined) for command in ballot.commands]
        cast = [executor, *(vote_of(ran) for ran in runs)]
        decision = decide(cast, ballot.quorum, len(ballot.commands))
        if decision.outcome != "draw" or ballot.draw is None:
            break
        wanted = min(ballot.batch, ballot.quorum.max_votes - len(ballot.commands))
        drawn = await ballot.draw(wanted)
        if not drawn:  # the budget or the model gave none: what was cast is all there is
            cut = ballot.quorum.model_copy(update={"max_votes": len(ballot.commands)})
            decision = decide(cast, cut, len(ballot.commands))
            break
        ballot.commands.extend(drawn)
    ballot.decision, ballot.votes = decision, cast
    evidence = _groups_text(cast, decision)
    if decision.outcome == "accept":
        return CheckOutcome(status="met", reason=f"votes: {decision.reason}", evidence=evidence, **base)
    if decision.outcome == "adopt":
        winner = cast[decision.groups[0].members[0]]
        result = before.results.get(winner.command)
        if ballot.adopt is not None and result is not None and await ballot.adopt(winner, result, executor_changes):
            ballot.adopted = winner.command
            return CheckOutcome(status="met", reason=f"votes: {decision.reason}; their change set was laid on the "
                                "folder in place of the executor's", evidence=evidence, **base)
        # never the winning commands: an executor shown them would copy one, and the votes stop being independent
        return CheckOutcome(status="unmet", reason=f"votes: {decision.reason}; their change set was not laid",
                            **base)
    if decision.outcome == "draw":  # a probe, which draws nothing: not decided yet
        return CheckOutcome(status="unmet", reason=f"votes: {decision.reason}", evidence=evidence, **base)
    return CheckOutcome(status="unsure", reason=f"votes: {decision.reason}", evidence=evidence, **base)


def _groups_text(cast: list[Vote], decision: Decision) -> str:
    """Each group of the decision as the votes in it and what they changed (code's words, never a model's)."""
    lines = []
    for number, group in enumerate(decision.groups[:4], 1):
        sample = cast[group.members[0]]
        who = ", ".join("the executor's work" if cast[i].source == "executor" else f"`{cast[i].command}`"
                        for i in group.members)
        did = "; ".join(c.line() for c in sample.changes[:6]) or "printed " + " ".join(
            (sample.printed[0] if sample.printed else "").split())[:160]
        lines.append(f"group {number} ({group.size} votes: {who}): {did}")
    return "\n".join(lines)


async def _one(criterion: Criterion, workspace: Path, before: Snapshot, confined: Confined,
               printed: list[str], task_before: Snapshot, reference_result: Path | None = None,
               ballot: Ballot | None = None, voted: bool = False) -> CheckOutcome:
    """One criterion's outcome.  ``voted``: the run's votes decide the request, so a check that does the work
    instead of testing it is one more sample, never a veto on its own (two samples that differ say only that one
    of them is wrong): it is left undecided, for the votes' quorum to cover."""
    command = criterion.check.strip()
    if criterion.criterion == REFERENCE_CRITERION:  # the whole request: from the folder as it was before the task
        before = task_before
        if before.path is None:
            return CheckOutcome(criterion=criterion.criterion, command=command, status="broken", form="reference",
                                reason=before.note or "no copy of the folder as it was")
        if ballot is not None:
            return await _consensus(criterion, workspace, before, confined, printed, ballot)
        ran = await _reference(command, workspace, before, confined)
        return from_reference(criterion.criterion, ran, await _executor_changes(before.path, workspace), whole=True,
                              printed=printed)
    misused = misused_comparison(command)
    if misused is not None:
        return CheckOutcome(criterion=criterion.criterion, command=command, status="broken", reason=misused)
    after = await run_confined(command, workspace, confined)
    if after.wrote or (after.exit_code != 0 and acts(command)):  # an action: what it does on a copy is the test
        if before.path is None:
            return CheckOutcome(criterion=criterion.criterion, command=command, status="broken", form="reference",
                                reason="the check writes, and " + (before.note or "no copy of the folder is kept"))
        ran = await _reference(command, workspace, before, confined)
        outcome = from_reference(criterion.criterion, ran, await _executor_changes(before.path, workspace),
                                 whole=False)
        if voted and outcome.status == "unmet":
            return outcome.model_copy(update={"status": "judge", "reason": "it does the work instead of testing it, "
                                              "and one more run that differs is no proof: the votes decide ("
                                              + outcome.reason + ")"})
        return outcome
    was = theirs = None
    if after.exit_code == 0 and before.path is not None:
        was = await run_confined(command, workspace, confined, source=before.path)
    if reference_result is not None and broken_reason(after) is None:
        theirs = await run_confined(command, workspace, confined, source=reference_result)
    outcome = from_predicate(criterion.criterion, after, was, theirs)
    if outcome.status == "met" and theirs is not None and theirs.exit_code != 0 and broken_reason(theirs) is None:
        return outcome.model_copy(update={"refutes": True})
    return outcome


async def check_criteria(criteria: list[Criterion], workspace: Path, before: Snapshot, confined: Confined,
                         printed: list[str] = (), task_before: Snapshot | None = None,
                         ballot: Ballot | None = None) -> list[CheckOutcome]:
    """The outcome of every criterion that carries a check, in order (none when checks cannot run here).

    ``before``: the folder as it was before the step's group (for task criteria, before the task);
    ``task_before``: before the task, where the plan's reference run starts (default ``before``);
    ``printed``: what the run's tools printed and its answers said (a reference that answers by printing)."""
    if confined.bwrap is None:
        return []
    start = task_before or before
    checked = [c for c in criteria if c.check.strip()]
    references = [c for c in checked if c.criterion == REFERENCE_CRITERION]
    done = {id(c): await _one(c, workspace, before, confined, list(printed), start, ballot=ballot)
            for c in references}
    result = next((start.results.get(c.check.strip()) for c in references if done[id(c)].status != "broken"), None)
    if ballot is not None:  # the tests are also run on what the winning group left, when a group won
        result = _winning_result(ballot, start)
    for c in checked:
        if id(c) not in done:
            done[id(c)] = await _one(c, workspace, before, confined, list(printed), start, result,
                                     voted=ballot is not None)
    refuting = [o.criterion for o in done.values() if o.refutes]
    for c in references:
        if refuting and ballot is None and done[id(c)].status == "unmet":
            done[id(c)] = suspect_reference(done[id(c)], refuting)
    return [done[id(c)] for c in checked]


def _winning_result(ballot: Ballot, start: Snapshot) -> Path | None:
    """The copy a vote of the winning group ran on (one that is not the executor's work), if a group won."""
    winner = ballot.decision.winner if ballot.decision is not None else None
    if winner is None:
        return None
    commands = [ballot.votes[i].command for i in winner.members if ballot.votes[i].source == "vote"]
    return next((start.results[c] for c in commands if c in start.results), None)


def existed_before(names: list[str], workspace: Path, before: Snapshot | None) -> set[str] | None:
    """Which of ``names`` (as criteria write them) existed in the folder before the task; None when no copy was
    kept.  A name outside the folder counts as existing (no copy can tell, and absence is then not the run's)."""
    if before is None or before.path is None:
        return None
    root = Path(workspace).expanduser().resolve()
    found = set()
    for name in names:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else root / path
        try:
            rel = path.resolve().relative_to(root)
        except ValueError:
            found.add(name)
            continue
        if (before.path / rel).exists() or (before.path / rel).is_symlink():
            found.add(name)
    return found
