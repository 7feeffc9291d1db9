"""The bash-block protocol (llm.tool_mode = "bash"): how a free answer becomes a shell call or a final answer, and
how the conversation is shown to the model, table-driven; then one executor attempt through the real client."""

from __future__ import annotations

import asyncio
import json

import pytest

from artoo.tasks.llm.output.extract import bash_turn
from artoo.tasks.llm.output.modes import BASH_NEXT, BASH_NOTE_HEAD, tool_request
from artoo.tasks.tools.specs import specs_for


@pytest.mark.parametrize("content, command, final", [
    ("```bash\ngrep -l ERROR *.log > errors.txt\n```", "grep -l ERROR *.log > errors.txt", None),
    ("To do this:\n```sh\n$ mkdir -p backup\n$ cp *.csv backup/\n```\nThis copies them.",
     "mkdir -p backup\ncp *.csv backup/", None),
    ("```\nwc -l *.txt > totals.md\n```", "wc -l *.txt > totals.md", None),  # an untagged block is a command
    ("```python\nprint(1)\n```\nDONE: printed one", None, ("completed", "printed one")),  # not a shell block
    ("DONE: errors.txt lists a.log and c.log", None, ("completed", "errors.txt lists a.log and c.log")),
    ("done. The counts are in totals.md", None, ("completed", "The counts are in totals.md")),
    ("FAILED: there is no folder named srv", None, ("failed", "there is no folder named srv")),
    ("```bash\n\n```\nDONE: nothing to do", None, ("completed", "nothing to do")),  # an empty block runs nothing
    ("The files are a.log and c.log.", None, None),
])
def test_a_free_answer_becomes_a_command_or_a_final_answer(content, command, final):
    turn = bash_turn(content)
    if command is None and final is None:
        assert turn is None
        return
    if command is not None:
        (call,) = turn.tool_calls
        assert (call.name, call.arguments) == ("shell", {"command": command}) and turn.final is None
    else:
        assert not turn.tool_calls and (turn.final.status, turn.final.output) == final


def test_a_bash_turn_carries_no_tool_definitions_and_shows_each_call_as_its_block():
    messages = [{"role": "system", "content": "Role R3"}, {"role": "user", "content": "count the lines"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "shell",
                                                                   "arguments": json.dumps({"command": "wc -l a"})}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "3 a\n[exit code 0]"}]
    request = tool_request("bash", messages, specs_for(set()))
    assert set(request) == {"messages"}  # no tools, no response_format
    sent = request["messages"]
    assert BASH_NOTE_HEAD in sent[0]["content"] and '"parameters"' not in json.dumps(sent)
    assert sent[2] == {"role": "assistant", "content": "```bash\nwc -l a\n```"}
    assert sent[3]["role"] == "user" and sent[3]["content"].startswith("Output:\n3 a\n[exit code 0]")
    assert sent[3]["content"].endswith(BASH_NEXT)


def test_an_attempt_in_bash_mode_runs_the_block_and_ends_on_done(tmp_path, monkeypatch):
    """Through the real openai client and the scripted server: the model's block runs in the sandboxed shell, its
    output comes back as the next user message, and DONE ends the attempt with the model's sentence."""
    from artoo.config.contracts import Criterion, SubTask
    from artoo.config.settings import load_settings
    from artoo.tasks.llm import OpenAICompatLLM
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
    from artoo.tasks.roles import executor
    from artoo.tasks.tools import ToolBox

    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    server = ScriptedLLMServer({"answers": {"tools": [{"raw": "```bash\nwc -l a.txt > count.txt\n```"},
                                                      {"raw": "DONE: count.txt holds 3 a.txt"}]}}).start()
    try:
        for key, value in {"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted", "OPENAI_API_KEY": "k",
                           "ARTOO_HOME": str(tmp_path / "home"), "ARTOO_LLM__TOOL_MODE": "bash"}.items():
            monkeypatch.setenv(key, value)
        settings = load_settings()
        llm = OpenAICompatLLM(settings)

        async def gate(_action):
            return False
        subtask = SubTask(subtask_id="s", parent_task_id="t", intent="count the lines of a.txt into count.txt",
                          success_criteria=[Criterion(criterion="count.txt holds 3", check="grep -q 3 count.txt")])

        async def attempt():
            try:
                return await executor.execute(llm, subtask, ToolBox(settings, tmp_path, gate), None)
            finally:
                await llm.aclose()
        result = asyncio.run(attempt())
    finally:
        server.stop()
    assert (result.status, result.output) == ("completed", "count.txt holds 3 a.txt")
    assert (tmp_path / "count.txt").read_text().split() == ["3", "a.txt"]
    assert [c.tool for c in result.calls] == ["shell"] and result.calls[0].input == "wc -l a.txt > count.txt"
    first, second = (r["body"] for r in server.requests)
    assert "tools" not in first and "response_format" not in first
    shown = json.dumps(first["messages"])
    assert "code checks it with: grep -q 3 count.txt" in shown and "Tool priority chain" not in shown
    assert second["messages"][-1]["role"] == "user" and "[exit code 0]" in second["messages"][-1]["content"]


@pytest.mark.parametrize("content, command", [
    ("```bash\nmkdir -p backup && cp *.csv backup/\n```", "mkdir -p backup && cp *.csv backup/"),
    ("grep -l ERROR logs/*.log > error_logs.txt", "grep -l ERROR logs/*.log > error_logs.txt"),  # a lone line
    ("`wc -l < access.log > line_count.txt`", "wc -l < access.log > line_count.txt"),
    ("You can use grep for this. It searches files.", None),  # prose: two sentences, no command to take
    ("DONE: nothing", None),
])
def test_the_reference_answer_yields_its_command(content, command):
    from artoo.tasks.llm.output.extract import bash_block, lone_command

    assert (bash_block(content) or lone_command(content)) == command


def test_a_vote_is_a_free_answer_sampled_as_asked_and_one_without_a_command_gives_none(tmp_path, monkeypatch):
    """Through the real client: no schema, no tools, the vote's own temperature; prose gives no vote."""
    from artoo.config.settings import load_settings
    from artoo.tasks.llm import OpenAICompatLLM
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
    from artoo.tasks.roles import voter

    server = ScriptedLLMServer({"answers": {"Vote": [{"raw": "```bash\ngrep -l ERROR logs/*.log > e.txt\n```"},
                                                     {"raw": "You could use grep for that."}]}}).start()
    try:
        for key, value in {"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted", "OPENAI_API_KEY": "k",
                           "ARTOO_HOME": str(tmp_path / "home"), "ARTOO_LLM__TEMPERATURE": "0.2"}.items():
            monkeypatch.setenv(key, value)
        llm = OpenAICompatLLM(load_settings())
        request, seen = "list the logs with ERROR into e.txt", "logs/a.log (16 bytes)\n  | ERROR disk full"

        async def ask_twice():
            try:
                return await voter.vote(llm, request, seen, 0.8), await voter.vote(llm, request, seen, None)
            finally:
                await llm.aclose()
        first, second = asyncio.run(ask_twice())
    finally:
        server.stop()
    assert (first, second) == ("grep -l ERROR logs/*.log > e.txt", None)
    bodies = [r["body"] for r in server.requests]
    assert all("response_format" not in b and "tools" not in b for b in bodies)
    assert [b["temperature"] for b in bodies] == [0.8, 0.2]  # its own, else the configured one
    assert request in bodies[0]["messages"][-1]["content"] and "ERROR disk full" in bodies[0]["messages"][-1]["content"]
    assert [r.ok for r in llm.records] == [True, False]


def test_a_command_split_over_several_blocks_is_run_whole():
    """The 1.5B model wrote ``mkdir backup`` in one block and the copy in the next; the first alone was half."""
    turn = bash_turn("First:\n```bash\nmkdir backup\n```\nThen:\n```bash\ncp *.csv backup/\n```")
    (call,) = turn.tool_calls
    assert call.arguments == {"command": "mkdir backup\ncp *.csv backup/"}
