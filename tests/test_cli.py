"""The CLI as a person meets it: help, the no-endpoint explanation, config, policy, the demo.

The demo test runs ``artoo demo --json`` as a real process in ephemeral mode (no Prefect
server configured): it is the README's first command and the embedded default's proof.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

ARTOO = str(Path(sys.executable).with_name("artoo"))


def test_help_lists_every_command():
    code, out, _ = run_cli("--help")
    assert code == 0
    for command in ("run", "demo", "serve", "audit", "memory", "dream", "policy", "config", "bench"):
        assert command in out


def test_run_without_an_endpoint_explains_in_one_paragraph_and_exits_2(artoo_env):
    code, out, err = run_cli("run", "x")
    assert code == 2 and out == ""
    text = err.strip()
    assert "\n\n" not in text and "Traceback" not in text
    assert "OPENAI_BASE_URL" in text and "artoo demo" in text


def test_config_masks_secrets(artoo_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    code, out, _ = run_cli("config", "--json")
    data = json.loads(out)
    assert code == 0 and "sk-very-secret" not in out
    assert data["openai_api_key"] == "****" and data["resolved_brain_tier"]["base_url"] == "http://127.0.0.1:9/v1"
    assert data["ggs"]["max_replans"] == 3 and data["tools"]["head_tail_limit"] == 4000


@pytest.mark.parametrize("command, irreversible", [
    ("rm -rf build", True),
    ("sh -c 'find . -name \"*.tmp\" -delete'", True),
    ("ls -la", False),
    ("grep -r TODO .", False),
])
def test_policy_check_json_is_exactly_the_verdict(command, irreversible, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("policy", "check", command, "--json")
    data = json.loads(out)
    assert code == 0 and set(data) == {"irreversible", "reason", "categories"}
    assert data["irreversible"] is irreversible and data["reason"]


def test_policy_check_lets_a_new_file_pass_and_asks_for_one_a_person_keeps(tmp_path, monkeypatch):
    """The current folder is where the command would start: a file not there yet is created, one that is there
    would be overwritten; nothing is run either way."""
    monkeypatch.chdir(tmp_path)
    new = json.loads(run_cli("policy", "check", "echo hi > new.txt", "--json")[1])
    (tmp_path / "old.txt").write_text("data")
    old = json.loads(run_cli("policy", "check", "echo hi > old.txt", "--json")[1])
    assert (new["irreversible"], old["irreversible"]) == (False, True)
    assert old["categories"] == ["may change"]
    assert (tmp_path / "old.txt").read_text() == "data" and not (tmp_path / "new.txt").exists()


def test_demo_runs_the_full_loop_in_ephemeral_mode(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "OPENAI_", "BRAIN_", "TOOL_"))}
    env.update(ARTOO_HOME=str(tmp_path / "home"), PREFECT_HOME=str(tmp_path / "prefect"))
    done = subprocess.run([ARTOO, "demo", "--json"], env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    final = json.loads(done.stdout.strip())
    assert final["directive"] in ("accept", "success") and final["replans"] >= 1
    assert final["prev_directive"] == "change_path"
    assert "SCRIPTED" in done.stderr
