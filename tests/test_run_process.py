"""``artoo run`` as a person runs it: the real ``artoo`` console script, one process, a scripted brain.

The command runs in the caller's own process (#27 removed the fork-server that ran it elsewhere), so
what the caller set applies to the model-written commands it runs: a tool's shell is a descendant of
the ``artoo`` process and sees its resource limits.  Exit codes, ``--json`` (exactly one object on
stdout, progress on stderr) and Ctrl-C on a terminal are checked on that process.  Each test records
its run on the session's Prefect server.  Marked slow: every command is a real process.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import resource
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import final_from
from tests.processes import alive, wait_for_command
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.slow
ARTOO = str(Path(sys.executable).with_name("artoo"))


def hello(tools: list[dict] | None = None) -> dict:
    return scenario(TaskSpec=[spec("say_hello", "say hello")],
                    Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])],
                    tools=tools or [done("hello")],
                    AgentVerdict=[agent(verdict("the output contains hello", True))],
                    TaskVerdict=[task_verdict(verdict("hello was printed", True))])


def plateau() -> dict:
    """Every round fails logically: three replans, then abandon (exit 1)."""
    crit = "the answer is 42"
    return scenario(
        TaskSpec=[spec("find_answer", "find the answer")],
        Plan=[plan([subtask(f"attempt {i}", [crit])], ["the answer is reported"]) for i in range(4)],
        tools=[done("I cannot", status="failed") for _ in range(4)],
        AgentVerdict=[agent(verdict(crit, False, "logical")) for _ in range(4)],
        FailureReport=[{"answer": {"achieved": "nothing usable yet", "blocked_by": "no method found the answer",
                                   "try_next": ["say where the answer is written down"]}}])


@pytest.fixture
def env(tmp_path: Path, prefect_api: str) -> dict[str, str]:
    """A person's environment: an isolated home and workspace, the session's Prefect API, no endpoint yet."""
    (tmp_path / "ws").mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "OPENAI_", "BRAIN_", "TOOL_",
                                                                       "ARTOO_"))}
    return {**clean, "ARTOO_HOME": str(tmp_path / "home"), "ARTOO_WORKSPACE": str(tmp_path / "ws"),
            "ARTOO_LAW1_MODE": "deny", "PREFECT_API_URL": prefect_api,
            # one scripted answer per turn, as in tests/conftest.py: no content probe, no validator re-ask, no votes;
            # and the scripted validators' pass accepts, as there
            "ARTOO_LLM__CONTENT_PROBE": "false", "ARTOO_LLM__REJUDGE_UNGROUNDED": "false",
            "ARTOO_CHECKS__REFERENCE_CALL": "false", "ARTOO_GGS__ACCEPT_JUDGED": "true"}


def brain(env: dict[str, str], script: dict):
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    server = ScriptedLLMServer(script).start()
    return server, {**env, "OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted", "OPENAI_API_KEY": "k"}


def run_json(env, scenario, request: str) -> subprocess.CompletedProcess:
    """``artoo run --json REQUEST`` as a person's own process, against a scripted brain stopped afterwards."""
    server, run_env = brain(env, scenario)
    try:
        return subprocess.run([ARTOO, "run", "--json", request], env=run_env, capture_output=True, text=True,
                              timeout=600)
    finally:
        server.stop()


@pytest.mark.parametrize(("story", "request_text", "code", "directive"), [
    (hello, "say hello", 0, "accept"),
    (plateau, "find the answer", 1, "abandon"),
])
def test_json_prints_one_final_result_and_the_exit_code_follows_the_directive(env, story, request_text, code,
                                                                               directive):
    done_ = run_json(env, story(), request_text)
    assert done_.returncode == code, done_.stderr[-2000:]
    assert final_from(done_.stdout)["directive"] == directive  # exactly one JSON object on stdout
    assert "round 1" in done_.stderr  # the progress lines go to stderr


def test_a_configuration_mistake_exits_2_and_says_which_setting(env):
    bad = {**env, "ARTOO_GGS__ALPHA": "not a number", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_MODEL": "m"}
    done_ = subprocess.run([ARTOO, "run", "--json", "say hello"], env=bad, capture_output=True, text=True,
                           timeout=120)
    assert done_.returncode == 2 and done_.stdout == ""
    assert "invalid artoo settings" in " ".join(done_.stderr.split()) and "Traceback" not in done_.stderr


def test_a_tools_shell_is_a_descendant_of_the_artoo_process_under_the_callers_limits(env):
    """The caller's hard limit on open files (lower than the sandbox's own 1024) reaches the command."""
    ws = Path(env["ARTOO_WORKSPACE"])
    server, run_env = brain(env, hello([call("shell", command="ulimit -Hn > limits.txt"), done("hello")]))
    try:
        done_ = subprocess.run([ARTOO, "run", "--json", "say hello"], env=run_env, capture_output=True, text=True,
                               timeout=600, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (700, 700)))
    finally:
        server.stop()
    assert done_.returncode == 0, done_.stderr[-2000:]
    assert (ws / "limits.txt").read_text().strip() == "700"


def ancestors(pid: int) -> list[int]:
    """``pid``'s parent, its parent, … up to init."""
    chain = []
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
        chain.append(pid)
    return chain


def test_ctrl_c_on_the_terminal_cancels_the_run_and_its_command_at_once(env):
    script = scenario(TaskSpec=[spec("wait", "wait a minute")],
                      Plan=[plan([subtask("sleep a minute", ["a minute passed"])], ["a minute passed"])],
                      tools=[call("shell", command="sleep 67"), done("slept")])
    master, slave = pty.openpty()
    server, run_env = brain(env, script)
    # the pty is the command's controlling terminal (stdin); its output goes to pipes, kept after it exits
    proc = subprocess.Popen([ARTOO, "run", "wait a minute"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=run_env, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    try:
        sleeper = wait_for_command(["sleep", "67"], 120)
        assert proc.pid in ancestors(sleeper)  # run in the caller's process, not handed elsewhere
        os.write(master, b"\x03")  # the terminal's Ctrl-C: SIGINT to the foreground process group
        _, err = proc.communicate(timeout=60)
        code, seen = proc.returncode, " ".join(err.decode(errors="replace").split())
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop()
        os.close(master)
    assert code == 130, seen[-2000:]
    assert "artoo: interrupted (Ctrl-C)" in seen and "Traceback" not in seen, seen[-2000:]
    deadline = time.monotonic() + 30
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(sleeper)


def test_the_run_is_recorded_on_the_prefect_api_the_caller_names(env, prefect_api):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    request = f"say hello on the session server {os.getpid()}-{time.time_ns()}"
    done_ = run_json(env, hello(), request)
    assert done_.returncode == 0 and json.loads(done_.stdout)["directive"] == "accept", done_.stderr[-2000:]
    with temporary_settings(updates={PREFECT_API_URL: prefect_api}), get_client(sync_client=True) as client:
        runs = [r for r in client.read_flow_runs(limit=200, sort="START_TIME_DESC")
                if r.parameters.get("request") == request]
    assert len(runs) == 1 and runs[0].state.is_completed()
