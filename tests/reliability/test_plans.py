"""Broken plans: 0 or 200 subtasks, gapped, duplicate, missing and sub-1 sequence numbers (the last two are
repaired before validation, artoo.tasks.llm.output.repair).

A plan is a hypothesis written by a model; code checks, caps and orders it.  A sequence is a
number, not a dependency edge, so a cycle cannot even be written: the worst a planner can do
is gaps, duplicates, a missing field or numbers below 1, and each has a defined answer.
Every case is a real ``artoo run --json`` process (all run at once).
"""

from __future__ import annotations

import pytest

from tests.reliability.helpers import Case, Ran, clear_outcome, run_cases
from tests.scenario_kit import agent, crit, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.slow]  # real artoo processes, all at once

C = "the step is done"
DONE = "all steps are done"


def script(task_id: str, plans: list[dict], tools: list[dict] | None = None) -> dict:
    """Every executor answers at once and every criterion passes, so only the plan decides the run."""
    return scenario(TaskSpec=[spec(task_id, "do the steps")], Plan=plans,
                    tools=tools or [{**done("step output"), "repeat": True}],
                    AgentVerdict=[{**agent(verdict(C, True)), "repeat": True}],
                    TaskVerdict=[task_verdict(verdict(DONE, True))])


def steps(*pairs: tuple[str, int]) -> dict:
    return plan([subtask(intent, [C], sequence=seq) for intent, seq in pairs], [DONE])


MANY = steps(*[(f"step {i}", i // 50 + 1) for i in range(200)])
NO_SEQUENCE = {"answer": {"task_criteria": [crit(DONE)],
                          "subtasks": [{"intent": "step one", "context": "", "success_criteria": [crit(C)]}]}}
GAPPED = steps(("step nine", 9), ("step two", 2), ("step five a", 5), ("step five b", 5))
ONE_ROUND = {"ARTOO_GGS__MAX_REPLANS": "0"}

CASES = [
    Case("zero_subtasks", script("zero_subtasks", [plan([], [DONE])] * 2), env=ONE_ROUND),
    Case("two_hundred_subtasks", script("two_hundred_subtasks", [MANY, MANY]),
         env={"ARTOO_GGS__MAX_CALLS": "100"}),  # twenty steps, each an executor turn and a validator call
    Case("gapped_sequences", script("gapped_sequences", [GAPPED], tools=[
        done(f"output of {name}", match=f"Subtask intent: {name}\n")
        for name in ("step two", "step five a", "step five b", "step nine")])),
    Case("missing_sequence", script("missing_sequence", [NO_SEQUENCE])),  # a re-ask would find no answer
    Case("sequence_below_one", script("sequence_below_one", [steps(("step a", 0), ("step b", -3))], tools=[
        done(f"output of {name}", match=f"Subtask intent: {name}\n") for name in ("step a", "step b")])),
]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    return run_cases(CASES, tmp_path_factory.mktemp("plans"))


def outcome(ran: dict[str, Ran], name: str) -> tuple[Ran, dict | str]:
    result = ran[name]
    return result, clear_outcome(result.code, result.stdout, result.stderr)


def bodies(result: Ran, schema: str) -> list[str]:
    return [str(r["body"]["messages"]) for r in result.requests if r["schema"] == schema]


def test_a_plan_with_no_subtasks_is_re_asked_then_fails_the_round_honestly(ran):
    result, final = outcome(ran, "zero_subtasks")
    assert result.code == 1 and final["directive"] == "abandon"
    assert "no subtasks" in final["summary"]
    assert len(bodies(result, "Plan")) == 2 and "the plan has no subtasks" in bodies(result, "Plan")[1]
    assert bodies(result, "tools") == []  # nothing was dispatched


def test_a_plan_of_200_subtasks_is_re_asked_then_capped_at_20_and_says_so(ran):
    result, final = outcome(ran, "two_hundred_subtasks")
    assert result.code == 0 and final["directive"] == "accept"
    plans = bodies(result, "Plan")
    assert len(plans) == 2 and "at most 20 are allowed" in plans[1]
    assert len(bodies(result, "AgentVerdict")) == 20  # exactly 20 subtasks ran
    assert "the plan had 200 subtasks; only the first 20 by sequence were kept (180 dropped)" in result.stderr


def test_gapped_and_duplicate_sequences_run_in_order_with_earlier_outputs(ran):
    result, final = outcome(ran, "gapped_sequences")
    assert result.code == 0 and final["directive"] == "accept"
    turns = sorted((r["received"], str(r["body"]["messages"])) for r in result.requests if r["schema"] == "tools")
    order = [next(n for n in ("step two", "step five a", "step five b", "step nine")
                  if f"Subtask intent: {n}\\n" in text) for _, text in turns]
    assert order[0] == "step two" and set(order[1:3]) == {"step five a", "step five b"} and order[3] == "step nine"
    last = turns[-1][1]
    assert all(f"output of {n}" in last for n in ("step two", "step five a", "step five b"))
    assert "UNTRUSTED:earlier step output" in last


def test_a_missing_sequence_is_repaired_without_a_re_ask(ran):
    result, final = outcome(ran, "missing_sequence")
    assert result.code == 0 and final["directive"] == "accept"
    assert len(bodies(result, "Plan")) == 1


def test_sequences_below_one_are_shifted_in_order_without_a_re_ask(ran):
    result, final = outcome(ran, "sequence_below_one")
    assert result.code == 0 and final["directive"] == "accept"
    assert len(bodies(result, "Plan")) == 1
    turns = sorted((r["received"], str(r["body"]["messages"])) for r in result.requests if r["schema"] == "tools")
    assert "Subtask intent: step b\\n" in turns[0][1]  # -3 runs before 0
    assert "output of step b" in turns[-1][1]
