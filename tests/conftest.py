"""Shared fixtures: one Prefect harness per session, isolated artoo homes, the scripted LLM.

Pure-logic tests request none of these and never start Prefect.  Flow tests request
``prefect_api`` (a real Prefect API server in a subprocess, started once) and
``scripted`` (the scripted OpenAI-compatible server on loopback, reached through the real
``openai`` client).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

LLM_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "BRAIN_BASE_URL", "BRAIN_API_KEY", "BRAIN_MODEL",
           "TOOL_BASE_URL", "TOOL_API_KEY", "TOOL_MODEL", "ARTOO_CONFIG")

os.environ.setdefault("PREFECT_LOGGING_TO_API_BATCH_INTERVAL", "0.3")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """A real Prefect API (test harness, SQLite in a temp dir) for the whole session."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield PREFECT_API_URL.value()


@pytest.fixture
def artoo_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated ARTOO_HOME and workspace; no LLM configured; Law-1 denies (nobody to ask)."""
    for key in LLM_ENV:
        monkeypatch.delenv(key, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("ARTOO_HOME", str(home))
    monkeypatch.setenv("ARTOO_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("ARTOO_LAW1_MODE", "deny")
    monkeypatch.setenv("ARTOO_LLM_TIMEOUT_S", "20")
    monkeypatch.setenv("ARTOO_LLM_MAX_RETRIES", "0")
    return tmp_path


@pytest.fixture
def scripted(artoo_env: Path, monkeypatch: pytest.MonkeyPatch):
    """Start a scripted LLM server for a scenario and point artoo's settings at it."""
    from artoo.scripted_llm import ScriptedLLMServer

    servers: list[ScriptedLLMServer] = []

    def start(scenario: dict) -> ScriptedLLMServer:
        server = ScriptedLLMServer(scenario).start()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        return server

    yield start
    for server in servers:
        server.stop()


def run_cli(*args: str) -> tuple[int, str, str]:
    """Invoke the real ``artoo`` Typer app in-process; returns (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from artoo.cli import app

    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def final_from(stdout: str) -> dict:
    """The one FinalResult JSON object ``artoo run --json`` prints."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one JSON line on stdout, got: {stdout!r}"
    return json.loads(lines[0])
