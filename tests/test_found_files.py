"""What R4a is shown of the files a criterion names (tasks/tools/found.py), read from a real folder."""

from __future__ import annotations

import os

import pytest

from artoo.config.contracts import Criterion, ExecutionResult, SubTask
from artoo.tasks.roles import agent_validator
from artoo.tasks.tools.found import absent_names, named_files_now


@pytest.fixture
def folder(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "totals.md").write_text("3 a.txt\n5 b.txt\n8 total\n")
    (ws / "empty.md").write_text("")
    (ws / "sub").mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    return ws


@pytest.mark.parametrize("name, expected", [
    ("totals.md", "totals.md: exists, 24 bytes, 3 lines:\n3 a.txt\n5 b.txt\n8 total\n"),
    ("missing.md", "missing.md: does not exist in {ws}"),
    ("empty.md", "empty.md: exists, empty (0 bytes)"),
    ("sub", "sub: is a directory"),
    ("link.txt", "link.txt: not read (reading refused: {ws}/link.txt (it resolves to {tmp}/secret.txt) "
                 "is outside the allowed roots ({ws}))"),
    ("../secret.txt", "../secret.txt: not read (reading refused: {tmp}/secret.txt is outside the allowed roots "
                      "({ws}))"),
])
def test_a_named_file_as_it_is_now(folder, name, expected):
    assert named_files_now([name], folder) == [expected.format(ws=folder, tmp=folder.parent)]


def test_absent_names_only_what_code_can_see_is_missing(folder):
    """What a validator's pass on a missing file is failed by: only a name code may read and found absent;
    outside the folder or behind a link out of it, code cannot say (never counted absent)."""
    names = ["totals.md", f"{folder}/totals.md", "missing.md", f"{folder}/sub/gone.md", "missing.md",
             "../secret.txt", "../nowhere.txt", "/etc/none.conf", "link.txt", "sub"]
    assert absent_names(names, folder) == ["missing.md", f"{folder}/sub/gone.md"]


def test_each_file_once_the_first_few_and_long_text_cut(folder):
    (folder / "big.md").write_text("x" * 5000)
    shown = named_files_now(["totals.md", "big.md", "totals.md", "empty.md", "missing.md"], folder, chars=100)
    assert [s.split(":")[0] for s in shown] == ["totals.md", "big.md", "empty.md"]
    assert shown[1] == "big.md: exists, 5000 bytes, 1 line:\n" + "x" * 100 + "\n… (cut here: the file has 5000 bytes)"
    (folder / "huge.log").write_bytes(b"y\n" * 40000)
    assert named_files_now(["huge.log"], folder, chars=4) == [
        "huge.log: exists, 80000 bytes, lines not counted:\ny\ny\n\n… (cut here: the file has 80000 bytes)"]
    (folder / "pic.png").write_bytes(b"\x89PNG\r\n" + bytes(100))
    assert named_files_now(["pic.png"], folder) == [
        f"pic.png: exists, binary file {folder}/pic.png: 106 bytes, PNG image; not shown as text"]


def test_the_validator_is_shown_the_named_files_beside_the_tool_calls(folder):
    subtask = SubTask(subtask_id="s1", parent_task_id="t", intent="count lines into totals.md", sequence=1,
                      success_criteria=[Criterion(criterion="The file 'totals.md' exists"),
                                        Criterion(criterion="report.md lists each count")])
    names = agent_validator.named_files(subtask)
    assert names == ["totals.md", "report.md", "totals.md"]
    result = ExecutionResult(subtask_id="s1", status="completed", output="done",
                             tool_calls=["shell: wc -l *.txt >> totals.md → "])
    prompt = agent_validator.messages_for(subtask, result, named_files_now(names, folder))[1]["content"]
    files = prompt.split("Files the criteria name, as they are now")[1]
    assert "totals.md: exists, 24 bytes, 3 lines:\n3 a.txt" in files
    assert f"report.md: does not exist in {folder}" in files
    assert "<<<UNTRUSTED:files now" in files
    assert "Files the criteria name" not in agent_validator.messages_for(subtask, result)[1]["content"]


@pytest.mark.parametrize("content, noted", [
    ("total: $(cat *.txt | wc -l | tr -d ' ')", "$(cat *.txt | wc -l | tr -d ' ')"),  # run t4 (#25), verbatim
    ("home is ${HOME}/x", "${HOME}"),
    ("written by $USER", "$USER"),
    ("3 a.txt\n5 b.txt\n8 total\n", None),
    ("costs $5, see `wc -l`", None),                     # a price and a Markdown code span are not shell
])
def test_write_file_says_when_it_wrote_shell_syntax_literally(tmp_path, content, noted):
    """The write tool's own result is what the model reads next: it says the text was not run."""
    import asyncio

    from artoo.config.settings import load_settings
    from artoo.tasks.tools import ToolBox
    from tests.test_tools import Gate

    ws = tmp_path / "ws"
    ws.mkdir()
    box = ToolBox(load_settings(home=str(tmp_path / "home"), workspace=str(ws)), ws, Gate(False))
    result = asyncio.run(box.call("write_file", {"path": "totals.md", "content": content}))
    assert result.ok and (ws / "totals.md").read_text() == content
    if noted is None:
        assert "write_file runs no shell" not in result.output
    else:
        assert f"the content was written literally, {noted} included: write_file runs no shell" in result.output
