"""Law 1 by effect, the pure half: which observed changes need a question (table-driven)."""

from __future__ import annotations

import pytest

from artoo.tasks.law1.changes import Change, after_commit, rule

WS = "/w"


def ch(kind: str, path: str, source: str | None = None, is_dir: bool = False) -> Change:
    return Change(kind=kind, path=path, source=source, is_dir=is_dir, size=1, old_size=1, old_mode=0o644,
                  new_mode=0o600)


@pytest.mark.parametrize(("change", "created", "asks"), [
    (ch("created", "/w/new.txt"), set(), False),
    (ch("created", "/w/sub/deep/new.txt"), set(), False),
    (ch("modified", "/w/summary.md"), {"/w/summary.md"}, False),  # the task's own file
    (ch("modified", "/w/summary.md"), set(), True),  # existed before the task
    (ch("deleted", "/w/keep.txt"), set(), True),
    (ch("deleted", "/w/cleanup.sh"), {"/w/cleanup.sh"}, False),
    (ch("deleted", "/w/build/a.o"), {"/w/build"}, False),  # inside a directory the task created
    (ch("deleted", "/w/build", is_dir=True), {"/w/build/a.o"}, True),  # the directory itself was there before
    (ch("mode", "/w/run.sh"), set(), True),
    (ch("mode", "/w/run.sh"), {"/w/run.sh"}, False),
    (ch("renamed", "/w/b.txt", source="/w/a.txt"), set(), True),
    (ch("renamed", "/w/b.txt", source="/w/a.txt"), {"/w/a.txt"}, False),
    (ch("created", "/elsewhere/x"), set(), True),  # outside the workspace
    (ch("modified", "/elsewhere/x"), {"/elsewhere/x"}, True),
    (ch("renamed", "/elsewhere/b", source="/w/a"), {"/w/a"}, True),
    (ch("created", "/wx/new.txt"), set(), True),  # a sibling with the same prefix is not the workspace
])
def test_rule_asks_only_about_what_existed_before_the_task(change: Change, created: set[str], asks: bool) -> None:
    ruling = rule([change], created, WS)
    assert (ruling.ask == [change], ruling.quiet == [change]) == (asks, not asks)
    assert len(ruling.reasons) == (1 if asks else 0)


def test_one_question_lists_every_change_that_needs_it() -> None:
    changes = [ch("created", "/w/new"), ch("deleted", "/w/a"), ch("modified", "/w/b"), ch("modified", "/w/own")]
    ruling = rule(changes, {"/w/own"}, WS)
    assert [c.path for c in ruling.ask] == ["/w/a", "/w/b"]
    assert [c.path for c in ruling.quiet] == ["/w/new", "/w/own"]
    assert "deletes something that existed before the task" in ruling.reasons[0]
    assert "overwrites" in ruling.reasons[1]


@pytest.mark.parametrize(("changes", "before", "after"), [
    ([ch("created", "/w/a")], set(), {"/w/a"}),
    ([ch("renamed", "/w/b", source="/w/a")], {"/w/a"}, {"/w/b"}),
    ([ch("deleted", "/w/d", is_dir=True)], {"/w/d", "/w/d/x", "/w/e"}, {"/w/e"}),
    ([ch("modified", "/w/a"), ch("mode", "/w/a")], {"/w/a"}, {"/w/a"}),
])
def test_after_commit_tracks_what_the_task_owns(changes: list[Change], before: set[str], after: set[str]) -> None:
    assert after_commit(changes, before) == after


@pytest.mark.parametrize(("change", "line"), [
    (Change(kind="created", path="/w/a", size=3), "created /w/a (3 B)"),
    (Change(kind="deleted", path="/w/d", is_dir=True, old_size=2048), "deleted /w/d/ (2.0 KB in total)"),
    (Change(kind="modified", path="/w/a", size=6, old_size=3), "modified /w/a (3 B → 6 B)"),
    (Change(kind="renamed", path="/w/b", source="/w/a", size=3), "renamed /w/a → /w/b (3 B)"),
    (Change(kind="mode", path="/w/a", old_mode=0o644, new_mode=0o755), "mode of /w/a: 0644 → 0755"),
])
def test_each_change_reads_as_one_line(change: Change, line: str) -> None:
    assert change.line() == line
