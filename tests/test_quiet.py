"""A quiet terminal: ``artoo demo`` shows artoo's progress only; Prefect's own lines need ``-v``.

A real subprocess against the session's Prefect server, because Prefect's console handler
writes to the process's real stderr (an in-process runner would not see it).  The run's logs
on the server keep every line either way.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PREFECT_LINE = re.compile(r"^\d{2}:\d{2}:\d{2}\.\d{3} \| (DEBUG|INFO|WARNING|ERROR|CRITICAL)\s*\| ", re.MULTILINE)
ARTOO = str(Path(sys.executable).with_name("artoo"))


def demo(tmp_path: Path, api_url: str, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "OPENAI_", "BRAIN_", "TOOL_"))}
    env.update(ARTOO_HOME=str(tmp_path / "home"), PREFECT_API_URL=api_url)
    done = subprocess.run([ARTOO, "demo", *flags], env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_terminal_is_quiet_unless_verbose(tmp_path: Path, prefect_api: str):
    quiet = demo(tmp_path, prefect_api)
    output = quiet.stdout + quiet.stderr
    assert PREFECT_LINE.search(output) is None, PREFECT_LINE.search(output)
    assert "Finished in state" not in output
    for progress in ("task count_note_lines", "round 1", "round 2", "GGS D=", "change_path", "accept",
                     "cost by role"):
        assert progress in output, progress
    loud = demo(tmp_path, prefect_api, "-v")
    assert PREFECT_LINE.search(loud.stderr) is not None
    assert "Finished in state" in loud.stderr
