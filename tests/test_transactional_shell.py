"""The transactional shell on this machine: real overlayfs, real bubblewrap, real files.

A command runs on a copy-on-write view; what it changed is listed exactly; new files and
the task's own files commit quietly; anything that existed before the task is a question,
and a denial leaves the real directory byte-for-byte as it was.  The closed doors: no Unix
socket reaches a listener outside, and artoo's home is invisible.  These need bubblewrap
and overlayfs; where either is missing the test is skipped with the reason.
"""

from __future__ import annotations

import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from artoo.tasks.tools import Confinement, changeset, overlay, sandbox
from artoo.tasks.tools.doors import unix_socket_filter
from tests.test_tools import Gate, make_box, run

needs_overlay = pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.overlay_problem() is not None,
                                   reason=f"no bubblewrap or overlay here: {sandbox.bwrap_problem()} "
                                          f"{overlay.overlay_problem()}")
pytestmark = needs_overlay


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    (path / "keep.txt").write_text("keep me")
    (path / "data").mkdir()
    (path / "data" / "a.csv").write_text("1,2\n")
    (path / "run.sh").write_text("echo run\n")
    return path


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root with its kind, mode and content."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            body = path.read_bytes() if path.is_file() and not path.is_symlink() else (
                os.readlink(path) if path.is_symlink() else None)
            seen[str(path.relative_to(root))] = (info.st_mode, body)
    return seen


def test_new_files_commit_quietly_and_their_later_changes_too(tmp_path: Path, ws: Path) -> None:
    gate = Gate(False)
    box = make_box(tmp_path, ws, gate)
    first = run(box.call("shell", {"command": "mkdir out && echo draft > out/summary.md"}))
    second = run(box.call("shell", {"command": "echo final > out/summary.md && chmod 600 out/summary.md"}))
    third = run(box.call("shell", {"command": "echo tmp > t && rm t"}))
    assert first.ok and second.ok and third.ok and gate.asked == []
    assert (ws / "out" / "summary.md").read_text() == "final\n"
    assert f"created {ws}/out/summary.md" in first.output and f"modified {ws}/out/summary.md" in second.output
    assert not (ws / "t").exists()


def test_deleting_what_existed_before_asks_and_denial_changes_nothing(tmp_path: Path, ws: Path) -> None:
    before = snapshot(ws)
    gate = Gate(False)
    box = make_box(tmp_path, ws, gate)
    result = run(box.call("shell", {"command": "printf 'rm keep.txt\\necho x > new.txt\\n' > c.sh && bash c.sh"}))
    assert not result.ok and result.output.startswith("[LAW1] denied")
    assert snapshot(ws) == before
    assert gate.asked[0].changes == [f"created {ws}/c.sh (29 B)", f"deleted {ws}/keep.txt (7 B)",
                                     f"created {ws}/new.txt (2 B)"]
    assert gate.asked[0].targets == [f"{ws}/keep.txt"]


def test_approval_commits_exactly_the_change_set(tmp_path: Path, ws: Path) -> None:
    """Every kind of change, committed: the real directory ends as the command saw it."""
    script = ("rm keep.txt; echo 3,4 >> data/a.csv; chmod 755 run.sh; mv data/a.csv data/b.csv; "
              "rm -r data && mkdir data && echo new > data/c.txt; ln -s run.sh link; mkdir -p x/y && echo z > x/y/z; "
              "mkfifo pipe")
    gate = Gate(True)
    box = make_box(tmp_path, ws, gate)
    view_listing = run(box.call("shell", {"command": f"{script}; find . | sort"}))
    assert view_listing.ok, view_listing.output
    inside = [line for line in view_listing.output.splitlines() if line.startswith(".")]
    after = sorted(["."] + ["./" + p for p in snapshot(ws)])
    assert inside == after
    assert (ws / "data" / "c.txt").read_text() == "new\n" and not (ws / "keep.txt").exists()
    assert os.readlink(ws / "link") == "run.sh" and (ws / "run.sh").stat().st_mode & 0o777 == 0o755
    asked = gate.asked[0].changes
    assert f"deleted {ws}/keep.txt (7 B)" in asked and f"mode of {ws}/run.sh: 0644 → 0755" in asked
    assert f"deleted {ws}/data/a.csv (4 B)" in asked and f"created {ws}/data/c.txt (4 B)" in asked


def test_compute_reads_renames_and_ignores_copy_ups(tmp_path: Path, ws: Path) -> None:
    view = overlay.open_view([ws])
    try:
        import subprocess

        script = "mv keep.txt kept.txt; touch run.sh; cat data/a.csv > /dev/null"
        subprocess.run(overlay.mount_argv(view, ["sh", "-c", f"cd {ws} && {script}"]), check=True)
        found = changeset.compute(view.layers[0].upper, ws)
    finally:
        view.close()
    assert [c.line() for c in found] == [f"renamed {ws}/keep.txt → {ws}/kept.txt (7 B)"]
    assert (ws / "keep.txt").exists() and not (ws / "kept.txt").exists()


def test_the_committed_change_list_never_cuts_what_the_command_printed(tmp_path: Path, ws: Path) -> None:
    """InterCode fs2 task 34: 2.7 kB printed and 28 files changed; the change list pushed the last lines out."""
    box = make_box(tmp_path, ws, Gate(False))
    command = ("mkdir out && for i in $(seq 10 43); do echo x > out/a-rather-long-file-name-number-$i.txt; "
               "echo \"+ wrote out/a-rather-long-file-name-number-$i.txt, a line as long as sh -x prints\"; done")
    result = run(box.call("shell", {"command": command}))
    assert result.ok and "[changes committed]" in result.output and len(result.output) <= 4000
    printed = [f"+ wrote out/a-rather-long-file-name-number-{i}.txt, a line as long as sh -x prints"
               for i in range(10, 44)]
    assert [line for line in result.output.splitlines() if line.startswith("+ wrote")] == printed
    assert "[exit code 0]" in result.output and "characters omitted" in result.output  # the list was cut instead
    assert len(list((ws / "out").iterdir())) == 34


def test_a_hard_link_leaves_its_source_as_it_was(tmp_path: Path, ws: Path) -> None:
    """``ln`` copies its source up unchanged: committing must not rewrite it (a change the command never made)."""
    old = 1_600_000_000_000_000_000
    os.utime(ws / "keep.txt", ns=(old, old))
    box = make_box(tmp_path, ws, Gate(False))
    linked = run(box.call("shell", {"command": "ln keep.txt hard.txt"}))
    assert linked.ok, linked.output
    assert (ws / "hard.txt").read_text() == "keep me" and (ws / "keep.txt").read_text() == "keep me"
    assert (ws / "keep.txt").stat().st_mtime_ns == old


def test_touch_of_an_existing_file_sets_its_time_and_asks_nothing(tmp_path: Path, ws: Path) -> None:
    """A ``touch`` copies the file up with the same content: no change to rule on, but the new time is applied."""
    old = 1_600_000_000_000_000_000
    os.utime(ws / "keep.txt", ns=(old, old))
    box = make_box(tmp_path, ws, Gate(False))  # a question would be refused: none may be asked
    touched = run(box.call("shell", {"command": "touch keep.txt"}))
    assert touched.ok and "[changes committed]" not in touched.output, touched.output
    assert (ws / "keep.txt").stat().st_mtime_ns > old and (ws / "keep.txt").read_text() == "keep me"
    dated = run(box.call("shell", {"command": "touch -d '2021-06-01 12:00:00 UTC' keep.txt"}))
    assert dated.ok and (ws / "keep.txt").stat().st_mtime == 1622548800, dated.output


@pytest.fixture
def visible_dir() -> Path:
    """A directory outside the workspace that the sandbox shows read-only (not /tmp, not /run)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="artoo-sock-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_unix_socket_listener_outside_receives_nothing(tmp_path: Path, ws: Path, visible_dir: Path) -> None:
    """The socket sits where the command can see it (read-only): the seccomp filter stops the connect."""
    path = visible_dir / "daemon.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(3)
    received: list[bytes] = []

    def accept() -> None:
        try:
            conn, _ = server.accept()
            received.append(conn.recv(100))
        except OSError:
            pass

    listener = threading.Thread(target=accept)
    listener.start()
    probe = (f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); "
             "s.sendall(b'DROP DATABASE')\"")
    result = run(make_box(tmp_path, ws, Gate(False)).call("shell", {"command": probe}))
    listener.join()
    server.close()
    assert received == [] and not result.ok and "PermissionError" in result.output


def test_socket_directories_are_masked(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("shell", {"command": "find /run/ /var/run/ -mindepth 1 | wc -l"}))
    assert result.ok and result.output.startswith("0\n")


def test_artoo_home_is_invisible_to_tool_commands(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "artoo_home"
    (home / "audit").mkdir(parents=True)
    (home / "audit" / "audit.jsonl").write_text('{"secret": "audit"}\n')
    (home / "memory.duckdb").write_text("megrams")
    box = make_box(tmp_path, ws)
    result = run(box.call("shell", {"command": f"cat {home}/audit/audit.jsonl {home}/memory.duckdb; ls -A {home}"}))
    assert "secret" not in result.output and "megrams" not in result.output
    assert result.output.count("No such file") == 2


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_socket_filter_is_nine_instructions(machine: str) -> None:
    program = unix_socket_filter(machine)
    assert program is not None and len(program) == 9 * 8


def test_unknown_architecture_gets_no_filter() -> None:
    assert unix_socket_filter("sparc64") is None


@pytest.mark.parametrize(("command", "network", "asked"), [
    ("curl -s -d x=1 http://127.0.0.1:9/ || true", True, True),  # data off the machine: no overlay sees it
    ("mysql -h 127.0.0.1 -e 'DROP DATABASE x' || true", True, True),  # a daemon's change: no overlay sees it
    ("curl -s -d x=1 http://127.0.0.1:9/ || true", False, False),  # no network: it can only fail
    ("echo hi > new.txt", True, False),
])
def test_with_the_network_on_the_text_judge_still_asks_what_no_overlay_sees(
        tmp_path: Path, ws: Path, command: str, network: bool, asked: bool) -> None:
    gate = Gate(False)
    box = make_box(tmp_path, ws, gate, confinement=Confinement(network=network))
    result = run(box.call("shell", {"command": command}))
    assert bool(gate.asked) is asked
    assert result.output.startswith("[LAW1] denied") is asked


@pytest.mark.parametrize("approve", [False, True])
def test_home_on_an_overlay_every_change_there_is_asked(tmp_path: Path, ws: Path, monkeypatch, approve: bool) -> None:
    from artoo.config.settings import load_settings
    from artoo.tasks.tools import ToolBox

    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    settings = load_settings(home=str(tmp_path / "artoo_home"), workspace=str(ws), tools={"overlay_home": True})
    gate = Gate(approve)
    result = run(ToolBox(settings, ws, gate).call("shell", {"command": "echo x > ~/note.txt && echo y > fresh.txt"}))
    assert gate.asked[0].targets == [f"{os.path.realpath(home)}/note.txt"]  # the new workspace file asks nothing
    assert "outside the workspace" in gate.asked[0].reason
    assert result.ok is approve
    assert (home / "note.txt").exists() is approve and (ws / "fresh.txt").exists() is approve


@pytest.mark.parametrize(("tools", "says"), [
    ({"overlay": "off"}, "Law 1 falls back to the text judge for shell commands: the overlay is turned off"),
    ({"overlay": "auto"}, "Law 1 judges shell commands by effect"),
])
def test_the_run_log_says_how_law1_judges(tmp_path: Path, ws: Path, caplog, tools: dict, says: str) -> None:
    import logging

    from artoo.config.settings import load_settings
    from artoo.tasks.tools import ToolBox

    settings = load_settings(home=str(tmp_path / "artoo_home"), workspace=str(ws), tools=tools)
    gate = Gate(False)
    with caplog.at_level(logging.INFO, logger="artoo.tools"):
        result = run(ToolBox(settings, ws, gate).call("shell", {"command": "bash -c 'rm keep.txt'"}))
    lines = [r.getMessage() for r in caplog.records if "Law 1" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith(says)
    assert not result.ok and (ws / "keep.txt").exists() and len(gate.asked) == 1  # asked either way


@pytest.fixture
def receiver():
    """An HTTP server on the host's loopback that keeps every body posted to it."""
    got: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            got.append(self.rfile.read(int(self.headers["Content-Length"])))
            self._answer()

        def _answer(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", got
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("approve", [False, True])
def test_with_the_network_on_a_send_asks_before_it_runs_and_a_fetch_does_not(tmp_path: Path, ws: Path, receiver,
                                                                              approve: bool) -> None:
    """Beside the overlay the text judge keeps only what no overlay sees: the file's content leaving the machine."""
    url, got = receiver
    gate = Gate(approve)
    box = make_box(tmp_path, ws, gate, confinement=Confinement(network=True))
    fetched = run(box.call("shell", {"command": f"curl -s {url}"}))
    sent = run(box.call("shell", {"command": f"curl -s -d @keep.txt {url}"}))
    assert fetched.ok and fetched.output.startswith("ok"), fetched.output
    assert [a.command for a in gate.asked] == [f"curl -s -d @keep.txt {url}"]
    assert gate.asked[0].reason.startswith("network: ") and gate.asked[0].changes == []
    assert sent.ok is approve and got == ([b"keep me"] if approve else [])


def test_without_the_network_no_text_question_is_asked_beside_the_overlay(tmp_path: Path, ws: Path) -> None:
    """Nothing can leave and no daemon is reachable: the change set decides (a new file), the sandbox stops the send."""
    gate = Gate(False)
    box = make_box(tmp_path, ws, gate)
    result = run(box.call("shell", {"command": "curl -s -d @keep.txt http://127.0.0.1:9/ > reply.txt; echo done"}))
    assert gate.asked == [] and "done" in result.output and (ws / "reply.txt").exists()
    assert not result.ok and result.failure_class == "environmental" and "no network" in result.output


def test_an_approval_commits_nothing_when_the_files_changed_while_it_waited(tmp_path: Path, ws: Path) -> None:
    """Parallel steps share the workspace: what was approved must still be what would happen."""
    class MeddlingGate(Gate):
        async def __call__(self, action):
            (ws / "keep.txt").write_text("changed meanwhile, by another step")
            return await super().__call__(action)

    gate = MeddlingGate(True)
    result = run(make_box(tmp_path, ws, gate).call("shell", {"command": "rm keep.txt"}))
    assert len(gate.asked) == 1 and not result.ok and "[LAW1] not committed" in result.output
    assert (ws / "keep.txt").read_text() == "changed meanwhile, by another step"
