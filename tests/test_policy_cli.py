"""Law 1 through the real CLI: every command the first Law-1 story lists under "Why" asks, and nothing runs.

Run from a directory where the named files exist (a Makefile with a clean target, a cleanup.py, a
cleanup.sh that deletes keep.txt), as a person would try them with ``artoo policy check --json``;
each was judged reversible by the hand-written scanner.  ``artoo policy check`` answers as the shell
does where no overlay can be mounted: every command that does not only read asks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

WHY = [
    ("make clean", "may change", "make clean"),
    ("python3 cleanup.py", "may change", "cleanup.py"),
    ('mysql -e "DROP DATABASE x"', "daemon", "mysql server"),
    ("redis-cli FLUSHALL", "daemon", "FLUSHALL"),
    ("docker compose down -v", "daemon", "volumes"),
    ("trap 'rm -rf ~/data' EXIT", "may change", "via trap"),
    ("coproc rm -rf ~/data", "may change", "coproc rm -rf ~/data"),
    ("echo $(case a in a) rm -rf ~/data;; esac)", "may change", "~/data"),
    ("bash cleanup.sh", "may change", "cleanup.sh"),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the files the commands name."""
    (tmp_path / "keep.txt").write_text("precious\n")
    (tmp_path / "Makefile").write_text("clean:\n\trm -f keep.txt\n")
    (tmp_path / "cleanup.py").write_text("import os\nos.remove('keep.txt')\n")
    (tmp_path / "cleanup.sh").write_text("#!/bin/sh\nrm keep.txt\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("command", "category", "mention"), WHY)
def test_every_command_of_the_story_asks(project: Path, command: str, category: str, mention: str) -> None:
    code, out, _ = run_cli("policy", "check", command, "--json")
    verdict = json.loads(out)
    assert code == 0 and set(verdict) == {"irreversible", "reason", "categories"}
    assert verdict["irreversible"] is True and verdict["categories"] == [category], verdict["reason"]
    assert verdict["reason"].startswith(f"{category}: ") and mention in verdict["reason"], verdict["reason"]
    assert (project / "keep.txt").read_text() == "precious\n", "policy check must never run the command"


@pytest.mark.parametrize("command", ["make clean", "python3 cleanup.py", "bash cleanup.sh", "npm test"])
def test_a_program_asks_whether_or_not_its_code_is_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         command: str) -> None:
    """The verdict reads the text only: an absent Makefile or script no longer makes the command safe."""
    monkeypatch.chdir(tmp_path)
    verdict = json.loads(run_cli("policy", "check", command, "--json")[1])
    assert verdict["irreversible"] is True and verdict["categories"] == ["may change"], verdict["reason"]


def test_the_console_answer_says_whether_it_asks(project: Path) -> None:
    code, out, _ = run_cli("policy", "check", "grep -rn TODO . | sort")
    assert code == 0 and out.strip() == "runs unasked: only reads (grep, sort)"
    assert run_cli("policy", "check", "make clean")[1].startswith("asks first: may change: `make clean`")
