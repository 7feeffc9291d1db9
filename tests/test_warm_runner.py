"""The warm runner (artoo.zygote) behind the real ``artoo`` console script (artoo.warm), with real processes.

One home for the module: its first ``artoo run`` runs in process, starts the lingering server and
asks for a warm runner, which the server starts once that command ended.  Each test then drives
``artoo run`` against its own scripted brain (another OPENAI_BASE_URL than the runner started with:
the child must take the client's environment).  That a command was served warm is read from the
runner's log, which names the client's pid; the in-process twin of a command turns the runner off
with ``ARTOO_SERVER__WARM_RUNNER=false``.  Marked slow: every command is a real process.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from artoo import warm
from tests.processes import alive, read_until, wait_for_command
from tests.scenario_kit import (
    agent,
    call,
    deletion_scenario,
    done,
    plan,
    scenario,
    spec,
    subtask,
    task_verdict,
    verdict,
)

pytestmark = pytest.mark.slow
ARTOO = str(Path(sys.executable).with_name("artoo"))
VOLATILE = {"Omega", "L"}
"""Loss terms that carry the run's own cost (time), different in any two runs (and so ∇L, grad_l)."""


def hello(runs: int = 1) -> dict:
    return scenario(TaskSpec=[spec("say_hello", "say hello")] * runs,
                    Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])] * runs,
                    tools=[done("hello")] * runs,
                    AgentVerdict=[agent(verdict("the output contains hello", True))] * runs,
                    TaskVerdict=[task_verdict(verdict("hello was printed", True))] * runs)


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


class Home:
    """One ARTOO_HOME with its lingering server and warm runner."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.workspace = root / "ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PREFECT_API", "OPENAI_", "BRAIN_", "TOOL_", "ARTOO_"))}
        self.env.update(ARTOO_HOME=str(root / "home"), ARTOO_WORKSPACE=str(self.workspace), ARTOO_LAW1_MODE="deny",
                        PREFECT_HOME=str(root / "prefect"), ARTOO_SERVER__LINGER_S="600")
        self.log = root / "home" / "server" / "current" / "warm.log"

    def brain_env(self, script: dict, **extra: str):
        from artoo.tasks.llm.scripted_server import ScriptedLLMServer

        brain = ScriptedLLMServer(script).start()
        return brain, {**self.env, "OPENAI_BASE_URL": brain.base_url, "OPENAI_MODEL": "scripted",
                       "OPENAI_API_KEY": "k", **extra}

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def served(self, client_pid: int) -> int | None:
        """The pid of the runner's child that served ``client_pid``, or None (it ran in process)."""
        found = re.search(rf"child (\d+) runs `artoo run` for client {client_pid}\n", self.log_text())
        return int(found.group(1)) if found else None

    def runner_pid(self) -> int:
        return int(re.findall(r"pid (\d+) ready for ", self.log_text())[-1])

    def wait_ready(self, count: int, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while len(re.findall(r"pid \d+ ready for ", self.log_text())) < count:
            assert time.monotonic() < deadline, f"no warm runner got ready: {self.log_text()[-2000:]}"
            time.sleep(0.2)


def run(env: dict, *args: str, timeout: float = 300, **popen) -> tuple[int, int, str, str]:
    """(client pid, exit code, stdout, stderr) of one ``artoo`` console-script process."""
    proc = subprocess.Popen([ARTOO, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)
    out, err = proc.communicate(timeout=timeout)
    return proc.pid, proc.returncode, out, err


def comparable(stdout: str) -> dict:
    final = json.loads(stdout.strip().splitlines()[-1])
    final["loss"] = {k: v for k, v in final["loss"].items() if k not in VOLATILE}
    final["grad_l"] = round(final["grad_l"], 1)
    return final


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Home:
    """A home whose first command ran in process and asked for the warm runner, now ready."""
    home = Home(tmp_path_factory.mktemp("warm"))
    brain, env = home.brain_env(hello())
    try:
        pid, code, _, err = run(env, "run", "--json", "say hello")
    finally:
        brain.stop()
    assert code == 0, err[-2000:]
    assert home.served(pid) is None  # nothing to serve it yet: it asked for a runner instead
    assert warm.wanted_path(Path(home.env["ARTOO_HOME"])).exists()
    home.wait_ready(1)
    yield home
    subprocess.run([ARTOO, "stop", "--force"], env=home.env, capture_output=True, timeout=60)


@pytest.mark.parametrize(("story", "request_text", "code"), [
    (hello, "say hello", 0),
    (plateau, "find the answer", 1),
])
def test_a_warm_run_prints_what_the_in_process_run_prints_and_exits_alike(home: Home, story, request_text, code):
    results = {}
    for mode, extra in (("warm", {}), ("in process", {"ARTOO_SERVER__WARM_RUNNER": "false"})):
        brain, env = home.brain_env(story(), **extra)
        try:
            pid, returncode, out, err = run(env, "run", "--json", request_text)
        finally:
            brain.stop()
        assert returncode == code, f"{mode}: {err[-2000:]}"
        assert brain.requests, f"{mode}: the command's own brain (its OPENAI_BASE_URL) got no request"
        assert (home.served(pid) is not None) == (mode == "warm"), home.log_text()[-1000:]
        results[mode] = (comparable(out), "round 1" in err)
    assert results["warm"] == results["in process"]


def test_a_configuration_mistake_exits_2_with_the_same_message(home: Home):
    outcomes = []
    for extra in ({}, {"ARTOO_SERVER__WARM_RUNNER": "false"}):
        env = {**home.env, "ARTOO_GGS__ALPHA": "not a number", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
               "OPENAI_MODEL": "m", **extra}
        pid, code, out, err = run(env, "run", "--json", "say hello")
        outcomes.append((code, out, " ".join(err.split()), home.served(pid) is not None))
    (warm_code, warm_out, warm_err, warm_served), (code, out, err, served) = outcomes
    assert warm_served and not served
    assert warm_code == code == 2 and warm_out == out == ""
    assert warm_err == err and "invalid artoo settings" in err


def test_a_law1_question_on_the_terminal_reaches_the_warm_child(home: Home):
    victim = home.workspace / "old.log"
    victim.write_text("delete me")
    master, slave = pty.openpty()
    brain, env = home.brain_env(deletion_scenario(), ARTOO_LAW1_MODE="console")
    proc = subprocess.Popen([ARTOO, "run", "--json", "delete old.log"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    try:
        asked = read_until(proc.stderr, b"Approve? [y/N]", 120)
        assert b"Approve? [y/N]" in asked and b"rm old.log" in asked, asked[-2000:].decode(errors="replace")
        assert victim.exists()
        os.write(master, b"y\n")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        brain.stop()
    assert proc.returncode == 0, err[-3000:].decode(errors="replace")
    assert json.loads(out.decode().strip())["directive"] == "accept" and not victim.exists()
    assert home.served(proc.pid) is not None


def test_ctrl_c_on_the_terminal_cancels_the_warm_child(home: Home):
    script = scenario(TaskSpec=[spec("wait", "wait a minute")],
                      Plan=[plan([subtask("sleep a minute", ["a minute passed"])], ["a minute passed"])],
                      tools=[call("shell", command="sleep 67"), done("slept")])
    master, slave = pty.openpty()
    brain, env = home.brain_env(script)
    # the pty is the client's controlling terminal (stdin); its output goes to pipes, kept after it exits
    proc = subprocess.Popen([ARTOO, "run", "wait a minute"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    try:
        wait_for_command(["sleep", "67"], 60)
        child = home.served(proc.pid)
        assert child is not None and alive(child)
        os.write(master, b"\x03")  # the terminal's Ctrl-C: SIGINT to the client's process group only
        _, err = proc.communicate(timeout=120)
        code, seen = proc.returncode, err.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        brain.stop()
        os.close(master)
    assert code == 130, seen[-2000:]  # as in process (checked by hand: same code, same lines, no traceback)
    assert "Traceback" not in seen and "without an exit code" not in seen
    deadline = time.monotonic() + 30
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)


def test_a_killed_client_interrupts_its_warm_child(home: Home):
    script = scenario(TaskSpec=[spec("wait", "wait a minute")],
                      Plan=[plan([subtask("sleep a minute", ["a minute passed"])], ["a minute passed"])],
                      tools=[call("shell", command="sleep 67"), done("slept")])
    brain, env = home.brain_env(script)
    proc = subprocess.Popen([ARTOO, "run", "wait a minute"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        wait_for_command(["sleep", "67"], 60)
        child = home.served(proc.pid)
        assert child is not None and alive(child)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 60
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        brain.stop()
    assert not alive(child)
    assert f"child {child}: the client went away, interrupting its command" in home.log_text()


def test_the_warm_child_records_the_run_on_the_prefect_api_its_client_names(home: Home, prefect_api: str):
    """The runner imported Prefect without PREFECT_API_URL; the child must use the client's server."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    request = f"say hello on the session server {os.getpid()}-{time.time_ns()}"
    brain, env = home.brain_env(hello(), PREFECT_API_URL=prefect_api)
    try:
        pid, code, out, err = run(env, "run", "--json", request)
    finally:
        brain.stop()
    assert code == 0 and json.loads(out)["directive"] == "accept", err[-2000:]
    assert home.served(pid) is not None
    with temporary_settings(updates={PREFECT_API_URL: prefect_api}), get_client(sync_client=True) as client:
        runs = [r for r in client.read_flow_runs(limit=200, sort="START_TIME_DESC")
                if r.parameters.get("request") == request]
    assert len(runs) == 1 and runs[0].state.is_completed()


def test_another_start_up_environment_runs_in_process(home: Home):
    brain, env = home.brain_env(hello(), PYTHONWARNINGS="default")  # read by the interpreter at start
    try:
        pid, code, out, err = run(env, "run", "--json", "say hello")
    finally:
        brain.stop()
    assert code == 0 and json.loads(out)["directive"] == "accept", err[-2000:]
    assert home.served(pid) is None
    assert f"declined client {pid}: fingerprint differs" in home.log_text()


def test_a_warm_runner_turned_off_in_a_config_file_declines(home: Home, tmp_path: Path):
    config = tmp_path / "artoo.toml"
    config.write_text("[server]\nwarm_runner = false\n")
    brain, env = home.brain_env(hello(), ARTOO_CONFIG=str(config))
    try:
        pid, code, out, err = run(env, "run", "--json", "say hello")
    finally:
        brain.stop()
    assert code == 0 and json.loads(out)["directive"] == "accept", err[-2000:]
    assert home.served(pid) is None and f"declined client {pid}: server.warm_runner is false" in home.log_text()


def test_a_killed_runner_means_the_next_command_runs_in_process_and_a_new_runner_follows(home: Home):
    runners = len(re.findall(r"pid \d+ ready for ", home.log_text()))
    killed = home.runner_pid()
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(killed) and time.monotonic() < deadline:
        time.sleep(0.1)
    brain, env = home.brain_env(hello(2))
    try:
        pid, code, out, err = run(env, "run", "--json", "say hello")
        assert code == 0 and json.loads(out)["directive"] == "accept", err[-2000:]
        assert home.served(pid) is None  # connect refused: in process, and it asked for a new runner
        home.wait_ready(runners + 1)
        pid, code, out, err = run(env, "run", "--json", "say hello")
    finally:
        brain.stop()
    assert code == 0 and json.loads(out)["directive"] == "accept", err[-2000:]
    assert home.served(pid) is not None and home.runner_pid() != killed
