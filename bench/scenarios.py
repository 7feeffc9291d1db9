"""The scripted brains the benchmarks run: literal answers for the scripted LLM server.

Each scenario is a story with a known shape (how many subtasks, retries, replans), built
for ``repeats`` runs against one server: every queue holds one copy of the answers per
run, and every answer a parallel subtask needs is matched on that subtask's intent, so
concurrent subtasks never take each other's answers.  Task ids differ per run so the
bus, the audit log and the memory store see distinct tasks.  Every request waits the
scenario's fixed latency before it is answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scenario:
    """A benchmark story: the request typed, the scripted answers, and the shape it should take."""

    name: str
    request: str
    script: dict
    subtasks: int
    replans: int
    retries: int
    directive: str
    settings: dict[str, str] = field(default_factory=dict)
    """Environment the story needs (e.g. the replan budget it spends)."""


def _crit(text: str) -> dict:
    return {"criterion": text, "mode": "verifiable"}


def _verdict(criterion: str, ok: bool) -> dict:
    return {"criterion": criterion, "verdict": "pass" if ok else "fail",
            "failure_class": None if ok else "logical", "evidence": "bench evidence"}


def _spec(task_id: str, intent: str) -> dict:
    return {"answer": {"task_id": task_id, "intent": intent, "constraints": {"scope": None, "deadline": None}}}


def _plan(intents: list[str], task_criterion: str) -> dict:
    subtasks = [{"sequence": 1, "intent": i, "context": "", "success_criteria": [_crit(f"{i} is done")]}
                for i in intents]
    return {"answer": {"task_criteria": [_crit(task_criterion)], "subtasks": subtasks}}


def _tool_call(intent: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": "echo bench"}}], "match": intent}


def _final(intent: str, status: str = "completed") -> dict:
    return {"answer": {"status": status, "output": f"{intent}: bench"}, "match": intent}


def _agent(intent: str, ok: bool) -> dict:
    return {"answer": {"verdicts": [_verdict(f"{intent} is done", ok)],
                       "what_was_wrong": None if ok else "bench: the first attempt falls short",
                       "what_to_do": None if ok else "bench: try again"}, "match": intent}


def _task_verdict(criterion: str) -> dict:
    return {"answer": {"verdicts": [_verdict(criterion, True)], "summary": "bench: done"}}


def parallel(n: int, repeats: int = 1, latency_s: float = 0.3) -> Scenario:
    """N subtasks in one sequence group, each one tool call then accepted; R4b accepts the task."""
    if n < 1 or repeats < 1:
        raise ValueError(f"need at least one subtask and one run, got n={n}, repeats={repeats}")
    intents = [f"bench item {k:02d} of {n:02d}" for k in range(1, n + 1)]
    answers: dict[str, list] = {"TaskSpec": [], "Plan": [], "tools": [], "AgentVerdict": [], "TaskVerdict": []}
    for run in range(repeats):
        answers["TaskSpec"].append(_spec(f"bench_parallel_{n}_{run}", f"do {n} bench things"))
        answers["Plan"].append(_plan(intents, "every bench item is done"))
        for intent in intents:
            answers["tools"] += [_tool_call(intent), _final(intent)]
            answers["AgentVerdict"].append(_agent(intent, True))
        answers["TaskVerdict"].append(_task_verdict("every bench item is done"))
    name = "1 subtask accept" if n == 1 else f"{n} parallel subtasks accept"
    return Scenario(name, f"do {n} bench things", {"answers": answers, "latency_s": latency_s}, n, 0, 0, "accept")


def replans(count: int = 3, repeats: int = 1, latency_s: float = 0.3) -> Scenario:
    """Every round's executor fails logically: break_symmetry ``count`` times, then abandon (maxReplans = count)."""
    if count < 0 or repeats < 1:
        raise ValueError(f"need count >= 0 and at least one run, got count={count}, repeats={repeats}")
    answers: dict[str, list] = {"TaskSpec": [], "Plan": [], "tools": [], "AgentVerdict": [], "FailureReport": []}
    for run in range(repeats):
        answers["TaskSpec"].append(_spec(f"bench_replans_{run}", "find the bench answer"))
        answers["FailureReport"].append({"answer": {  # the abandon's one R2 report (spec v0.9)
            "achieved": "nothing usable", "blocked_by": "every attempt failed logically",
            "try_next": ["state where the bench answer can be found"]}})
        for round_no in range(1, count + 2):
            intent = f"bench attempt {round_no} at the answer"
            answers["Plan"].append(_plan([intent], "the bench answer is reported"))
            answers["tools"].append(_final(intent, status="failed"))
            answers["AgentVerdict"].append(_agent(intent, False))
    name = f"{count} replan{'' if count == 1 else 's'} then abandon"
    return Scenario(name, "find the bench answer", {"answers": answers, "latency_s": latency_s}, count + 1, count, 0,
                    "abandon", {"ARTOO_GGS__MAX_REPLANS": str(count)})


def retry(repeats: int = 1, latency_s: float = 0.3) -> Scenario:
    """One subtask whose first attempt R4a rejects; the retry passes; R4b accepts."""
    if repeats < 1:
        raise ValueError(f"need at least one run, got repeats={repeats}")
    intent = "bench retried item"
    answers: dict[str, list] = {"TaskSpec": [], "Plan": [], "tools": [], "AgentVerdict": [], "TaskVerdict": []}
    for run in range(repeats):
        answers["TaskSpec"].append(_spec(f"bench_retry_{run}", "do the retried bench thing"))
        answers["Plan"].append(_plan([intent], "the retried bench item is done"))
        answers["tools"] += [_tool_call(intent), _final(intent), {**_tool_call(intent), "match": "RETRY"},
                             {**_final(intent), "match": "RETRY"}]
        answers["AgentVerdict"] += [_agent(intent, False), _agent(intent, True)]
        answers["TaskVerdict"].append(_task_verdict("the retried bench item is done"))
    return Scenario("1 retry then accept", "do the retried bench thing", {"answers": answers,
                    "latency_s": latency_s}, 1, 0, 1, "accept")
