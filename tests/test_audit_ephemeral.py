"""The embedded default end to end: ``artoo run`` with no Prefect server, then ``artoo audit``.

Real processes: ``artoo run`` starts Prefect's ephemeral server (in its own PREFECT_HOME),
the scripted brain answers on loopback, and the audit commands read the log the run left.
Marked slow: the ephemeral server's start-up dominates (~20-30 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.slow


def artoo(env: dict, *args: str) -> subprocess.CompletedProcess:
    """The real CLI in a fresh process (the installed entry point's code, run by this interpreter)."""
    code = "import sys; from artoo.cli import main; sys.argv = ['artoo', *sys.argv[1:]]; main()"
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=240)


def test_artoo_run_without_a_server_audits_every_message_before_returning(tmp_path: Path):
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    server = ScriptedLLMServer(scenario(
        TaskSpec=[spec("say_hello", "say hello")],
        Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])],
        tools=[call("shell", command="echo hello"), done("hello")],
        AgentVerdict=[agent(verdict("the output contains hello", True, evidence="shell printed hello"))],
        TaskVerdict=[task_verdict(verdict("hello was printed", True))],
    )).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "OPENAI_", "BRAIN_", "TOOL_"))}
    env.update(ARTOO_HOME=str(tmp_path / "home"), ARTOO_WORKSPACE=str(tmp_path / "ws"), ARTOO_LAW1_MODE="deny",
               PREFECT_HOME=str(tmp_path / "prefect"), OPENAI_BASE_URL=server.base_url, OPENAI_MODEL="scripted",
               OPENAI_API_KEY="test-key")
    try:
        run = artoo(env, "run", "--json", "say hello")
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout)["directive"] == "accept"
    assert "audit log is missing" not in run.stderr
    audit = artoo(env, "audit", "--json")
    report = json.loads(audit.stdout)
    assert (audit.returncode, report["tasks_observed"], report["anomalies"]) == (0, 1, [])
    assert [g["task_id"] for g in report["gap_trends"]] == ["say_hello"]
    verify = artoo(env, "audit", "verify")
    assert verify.returncode == 0 and "intact" in verify.stdout
    kinds = [json.loads(line)["message"] for line in (tmp_path / "home" / "audit" / "audit.jsonl").open()]
    assert kinds[0] == "task_spec" and kinds[-1] == "final_result"
    assert {"subtask", "execution_result", "subtask_outcome", "outcome_summary"} <= set(kinds)
