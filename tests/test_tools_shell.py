"""Executor tools, the shell: real subprocesses, Law-1 gating, timeouts, output caps, find rewrites."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.tools import Confinement, ToolBox
from artoo.tasks.tools.shell import build_shell_argv, find_on_personal_path
from artoo.tasks.tools.text import evidence_of, with_note
from tests.processes import alive
from tests.test_tools import Gate, make_box, run


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    for rel in ("Documents/Invoice-2024.pdf", "Documents/notes.txt", ".cache/hidden.pdf"):
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text("x")
    monkeypatch.setenv("HOME", str(path))
    return path


# ------------------------------------------------------------------ shell
def test_shell_happy_path_reports_exit_code(tmp_path: Path, ws: Path) -> None:
    (ws / "a.txt").write_text("1\n2\n3\n")
    result = run(make_box(tmp_path, ws).call("shell", {"command": "wc -l < a.txt"}))
    assert result.ok and result.output == "3\n[exit code 0]"
    assert result.evidence == "shell: wc -l < a.txt → 3\n[exit code 0]"


def test_shell_nonzero_exit_is_a_logical_failure(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("shell", {"command": "echo oops >&2; exit 3"}))
    assert not result.ok and result.failure_class == "logical" and result.output == "oops\n[exit code 3]"
    missing = run(make_box(tmp_path, ws).call("shell", {"command": "no-such-command-xyz"}))
    assert missing.failure_class == "environmental" and "[exit code 127]" in missing.output


def test_shell_50_mb_output_is_capped(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("shell", {"command": "yes | head -c 50000000"}))
    assert result.ok and len(result.output) <= 4000
    assert "characters omitted" in result.output and result.output.endswith("[exit code 0]")


def test_shell_timeout_kills_the_process_group(tmp_path: Path, ws: Path) -> None:
    settings = load_settings(home=str(tmp_path / "h"), workspace=str(ws), tools={"shell_timeout_s": 1.0})
    # host PIDs: the fallback's process-group kill (under bubblewrap $! is a PID-namespace number;
    # the sandbox's kill is tested in tests/reliability/test_sandbox.py)
    gate = Gate(True)  # without bubblewrap the text judge decides: the pid file is a new file, so nobody is asked
    box = ToolBox(settings, ws, gate, confinement=Confinement(sandbox_mode="off"))
    result = run(box.call("shell", {"command": "sleep 60 & echo $! > child.pid; echo started; wait"}))
    assert gate.asked == []
    assert not result.ok and result.failure_class == "environmental"
    assert result.output.startswith("timed out after 1s") and "started" in result.output
    child = int((ws / "child.pid").read_text())
    for _ in range(50):  # the kill is asynchronous: wait for the kernel to reap it
        if not alive(child):
            break
        time.sleep(0.05)
    assert not alive(child)


def test_shell_rm_denied_leaves_file(tmp_path: Path, ws: Path) -> None:
    victim = ws / "precious.txt"
    victim.write_text("data")
    gate = Gate(False)
    box = make_box(tmp_path, ws, gate)
    result = run(box.call("shell", {"command": "rm precious.txt"}))
    assert victim.exists()
    assert not result.ok and result.failure_class == "environmental"
    assert result.output.startswith("[LAW1] denied: rm precious.txt")
    assert box.law1_denials[0].command == "rm precious.txt"
    assert [Path(t).name for t in box.law1_denials[0].targets] == ["precious.txt"]


def test_shell_rm_approved_runs_and_is_recorded(tmp_path: Path, ws: Path) -> None:
    victim = ws / "old.txt"
    victim.write_text("data")
    gate = Gate(True)
    box = make_box(tmp_path, ws, gate)
    result = run(box.call("shell", {"command": "rm old.txt && echo gone"}))
    assert result.ok and "gone" in result.output and not victim.exists()
    assert [a.command for a in box.approvals] == ["rm old.txt && echo gone"]


def test_shell_reversible_command_is_not_asked(tmp_path: Path, ws: Path) -> None:
    gate = Gate(False)
    result = run(make_box(tmp_path, ws, gate).call("shell", {"command": "echo hi > fresh.txt && cat fresh.txt"}))
    assert result.ok and gate.asked == [] and (ws / "fresh.txt").read_text() == "hi\n"


def test_shell_redirect_onto_existing_file_is_gated(tmp_path: Path, ws: Path) -> None:
    (ws / "log.txt").write_text("old")
    gate = Gate(False)
    result = run(make_box(tmp_path, ws, gate).call("shell", {"command": "echo new > log.txt"}))
    assert not result.ok and (ws / "log.txt").read_text() == "old"
    assert [Path(t).name for t in gate.asked[0].targets] == ["log.txt"]


def test_shell_find_on_home_goes_to_locate(tmp_path: Path, ws: Path, home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no locate index on PATH: the bounded walk answers
    result = run(make_box(tmp_path, ws).call("shell", {"command": "find ~ -name '*.pdf' -type f"}))
    assert result.ok
    lines = result.output.splitlines()
    assert lines[0] == "[find on a personal path was answered by locate]"
    assert lines[1:] == [str(home / "Documents" / "Invoice-2024.pdf")]


def test_shell_find_maxdepth_runs_as_written(tmp_path: Path, ws: Path) -> None:
    """-maxdepth 1 means 'not the subdirectories': the file two levels down is not found."""
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "deep.txt").write_text("x")
    (ws / "top.txt").write_text("x")
    result = run(make_box(tmp_path, ws).call("shell", {"command": "find . -maxdepth 1 -name '*.txt'"}))
    assert result.ok and result.output == "./top.txt\n[exit code 0]"


@pytest.mark.parametrize(("command", "pattern"), [
    ("find ~ -name '*.pdf'", "*.pdf"), ("find $HOME/Documents -iname notes.txt", "notes.txt"),
    ("find /home/bob -type d -name src", "src"), ("find /root -name x -print", "x"),
    ("find . -name '*.pdf'", None), ("find ~ -name x -delete", None), ("find ~ -name x | wc -l", None),
    ("find ~ -type f", None), ("find ~ -name x -exec rm {} \\;", None), ("find /tmp -name x", None),
    ("find ~ -maxdepth 1 -name x", None), ("find ~ -mindepth 2 -name x", None),
])
def test_find_on_personal_path(command: str, pattern: str | None) -> None:
    query = find_on_personal_path(command)
    assert (query.pattern if query else None) == pattern


def test_build_shell_argv_is_the_sandbox_seam() -> None:
    assert build_shell_argv("echo hi") == ["bash", "-c", "echo hi"]


def test_destructive_find_is_not_widened(tmp_path: Path, ws: Path) -> None:
    """A destructive find runs exactly as the user approved it, depth limit included."""
    (ws / "sub").mkdir()
    (ws / "top.tmp").write_text("x")
    (ws / "sub" / "deep.tmp").write_text("x")
    gate = Gate(True)
    result = run(make_box(tmp_path, ws, gate).call("shell", {"command": "find . -maxdepth 1 -name '*.tmp' -delete"}))
    assert result.ok and gate.asked[0].command == "find . -maxdepth 1 -name '*.tmp' -delete"
    assert not (ws / "top.tmp").exists() and (ws / "sub" / "deep.tmp").exists()


@pytest.mark.parametrize(("main", "note", "limit", "main_whole", "note_whole"), [
    ("m" * 100, "n" * 100, 400, True, True),       # both fit: unchanged
    ("m" * 2700, "n" * 2100, 4000, True, False),   # the note is cut to what is left; the output stays whole
    ("m" * 3900, "n" * 2100, 4000, False, False),  # the note keeps its minimum, the output gives way
    ("m" * 3000, "n" * 300, 4000, True, True),
])
def test_with_note_cuts_the_note_before_the_output(main: str, note: str, limit: int, main_whole: bool,
                                                   note_whole: bool) -> None:
    out = with_note(main, note, limit)
    assert len(out) <= limit
    assert (main in out) is main_whole and (note in out) is note_whole
    assert out.startswith(main[:50]) and out.endswith(note[-50:])
    assert out.count("n") >= min(len(note), 600 - 40)  # the note keeps at least its minimum (less its marker)


@pytest.mark.parametrize(("text", "n", "expected"), [
    ("ok\n[exit code 0]", 200, "ok\n[exit code 0]"),  # whole: nothing to add
    ("x" * 300 + "\n[exit code 2]", 10, "x" * 9 + "… [exit code 2]"),
    ("x" * 300 + "\n[exit code 137]\n[killed by SIGKILL: a hard limit]", 10,
     "x" * 9 + "… [exit code 137] [killed by SIGKILL: a hard limit]"),
    ("x" * 300 + "\n[exit code 0]\n[changes committed]\ncreated /w/a (3 B)", 10, "x" * 9 + "… [exit code 0]"),
    ("[exit code 1]\n" + "y" * 300, 20, "[exit code 1]\n" + "y" * 5 + "…"),  # already shown: not repeated
    ("z" * 300, 10, "z" * 9 + "…"),  # a read_file's text has no status line
    ("x" * 300 + "\n[exit code 0]\n[artoo sandbox] no network: this command ran with only a private loopback", 10,
     "x" * 9 + "… [exit code 0] [artoo sandbox] no network"),  # what the sandbox stopped: its headline
])
def test_evidence_of_keeps_how_a_long_command_ended(text: str, n: int, expected: str):
    assert evidence_of(text, n) == expected


def test_a_long_failing_command_reads_as_failed_in_the_validators_evidence(tmp_path: Path, ws: Path) -> None:
    """300 characters printed, then exit 3: R4a's entry is cut at evidence_chars but still says exit code 3."""
    result = run(make_box(tmp_path, ws).call("shell", {"command": "printf '%0300d\\n' 0; exit 3"}))
    assert not result.ok and len(result.evidence) < 300
    assert result.evidence.endswith("… [exit code 3]"), result.evidence
