"""Shared helpers of the reliability tests: a real ``artoo`` process, and the shapes of a clear outcome.

A clear outcome (issue 8): ``artoo run --json`` exits with a defined code and prints either
exactly one FinalResult JSON object on stdout or a one-paragraph error on stderr, and
never a Python traceback.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from artoo.config.contracts import EXIT_CODES as EXIT_CODES_BY_DIRECTIVE

ROOT = Path(__file__).resolve().parents[2]
ARTOO = Path(sys.executable).with_name("artoo")
EXIT_CODES = {*EXIT_CODES_BY_DIRECTIVE.values(), 2}


def clear_outcome(code: int, stdout: str, stderr: str) -> dict | str:
    """The FinalResult (dict) or the error paragraph (str); fails the test on anything else."""
    assert code in EXIT_CODES, f"undefined exit code {code}; stderr: {stderr[-2000:]}"
    assert "Traceback" not in stdout + stderr, f"a traceback reached the user:\n{stderr[-4000:]}"
    lines = [line for line in stdout.splitlines() if line.strip()]
    if lines:
        assert len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}"
        final = json.loads(lines[0])
        assert final["directive"] in EXIT_CODES_BY_DIRECTIVE
        assert code == EXIT_CODES_BY_DIRECTIVE[final["directive"]]
        return final
    assert code != 0, "exit 0 without a FinalResult"
    error = [line for line in stderr.splitlines() if line.startswith("artoo")]
    assert error, f"no error paragraph on stderr: {stderr[-2000:]}"
    paragraph = stderr[stderr.index(error[-1]):].strip()
    assert "\n\n" not in paragraph, f"the error is not one paragraph: {paragraph!r}"
    return paragraph


LLM_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "BRAIN_BASE_URL", "BRAIN_API_KEY", "BRAIN_MODEL",
           "TOOL_BASE_URL", "TOOL_API_KEY", "TOOL_MODEL", "ARTOO_CONFIG")


@dataclass
class Case:
    """One ``artoo run --json`` in its own ARTOO_HOME against its own scripted endpoint."""

    name: str
    scenario: dict | None
    """The scripted LLM's scenario; None means no server at all (the endpoint is down)."""
    request: str = "say hello"
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Ran:
    """What a case left behind: exit code, output, the endpoint's request log, its home."""

    code: int
    stdout: str
    stderr: str
    requests: list[dict]
    home: Path
    workspace: Path


def case_env(root: Path, base_url: str, extra: dict[str, str]) -> dict[str, str]:
    """This process's environment (Prefect server included) with an isolated artoo and a scripted endpoint."""
    env = {k: v for k, v in os.environ.items() if k not in LLM_ENV}
    env.update(ARTOO_HOME=str(root / "home"), ARTOO_WORKSPACE=str(root / "workspace"), ARTOO_LAW1_MODE="deny",
               ARTOO_LLM_TIMEOUT_S="20", ARTOO_LLM_MAX_RETRIES="0", OPENAI_BASE_URL=base_url,
               OPENAI_MODEL="scripted", OPENAI_API_KEY="test-key", COLUMNS="200")
    env.update(extra)
    return env


def closed_port_url() -> str:
    """An OpenAI base URL on a loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def run_cases(cases: list[Case], root: Path, timeout: float = 240) -> dict[str, Ran]:
    """Run every case as a real ``artoo run --json`` process, all at once; returns what each left."""
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    servers, procs = {}, {}
    try:
        for case in cases:
            folder = root / case.name
            (folder / "workspace").mkdir(parents=True, exist_ok=True)
            server = ScriptedLLMServer(case.scenario).start() if case.scenario is not None else None
            servers[case.name] = server
            env = case_env(folder, server.base_url if server else closed_port_url(), case.env)
            procs[case.name] = subprocess.Popen([str(ARTOO), "run", "--json", case.request], cwd=ROOT, env=env,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True)
        results = {}
        for case in cases:
            out, err = procs[case.name].communicate(timeout=timeout)
            server = servers[case.name]
            results[case.name] = Ran(procs[case.name].returncode, out, err, server.requests if server else [],
                                     root / case.name / "home", root / case.name / "workspace")
        return results
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        for server in servers.values():
            if server is not None:
                server.stop()
