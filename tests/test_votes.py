"""Execution consensus as pure functions: what agrees, how votes group, and what a quorum decides.

Each task shape is one a real model's runs took: a sum written to a file, a listing under another folder, a mode
change, an answer printed instead of written, an empty file that two wrong commands leave alike.
"""

from __future__ import annotations

import os

import pytest

from artoo.tasks.checks.tree import PathChange
from artoo.tasks.checks.votes import Quorum, Vote, agree, decide, form, group_votes


def wrote(path: str, text: str, tokens: str = "", change: str = "created") -> PathChange:
    """A file a run wrote; ``tokens`` stands for its sorted-words hash (the same words in another layout)."""
    return PathChange(path=path, change=change, size=len(text), digest=f"sha:{text}", head=text, loose=f"loose:{text}",
                      tokens=tokens or f"tokens:{' '.join(sorted(text.split()))}")


def vote(*changes: PathChange, printed: str = "", command: str = "cmd", broken: str = "") -> Vote:
    return Vote(source="vote", command=command, changes=changes, printed=(printed,) if printed else (), broken=broken)


def executor(*changes: PathChange, printed: tuple[str, ...] = ()) -> Vote:
    return Vote(source="executor", changes=changes, printed=printed)


RIGHT = wrote("total.txt", "24.75\n")
WRONG = wrote("total.txt", "0\n")


@pytest.mark.parametrize(("a", "b", "same"), [
    (vote(RIGHT), vote(wrote("total.txt", "24.75\n")), True),
    (vote(RIGHT), vote(WRONG), False),
    # a path and a bare name: where the file lands is form, not substance
    (vote(wrote("reports/q2.txt", "a\nb\n"), PathChange(path="reports", change="created", node="dir")),
     vote(wrote("q2.txt", "a\nb\n")), True),
    # the same lines in another order
    (vote(wrote("names.txt", "b.log\na.log\n")), vote(wrote("names.txt", "a.log\nb.log\n")), True),
    (vote(wrote("names.txt", "a.log\n")), vote(wrote("names.txt", "a.log\nb.log\n")), False),
    # a deletion agrees with a deletion of the same path only
    (vote(PathChange(path="tmp.log", change="deleted")), vote(PathChange(path="tmp.log", change="deleted")), True),
    (vote(PathChange(path="tmp.log", change="deleted")), vote(PathChange(path="old.log", change="deleted")), False),
    # answers printed, not written: the same words
    (vote(printed="3 notes.txt\n"), vote(printed="3  notes.txt"), True),
    (vote(printed="3\n"), vote(printed="4\n"), False),
    # the executor printed the answer inside a longer output
    (executor(printed=("shell: wc -l notes.txt → 3 notes.txt",)), vote(printed="3 notes.txt"), True),
    (executor(printed=("shell: wc -l notes.txt → 4 notes.txt",)), vote(printed="3 notes.txt"), False),
    # one wrote, the other printed
    (vote(RIGHT), vote(printed="24.75"), False),
])
def test_what_agrees(a, b, same):
    assert agree(a, b) is same and agree(b, a) is same


def test_a_mode_change_is_part_of_the_form():
    """A chmod that changes only the mode is a change, and two modes differ."""
    x = PathChange(path="run.sh", change="modified", size=10, digest="d", tokens="t")
    y = x.model_copy()
    if "mode" not in PathChange.model_fields:
        pytest.skip("this tree record holds no mode")
    assert form([x.model_copy(update={"mode": 0o755})]) == form([y.model_copy(update={"mode": 0o755})])
    assert form([x.model_copy(update={"mode": 0o755})]) != form([y.model_copy(update={"mode": 0o644})])


@pytest.mark.parametrize(("cast", "counted", "sizes", "executor_first"), [
    ([executor(RIGHT), vote(WRONG), vote(RIGHT), vote(RIGHT)], 4, [3, 1], True),
    ([executor(WRONG), vote(RIGHT), vote(RIGHT), vote(RIGHT)], 4, [3, 1], False),
    # a vote that ran into an error, one that left only an empty file, one that did nothing: none counts
    ([executor(RIGHT), vote(broken="exit 127"), vote(wrote("total.txt", "")), vote()], 1, [1], True),
    # a tie: the executor's group first
    ([vote(WRONG), executor(RIGHT)], 2, [1, 1], True),
])
def test_votes_group_by_agreement(cast, counted, sizes, executor_first):
    groups = group_votes(cast)
    assert sum(g.size for g in groups) == counted
    assert [g.size for g in groups] == sizes
    assert groups[0].executor is executor_first


QUORUM = Quorum(needed=3, margin=2, max_votes=6)


@pytest.mark.parametrize(("cast", "drawn", "outcome"), [
    # the executor right, the first vote wrong, two more agreeing with the executor: accepted
    ([executor(RIGHT), vote(WRONG), vote(RIGHT), vote(RIGHT)], 3, "accept"),
    # the executor wrong, three votes agreeing among themselves: their change set is adopted
    ([executor(WRONG), vote(RIGHT), vote(RIGHT), vote(RIGHT)], 3, "adopt"),
    # agreeing, but without the lead the margin asks for: draw more
    ([executor(RIGHT), vote(RIGHT), vote(RIGHT), vote(WRONG), vote(WRONG)], 4, "draw"),
    # all different with votes left to draw: draw; with none left: unsure
    ([executor(RIGHT), vote(WRONG), vote(wrote("total.txt", "7\n"))], 2, "draw"),
    ([executor(RIGHT), vote(WRONG), vote(wrote("total.txt", "7\n")), vote(wrote("total.txt", "9\n")),
      vote(wrote("total.txt", "1\n")), vote(wrote("total.txt", "2\n")), vote(wrote("total.txt", "3\n"))], 6,
     "unsure"),
    # the quorum is out of reach with what may still be drawn: unsure now, no call spent
    ([executor(RIGHT), vote(WRONG), vote(wrote("total.txt", "7\n")), vote(wrote("total.txt", "9\n")),
      vote(wrote("total.txt", "1\n")), vote(wrote("total.txt", "2\n"))], 5, "unsure"),
    # two wrong commands that both leave an empty file are no quorum
    ([executor(wrote("total.txt", "")), vote(wrote("total.txt", "")), vote(wrote("total.txt", "")),
      vote(wrote("total.txt", ""))], 6, "unsure"),
])
def test_what_the_quorum_decides(cast, drawn, outcome):
    decision = decide(cast, QUORUM, drawn)
    assert decision.outcome == outcome, decision.reason
    if outcome in ("accept", "adopt"):
        assert decision.winner is decision.groups[0]
        assert decision.winner.executor is (outcome == "accept")
    else:
        assert decision.winner is None


def test_a_smaller_quorum_accepts_what_a_larger_one_does_not():
    cast = [executor(RIGHT), vote(RIGHT), vote(WRONG)]
    assert decide(cast, Quorum(needed=2, margin=1, max_votes=2), 2).outcome == "accept"
    assert decide(cast, Quorum(needed=3, margin=1, max_votes=2), 2).outcome == "unsure"


def test_a_glance_shows_names_sizes_modes_and_first_lines_bounded(tmp_path):
    """What a vote and every role see of the folder: enough to tell which column holds the amounts."""
    from artoo.tasks.tools.found import glance, glance_lines

    (tmp_path / "expenses.csv").write_text("date,item,amount\n2026-01-02,coffee,3.50\nthird line\nfourth\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\x00\x00" + b"x" * 10)
    (tmp_path / ".hidden").write_text("secret\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.txt").write_text("y" * 500 + "\n")
    lines = glance_lines(tmp_path, most=10, lines=2)
    assert lines[:3] == ("expenses.csv (58 bytes)", "  | date,item,amount", "  | 2026-01-02,coffee,3.50")
    assert "  | third line" not in lines and "pic.png (16 bytes)" in lines and "  (binary)" in lines
    assert "run.sh (10 bytes executable)" in lines and not any("hidden" in line for line in lines)
    assert "  | " + "y" * 100 in lines and "  | " + "y" * 101 not in lines
    assert glance_lines(tmp_path, most=1)[-1] == "… and 3 more files"
    assert glance(tmp_path / "missing") == "(the folder does not exist yet)"
    os.mkfifo(tmp_path / "sub" / "pipe")  # a FIFO is named, never opened: opening one blocks
    (tmp_path / "sub" / "link").symlink_to(tmp_path / "sub" / "pipe")
    assert {"sub/pipe (not a regular file)", "sub/link (link)"} <= set(glance_lines(tmp_path))
    (tmp_path / "empty").mkdir()
    assert glance(tmp_path / "empty") == "(the folder is empty)"
