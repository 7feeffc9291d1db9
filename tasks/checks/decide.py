"""What a check's run means for its criterion: met, unmet, broken (a plan defect), or a question for the judge.

Why pure: these rules decide verdicts a model cannot overrule, so each is a plain function of recorded runs,
table-tested.  The rules, each keyed on what a command did, never on the words of a criterion:

- a read-only test that exits 0 meets its criterion, unless it also exits 0 on the folder as it was before the
  work (then it cannot tell the work from no work, and the judge decides with its output);
- one that exits 1 (or another small failure code) leaves it unmet, with its output as the reason;
- exit 2 (bash's syntax error, ``test``'s and ``grep``'s usage error), 126/127 (not runnable, unknown program), a
  signal or a timeout mean the check itself is broken: a defect of the plan, not of the executor's work (but a
  ``grep`` or ``cmp`` that exits 2 because the file it reads is missing did test the folder: unmet);
- a check that tries to write is a command that does the work: it is run on a copy of the folder as it was and
  what it wrote is compared with what the executor left at those paths;
- the plan's reference run is compared with the executor's whole change set; when it changed nothing, what it
  printed must appear in what the run's tools printed or its answer said.

Agreement is a verified pass; a difference in paths, kinds, or the words and numbers a file holds a plain fail; the
same words and numbers laid out differently go to the judge with both files side by side (the one question a small
model answers well: is this the same answer in another format or order?).
"""

from __future__ import annotations

import errno
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict

from artoo.config.contracts import REFERENCE_CRITERION, Criterion, CriterionMode, CriterionVerdict
from artoo.tasks.checks import tree
from artoo.tasks.checks.run import Ran
from artoo.tasks.law1.core import Ctx
from artoo.tasks.law1.rules import judge_script
from artoo.tasks.shell.parse import ParseError, parse, strip_prefix

__all__ = ["BROKEN_EXITS", "CheckOutcome", "broken_reason", "covered_by_reference", "empty_handed", "from_predicate",
           "from_reference", "misused_comparison", "printed_answer", "settles", "split_by_checks", "suspect_reference",
           "verdict_of"]

BROKEN_EXITS = frozenset({2, 126, 127})
"""Exit codes that say the check could not test anything (syntax or usage error; not runnable; not found)."""
MISSING_FILE = os.strerror(errno.ENOENT)
"""How a program says a file it reads is not there (messages are in English: sandbox.scrubbed_env): ``grep`` and
``cmp`` then exit 2, and the check did test the folder: the file the criterion needs is missing (unmet)."""
SHOWN_CHARS = 600
"""Characters of a check's output quoted in a verdict's evidence."""

Status = Literal["met", "unmet", "broken", "judge", "unsure"]
"""unsure: the votes on the whole request split and no group reached the quorum (never the judge's to decide)."""


class CheckOutcome(BaseModel):
    """A criterion's check as code ran it: the outcome, and the evidence a verdict, a judge or a correction quotes."""

    model_config = ConfigDict(extra="forbid")

    criterion: str
    command: str
    status: Status
    form: Literal["predicate", "reference"] = "predicate"
    """predicate: a read-only test; reference: a command that does the work, compared by its changes."""
    reason: str
    """One line: what code saw."""
    evidence: str = ""
    """The check's output, or both change sets side by side."""
    comparison: tree.Comparison | None = None
    refutes: bool = False
    """A read-only test that the executor's result passes and the plan's reference run's result fails: between the
    two things the planner wrote, the reference is then the suspect one."""

    def note(self) -> str:
        """What a judge is told under the criterion when the check did not decide it (both files, side by side)."""
        head = ("Its check could not run, so judge it yourself" if self.status == "broken"
                else "Its check could not decide it alone")
        shown = tree.side_by_side(self.comparison) if self.comparison is not None else self.evidence
        detail = f"\n{shown}" if shown else ""
        named = "an independent run of the request" if self.form == "reference" else f"`{self.command}`"
        return f"{head}: {named}: {self.reason}.{detail}"

    def line(self) -> str:
        """How the decision log and the run's log say it."""
        return f"check {self.status}: {self.criterion} · `{self.command}` · {self.reason}"


def _shown(text: str) -> str:
    text = text.strip()
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def _ended(ran: Ran) -> str:
    return "timed out" if ran.timed_out else f"exit {ran.exit_code}"


def broken_reason(ran: Ran) -> str | None:
    """Why a run says nothing about the folder (None when it does)."""
    if ran.timed_out:
        return "the check timed out"
    if ran.exit_code is None or ran.exit_code >= 128:
        return f"the check was killed ({_ended(ran)})"
    if ran.exit_code in (126, 127):
        return f"the check could not run: exit {ran.exit_code} (a program that is missing or cannot be executed)"
    if ran.exit_code == 2 and MISSING_FILE not in ran.output:
        return "the check could not test anything: exit 2 (a syntax error or a bad argument)"
    return None


COMPARISONS = frozenset({"==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
"""Operators that compare only inside ``test``/``[``/``[[``: given to a program that reads files, they are names."""
FILE_ARGUMENTS = frozenset({"wc", "ls", "find", "cat", "head", "tail", "sort", "uniq", "du", "stat"})
"""Programs whose arguments are files or options, never a pattern: a comparison word given to one is a file name."""


def misused_comparison(command: str) -> str | None:
    """Why a check tests nothing when it writes a comparison as a program's argument (``ls x | wc -l == 3``: ``wc``
    reads files named ``==`` and ``3``), else None."""
    try:
        script = parse(command)
    except ParseError:
        return None
    for simple in script.commands:
        words = strip_prefix(simple.words)
        if words and words[0] in FILE_ARGUMENTS and COMPARISONS & set(words[1:]):
            return (f"`{' '.join(words[:4])}` gives {sorted(COMPARISONS & set(words[1:]))[0]!r} to {words[0]} as an "
                    "argument: a comparison works only inside test or [ ], so the check tests nothing")
    return None


def acts(command: str) -> bool:
    """Whether a check is an action, not a test: Law 1's reading finds a command in it that may change files
    (``find . -name '*.csv' -exec cp {} backup/ \\;``).  A small model asked for a test often writes the action
    instead; failing on a read-only view, it says nothing about the work, so it is run as a reference."""
    return any(d.category == "may change" for d in judge_script(command, Ctx()))


def from_predicate(criterion: str, after: Ran, before: Ran | None = None, reference: Ran | None = None
                   ) -> CheckOutcome:
    """A read-only test's outcome from its run on the folder now and, when kept, on the folder as it was and on
    the folder as the plan's reference run left it.

    Two things the same planner wrote must agree before either counts against the executor: a test that also
    fails on the reference run's result is more likely wrong than the work (a small planner writes tests such as
    ``ls x | wc -l == 3``, which no folder passes), so it is broken, and the judge decides."""
    base = {"criterion": criterion, "command": after.command, "evidence": _shown(after.output)}
    broken = broken_reason(after)
    if broken:
        return CheckOutcome(status="broken", reason=broken, **base)
    if after.exit_code == 0:
        if before is not None and before.exit_code == 0 and not before.wrote:
            return CheckOutcome(status="judge", reason="it passes on the folder as it was before the work too, so "
                                "it cannot tell the work from no work", **base)
        return CheckOutcome(status="met", reason="exit 0", **base)
    if reference is not None and reference.exit_code != 0:
        return CheckOutcome(status="broken", reason=f"exit {after.exit_code}, and it fails on the result of the "
                            "plan's own reference run too, so the check is more likely wrong than the work", **base)
    return CheckOutcome(status="unmet", reason=f"exit {after.exit_code}", **base)


def from_reference(criterion: str, ran: Ran, executor: list[tree.PathChange], *, whole: bool,
                   printed: list[str] = ()) -> CheckOutcome:
    """A command that does the work, run on a copy of the folder as it was, against what the executor changed.

    ``whole``: compare whole change sets (the plan's reference run); else only the paths the command wrote (a
    criterion's check that writes).  ``printed``: what the run's tools printed and its answers said, for a
    reference that changed nothing and answered by printing."""
    base = {"criterion": criterion, "command": ran.command, "form": "reference"}
    broken = broken_reason(ran)
    if broken:
        return CheckOutcome(status="broken", reason=broken.replace("the check", "the reference run"),
                            evidence=_shown(ran.output), **base)
    if not ran.changes:
        if whole and ran.output.strip():
            return printed_answer(criterion, ran, printed)
        return CheckOutcome(status="broken", reason="run on a copy of the folder as it was, it changed nothing"
                            + ("" if whole else " (it wrote nowhere but where it may not)"),
                            evidence=_shown(ran.output), **base)
    scope = None if whole else {c.path for c in ran.changes}
    comparison = tree.compare(ran.changes, executor, scope)
    if comparison.outcome == "agree" and empty_handed(ran.changes):
        return CheckOutcome(status="judge", reason="both runs left what they wrote empty: agreeing on nothing is no "
                            "evidence of the work", evidence=tree.side_by_side(comparison), comparison=comparison,
                            **base)
    status: Status = {"agree": "met", "paths": "unmet", "values": "unmet", "layout": "judge"}[comparison.outcome]
    reason = {"agree": "the executor's changes agree with the reference run's",
              "paths": "the executor's changes differ from the reference run's in which paths changed",
              "values": "the same paths changed, but some files hold other words or numbers than the reference run's",
              "layout": "the same paths changed and hold the same words and numbers, laid out differently"
              }[comparison.outcome]
    return CheckOutcome(status=status, reason=reason, evidence=tree.side_by_side(comparison, reveal=False),
                        comparison=comparison, **base)


def suspect_reference(outcome: CheckOutcome, refuting: list[str]) -> CheckOutcome:
    """A reference run that disagrees with the executor while the plan's own tests pass the executor's result and
    fail the reference's: the reference is more likely wrong than the work, so the judge decides (a small
    planner wrote ``ls logs/*.log | grep ERROR`` as the reference of "list the logs that contain ERROR")."""
    said = "; ".join(refuting)
    return outcome.model_copy(update={"status": "broken", "reason": "it disagrees with the executor's result, and "
                                      f"the plan's own checks of {said} pass the executor's result and fail the "
                                      "reference's: the reference is more likely wrong than the work"})


def empty_handed(changes: list[tree.PathChange]) -> bool:
    """Whether every file a run created or changed is empty (folders and deletions aside, at least one file).

    Why: most wrong commands print nothing (a grep for a name in a listing, a filter that matches no line), so an
    executor trying command after command will sooner or later leave the same empty file as a wrong reference
    run did, and so agree with it."""
    files = [c for c in changes if c.node == "file" and c.change != "deleted"]
    return bool(files) and all(c.size == 0 for c in files)


def _folded(text: str) -> str:
    return " ".join(text.split())


def printed_answer(criterion: str, ran: Ran, printed: list[str]) -> CheckOutcome:
    """A reference that answered by printing: met when what it printed appears in what the run printed or said."""
    want = _folded(ran.output)
    base = {"criterion": criterion, "command": ran.command, "form": "reference"}
    if any(want in _folded(text) for text in printed):
        return CheckOutcome(status="met", reason="what the reference run printed appears in the run's output",
                            evidence=_shown(ran.output), **base)
    return CheckOutcome(status="judge", reason="the reference run printed an answer the run's output does not hold",
                        evidence=f"The reference run printed:\n{_shown(ran.output)}", **base)


def verdict_of(outcome: CheckOutcome, mode: CriterionMode = "verifiable") -> CriterionVerdict | None:
    """The verdict a check decides (None when the judge must: a broken check, or a question of layout).

    A verdict's evidence reaches the executor's next attempt and the planner, so a reference run is never named
    by its command there: an executor that was shown it ran it word for word, and agreed with it."""
    named = "an independent run of the request" if outcome.form == "reference" else f"check `{outcome.command}`"
    check = "" if outcome.form == "reference" else outcome.command
    if outcome.status == "met":
        evidence = f"{named}: {outcome.reason}"
        return CriterionVerdict(criterion=outcome.criterion, verdict="pass", evidence=evidence, mode=mode, by="check",
                                check=check)
    if outcome.status in ("unmet", "unsure"):
        detail = f"\n{outcome.evidence}" if outcome.evidence else ""
        return CriterionVerdict(criterion=outcome.criterion, verdict="fail", failure_class="logical", mode=mode,
                                evidence=f"{named}: {outcome.reason}{detail}", by="check", check=check)
    return None


COVERED = "the changes agree with an independent run of the request (the plan's reference run), which meets it"
"""The evidence of a verifiable criterion with no check of its own, decided by the reference run's agreement."""


def covered_by_reference(criteria: list[Criterion],
                         decided: dict[str, CriterionVerdict]) -> dict[str, CriterionVerdict]:
    """The verdicts ``decided`` plus, when the independent runs of the request agreed with the work, a pass for every
    verifiable criterion no check decided (none, broken, or unable to tell): the result equals what independent runs
    leave, and a check that could not decide is the plan's defect, never a judge's veto.  Plausible criteria stay
    the judge's; a check that failed still rejects."""
    reference = decided.get(REFERENCE_CRITERION)
    if reference is None or reference.verdict != "pass":
        return dict(decided)
    covered = {c.criterion: CriterionVerdict(criterion=c.criterion, verdict="pass", evidence=COVERED, mode=c.mode,
                                             by="check")
               for c in criteria if c.criterion not in decided and c.mode == "verifiable"}
    return {**decided, **covered}


def settles(criteria: list[Criterion]) -> bool:
    """Whether checks alone can decide every criterion: each has a check, or is verifiable beside a reference run."""
    referenced = any(c.criterion == REFERENCE_CRITERION and c.check.strip() for c in criteria)
    return bool(criteria) and all(c.check.strip() or (referenced and c.mode == "verifiable") for c in criteria)


def split_by_checks(criteria: list[Criterion], outcomes: list[CheckOutcome]
                    ) -> tuple[dict[str, CriterionVerdict], list[Criterion], dict[str, str]]:
    """What the checks decided (by criterion, the reference run's coverage included), the criteria left for the
    judge in plan order, and what the checks found about those (the judge's notes): one rule for a step and a
    task alike."""
    modes = {c.criterion: c.mode for c in criteria}
    decided = covered_by_reference(criteria, {
        o.criterion: v for o in outcomes if (v := verdict_of(o, modes.get(o.criterion, "verifiable")))})
    pending = [c for c in criteria if c.criterion not in decided]
    notes = {o.criterion: o.note() for o in outcomes if o.criterion not in decided}
    return decided, pending, notes
