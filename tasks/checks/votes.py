"""Execution consensus: independent commands for one request, each run on its own copy, grouped by what they leave.

Why: one sample of a weak model compared with another says only that at least one is wrong; several independent
samples that leave the same folder are evidence, because wrong answers rarely agree while right ones do (MBR-exec,
AlphaCode's clustering).  The executor's work is one vote among them, never the referee, and neither is any single
command.  Pure: a vote is a typed record of a run code made; grouping and the decision are functions of the votes
and the quorum, table-tested.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from artoo.tasks.checks.tree import PathChange

__all__ = ["Decision", "Group", "Quorum", "Vote", "agree", "decide", "form", "group_votes"]

VoteSource = Literal["executor", "vote"]
Outcome = Literal["accept", "adopt", "draw", "unsure"]


class Vote(BaseModel):
    """One run's answer to the request: what it changed on its copy, what it printed, or why it says nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: VoteSource
    command: str = ""
    """The command that was run ("" for the executor, whose work is many calls)."""
    changes: tuple[PathChange, ...] = ()
    printed: tuple[str, ...] = ()
    """What it printed: one text for a vote, every recorded call's output for the executor."""
    broken: str = ""
    """Why the run says nothing about the request (it failed to run, or did and printed nothing); "" when it does."""

    @property
    def counts(self) -> bool:
        """Whether the vote takes part: it ran, and what it left is not nothing (empty files agree too easily)."""
        return not self.broken and (bool(self.changes) or any(p.strip() for p in self.printed)) \
            and not _empty_handed(self.changes)


def _empty_handed(changes: Sequence[PathChange]) -> bool:
    """Every file it wrote is empty: most wrong commands print nothing, so empty files agree without meaning it."""
    files = [c for c in changes if c.node == "file" and c.change != "deleted"]
    return bool(files) and all(c.size == 0 for c in files)


def _shape(change: PathChange) -> tuple:
    """One change in the form two runs may differ in without differing in substance: where in the folder a file
    lands (``reports/q2.txt`` or ``q2.txt``), and its text's order, spacing and layout (the sorted-words hash)."""
    content = change.tokens or change.digest
    mode = getattr(change, "mode", None)
    return (change.change, change.node, os.path.basename(change.path), content if change.change != "deleted" else "",
            mode if change.change != "deleted" else None)


def form(changes: Sequence[PathChange]) -> frozenset:
    """A change set's form: each change's shape, a created folder left out when a created file lies in it (the
    folder is then only where the file went)."""
    holders = {os.path.dirname(c.path) for c in changes if c.node != "dir" and c.change != "deleted"}
    kept = [c for c in changes
            if not (c.node == "dir" and c.change == "created" and any(h == c.path or h.startswith(c.path + "/")
                                                                      for h in holders))]
    return frozenset(_shape(c) for c in kept)


def _folded(text: str) -> str:
    return " ".join(text.split())


def agree(a: Vote, b: Vote) -> bool:
    """Whether two votes answer the request the same way: the same change-set form, or (neither changing anything)
    the same printed answer, which the executor may have printed inside a longer output."""
    if a.changes or b.changes:
        return bool(a.changes) and bool(b.changes) and form(a.changes) == form(b.changes)
    left = [_folded(p) for p in a.printed if p.strip()]
    right = [_folded(p) for p in b.printed if p.strip()]
    if a.source == "vote" and b.source == "vote":
        return sorted(left[0].split()) == sorted(right[0].split()) if left and right else False
    answer, outputs = (left, right) if a.source == "vote" else (right, left)
    return bool(answer) and any(answer[0] in text for text in outputs)


class Group(BaseModel):
    """Votes that agree, by their index in the list decided on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    members: tuple[int, ...]
    executor: bool = False
    """The executor's work is in it."""

    @property
    def size(self) -> int:
        return len(self.members)


def group_votes(votes: Sequence[Vote]) -> list[Group]:
    """The counted votes in groups of agreement, largest first (the executor's group first on a tie)."""
    groups: list[list[int]] = []
    for index, vote in enumerate(votes):
        if not vote.counts:
            continue
        home = next((g for g in groups if agree(votes[g[0]], vote)), None)
        if home is None:
            groups.append([index])
        else:
            home.append(index)
    made = [Group(members=tuple(g), executor=any(votes[i].source == "executor" for i in g)) for g in groups]
    return sorted(made, key=lambda g: (-g.size, not g.executor))


class Quorum(BaseModel):
    """How many agreeing votes accept, by how many the leading group must lead, and how many votes may be drawn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    needed: int = Field(3, ge=1)
    """Votes in the leading group (the executor's work counts as one)."""
    margin: int = Field(2, ge=1)
    """By how many votes the leading group must outnumber the next one."""
    max_votes: int = Field(6, ge=0)
    """Most commands drawn for one task (the executor's work aside)."""


class Decision(BaseModel):
    """What the votes decide: accept the executor's work, adopt another group's, draw more votes, or stay unsure."""

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    groups: list[Group] = Field(default_factory=list)
    counted: int = 0
    """Votes that took part."""
    reason: str

    @property
    def winner(self) -> Group | None:
        return self.groups[0] if self.outcome in ("accept", "adopt") else None


def decide(votes: Sequence[Vote], quorum: Quorum, drawn: int) -> Decision:
    """The decision on ``votes`` when ``drawn`` commands were drawn so far (more may be drawn up to the quorum's
    ``max_votes``): a group that reaches the quorum and leads by the margin decides; else draw, else unsure."""
    groups = group_votes(votes)
    counted = sum(g.size for g in groups)
    top = groups[0].size if groups else 0
    second = groups[1].size if len(groups) > 1 else 0
    tally = f"{top} of {counted} counted votes agree" + (f", the next group has {second}" if second else "")
    base = {"groups": groups, "counted": counted}
    if groups and top >= quorum.needed and top - second >= quorum.margin:
        if groups[0].executor:
            return Decision(outcome="accept", reason=f"{tally}, the executor's work among them", **base)
        return Decision(outcome="adopt", reason=f"{tally}, not the executor's work", **base)
    if drawn < quorum.max_votes and top + quorum.max_votes - drawn >= quorum.needed:
        return Decision(outcome="draw", reason=f"{tally}: below the quorum of {quorum.needed} with a lead of "
                        f"{quorum.margin}", **base)
    return Decision(outcome="unsure", reason=f"{tally}: no group reached the quorum of {quorum.needed} with a lead "
                    f"of {quorum.margin} within {quorum.max_votes} drawn votes", **base)


def ends_unsure(decision: Decision | None, directive: str | None) -> bool:
    """Whether a task ends unsure: its votes split with no quorum, and the GGS did not accept on other evidence
    (``directive``: the GGS's final directive this round, None while it replans)."""
    return decision is not None and decision.outcome == "unsure" and directive != "accept"
