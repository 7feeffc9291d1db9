"""Round 1's plan request worked out ahead of the flow, by exactly one side.

``artoo run`` works out round 1's R2 request before its flow exists (artoo.runner.plan_ahead), and the
flow's medium loop would work it out again when it gets there.  Two readings of memory seconds apart
can differ (another run, or the Dreamer, wrote in between), and then the model is asked for a plan twice
(tests/test_lingering.py: eight runs and a Dreamer pass on one home).  So whoever comes first claims
round 1's inputs for the request: when the runner did, the flow takes its inputs (waiting the moments
it may still need), so both send the very same words and the model is asked once; when the flow came
first, the runner gives up.  A run started without ``artoo run`` (a deployment) finds nothing here.
Keyed by the request's words, as the session's history kept for R1 is (artoo.tasks.roles.session).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from artoo.config.contracts import TaskSpec
from artoo.tasks.plan.inputs import RoundInputs

WAIT_S = 10.0
"""Longest the flow waits for inputs the runner claimed (it needs milliseconds: a memory query)."""


@dataclass
class _Ahead:
    state: str = "open"
    """open (nobody has claimed), runner (the runner is working them out), done, or flow (the flow claimed)."""
    spec: TaskSpec | None = None
    inputs: RoundInputs | None = None
    settled: threading.Event = field(default_factory=threading.Event)


_RUNS: dict[str, _Ahead] = {}
_LOCK = threading.Lock()


def expect(request: str) -> None:
    """The runner will read ahead for this request: the flow must ask before working out round 1 itself."""
    with _LOCK:
        _RUNS[request] = _Ahead()


def claim(request: str) -> bool:
    """The runner, about to work out round 1's inputs: True when the flow has not claimed them first."""
    with _LOCK:
        ahead = _RUNS.get(request)
        if ahead is None or ahead.state != "open":
            return False
        ahead.state = "runner"
        return True


def settle(request: str, spec: TaskSpec | None, inputs: RoundInputs | None) -> bool:
    """The runner is done with what it claimed: its TaskSpec and inputs, or None for both when it gave up.
    False when the flow stopped waiting for them (the runner must then send nothing)."""
    with _LOCK:
        ahead = _RUNS.get(request)
        if ahead is None or ahead.state != "runner":
            return False
        ahead.state, ahead.spec, ahead.inputs = "done", spec, inputs
        ahead.settled.set()
        return inputs is not None


def take(request: str, spec: TaskSpec, wait_s: float = WAIT_S) -> RoundInputs | None:
    """The flow, at round 1: the runner's inputs for this TaskSpec, or None (then the flow works them out and the
    runner, if it comes later, gives up)."""
    with _LOCK:
        ahead = _RUNS.get(request)
        if ahead is None:
            return None
        if ahead.state == "open":
            ahead.state = "flow"
            return None
    ahead.settled.wait(wait_s)
    with _LOCK:
        if ahead.state != "done":  # still working after WAIT_S: the flow goes on without it
            ahead.state = "flow"
            return None
    return ahead.inputs if ahead.spec == spec else None


def forget(request: str) -> None:
    """The command is over: nothing of its read-ahead is kept."""
    with _LOCK:
        _RUNS.pop(request, None)
