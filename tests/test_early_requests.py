"""Early requests (artoo.tasks.llm.transport.early): sent before their task, answered once, recorded by the task.

Client-level stories use the scripted server over real HTTP; the flow stories run ``artoo run --json``
on the session's Prefect server and check that R1, every round's R2 and every subtask's first R3
turn were answered early, that no request was sent twice (each script entry answers exactly once),
and that no early answer was left behind.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.llm import TOOLS_SCHEMA, OpenAICompatLLM
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.early import EARLY
from tests.conftest import final_from, run_cli
from tests.scenario_kit import change_path_scenario, requests_by_schema

PLAN = {"task_criteria": [{"criterion": "done", "mode": "verifiable"}],
        "subtasks": [{"sequence": 1, "intent": "count", "context": "",
                      "success_criteria": [{"criterion": "count printed", "mode": "verifiable"}]}]}
TOOL = {"type": "function", "function": {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    """Each test its own ARTOO_HOME: negotiated formats are remembered there, never in the real home."""
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path / "artoo-home"))


def _llm(srv: ScriptedLLMServer, max_retries: int = 0) -> OpenAICompatLLM:
    settings = load_settings(brain_base_url=srv.base_url, brain_model="brain-m", tool_base_url=srv.base_url,
                             tool_model="tool-m", openai_base_url=None, openai_model=None, llm_timeout_s=10)
    return OpenAICompatLLM(settings, max_retries=max_retries)


def _until_received(srv: ScriptedLLMServer, count: int) -> None:
    """Wait (bounded) until the server has answered ``count`` requests: the early one went out on its own."""
    deadline = time.monotonic() + 10
    while len(srv.requests) < count:
        assert time.monotonic() < deadline, f"the server saw {len(srv.requests)} request(s), expected {count}"
        time.sleep(0.01)


def _drain() -> None:
    """Leave no early answer for the next test (a failed assertion may have left one)."""
    EARLY.clear()


def test_a_request_sent_early_is_answered_once_and_recorded_by_the_task_that_asks():
    messages = [{"role": "user", "content": "plan it"}]
    seen: list[dict] = []
    with ScriptedLLMServer({"answers": {"Plan": [{"answer": PLAN}]}}) as srv:
        llm = _llm(srv)
        llm.observer = seen.append
        assert llm.send_early("R2", "Plan", messages)
        _until_received(srv, 1)  # sent before any task asked: nobody awaits it yet
        assert llm.records == [] and seen == []
        answer = asyncio.run(llm.structured("R2", "Plan", messages))
        requests = srv.requests
    assert answer.subtasks[0].intent == "count"
    assert len(requests) == 1 and requests[0]["status"] == 200
    assert [(r.role, r.schema, r.ok, r.prompt_tokens > 0) for r in llm.records] == [("R2", "Plan", True, True)]
    assert [(s["role"], s["ok"], s["request"]["messages"]) for s in seen] == [("R2", True, messages)]
    assert EARLY.pending() == 0


def test_an_executor_turn_sent_early_is_the_turn_the_executor_takes():
    messages = [{"role": "user", "content": "Subtask intent: count"}]
    script = {"tools": [{"tool_calls": [{"name": "shell", "arguments": {"command": "wc -l a"}}]}]}
    with ScriptedLLMServer({"answers": script}) as srv:
        llm = _llm(srv)
        assert llm.send_early("R3", TOOLS_SCHEMA, messages, [TOOL])
        assert not llm.send_early("R3", TOOLS_SCHEMA, list(messages), [TOOL])  # already on its way: not twice
        turn = asyncio.run(llm.tool_turn("R3", messages, [TOOL]))
        count = len(srv.requests)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("shell", {"command": "wc -l a"})]
    assert count == 1 and EARLY.pending() == 0


def test_changed_words_are_asked_anew_and_the_early_answer_is_left_unread():
    """Memory written between the early send and the task changes the prompt: the task gets its own answer."""
    old, new = "plan it (memory: none)", "plan it (memory: one SOP)"
    other = {**PLAN, "subtasks": [{**PLAN["subtasks"][0], "intent": "count again"}]}
    script = {"Plan": [{"answer": PLAN, "match": old}, {"answer": other, "match": new}]}
    try:
        with ScriptedLLMServer({"answers": script}) as srv:
            llm = _llm(srv)
            llm.send_early("R2", "Plan", [{"role": "user", "content": old}])
            answer = asyncio.run(llm.structured("R2", "Plan", [{"role": "user", "content": new}]))
            _until_received(srv, 2)
        assert answer.subtasks[0].intent == "count again"
        assert len(llm.records) == 1 and EARLY.pending() == 1  # the unread one expires, never answers another
    finally:
        _drain()


def test_an_early_request_that_fails_is_the_tasks_failure_and_is_retried_like_one():
    messages = [{"role": "user", "content": "plan it"}]
    with ScriptedLLMServer({"answers": {"Plan": [{"status": 503}, {"answer": PLAN}]}}) as srv:
        llm = _llm(srv, max_retries=1)
        llm.send_early("R2", "Plan", messages)
        _until_received(srv, 1)
        answer = asyncio.run(llm.structured("R2", "Plan", messages))
        count = len(srv.requests)
    assert answer.subtasks[0].intent == "count" and count == 2
    assert [(r.ok, "HTTP 503" in (r.error or "")) for r in llm.records] == [(False, True), (True, False)]


def test_nothing_is_sent_early_for_a_tier_without_an_endpoint():
    llm = OpenAICompatLLM(load_settings(brain_base_url=None, brain_model=None, openai_base_url=None,
                                        openai_model=None))
    assert not llm.send_early("R2", "Plan", [{"role": "user", "content": "x"}])
    assert EARLY.pending() == 0


@pytest.mark.usefixtures("prefect_api")
def test_a_replanned_run_answers_r1_every_r2_and_every_first_r3_turn_early_and_asks_nothing_twice(
        scripted, artoo_env: Path):
    """Round 1 reads a missing path (environmental → change_path), round 2 reads the right one and is accepted.

    Early: R1 (before the flow), R2 of rounds 1 and 2 (before each round's subflow), the first R3 turn of
    each round's subtask (before its subflow), R4a of each attempt (before its task run): 7.  Each script
    entry answers once (no repeats), so a request sent early and again by its task would find no answer
    and fail the run.
    """
    server = scripted(change_path_scenario(artoo_env / "workspace"))
    sent, taken = EARLY.sent, EARLY.taken
    code, out, _ = run_cli("run", "--json", "count the lines in notes.txt")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    assert (EARLY.sent - sent, EARLY.taken - taken, EARLY.pending()) == (7, 7, 0)
    assert all(r["status"] == 200 for r in server.requests) and server.unused() == {}
    assert requests_by_schema(server) == {"TaskSpec": 1, "Plan": 2, "tools": 4, "AgentVerdict": 2, "TaskVerdict": 1}


@pytest.mark.usefixtures("prefect_api")
def test_an_abandoned_run_answers_every_call_and_its_failure_report_early(
        scripted, artoo_env: Path, monkeypatch: pytest.MonkeyPatch):
    """Two rounds whose executor fails (logical), then abandon with one failure report (R2, spec v0.9).

    Early: R1, two R2, two R3, two R4a and the report: 8, each answered once.
    """
    from artoo.bench.scenarios import replans

    story = replans(1, latency_s=0.0)
    for key, value in story.settings.items():
        monkeypatch.setenv(key, value)
    server = scripted(story.script)
    sent, taken = EARLY.sent, EARLY.taken
    code, out, _ = run_cli("run", "--json", story.request)
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (1, "abandon", 1)
    assert "every attempt failed logically" in final["summary"]  # the report was used, not the template
    assert (EARLY.sent - sent, EARLY.taken - taken, EARLY.pending()) == (8, 8, 0)
    assert all(r["status"] == 200 for r in server.requests) and server.unused() == {}


@pytest.mark.usefixtures("prefect_api")
def test_round_one_plan_is_asked_before_the_flow_exists_and_its_plan_task_takes_that_answer(
        scripted, artoo_env: Path):
    """``artoo run`` reads R1's early answer itself and sends round 1's R2 from it (artoo.runner.plan_ahead).

    Here the read-ahead finishes before the command runs, so R2 is on the server's log before any flow exists;
    the command's own R1 and R2 are then the same words, not sent again (each script entry answers once) and
    taken by the flow's R1 and plan tasks."""
    from artoo.runner import _send_perceive, plan_ahead

    server = scripted(change_path_scenario(artoo_env / "workspace"))
    request = "count the lines in notes.txt"
    thread = plan_ahead(request, None, _send_perceive(request))
    assert thread is not None
    thread.join(30)
    _until_received(server, 2)  # sent on the early lane: answered on its own
    before_the_flow = requests_by_schema(server)
    sent, taken = EARLY.sent, EARLY.taken
    code, out, _ = run_cli("run", "--json", request)
    final = final_from(out)
    assert before_the_flow == {"TaskSpec": 1, "Plan": 1}
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1)
    assert (EARLY.sent - sent, EARLY.taken - taken, EARLY.pending()) == (5, 7, 0)  # R1, R2 sent before the command
    assert server.unused() == {}
    assert requests_by_schema(server) == {"TaskSpec": 1, "Plan": 2, "tools": 4, "AgentVerdict": 2, "TaskVerdict": 1}


def test_a_request_is_sent_early_once_even_after_its_answer_was_taken():
    """A late second sender (the flow's R2 after ``artoo run`` sent it ahead and the task took it) asks nothing."""
    messages = [{"role": "user", "content": "plan it"}]
    with ScriptedLLMServer({"answers": {"Plan": [{"answer": PLAN}]}}) as srv:
        llm = _llm(srv)
        assert llm.send_early("R2", "Plan", messages)
        asyncio.run(llm.structured("R2", "Plan", messages))
        again = llm.send_early("R2", "Plan", messages)
        count = len(srv.requests)
    assert (again, count, EARLY.pending()) == (False, 1, 0)


def test_a_run_reads_the_history_its_command_sent_r1_with_even_when_another_run_appended_since(tmp_path: Path):
    from artoo.tasks.roles.session import append_history, forget_run, history_for, keep_for_run, load_history

    append_history(tmp_path, "count notes", "3 lines")
    kept = load_history(tmp_path)
    keep_for_run("say hello", kept)
    append_history(tmp_path, "another terminal's request", "done")  # finished while this command started
    assert history_for("say hello", tmp_path) == kept == [{"input": "count notes", "summary": "3 lines"}]
    assert len(history_for("say hello", tmp_path)) == 2  # taken once: a later run reads the file again
    keep_for_run("say hello", kept)
    forget_run("say hello")
    assert len(history_for("say hello", tmp_path)) == 2
