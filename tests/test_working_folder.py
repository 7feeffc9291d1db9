"""R2 and R3 are told the folder the shell starts in: "this folder" in a request means it.

Qwen2.5-Coder-1.5B, not told, planned `locate *.txt` over the whole home with the context "the folder path
is specified in the user's words" (tests/transcripts/, the first llama-server run).
"""

from __future__ import annotations

import pytest

from artoo.config.contracts import Criterion, SubTask, TaskSpec
from artoo.tasks.roles import executor, planner

SPEC = TaskSpec(task_id="count_lines", intent="count the lines of every .txt file in this folder",
                constraints={"scope": "this folder", "deadline": None}, raw_input="count the lines in this folder")
SUB = SubTask(subtask_id="s1", parent_task_id="count_lines", intent="count lines", context="",
              success_criteria=[Criterion(criterion="totals.md exists", mode="verifiable")], sequence=1)


@pytest.mark.parametrize(("build", "workspace", "told"), [
    (lambda ws: planner.messages_for(SPEC, "", None, set(), set(), workspace=ws), "/home/ann/notes", True),
    (lambda ws: planner.messages_for(SPEC, "", None, set(), set(), workspace=ws), "", False),
    (lambda ws: executor.messages_for(SUB, None, ws), "/home/ann/notes", True),
    (lambda ws: executor.messages_for(SUB, None, ws), "", False),
])
def test_the_working_folder_is_in_the_prompt(build, workspace: str, told: bool) -> None:
    text = build(workspace)[-1]["content"]
    assert ("Working folder: /home/ann/notes (the shell starts here" in text) is told
