"""Shared helpers of the reliability tests: a real ``artoo`` process, and the shapes of a clear outcome.

A clear outcome (issue 8): ``artoo run --json`` exits with a defined code and prints either
exactly one FinalResult JSON object on stdout or a one-paragraph error on stderr, and
never a Python traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTOO = Path(sys.executable).with_name("artoo")
EXIT_CODES = {0, 1, 2}


def artoo_process(*args: str, timeout: float = 180, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the real ``artoo`` console script with this test's environment (ARTOO_HOME, OPENAI_*, Prefect)."""
    return subprocess.run([str(ARTOO), *args], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                          timeout=timeout, input=stdin if stdin is not None else "", check=False)


def clear_outcome(code: int, stdout: str, stderr: str) -> dict | str:
    """The FinalResult (dict) or the error paragraph (str); fails the test on anything else."""
    assert code in EXIT_CODES, f"undefined exit code {code}; stderr: {stderr[-2000:]}"
    assert "Traceback" not in stdout + stderr, f"a traceback reached the user:\n{stderr[-4000:]}"
    lines = [line for line in stdout.splitlines() if line.strip()]
    if lines:
        assert len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}"
        final = json.loads(lines[0])
        assert final["directive"] in ("accept", "success", "abandon")
        assert code == (0 if final["directive"] in ("accept", "success") else 1)
        return final
    assert code != 0, "exit 0 without a FinalResult"
    error = [line for line in stderr.splitlines() if line.startswith("artoo")]
    assert error, f"no error paragraph on stderr: {stderr[-2000:]}"
    paragraph = stderr[stderr.index(error[-1]):].strip()
    assert "\n\n" not in paragraph, f"the error is not one paragraph: {paragraph!r}"
    return paragraph
