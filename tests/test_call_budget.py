"""The call budget the controller sees (#45): Ω's calls term, the client that refuses the request past
``ggs.max_calls``, the executor that refuses a command it already ran, a fast loop that does not repeat an attempt,
and ``artoo run`` ending a task at its budget.

The client stories use the real openai client over HTTP against the scripted server; the run stories are
``artoo run --json`` on the session's Prefect server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from artoo.config.contracts import CriterionVerdict, ExecutionResult, OutcomeSummary, ReplanRequest, SubTaskOutcome
from artoo.config.errors import CallBudgetSpent, RunFailure
from artoo.config.settings import GGSParams, load_settings
from artoo.flows.fast_loop import REPEATED, attempt_key
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.maths import call_cost, omega_of, resource_cost
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.base import tier_of
from artoo.tasks.llm.testing.fake import ScriptedLLM
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.early import EARLY
from artoo.tasks.roles.executor import execute
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, requests_by_schema, scenario, spec, subtask, verdict
from tests.test_roles_executor import SUBTASK, Toolbox, shell

SPEC = GGSParams()
TASK = "count_notes"


# --- Ω with the calls term: a table --------------------------------------------------------------------------

@pytest.mark.parametrize(("spent", "max_calls", "expected"), [
    (0, 30, 0.0),
    (12, 30, 0.4),
    (24, 30, 0.8),       # θ: the default budget abandons after 24 calls
    (29, 30, 29 / 30),   # one role call is still left
    (29.25, 30, 1.0),    # less than one role call left: the budget is spent
    (30, 30, 1.0),
    (31, 30, 1.0),       # never above 1
    (2.5, 4, 0.625),     # votes weigh a share of a call
    (3.25, 4, 1.0),
    (0, 1, 0.0),
    (0.25, 1, 1.0),
])
def test_the_calls_term_is_spent_over_the_budget_and_one_once_no_call_is_left(spent, max_calls, expected):
    assert call_cost(spent, GGSParams(max_calls=max_calls)) == pytest.approx(expected)


@pytest.mark.parametrize(("replans", "elapsed_ms", "spent", "expected"), [
    (0, 0, 0, 0.0),
    (0, 0, 15, 0.5),                  # the calls alone
    (3, 0, 0, 0.6),                   # the replans alone: the spec's two terms
    (3, 0, 15, 0.6),                  # the larger of the two
    (3, 0, 21, 0.7),
    (0, 150_000, 6, 0.2),             # time's term
    (3, 300_000, 6, 1.0),             # the spec's two terms at their sum
    (0, 0, 30, 1.0),
    (0, 270_000, 0, 0.36),            # time's term before the budget is spent
])
def test_omega_is_the_larger_of_the_spec_terms_and_the_calls_term(replans, elapsed_ms, spent, expected):
    assert omega_of(replans, elapsed_ms, spent, SPEC) == pytest.approx(expected)
    assert omega_of(replans, elapsed_ms, 0, SPEC) == pytest.approx(resource_cost(replans, elapsed_ms, SPEC))


@pytest.mark.parametrize(("replans", "elapsed_ms"), [(0, 300_000), (1, 450_000), (0, 10_000_000)])
def test_omega_is_one_once_the_time_budget_is_spent(replans, elapsed_ms):
    """A hard stop: no request is sent after the time budget, so no round could go on (a deviation)."""
    assert omega_of(replans, elapsed_ms, 0, SPEC) == 1.0


def test_no_request_is_sent_after_the_deadline_and_a_vote_is_refused_too():
    import time

    from artoo.config.errors import TimeBudgetSpent

    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC_ANSWER}] * 2}}) as srv:
        llm = _llm(srv.base_url, 30)
        first = _ask(llm, 1)
        llm.deadline = lambda: time.monotonic() - 1
        second = _ask(llm, 1)
        reached = len(srv.requests)
        affords = (llm.affords("R1"), llm.affords("vote"), llm.affords("dreamer"))
    assert not isinstance(first[0], Exception) and reached == 1
    assert isinstance(second[0], TimeBudgetSpent) and "the time budget of 300 s is spent" in str(second[0])
    assert affords == (False, False, True)  # the Dreamer belongs to no task: its calls weigh nothing


def test_a_call_under_way_when_the_time_runs_out_is_cut_off_there():
    """The server takes 5 s; the task's time ends 0.5 s after the request left: the call ends then, its weight
    given back, and the run is told the budget is spent."""
    import time

    from artoo.config.errors import TimeBudgetSpent

    slow = {"answer": SPEC_ANSWER, "latency_s": 5.0}
    with ScriptedLLMServer({"answers": {"TaskSpec": [slow]}}) as srv:
        llm = _llm(srv.base_url, 30)
        ends = time.monotonic() + 0.5
        llm.deadline = lambda: ends
        started = time.monotonic()
        got = _ask(llm, 1)
        took = time.monotonic() - started
    assert isinstance(got[0], TimeBudgetSpent), got
    assert took < 4.0 and llm.spent == 0  # cut at the deadline, not answered after the server's 5 s


@pytest.mark.parametrize("spent", [-1.0, float("nan"), float("inf")])
def test_a_spent_count_that_is_no_count_is_refused(spent):
    with pytest.raises(ValueError, match="spent"):
        call_cost(spent, SPEC)


def _verdict(criterion: str, ok: bool) -> CriterionVerdict:
    return CriterionVerdict(criterion=criterion, verdict="pass" if ok else "fail", mode="verifiable",
                            failure_class=None if ok else "environmental")


def _failed_round() -> ReplanRequest:
    failed = SubTaskOutcome(subtask_id="s1", parent_task_id=TASK, status="failed", failure_class="environmental",
                            criteria_verdicts=[_verdict("the count is reported", False)])
    return ReplanRequest(task_id=TASK, failed_outcomes=[failed], gap_summary="")


def _accepted_round() -> OutcomeSummary:
    matched = SubTaskOutcome(subtask_id="s1", parent_task_id=TASK, status="matched",
                             criteria_verdicts=[_verdict("the count is reported", True)])
    return OutcomeSummary(task_id=TASK, outcomes=[matched], task_criteria_verdicts=[], summary="3")


@pytest.mark.parametrize(("message", "spent", "state", "reason"), [
    (_failed_round(), 0, "change_path", None),
    (_failed_round(), 23, "change_path", None),     # 23/30 < θ: the task goes on
    (_failed_round(), 24, "abandon", "calls"),      # 80 % of the calls: abandon
    (_failed_round(), 29.5, "abandon", "calls"),    # a round a spent budget cut short
    (_accepted_round(), 23, "accept", None),
    (_accepted_round(), 24, "abandon", "calls"),    # as Ω ≥ θ always has: the budget is a hard constraint
])
def test_the_ggs_abandons_on_the_calls_spent(message, spent, state, reason):
    decision = GGSController(TASK, "count the lines in notes.txt", SPEC).evaluate(message, 1000, 0.0, spent)
    assert (decision.state, decision.abandon_reason) == (state, reason)
    assert f"calls={spent:g}/30" in decision.log_line
    if reason == "calls":
        assert decision.loss.Omega >= SPEC.theta
        assert f"call budget spent: {spent:g} of 30 calls" in decision.final.summary
        assert any("ggs.max_calls" in step for step in decision.final.next_steps)


def test_a_controller_not_told_the_calls_reads_the_spec_omega():
    """Replay and older callers pass no count: Ω is the spec's two terms, as recorded."""
    decision = GGSController(TASK, "x", SPEC).evaluate(_failed_round(), 150_000)
    assert decision.loss.Omega == pytest.approx(resource_cost(0, 150_000, SPEC))


# --- the client: counts what it sends, refuses what would go over ---------------------------------------------

SPEC_ANSWER = {"task_id": TASK, "intent": "count the lines", "constraints": {"scope": None, "deadline": None}}


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    """Each test its own ARTOO_HOME: negotiated formats are remembered there, never in the real home."""
    monkeypatch.setenv("ARTOO_HOME", str(tmp_path / "artoo-home"))


def _llm(base_url: str, max_calls: int, max_retries: int = 0) -> OpenAICompatLLM:
    settings = load_settings(brain_base_url=base_url, brain_model="brain-m", tool_base_url=base_url,
                             tool_model="tool-m", openai_base_url=None, openai_model=None, llm_timeout_s=10,
                             ggs={"max_calls": max_calls})
    return OpenAICompatLLM(settings, max_retries=max_retries)


def _ask(llm: OpenAICompatLLM, n: int, role: str = "R1") -> list:
    """``n`` TaskSpec requests one after another; each request's answer, or the error it raised."""
    async def go() -> list:
        got: list = []
        try:
            for i in range(n):
                try:
                    got.append(await llm.structured(role, "TaskSpec", [{"role": "user", "content": f"ask {i}"}]))
                except RunFailure as exc:
                    got.append(exc)
        finally:
            await llm.aclose()
        return got
    return asyncio.run(go())


@pytest.mark.parametrize("max_calls", [1, 3])
def test_the_request_past_the_budget_raises_and_never_reaches_the_server(max_calls):
    seen: list[dict] = []
    answers = [{"answer": SPEC_ANSWER}] * (max_calls + 1)
    with ScriptedLLMServer({"answers": {"TaskSpec": answers}}) as srv:
        llm = _llm(srv.base_url, max_calls)
        llm.observer = seen.append
        got = _ask(llm, max_calls + 1)
        reached = len(srv.requests)
    assert reached == max_calls
    assert all(not isinstance(g, Exception) for g in got[:max_calls])
    refused = got[-1]
    assert isinstance(refused, CallBudgetSpent) and refused.failure_class == "environmental"
    assert f"the call budget of {max_calls} calls is spent" in str(refused)
    assert llm.spent == max_calls and len(llm.records) == max_calls  # the refused one was never sent
    assert not seen[-1]["ok"] and "call budget" in seen[-1]["error"]  # the decision log shows the refusal


def test_the_error_names_the_budget_and_survives_a_pickle():
    import pickle

    error = pickle.loads(pickle.dumps(CallBudgetSpent(30, 29.5, "R3")))
    assert isinstance(error, RunFailure) and (error.max_calls, error.spent, error.role) == (30, 29.5, "R3")
    assert str(error).startswith("the call budget of 30 calls is spent (29.5 used; R3's request was not sent")


def test_a_failed_attempt_and_its_retry_count_once():
    """A 503 retried, then answered: one request in the budget (an attempt that got no answer is given back)."""
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"status": 503}, {"answer": SPEC_ANSWER}]}}) as srv:
        llm = _llm(srv.base_url, 5, max_retries=1)
        got = _ask(llm, 1)
        reached = len(srv.requests)
    assert reached == 2 and not isinstance(got[0], Exception)
    assert llm.spent == 1


def test_a_request_that_failed_for_good_costs_nothing():
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"status": 503}]}}) as srv:
        llm = _llm(srv.base_url, 5)
        got = _ask(llm, 1)
    assert isinstance(got[0], RunFailure) and not isinstance(got[0], CallBudgetSpent)
    assert llm.spent == 0


def test_a_vote_weighs_its_share_and_is_a_tool_tier_role():
    """Four votes make one role call; the fifth would go over a budget of one.  (The request's form does not
    matter to the budget, only its role: a structured one routes on the scripted server whatever a vote's words.)"""
    assert tier_of("vote") == "tool"
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC_ANSWER}] * 6}}) as srv:
        llm = _llm(srv.base_url, 1)
        got = _ask(llm, 5, role="vote")
        reached = len(srv.requests)
    assert all(not isinstance(g, Exception) for g in got[:4]) and isinstance(got[4], CallBudgetSpent)
    assert reached == 4 and llm.spent == pytest.approx(1.0)
    assert llm.weight("vote") == 0.25 and llm.weight("R3") == 1.0 and llm.weight("dreamer") == 0.0


def test_a_used_early_answer_counts_once_and_nothing_is_sent_early_past_the_budget():
    messages = [{"role": "user", "content": "ask early"}]
    try:
        with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC_ANSWER}] * 3}}) as srv:
            llm = _llm(srv.base_url, 1)
            assert llm.send_early("R1", "TaskSpec", messages)
            assert llm.spent == 0  # sent, not yet used

            async def use() -> None:
                try:
                    await llm.structured("R1", "TaskSpec", messages)
                finally:
                    await llm.aclose()

            asyncio.run(use())
            assert llm.spent == 1 and len(srv.requests) == 1  # the early answer was the call: one request, once
            assert not llm.affords("R1")
            assert not llm.send_early("R1", "TaskSpec", [{"role": "user", "content": "one more"}])
            assert EARLY.pending() == 0 and len(srv.requests) == 1  # the spent budget sent nothing ahead
    finally:
        EARLY.clear()


# --- the executor: a command the step ran is refused, not only the last ---------------------------------------

def test_an_alternating_repeat_is_refused():
    """A, B, A: the second A is not run (its output is above); asked once more, the attempt ends."""
    turns = [shell("wc -l a.txt", "c1"), shell("wc -l b.txt", "c2"), shell("wc -l a.txt", "c3"),
             shell("wc -l a.txt", "c4"), {"status": "completed", "output": "never reached"}]
    llm = ScriptedLLM(tool_turns=turns)
    toolbox = Toolbox({"shell": "3 a.txt\n"})
    result = asyncio.run(execute(llm, SUBTASK, toolbox, None, 10))
    assert [c[1]["command"] for c in toolbox.calls] == ["wc -l a.txt", "wc -l b.txt"]
    said = llm.calls[3]["messages"][-1]
    assert said["tool_call_id"] == "c3" and said["content"].startswith("tool shell status: not run")
    assert "already ran in this attempt" in said["content"]
    assert result.status == "uncertain" and "this attempt ran" in result.stopped


def test_an_alternating_repeat_of_earlier_attempts_is_refused_each_time():
    """Two commands an earlier attempt ran, alternated: each is refused, and the first asked again ends it."""
    turns = [shell("a", "c1"), shell("b", "c2"), shell("a", "c3"), {"status": "completed", "output": "x"}]
    llm = ScriptedLLM(tool_turns=turns)
    toolbox = Toolbox({"shell": "ok\n"})
    result = asyncio.run(execute(llm, SUBTASK, toolbox, None, 10, None, frozenset({("shell", "a"), ("shell", "b")})))
    assert toolbox.calls == [] and result.status == "uncertain" and "earlier attempt" in result.stopped


# --- the fast loop's repeat: what an attempt did and how it was judged -----------------------------------------

def _result(*outputs: str) -> ExecutionResult:
    from artoo.config.contracts import ToolCall

    calls = [ToolCall(tool="read_file", input="notes.txt", targets=["/w/notes.txt"], output=o) for o in outputs]
    return ExecutionResult(subtask_id="s1", status="completed", output="said anything", calls=calls)


@pytest.mark.parametrize(("other", "verdicts", "same"), [
    (_result("a\nb\n"), [_verdict("c", False)], True),
    (_result("a\nb\nc\n"), [_verdict("c", False)], False),     # the file changed in between
    (_result("a\nb\n", "a\nb\n"), [_verdict("c", False)], False),
    (_result("a\nb\n"), [_verdict("c", True)], False),         # judged otherwise
    (_result(), [_verdict("c", False)], False),
])
def test_an_attempt_repeats_another_when_its_calls_and_verdicts_are_the_same(other, verdicts, same):
    first = attempt_key(_result("a\nb\n"), [_verdict("c", False)])
    assert (attempt_key(other, verdicts) == first) is same


# --- stories through `artoo run --json` ---------------------------------------------------------------------------

REQUEST = "count the lines in notes.txt"
COUNT = "the line count of notes.txt is reported"


def _decisions(artoo_env: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((artoo_env / "home" / "decisions").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]


def _notes(artoo_env: Path) -> Path:
    folder = artoo_env / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text("a\nb\nc\n")
    return folder


@pytest.mark.usefixtures("prefect_api")
def test_a_run_ends_at_its_call_budget_with_abandon_and_says_so(scripted, artoo_env, monkeypatch):
    """Three calls: R1, R2 and the executor's first turn.  Its second turn would be the fourth: it is not sent,
    the step fails, and the GGS abandons at once (no second round, no failure report asked)."""
    monkeypatch.setenv("ARTOO_GGS__MAX_CALLS", "3")
    folder = _notes(artoo_env)
    server = scripted(scenario(
        TaskSpec=[spec(TASK, REQUEST)],
        Plan=[plan([subtask("count notes lines", [COUNT], tools=["shell"])], [COUNT])] * 2,
        tools=[call("shell", command="wc -l < notes.txt"), done("3"), call("shell", command="wc -l notes.txt"),
               done("3")],
        AgentVerdict=[agent(verdict(COUNT, True, evidence="wc printed 3"))] * 2,
        FailureReport=[{"answer": {"achieved": "-", "blocked_by": "-", "try_next": []}}],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert final["directive"] == "abandon" and final["replans"] == 0, err[-3000:]
    asked = requests_by_schema(server)
    assert asked == {"TaskSpec": 1, "Plan": 1, "tools": 1}, asked  # the fourth request never reached the server
    ggs = [r for r in _decisions(artoo_env) if r.get("kind") == "ggs"]
    assert [(r["state"], r["abandon_reason"]) for r in ggs] == [("abandon", "calls")]
    assert "call budget spent: 3 of 3 calls" in ggs[0]["final"]["summary"]
    assert "calls=3/3" in ggs[0]["log_line"] and ggs[0]["loss"]["Omega"] == 1.0
    failed = ggs[0]["message"]["failed_outcomes"][0]
    assert "the call budget of 3 calls is spent" in failed["failure_reason"]
    assert "call budget spent: 3 of 3 calls" in err


@pytest.mark.usefixtures("prefect_api")
def test_an_attempt_that_repeats_an_earlier_one_is_not_retried_again(scripted, artoo_env, monkeypatch):
    """Attempt 2 reads the same file and is judged the same as attempt 1: no third attempt is asked for."""
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "0")
    folder = _notes(artoo_env)
    fails = agent(verdict(COUNT, False, "logical", "no count was reported"), wrong="no count", todo="count them")
    server = scripted(scenario(
        TaskSpec=[spec(TASK, REQUEST)],
        Plan=[plan([subtask("count notes lines", [COUNT], tools=["read_file"])], [COUNT])],
        tools=[call("read_file", path="notes.txt"), done("the file has lines")] * 3,
        AgentVerdict=[fails] * 3,
        FailureReport=[{"answer": {"achieved": "-", "blocked_by": "-", "try_next": []}}],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert final["directive"] == "abandon", err[-3000:]
    asked = requests_by_schema(server)
    assert (asked.get("tools"), asked.get("AgentVerdict")) == (4, 2), asked  # two attempts of two turns each
    ggs = [r for r in _decisions(artoo_env) if r.get("kind") == "ggs"]
    failed = ggs[0]["message"]["failed_outcomes"][0]
    assert failed["failure_reason"] == f"{REPEATED} (attempt 1)"
    assert len(failed["gap_trajectory"]) == 2
