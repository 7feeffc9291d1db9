"""``artoo chat`` through a real pseudo-terminal: a request, /audit, /memory, /log, /exit; Law 1; Ctrl-C.

The REPL runs as a subprocess whose stdin, stdout and stderr are the slave side of a pty (so
prompt_toolkit sees a terminal), against the session's Prefect server and the scripted LLM.
The test types lines on the master side and reads what a person would see.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import wait_for_command
from tests.scenario_kit import (
    agent,
    call,
    crit,
    done,
    plan,
    scenario,
    spec,
    subtask,
    task_verdict,
    verdict,
)

pytestmark = pytest.mark.usefixtures("prefect_api")
ARTOO = str(Path(sys.executable).with_name("artoo"))
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Terminal:
    """The master side of the pty: type lines, read until a marker shows."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.seen = ""
        self.pos = 0  # in the ANSI-free text: just after the last marker found

    def read_until(self, marker: str, timeout_s: float = 90) -> str:
        """The text from the last marker found through this one (a marker that came in the same chunk
        as the previous one counts: the terminal's chunking is not the program's)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = ANSI.sub("", self.seen)
            at = text.find(marker, self.pos)
            if at >= 0:
                shown, self.pos = text[self.pos:at + len(marker)], at + len(marker)
                return shown
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the child closed the terminal
                    break
                self.seen += chunk.decode("utf-8", "replace")
        raise AssertionError(f"{marker!r} did not show; the terminal said: {ANSI.sub('', self.seen)[-3000:]}")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")


@contextlib.contextmanager
def chat_session(prefect_api: str) -> Iterator[tuple[subprocess.Popen, Terminal]]:
    """``artoo chat`` at its first prompt for the block; killed (if still there) and its terminal closed after."""
    proc, term = start_chat(prefect_api)
    try:
        yield proc, term
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(term.fd)


def start_chat(prefect_api: str) -> tuple[subprocess.Popen, Terminal]:
    """``artoo chat`` on a fresh pty, waiting at its first prompt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ARTOO_LAW1"))}
    env.update(PREFECT_API_URL=prefect_api, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="160")
    master, slave = pty.openpty()
    proc = subprocess.Popen([ARTOO, "chat"], stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    term = Terminal(master)
    term.read_until("artoo>", 60)
    return proc, term


def test_law1_is_asked_inline_and_ctrl_c_cancels_the_task_not_the_repl(scripted, artoo_env: Path,
                                                                          prefect_api: str):
    """Request 1 deletes old.log: the question shows in the REPL, "y" approves it.  Request 2 runs
    ``sleep 60``: SIGINT (what Ctrl-C sends) ends that task and the prompt comes back."""
    workspace = artoo_env / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    victim = workspace / "old.log"
    victim.write_text("delete me")
    gone = "old.log no longer exists"
    scripted(scenario(
        TaskSpec=[spec("clean_logs", "delete old.log"), spec("nap", "wait a minute")],
        Plan=[plan([subtask("delete old.log", [gone])], ["old.log is gone"]),
              {"answer": {"task_criteria": [crit("a minute passed")], "subtasks": [
                  {"sequence": 1, "intent": "sleep a minute", "context": "", "success_criteria": [crit("slept")]}]}}],
        # the sleep twice: in full-suite runs request 1 was seen to take one extra 'tools' answer (not explained
        # yet), which left request 2 none, so it failed before Ctrl-C could be tried
        tools=[call("shell", command="rm old.log"), done("deleted old.log"), call("shell", command="sleep 60"),
               call("shell", command="sleep 60")],
        AgentVerdict=[agent(verdict(gone, True, evidence="rm exited 0"))],
        TaskVerdict=[task_verdict(verdict("old.log is gone", True))],
    ))
    with chat_session(prefect_api) as (proc, term):
        term.type("delete old.log")
        asked = term.read_until("Approve? [y/N]", 120)
        assert "rm old.log" in asked and victim.exists()
        term.type("y")
        term.read_until("accept after 0 replan(s)", 120)
        term.read_until("artoo>", 30)
        assert not victim.exists()
        term.type("wait a minute")
        term.read_until("→ sleep a minute", 120)
        wait_for_command(["sleep", "60"], 60)  # the executor is inside `sleep 60` now (its sandboxed process runs)
        os.kill(proc.pid, signal.SIGINT)
        term.read_until("cancelled", 60)
        term.read_until("artoo>", 60)
        assert proc.poll() is None  # the REPL is still there
        term.type("/log")
        term.read_until("end: the run did not finish", 30)  # the decision log says how the task ended
        term.type("/exit")
        assert proc.wait(timeout=30) == 0


def test_chat_runs_a_request_and_answers_slash_commands_then_starts_without_an_endpoint(
        scripted, artoo_env: Path, prefect_api: str, monkeypatch: pytest.MonkeyPatch):
    """A request runs and the slash commands answer; then, with no LLM configured, the REPL still starts in
    the same home: it says once what requests need, a request typed anyway is not run (the REPL stays), and
    /log, /memory and /audit show the earlier run (they read the home, not a model)."""
    server = scripted(scenario(
        TaskSpec=[spec("say_hello", "say hello")],
        Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])],
        tools=[call("shell", command="echo hello"), done("hello")],
        AgentVerdict=[agent(verdict("the output contains hello", True, evidence="shell printed hello"))],
        TaskVerdict=[task_verdict(verdict("hello was printed", True))],
    ))
    with chat_session(prefect_api) as (proc, term):
        assert "requests need an LLM endpoint" not in term.seen
        term.type("say hello")
        shown = term.read_until("cost by role", 120)
        for progress in ("task say_hello", "round 1", "✓ print hello", "GGS D=0.00", "accept after 0 replan(s)"):
            assert progress in shown, progress
        term.read_until("artoo>")
        term.type("/audit")
        audit = term.read_until("(audit report in", 30)
        assert "Audit report (on-demand)" in audit and "tasks observed" in audit
        term.type("/memory")
        assert "megrams" in term.read_until("┘", 30).lower()
        term.type("/log")
        term.read_until("FinalResult: accept", 30)
        term.type("/exit")
        assert proc.wait(timeout=30) == 0
    assert "say hello" in (artoo_env / "home" / "chat_history").read_text()
    assert server.unused() == {}
    runs = sorted((artoo_env / "home" / "decisions").glob("*.jsonl"))

    for key in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(key)
    requests_before = len(server.requests)
    with chat_session(prefect_api) as (proc, term):
        assert "requests need an LLM endpoint" in term.seen and "OPENAI_BASE_URL" in term.seen
        assert "Point artoo at a real model" in term.seen  # where the README says how
        term.type("count the lines of every .txt file")
        term.read_until("not run: no LLM endpoint is configured", 30)
        term.read_until("artoo>", 30)
        term.type("/log")
        term.read_until("FinalResult: accept", 30)  # the run of the first session
        term.type("/memory")
        assert "megrams" in term.read_until("┘", 30).lower()
        term.type("/audit")
        assert "Audit report (on-demand)" in term.read_until("(audit report in", 30)
        term.type("/exit")
        assert proc.wait(timeout=30) == 0
        seen = ANSI.sub("", term.seen)
    assert seen.count("requests need an LLM endpoint") == 1 and "Traceback" not in seen
    assert len(server.requests) == requests_before  # nothing was sent anywhere
    assert sorted((artoo_env / "home" / "decisions").glob("*.jsonl")) == runs  # and no run was recorded
