"""The executor is told only about the tools it is offered: its prompt is rendered from the toolbox's served tools,
so a blocked tool, and the web search a machine without network cannot serve, are never named to it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from artoo.config.contracts import Criterion, SubTask
from artoo.config.settings import load_settings
from artoo.tasks.llm.output.modes import tools_note
from artoo.tasks.roles import executor
from artoo.tasks.tools.box import ToolBox
from artoo.tasks.tools.models import Blocks, Confinement
from tests.test_tools import Gate

SUBTASK = SubTask(subtask_id="s1", parent_task_id="t", intent="count the lines of notes.txt into count.txt",
                  success_criteria=[Criterion(criterion="count.txt holds the count")])
OFFLINE = "https://search.invalid/html/"
"""A search service whose host never resolves (the reserved ``.invalid`` name): a machine with no network."""


def box(tmp_path: Path, blocked: frozenset[str]) -> ToolBox:
    settings = load_settings(home=str(tmp_path / "home"), workspace=str(tmp_path / "ws"))
    return ToolBox(settings, tmp_path / "ws", Gate(False), Blocks(tools=blocked), Confinement(search_url=OFFLINE))


@pytest.mark.parametrize("mode", ["native", "content"])
def test_a_blocked_tool_and_an_unreachable_search_are_never_named(tmp_path: Path, mode: str):
    toolbox = box(tmp_path, frozenset({"glob"}))
    specs = toolbox.specs()
    messages = executor.messages_for(SUBTASK, None, str(toolbox.workspace), mode, specs)
    sent = json.dumps(messages) + (tools_note(specs) if mode == "content" else json.dumps(specs))
    offered = [s["function"]["name"] for s in specs]
    assert offered == ["locate", "read_file", "write_file", "shell"]
    assert '"name": "glob"' not in sent and "search" not in sent  # ("a glob" stays a word in locate's definition)
    assert "1. locate, 2. read_file, 3. write_file, 4. shell." in messages[0]["content"]
    assert not re.search(r"\d\. (glob|search)\b", sent)


def test_every_tool_is_named_in_priority_order_when_none_is_held_back(tmp_path: Path):
    specs = box(tmp_path, frozenset()).specs()
    text = executor.role_text("native", specs + [{"type": "function", "function": {"name": "search"}}])
    assert "1. locate, 2. glob, 3. read_file, 4. write_file, 5. shell, 6. search." in text
    assert "search" not in executor.role_text("native", specs)


def test_the_planner_is_told_the_served_tools_in_their_definitions_words():
    from artoo.tasks.roles import planner
    from artoo.tasks.tools.specs import SPECS

    text = planner.role_text({"glob"})
    locate = next(s["function"]["description"] for s in SPECS if s["function"]["name"] == "locate")
    assert f"1. locate — {locate}" in text and "2. read_file — " in text
    assert not re.search(r"\d\. glob\b", text)
