"""Law 1 through the real CLI: every command issue 14 lists under "Why" is irreversible.

Run from a directory where the named files exist (a Makefile with a clean target, a
cleanup.py, a cleanup.sh that deletes keep.txt), as a person would try them with
``artoo policy check --json``; each was judged reversible by the hand-written scanner.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

WHY = [
    ("make clean", "runs code", "Makefile"),
    ("python3 cleanup.py", "runs code", "cleanup.py"),
    ('mysql -e "DROP DATABASE x"', "daemon", "mysql server"),
    ("redis-cli FLUSHALL", "daemon", "FLUSHALL"),
    ("docker compose down -v", "deletion", "volumes"),
    ("trap 'rm -rf ~/data' EXIT", "deletion", "via trap"),
    ("coproc rm -rf ~/data", "deletion", "via coproc"),
    ("echo $(case a in a) rm -rf ~/data;; esac)", "deletion", "~/data"),
    ("bash cleanup.sh", "runs code", "cleanup.sh"),
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
def test_every_command_of_the_issue_is_irreversible(project: Path, command: str, category: str,
                                                    mention: str) -> None:
    code, out, _ = run_cli("policy", "check", command, "--json")
    verdict = json.loads(out)
    assert code == 0 and set(verdict) == {"irreversible", "reason"}
    assert verdict["irreversible"] is True, verdict["reason"]
    assert verdict["reason"].startswith(f"{category}: ") and mention in verdict["reason"], verdict["reason"]
    assert (project / "keep.txt").read_text() == "precious\n", "policy check must never run the command"


@pytest.mark.parametrize("command", ["make clean", "python3 cleanup.py", "bash cleanup.sh", "npm test"])
def test_a_program_whose_code_is_absent_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     command: str) -> None:
    """No Makefile, script or package.json there: the program fails at once, so nothing is at risk."""
    monkeypatch.chdir(tmp_path)
    verdict = json.loads(run_cli("policy", "check", command, "--json")[1])
    assert verdict["irreversible"] is False, verdict["reason"]
