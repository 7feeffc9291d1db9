"""The lingering embedded server, with real processes: reused, idle exit, a SIGKILL leaves no stale lock,
and eight `artoo` commands at once on one home share one server.

Each test gets its own ARTOO_HOME and PREFECT_HOME and no PREFECT_API_URL, so the commands find
or start the home's own server exactly as a user's do.  Marked slow: every command is a real
process (~3-8 s each on this machine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from artoo.memory.store import MemoryStore
from artoo.servers.lingering import live_record
from tests.processes import alive
from tests.scenario_kit import agent, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.slow
CLI = "import sys; from artoo.cli import main; sys.argv = ['artoo', *sys.argv[1:]]; main()"


def home_env(tmp_path: Path, linger_s: float, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "OPENAI_", "BRAIN_", "TOOL_"))}
    env.update(ARTOO_HOME=str(tmp_path / "home"), ARTOO_WORKSPACE=str(tmp_path / "ws"), ARTOO_LAW1_MODE="deny",
               PREFECT_HOME=str(tmp_path / "prefect"), ARTOO_SERVER__LINGER_S=str(linger_s), **extra)
    return env


def artoo(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def wait_until(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def hello_brain(runs: int):
    """A scripted brain for ``runs`` one-subtask requests, each accepted in its first round."""
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    return ScriptedLLMServer(scenario(
        TaskSpec=[spec(f"say_hello_{i}", "say hello") for i in range(runs)],
        Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])] * runs,
        tools=[done("hello")] * runs,
        AgentVerdict=[agent(verdict("the output contains hello", True))] * runs,
        TaskVerdict=[task_verdict(verdict("hello was printed", True))] * runs,
    )).start()


def test_a_second_run_reuses_the_server_which_exits_once_idle(tmp_path: Path):
    brain = hello_brain(2)
    env = home_env(tmp_path, linger_s=4, OPENAI_BASE_URL=brain.base_url, OPENAI_MODEL="scripted",
                   OPENAI_API_KEY="test-key")
    try:
        first = artoo(env, "run", "--json", "say hello")
        assert first.returncode == 0, first.stderr[-2000:]
        record = live_record(tmp_path / "home")
        assert record is not None and record["kind"] == "embedded" and alive(record["pid"])
        second = artoo(env, "run", "--json", "say hello again")
        assert second.returncode == 0, second.stderr[-2000:]
    finally:
        brain.stop()
    assert live_record(tmp_path / "home")["pid"] == record["pid"]  # reused, not started again
    wait_until(lambda: not alive(record["pid"]), 60, "the idle server to exit")
    # its lock goes with its last thread, a moment after the main thread shows as a zombie
    wait_until(lambda: live_record(tmp_path / "home") is None, 30, "the idle server's lock to be released")
    assert "idle for 4 s, stopping" in (tmp_path / "home" / "server" / "current" / "server.log").read_text()


def test_a_killed_server_is_replaced_without_a_stale_lock_and_artoo_stop_ends_it(tmp_path: Path):
    env = home_env(tmp_path, linger_s=120)
    assert artoo(env, "demo", "--json").returncode == 0
    killed = live_record(tmp_path / "home")["pid"]
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: not alive(killed), 30, "the killed server to go")
    again = artoo(env, "demo", "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    fresh = live_record(tmp_path / "home")["pid"]
    assert fresh != killed and alive(fresh)
    import fcntl

    user = os.open(tmp_path / "home" / "server" / "current" / "users.lock", os.O_RDWR)
    fcntl.flock(user, fcntl.LOCK_SH)  # as a running `artoo run` holds it
    try:
        busy = artoo(env, "stop")
        assert busy.returncode == 1 and "in use by a running artoo command" in " ".join(busy.stderr.split())
        assert alive(fresh)  # the command using it is not failed half-way
    finally:
        os.close(user)
    stopped = artoo(env, "stop")
    assert stopped.returncode == 0 and f"pid {fresh}" in stopped.stdout
    wait_until(lambda: not alive(fresh), 30, "artoo stop to end the server")
    assert "no artoo server is running" in artoo(env, "stop").stdout


def test_eight_runs_at_once_on_one_home_all_finish_with_a_dream_pass_among_them(tmp_path: Path):
    runs = 8
    brain = hello_brain(runs)
    env = home_env(tmp_path, linger_s=30, OPENAI_BASE_URL=brain.base_url, OPENAI_MODEL="scripted",
                   OPENAI_API_KEY="test-key")
    try:
        started = [subprocess.Popen([sys.executable, "-c", CLI, "run", "--json", f"say hello #{i}"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(runs)]
        dream = artoo(env, "dream")  # the Dreamer, while the runs write
        results = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in started]
    finally:
        brain.stop()
    assert dream.returncode == 0, dream.stderr[-2000:]
    for code, out, err in results:
        assert code == 0, err[-2000:]
        assert json.loads(out)["directive"] == "accept"
    record = live_record(tmp_path / "home")
    assert record is not None and record["kind"] == "embedded"  # one server served all eight
    with MemoryStore(tmp_path / "home") as store:
        store.ingest()
    con = duckdb.connect(str(tmp_path / "home" / "memory" / "memory.duckdb"), read_only=True)
    try:
        total, distinct = con.execute("SELECT count(*), count(DISTINCT id) FROM megrams").fetchone()
    finally:
        con.close()
    assert total == distinct == runs  # one terminal Megram per accepted run, each stored once
    artoo(env, "stop")


@pytest.mark.parametrize(("delete_home", "hold_users", "expected"), [
    (False, False, True),   # idle and nobody attached
    (False, True, False),   # a command holds the users lock
    (True, False, True),    # the home was deleted (a test's or the bench's temporary one): nobody comes back
])
def test_idle_when_unused_and_when_the_home_is_gone(tmp_path: Path, delete_home, hold_users, expected):
    import fcntl
    import shutil

    from artoo.servers.lingering import Activity, Paths, idle

    users = Paths.of(tmp_path / "home").users
    fd = os.open(users, os.O_RDWR | os.O_CREAT)
    if hold_users:
        fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        if delete_home:
            shutil.rmtree(tmp_path / "home")
        assert idle(Activity(None), users, 0) is expected
    finally:
        os.close(fd)


def test_a_starting_server_is_waited_for_not_mistaken_for_the_dead_ones_record(tmp_path: Path):
    """The new server holds the lock a moment before its record replaces a killed server's: that
    stale record (another pid, a dead port) must not be taken for the new server's."""
    import fcntl

    from artoo.config.errors import EnvironmentalFailure
    from artoo.servers.lingering import Paths, _wait_for_record

    paths = Paths.of(tmp_path / "home")
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.record.write_text(json.dumps({"pid": 999_999, "api_url": "http://127.0.0.1:9/api", "kind": "embedded"}))
    starting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    holder = os.open(paths.lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)  # the starting server has the lock, not yet its record
    try:
        assert live_record(tmp_path / "home")["pid"] == 999_999  # what a bare lookup reads meanwhile
        with pytest.raises(EnvironmentalFailure, match="did not start in time"):
            _wait_for_record(tmp_path / "home", starting, time.monotonic() + 1.0)
        paths.record.write_text(json.dumps({"pid": starting.pid, "api_url": "http://127.0.0.1:1/api"}))
        assert _wait_for_record(tmp_path / "home", starting, time.monotonic() + 1.0)["pid"] == starting.pid
    finally:
        os.close(holder)
        starting.kill()
        starting.wait()


def test_a_claim_waits_out_a_commands_brief_shared_probe_but_not_a_running_server(tmp_path: Path):
    """A command polling ``live_record`` holds the lock shared for an instant; the new server must not take
    that for another server (it used to exit 0 at once and the command failed).  A real holder still wins."""
    import fcntl
    import threading

    from artoo.servers.lingering import Paths, claim

    home = tmp_path / "home"
    paths = Paths.of(home)
    probe = os.open(paths.lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(probe, fcntl.LOCK_SH)
    threading.Timer(0.2, os.close, args=(probe,)).start()  # the probe lets go, as live_record does
    fd = claim(home, "http://127.0.0.1:1/api", "embedded")
    assert fd is not None and json.loads(paths.record.read_text())["pid"] == os.getpid()
    try:
        assert claim(home, "http://127.0.0.1:2/api", "embedded") is None  # held: another server runs
    finally:
        os.close(fd)
