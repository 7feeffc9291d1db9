"""Who works out round 1's plan inputs when ``artoo run`` reads ahead of its flow (artoo.tasks.plan.ahead).

Exactly one side does, so both send R2 the very same words and the model is asked once, whatever order the
runner's thread and the flow reach round 1 in.  Pure: each case is the order of the calls, and what each got.
"""

from __future__ import annotations

import pytest

from artoo.config.contracts import TaskSpec
from artoo.tasks.plan import ahead
from artoo.tasks.plan.inputs import RoundInputs

REQUEST = "count the lines in notes.txt"
SPEC = TaskSpec(task_id="count_lines", intent="count the lines", raw_input=REQUEST)
OTHER = SPEC.model_copy(update={"intent": "count the words"})
INPUTS = RoundInputs(calibration=None, calibration_error="", must_not_tools=set(), must_not_targets=set(), pairs=[],
                     block="")


def _play(steps: list[str]) -> list[object]:
    """Run the steps in order; each gives what its call returned (``take`` the inputs, or None)."""
    calls = {
        "expect": lambda: ahead.expect(REQUEST),
        "claim": lambda: ahead.claim(REQUEST),
        "settle": lambda: ahead.settle(REQUEST, SPEC, INPUTS),
        "settle-gave-up": lambda: ahead.settle(REQUEST, None, None),
        "take": lambda: ahead.take(REQUEST, SPEC, wait_s=0.05),
        "take-other-spec": lambda: ahead.take(REQUEST, OTHER, wait_s=0.05),
    }
    try:
        return [calls[step]() for step in steps]
    finally:
        ahead.forget(REQUEST)


@pytest.mark.parametrize("steps, results", [
    (["expect", "claim", "settle", "take"], [None, True, True, INPUTS]),  # the runner first: the flow takes its inputs
    (["expect", "take", "claim", "settle"], [None, None, False, False]),  # the flow first: the runner sends nothing
    (["expect", "take"], [None, None]),  # R1's answer unreadable: the runner never claimed
    (["expect", "claim", "settle-gave-up", "take"], [None, True, False, None]),  # it claimed, then failed
    (["expect", "claim", "settle", "take-other-spec"], [None, True, True, None]),  # the flow's R1 read otherwise
    (["expect", "claim", "take", "settle"], [None, True, None, False]),  # still working when the flow stopped waiting
    (["take", "claim"], [None, False]),  # a deployment's run: nobody reads ahead
], ids=["runner first", "flow first", "unreadable R1", "runner failed", "another TaskSpec", "runner too slow",
        "no runner"])
def test_exactly_one_side_works_out_round_one(steps: list[str], results: list[object]):
    assert _play(steps) == results
