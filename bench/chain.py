"""What a run cost, read from the scripted endpoint's request log: the pure arithmetic.

The spec's cost model (§10) counts *sequential* LLM calls on the critical path.  We count
them from what the endpoint actually saw, never by assumption: each request has the time
it was received and answered, and the critical path is the longest chain of requests in
which each starts after the previous one was answered.

Two counts, because the executor is a tool-calling loop:

* **HTTP requests** (turns): what the wall clock pays for.  An R3 attempt that calls one
  tool is two requests (the turn that asks for the tool, the turn that answers).
* **role calls**: the spec's unit.  All turns of one R3 attempt form one call (a turn
  continues an attempt when its messages extend that attempt's previous turn).

Parallel subtasks must not be counted as sequential just because the orchestrator
happened to start one late, so each R3/R4a request belongs to a *lane*: the subtask named
on the ``Subtask intent:`` line both roles' prompts open with.  A chain may pass from a
request with no lane (R1, R2, R4b) to any request and back, but never from one subtask's
lane to another's.  (The bench scenarios have one sequence group per round; a later group
would be counted as parallel to the earlier one, which makes the ratio look worse, never
better.)

No I/O here: the functions take the log records (dicts with ``schema``, ``body``,
``received``, ``answered``) and return numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ROLE_OF_SCHEMA = {"TaskSpec": "R1", "Plan": "R2", "tools": "R3", "AgentVerdict": "R4a",
                  "TaskVerdict": "R4b", "Consolidation": "Dreamer", "FailureReport": "R2"}
"""The role that asks for each schema NAME (``tools`` = executor turns)."""

ROLES = ("R1", "R2", "R3", "R4a", "R4b")
LANE_PREFIX = "Subtask intent: "


@dataclass(frozen=True)
class Call:
    """One role call: an interval on the wall clock, its lane, the turns it took and the characters sent."""

    role: str
    start: float
    end: float
    lane: str | None = None
    turns: int = 1
    chars_sent: int = 0


def role_of(schema: str | None) -> str:
    """The role asking for a schema NAME ('?' for an unroutable request)."""
    return ROLE_OF_SCHEMA.get(schema or "", "?")


def lane_of(body: dict) -> str | None:
    """The subtask a request works on (its ``Subtask intent:`` line), None for task-level requests."""
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            for line in content.splitlines():
                if line.startswith(LANE_PREFIX):
                    return line.removeprefix(LANE_PREFIX).strip()
    return None


def critical_path(calls: Iterable[Call]) -> int:
    """Length of the longest chain of calls, each starting after the previous ended, lanes respected."""
    ordered = sorted(calls, key=lambda c: (c.end, c.start))
    done: list[tuple[Call, int]] = []  # (call, longest chain ending with it), by end time
    best = 0
    for call in ordered:
        if call.end < call.start:
            raise ValueError(f"a call ends before it starts: {call}")
        length = 1 + max((n for prior, n in done if prior.end <= call.start and _may_follow(prior, call)), default=0)
        done.append((call, length))
        best = max(best, length)
    return best


def _may_follow(prior: Call, call: Call) -> bool:
    return prior.lane is None or call.lane is None or prior.lane == call.lane


def requests_as_calls(requests: Sequence[dict]) -> list[Call]:
    """Every HTTP request as its own call (the unit the wall clock pays for)."""
    return [Call(role_of(r.get("schema")), r["received"], r["answered"], lane_of(r.get("body", {})), 1,
                 _chars(r.get("body", {}))) for r in requests]


def _chars(body: dict) -> int:
    return len(json.dumps(body.get("messages", []), default=str))


def _continues(earlier: list, later: list) -> bool:
    return len(later) > len(earlier) and later[: len(earlier)] == earlier


def role_calls(requests: Sequence[dict]) -> list[Call]:
    """Group the log into role calls: every non-tool request is one call; R3 turns join their attempt."""
    calls: list[Call] = []
    attempts: list[tuple[list, int]] = []  # (messages of the attempt's latest turn, index in calls)
    for single, request in sorted(zip(requests_as_calls(requests), requests, strict=True), key=lambda p: p[0].start):
        if single.role != "R3":
            calls.append(single)
            continue
        messages = request.get("body", {}).get("messages", [])
        parent = next((i for i, (m, _) in enumerate(attempts) if _continues(m, messages)), None)
        if parent is None:
            attempts.append((messages, len(calls)))
            calls.append(single)
            continue
        index = attempts[parent][1]
        prior = calls[index]
        calls[index] = Call("R3", prior.start, max(prior.end, single.end), prior.lane, prior.turns + 1,
                            prior.chars_sent + single.chars_sent)
        attempts[parent] = (messages, index)
    return calls


def spec_minimum_chain(retries: int, replans: int, abandon: bool = False) -> int:
    """The spec's minimum sequential chain: R1→R2→R3→R4a→R4b = 5, +2 per fast-loop retry, +2 per replan.

    An abandoned task adds one: R2's failure report (spec v0.9 graceful failure), asked once, only then.
    """
    if retries < 0 or replans < 0:
        raise ValueError(f"retries and replans cannot be negative, got {retries}, {replans}")
    return 5 + 2 * retries + 2 * replans + (1 if abandon else 0)


@dataclass(frozen=True)
class Economy:
    """A run's LLM cost as the spec counts it, plus the turns the wall clock pays for."""

    http_requests: int
    sequential_requests: int
    """HTTP requests on the critical path (the overhead ratio's denominator, in calls)."""
    role_calls: dict[str, int]
    r3_turns: int
    sequential_role_calls: int
    """Role calls on the critical path: what the spec's minimum chain counts."""
    chars_sent: dict[str, int]
    retries: int
    """R3 attempts beyond one per dispatched subtask (fast-loop retries), summed."""


def economy(requests: Sequence[dict], subtasks_dispatched: int) -> Economy:
    """The Economy of one run's request log; ``subtasks_dispatched`` counts subtasks over all rounds."""
    calls = role_calls(requests)
    by_role = dict.fromkeys(ROLES, 0)
    chars = dict.fromkeys(ROLES, 0)
    for c in calls:
        by_role[c.role] = by_role.get(c.role, 0) + 1
        chars[c.role] = chars.get(c.role, 0) + c.chars_sent
    return Economy(
        http_requests=len(requests),
        sequential_requests=critical_path(requests_as_calls(requests)),
        role_calls=by_role,
        r3_turns=sum(c.turns for c in calls if c.role == "R3"),
        sequential_role_calls=critical_path(calls),
        chars_sent=chars,
        retries=max(0, by_role["R3"] - subtasks_dispatched),
    )
