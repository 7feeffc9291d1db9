"""Law 1 in an interactive terminal: ``artoo run`` asks on the console and only "y" runs the action.

A real ``artoo run`` process (ephemeral Prefect) gets a pseudo-terminal as stdin, so it
knows a person is there; the test reads the question on stderr and answers it.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import read_until
from tests.scenario_kit import deletion_scenario

ARTOO = str(Path(sys.executable).with_name("artoo"))
QUESTION = b"Approve? [y/N]"


@pytest.mark.slow
def test_console_approval_in_an_interactive_terminal(tmp_path):
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    victim = workspace / "old.log"
    victim.write_text("delete me")
    master, slave = pty.openpty()
    with ScriptedLLMServer(deletion_scenario()) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "ARTOO_", "OPENAI_"))}
        env.update(ARTOO_HOME=str(tmp_path / "home"), PREFECT_HOME=str(tmp_path / "prefect"),
                   OPENAI_BASE_URL=server.base_url, OPENAI_MODEL="scripted", OPENAI_API_KEY="k",
                   ARTOO_SERVER__LINGER_S="3",  # its lingering server goes soon after the test, not in ten minutes
                   ARTOO_GGS__ACCEPT_JUDGED="true")  # the scripted validators' pass accepts, as in tests/conftest.py
        proc = subprocess.Popen([ARTOO, "run", "--json", "--workspace", str(workspace), "delete old.log"],
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        os.close(slave)
        try:
            asked = read_until(proc.stderr, QUESTION, timeout_s=120)
            assert QUESTION in asked, asked[-2000:].decode(errors="replace")
            assert b"rm old.log" in asked and victim.exists()
            os.write(master, b"y\n")
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(master)
    assert proc.returncode == 0, err[-3000:].decode(errors="replace")
    assert json.loads(out.decode().strip())["directive"] == "accept"
    assert not victim.exists()
    assert b"[LAW1] approved" in err
