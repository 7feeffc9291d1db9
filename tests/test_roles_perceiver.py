"""R1: task_id sanitised by code, raw input carried verbatim, session history in the prompt."""

from __future__ import annotations

import asyncio

import pytest

from artoo.config.contracts import TaskSpec
from artoo.tasks.llm.testing.fake import ScriptedLLM
from artoo.tasks.roles.perceiver import perceive, sanitise_task_id, stated_deadline
from artoo.tasks.roles.prompting import FENCE_OPEN


@pytest.mark.parametrize("raw, expected", [
    ("count_lines", "count_lines"),
    ("Count Lines In README", "count_lines_in_readme"),
    ("count-lines.v2!", "count_lines_v2"),
    ("__weird__  id__", "weird_id"),
    ("", "task"),
    ("!!!", "task"),
    ("日本語", "task"),
    ("a" * 60, "a" * 40),
    ("abc_" + "d" * 35 + "_efgh", "abc_" + "d" * 35),
])
def test_sanitise_task_id(raw, expected):
    got = sanitise_task_id(raw)
    assert got == expected
    assert len(got) <= 40


def answer(task_id="Find My Notes!", intent="find the notes file", scope=None):
    return {"task_id": task_id, "intent": intent, "constraints": {"scope": scope, "deadline": None}}


def test_perceive_sanitises_id_and_keeps_raw_input():
    llm = ScriptedLLM({"TaskSpec": [answer(scope="~/docs")]})
    raw = "  find my notes in ~/docs, please  "
    spec = asyncio.run(perceive(llm, raw, []))
    assert isinstance(spec, TaskSpec)
    assert spec.task_id == "find_my_notes"
    assert spec.raw_input == raw
    assert spec.intent == "find the notes file"
    assert spec.constraints.scope == "~/docs"
    call = llm.calls[0]
    assert call["role"] == "R1" and call["schema"] == "TaskSpec"
    assert raw in call["messages"][-1]["content"]
    assert "Never deceive" in call["messages"][0]["content"]


def test_perceive_puts_only_the_last_five_turns_in_a_fence():
    history = [{"input": f"request {i}", "summary": f"result {i}"} for i in range(1, 8)]
    llm = ScriptedLLM({"TaskSpec": [answer()]})
    asyncio.run(perceive(llm, "do it again", history))
    prompt = llm.calls[0]["messages"][-1]["content"]
    assert "request 1" not in prompt and "request 2" not in prompt
    for i in range(3, 8):
        assert f"request {i}" in prompt and f"result {i}" in prompt
    assert prompt.index(FENCE_OPEN) < prompt.index("request 3")


def test_perceive_falls_back_to_the_request_when_the_intent_is_blank():
    llm = ScriptedLLM({"TaskSpec": [answer(intent="  ")]})
    spec = asyncio.run(perceive(llm, "list my photos", []))
    assert spec.intent == "list my photos"


@pytest.mark.parametrize("raw", ["", "   \n"])
def test_perceive_refuses_an_empty_request_without_calling_the_model(raw):
    llm = ScriptedLLM({"TaskSpec": [answer()]})
    with pytest.raises(ValueError, match="empty request"):
        asyncio.run(perceive(llm, raw, []))
    assert llm.calls == []


EVAL_REQUEST = "find files in /workspace directory which are modified 30 days ago"  # fs3's first task


@pytest.mark.parametrize("request_text, deadline, kept", [
    (EVAL_REQUEST, "2023-04-15T12:00:00Z", None),  # what Qwen2.5-Coder-1.5B answered (#25's eval)
    ("count the lines of every .txt file", "2024-01-01", None),
    ("write the report by Friday 5pm", "2026-11-27T17:00:00", "2026-11-27T17:00:00"),
    ("finish the backup within an hour", "2026-11-25T13:00:00Z", "2026-11-25T13:00:00Z"),
    ("summarise the logs before tomorrow's standup", "2026-11-26T09:00:00", "2026-11-26T09:00:00"),
    ("the report is due tonight", "2026-11-25T23:59:00", "2026-11-25T23:59:00"),
    (EVAL_REQUEST, None, None),
])
def test_a_deadline_is_kept_only_when_the_request_sets_one(request_text, deadline, kept):
    assert stated_deadline(deadline, request_text) == kept


def test_perceive_drops_an_invented_deadline_and_says_so():
    given = answer(task_id="find_files", intent=EVAL_REQUEST)
    given["constraints"]["deadline"] = "2023-04-15T12:00:00Z"
    repaired: list[str] = []
    spec = asyncio.run(perceive(ScriptedLLM({"TaskSpec": [given]}), EVAL_REQUEST, [], repaired))
    assert spec.constraints.deadline is None
    assert repaired == ["deadline 2023-04-15T12:00:00Z dropped: no words of the request set one"]
