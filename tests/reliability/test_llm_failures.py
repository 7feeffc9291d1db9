"""A broken brain: malformed, truncated, schema-violating and endless answers; an endpoint down,
slow, rate-limited or failing.  Every case is a real ``artoo run --json`` process with its own
ARTOO_HOME and its own scripted endpoint, all run at once.

Each must end with a clear outcome (a defined exit code, one FinalResult or one error
paragraph, never a traceback) and lose nothing it acknowledged: a printed FinalResult has
its Megram in memory and every message of the run in a verifiable audit log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.memory.store import MemoryStore
from artoo.tasks.audit.chain import verify
from artoo.tasks.audit.log import AuditPaths, iter_records
from tests.reliability.helpers import Case, Ran, clear_outcome, run_cases
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.slow]  # real artoo processes, all at once

HELLO = "the output contains hello"
ONE_ROUND = {"ARTOO_GGS__MAX_REPLANS": "0", "ARTOO_GGS__MAX_RETRIES": "0"}
ENDLESS = "I will now write the plan. " + "and then again " * 150_000  # ~2.2 MB of degenerate text


def hello(task_id: str, **replace: list[dict]) -> dict:
    """The one-round 'say hello' script, with some queues replaced."""
    queues = {"TaskSpec": [spec(task_id, "say hello")],
              "Plan": [plan([subtask("print hello", [HELLO])], ["hello was printed"])],
              "tools": [call("shell", command="echo hello"), done("hello")],
              "AgentVerdict": [agent(verdict(HELLO, True))],
              "TaskVerdict": [task_verdict(verdict("hello was printed", True))]}
    return scenario(**{**queues, **replace})


def case(name: str, env: dict[str, str] | None = None, **replace: list[dict]) -> Case:
    """A case with its own task_id (runs sharing one on one Prefect server share a bus resource)."""
    return Case(name, hello(name, **replace), env=env or {})


CASES = [
    # (case, expected exit code, "final" or "error", words the summary or error must contain)
    (case("malformed_answer", TaskSpec=[{"raw": "{not json"}, {"raw": "still {not json"}]),
     1, "error", "invalid TaskSpec answer twice"),
    (case("truncated_answer", ONE_ROUND, Plan=[{"raw": '{"task_criteria": [{"criterion": "hello was pr'}] * 2),
     1, "final", "invalid Plan answer twice"),
    (case("schema_violating_answer", ONE_ROUND, AgentVerdict=[{"answer": {"verdicts": "all good"}}] * 2),
     1, "final", "invalid AgentVerdict answer twice"),
    (case("endless_answer", ONE_ROUND, Plan=[{"raw": ENDLESS}] * 2), 1, "final", "invalid Plan answer"),
    (case("endless_tool_calls", ONE_ROUND, tools=[{**call("shell", command="echo again"), "repeat": True}],
          AgentVerdict=[agent(verdict(HELLO, False, "logical"))]), 1, "final", "criteria unmet"),
    (Case("endpoint_down", None), 1, "error", "cannot connect"),
    (case("endpoint_slow", {"ARTOO_LLM_TIMEOUT_S": "1"},
          TaskSpec=[{**spec("endpoint_slow", "say hello"), "latency_s": 8}]), 1, "error", "timed out after 1s"),
    (case("rate_limited_then_answers", {"ARTOO_LLM_MAX_RETRIES": "1"},
          TaskSpec=[{"status": 429}, spec("rate_limited_then_answers", "say hello")]), 0, "final", ""),
    (case("server_error_in_planner", ONE_ROUND, Plan=[{"status": 500, "repeat": True}]), 1, "final", "HTTP 500"),
    # 503 after answers is a server restarting: artoo waits llm.reconnect_s (90 s) for it; 2 s here, as long
    # as a wait needs to show it gives up with the 503 (tests/test_llm_reconnect.py tells the wait's bounds).
    (case("server_error_in_validator", {**ONE_ROUND, "ARTOO_LLM__RECONNECT_S": "2"},
          AgentVerdict=[{"status": 503, "repeat": True}]),
     1, "final", "HTTP 503"),
]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    return run_cases([c for c, *_ in CASES], tmp_path_factory.mktemp("llm-failures"))


def audit_messages(home: Path) -> list[str]:
    paths = AuditPaths(home)
    result = verify(paths.log, paths.head)
    assert result.ok, f"the audit log does not verify: {result.reason}"
    return [record["message"] for _, record, _ in iter_records(paths.log) if record]


def stored_megrams(home: Path) -> list[str]:
    store = MemoryStore(home)
    try:
        store.ingest()
        with store.exclusive() as con:
            return [row[0] for row in con.execute("SELECT content FROM megrams").fetchall()]
    finally:
        store.close()


@pytest.mark.parametrize(("case", "code", "kind", "says"), CASES, ids=[c.name for c, *_ in CASES])
def test_a_broken_brain_ends_clearly_and_loses_nothing(ran: dict[str, Ran], case: Case, code: int, kind: str,
                                                      says: str):
    result = ran[case.name]
    outcome = clear_outcome(result.code, result.stdout, result.stderr)
    assert result.code == code, result.stderr[-3000:]
    assert isinstance(outcome, dict if kind == "final" else str)
    text = outcome["summary"] if kind == "final" else outcome
    assert says in text
    messages = audit_messages(result.home)
    if kind == "final":
        assert messages.count("final_result") == 1 and messages[0] == "task_spec"
        account = outcome["summary"].split(" On disk:")[0]  # the GGS's own account; the folder is code's reading
        assert any(account[:80] in content for content in stored_megrams(result.home))
    else:
        assert "final_result" not in messages


def test_endless_output_is_quoted_briefly(ran: dict[str, Ran]):
    final = clear_outcome(ran["endless_answer"].code, ran["endless_answer"].stdout, ran["endless_answer"].stderr)
    assert len(final["summary"]) < 4000 and "and then again" in final["summary"]


def test_an_executor_repeating_itself_is_told_once_then_stopped_at_the_third_identical_call(ran: dict[str, Ran]):
    turns = [r for r in ran["endless_tool_calls"].requests if r["schema"] == "tools"]
    assert len(turns) == 3
    assert "status: not run" in str(turns[2]["body"]["messages"][-1]["content"])
    assert "the same call was requested twice in a row" in str(
        [r for r in ran["endless_tool_calls"].requests if r["schema"] == "AgentVerdict"][0]["body"])


def test_a_rate_limit_is_retried_and_the_run_completes(ran: dict[str, Ran]):
    statuses = [r["status"] for r in ran["rate_limited_then_answers"].requests if r["schema"] == "TaskSpec"]
    assert statuses == [429, 200]
