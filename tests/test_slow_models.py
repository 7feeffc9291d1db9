"""Slow models are normal: per-tier timeouts, the in-flight hook and its terminal line, Ctrl-C mid-call.

Requests go over real HTTP to the scripted server (ScriptEntry.latency_s makes an answer slow)
through the real ``openai`` client.  The display is driven tick by tick with explicit clock values,
so nothing here depends on how fast the machine is; the one real ``artoo run`` process only has
generous bounds that catch a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pty
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from artoo.config.errors import EnvironmentalFailure
from artoo.config.settings import load_settings
from artoo.inflight import InflightDisplay, describe
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.early import EARLY
from artoo.tasks.llm.transport.progress import INFLIGHT, Call, Inflight
from tests.processes import read_until
from tests.scenario_kit import scenario, spec

SPEC = {"task_id": "count_lines", "intent": "count the lines", "constraints": {"scope": None, "deadline": None}}
MESSAGES = [{"role": "user", "content": "count the lines"}]


def _llm(srv: ScriptedLLMServer, **settings) -> OpenAICompatLLM:
    values = {"brain_base_url": srv.base_url, "brain_model": "brain-m", "tool_base_url": srv.base_url,
              "tool_model": "tool-m", "openai_base_url": None, "openai_model": None}
    return OpenAICompatLLM(load_settings(**{**values, **settings}), max_retries=0)


async def _closing(llm: OpenAICompatLLM, coro):
    try:
        return await coro
    finally:
        await llm.aclose()


@pytest.mark.parametrize("early", [False, True], ids=["asked by the task", "sent early"])
@pytest.mark.parametrize("llm_section, completes", [
    ({}, False),  # the old single limit (llm_timeout_s = 1 s) cuts a 2 s answer
    ({"brain_timeout_s": 3}, True),  # the brain tier's own 3 s lets it finish
    ({"tool_timeout_s": 3}, False),  # the tool tier's does not reach R2
])
def test_a_slow_answer_within_its_tier_timeout_completes(llm_section, completes, early):
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC, "latency_s": 2.0}]}}) as srv:
        llm = _llm(srv, llm_timeout_s=1, llm=llm_section)
        if early:
            assert llm.send_early("R1", "TaskSpec", MESSAGES)
        try:
            answer = asyncio.run(_closing(llm, llm.structured("R1", "TaskSpec", MESSAGES)))
        except EnvironmentalFailure as exc:
            answer = exc
        finally:
            EARLY.clear()
    if completes:
        assert getattr(answer, "task_id", None) == "count_lines", answer
    else:
        assert isinstance(answer, EnvironmentalFailure) and "timed out after 1s" in str(answer)


def _seen_in_flight(srv: ScriptedLLMServer, start) -> tuple[list[Call], object]:
    """What INFLIGHT showed while ``start(llm)``'s request waited, and the call's result (or error)."""
    llm = _llm(srv, llm_timeout_s=5)
    seen: list[Call] = []

    async def go():
        task = asyncio.ensure_future(_closing(llm, start(llm)))
        deadline = time.monotonic() + 30
        while not seen and not task.done() and time.monotonic() < deadline:
            seen.extend(INFLIGHT.calls())
            await asyncio.sleep(0.02)
        try:
            return await task
        except EnvironmentalFailure as exc:
            return exc

    return seen, asyncio.run(go())


@pytest.mark.parametrize("entry, role, schema, ok", [
    ({"answer": SPEC, "latency_s": 1.0}, "R1", "TaskSpec", True),
    ({"status": 503, "latency_s": 1.0}, "R1", "TaskSpec", False),  # a failed request ends too
])
def test_the_client_marks_each_request_in_flight_until_it_ends(entry, role, schema, ok):
    with ScriptedLLMServer({"answers": {schema: [entry]}}) as srv:
        seen, result = _seen_in_flight(srv, lambda llm: llm.structured(role, schema, MESSAGES))
    assert [(c.role, c.model, c.tier) for c in seen] == [(role, "brain-m", "brain")]
    assert isinstance(result, EnvironmentalFailure) != ok
    assert INFLIGHT.calls() == []


def test_an_early_request_is_in_flight_from_when_it_was_sent():
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC, "latency_s": 1.0}]}}) as srv:
        llm = _llm(srv, llm_timeout_s=5)
        try:
            assert llm.send_early("R1", "TaskSpec", MESSAGES)
            deadline = time.monotonic() + 30
            while not INFLIGHT.calls() and time.monotonic() < deadline:
                time.sleep(0.02)
            shown = [(c.role, c.tier) for c in INFLIGHT.calls()]  # no task has asked yet
            answer = asyncio.run(_closing(llm, llm.structured("R1", "TaskSpec", MESSAGES)))
        finally:
            EARLY.clear()
    assert shown == [("R1", "brain")] and answer.task_id == "count_lines"
    assert INFLIGHT.calls() == []


@pytest.mark.parametrize("ages, tokens, expected", [
    ([1.0], None, None),  # answered soon enough: no line
    ([5.0], None, "waiting for the model: R2 (m, brain tier) 5 s"),
    ([5.0], 40, "waiting for the model: R2 (m, brain tier) 5 s, 40 tokens"),
    ([30.4, 1.0], None, "waiting for the model: R2 (m, brain tier) 30 s"),
    ([30.0, 3.0], None, "waiting for the model: R2 (m, brain tier) 30 s; R2 (m, brain tier) 3 s"),
])
def test_the_waiting_line_names_role_model_tier_and_seconds(ages, tokens, expected):
    calls = [Call("R2", "m", "brain", 100.0 - age, tokens) for age in ages]
    assert describe(calls, now=100.0) == expected


def _display(terminal: bool) -> tuple[InflightDisplay, Inflight, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120, highlight=False)
    inflight = Inflight()
    return InflightDisplay(console, inflight), inflight, out


ERASED = "\r\x1b[1A\x1b[2K"
"""What rich's transient Live writes last when it stops: cursor up one line, erase it."""


def test_on_a_terminal_the_line_shows_after_two_seconds_and_goes_with_the_answer():
    display, inflight, out = _display(terminal=True)
    with display:
        call = inflight.start("R2", "qwen", "brain")
        started = inflight.calls()[0].started
        display.tick(started + 1)
        assert out.getvalue() == ""
        display.tick(started + 12)
        assert "waiting for the model: R2 (qwen, brain tier) 12 s" in out.getvalue()
        assert not out.getvalue().endswith(ERASED)
        inflight.end(call)  # erased at once, before any tick
        assert out.getvalue().endswith(ERASED)


def test_a_question_on_the_terminal_hides_the_line_before_it_is_asked():
    display, inflight, out = _display(terminal=True)
    with display:
        inflight.start("R3", "qwen", "tool")
        started = inflight.calls()[0].started
        display.tick(started + 12)
        assert "R3 (qwen, tool tier) 12 s" in out.getvalue()
        with inflight.question():
            assert out.getvalue().endswith(ERASED)
            display.tick(started + 13)
            assert "13 s" not in out.getvalue()
        display.tick(started + 14)
        assert "R3 (qwen, tool tier) 14 s" in out.getvalue()


def test_law1s_console_question_erases_the_waiting_line_before_asking(monkeypatch):
    from artoo.flows.law1 import _console_input

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    display = InflightDisplay(Console(file=out, force_terminal=True, width=120))
    with display, INFLIGHT.track("R3", "qwen", "tool"):  # another subtask's call waits while this one asks
        display.tick(INFLIGHT.calls()[0].started + 12)
        assert not out.getvalue().endswith(ERASED)
        assert _console_input("Approve? [y/N] ") == "y\n"
        assert out.getvalue().endswith(ERASED)
    assert sys.stderr.getvalue() == "Approve? [y/N] "


def test_off_a_terminal_one_plain_line_at_most_every_fifteen_seconds():
    display, inflight, out = _display(terminal=False)
    inflight.start("R2", "qwen", "brain")
    started = inflight.calls()[0].started
    for age in (3, 10, 15, 20, 29, 31):
        display.tick(started + age)
    lines = out.getvalue().splitlines()
    assert lines == ["artoo: waiting for the model: R2 (qwen, brain tier) 15 s",
                     "artoo: waiting for the model: R2 (qwen, brain tier) 31 s"]
    assert "\x1b" not in out.getvalue()


ARTOO = str(Path(sys.executable).with_name("artoo"))


def test_ctrl_c_during_a_slow_call_ends_artoo_run_at_once(artoo_env: Path, prefect_api: str):
    """A 60 s answer: the terminal shows the waiting line; SIGINT (what Ctrl-C sends) ends the run well before."""
    request = f"count the lines {uuid.uuid4().hex[:8]}"
    slow = scenario(TaskSpec=[spec("count_lines", "count the lines")])
    slow["answers"]["TaskSpec"][0]["latency_s"] = 60.0
    with ScriptedLLMServer(slow) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "OPENAI_", "BRAIN_", "TOOL_"))}
        env.update(PREFECT_API_URL=prefect_api, OPENAI_BASE_URL=srv.base_url, OPENAI_MODEL="slow-m",
                   OPENAI_API_KEY="k", TERM="xterm", COLUMNS="160")
        master, slave = pty.openpty()
        proc = subprocess.Popen([ARTOO, "run", request], stdin=slave, stdout=slave, stderr=slave,
                                env=env, start_new_session=True)
        os.close(slave)
        try:
            seen = read_until(master, b"R1 (slow-m, brain tier)", 120)
            assert b"waiting for the model: R1 (slow-m, brain tier)" in seen, seen[-2000:]
            run = _running(f"artoo · {request}", 60)  # the flow waits for R1's answer now
            os.kill(proc.pid, signal.SIGINT)
            seen += _read_to_exit(master, proc, 15)  # generous: a hang, not a slow machine, must fail this
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(master)
    said = seen.decode(errors="replace")
    assert proc.returncode == 130, said[-2000:]
    assert "artoo: interrupted (Ctrl-C): the run was stopped where it stood" in " ".join(said.split()), said[-2000:]
    assert "Traceback" not in said, said[-2000:]
    state = _state_of(run.id)  # not left Running: Prefect records the asyncio cancellation as it ended the run
    assert state.is_cancelled() or (state.is_crashed() and "cancelled" in (state.message or "")), state


def _running(name: str, timeout_s: float):
    """The flow run of this name once the API says it runs (bounded)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
            if runs and runs[0].state is not None and runs[0].state.is_running():
                return runs[0]
            time.sleep(0.2)
    raise AssertionError(f"no running flow run named {name!r}")


def _state_of(run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(run_id).state


def _read_to_exit(fd: int, proc: subprocess.Popen, timeout_s: float) -> bytes:
    """What the terminal shows until ``proc`` exits; its exit is awaited within ``timeout_s`` in all."""
    seen, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        try:
            chunk = os.read(fd, 65536) if ready else b""
        except OSError:  # every writer of the terminal is gone
            break
        seen += chunk
        if not ready and proc.poll() is not None:
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    return seen
