"""Builders for scripted LLM scenarios, so each loop test reads as its story.

A scenario is the scripted server's input: per schema NAME a queue of answers, and the
``tools`` queue of executor turns.  These helpers only build literal JSON; the server,
the client and the loops are all real.
"""

from __future__ import annotations

from typing import Any


def crit(text: str | dict, mode: str = "verifiable", check: str | None = None) -> dict:
    """A criterion object (a dict passes through: one built with its own mode or check)."""
    if isinstance(text, dict):
        return text
    return {"criterion": text, "mode": mode} if check is None else {"criterion": text, "mode": mode, "check": check}


def subtask(intent: str, criteria: list[str | dict], sequence: int = 1, context: str = "",
            tools: list[str] | None = None) -> dict:
    """A planned subtask (``tools``: the tools it declares, which the plan rules check)."""
    entry = {"sequence": sequence, "intent": intent, "context": context,
             "success_criteria": [crit(c) for c in criteria]}
    return entry if tools is None else {**entry, "tools": list(tools)}


def plan(subtasks: list[dict], task_criteria: list[str | dict], **entry: Any) -> dict:
    """A Plan answer entry."""
    return {"answer": {"task_criteria": [crit(c) for c in task_criteria], "subtasks": subtasks}, **entry}


def command(text: str) -> dict:
    """R2's free answer for the reference run (queue ``Command``), as a small model writes it: a fenced block."""
    return {"raw": f"The command:\n```bash\n{text}\n```"}


def spec(task_id: str, intent: str) -> dict:
    """A TaskSpec answer entry."""
    return {"answer": {"task_id": task_id, "intent": intent, "constraints": {"scope": None, "deadline": None}}}


def call(name: str, match: str | None = None, latency_s: float | None = None, **arguments: Any) -> dict:
    """An executor turn calling one tool."""
    entry: dict = {"tool_calls": [{"name": name, "arguments": arguments}]}
    if match:
        entry["match"] = match
    if latency_s is not None:
        entry["latency_s"] = latency_s
    return entry


def done(output: str, status: str = "completed", match: str | None = None, latency_s: float | None = None) -> dict:
    """An executor's final ExecutionResult turn."""
    entry: dict = {"answer": {"status": status, "output": output}}
    if match:
        entry["match"] = match
    if latency_s is not None:
        entry["latency_s"] = latency_s
    return entry


def verdict(criterion: str, ok: bool, failure_class: str | None = None, evidence: str = "") -> dict:
    """One verdict object."""
    return {"criterion": criterion, "verdict": "pass" if ok else "fail",
            "failure_class": None if ok else (failure_class or "logical"), "evidence": evidence or "see tool calls"}


def agent(*verdicts: dict, wrong: str | None = None, todo: str | None = None, match: str | None = None) -> dict:
    """An AgentVerdict answer entry."""
    entry: dict = {"answer": {"verdicts": list(verdicts), "what_was_wrong": wrong, "what_to_do": todo}}
    if match:
        entry["match"] = match
    return entry


def task_verdict(*verdicts: dict, summary: str = "done") -> dict:
    """A TaskVerdict answer entry."""
    return {"answer": {"verdicts": list(verdicts), "summary": summary}}


def scenario(**queues: list[dict]) -> dict:
    """Assemble the scenario (keyword ``tools`` is the executor queue)."""
    return {"answers": {name: entries for name, entries in queues.items() if entries}}


def deletion_scenario(approved: bool = True) -> dict:
    """The Law-1 story: the plan deletes old.log with ``rm``; when approved it succeeds."""
    c = "old.log no longer exists"
    queues: dict = {"TaskSpec": [spec("clean_logs", "delete old.log")],
                    "Plan": [plan([subtask("delete old.log", [c])], ["old.log is gone"])],
                    "tools": [call("shell", command="rm old.log")]}
    if approved:
        queues["tools"].append(done("deleted old.log"))
        queues["AgentVerdict"] = [agent(verdict(c, True, evidence="rm exited 0"))]
        queues["TaskVerdict"] = [task_verdict(verdict("old.log is gone", True))]
    return scenario(**queues)


def change_path_scenario(workspace=None, **extra: list[dict]) -> dict:
    """Round 1 counts ``missing/notes.txt`` (environmental failure → change_path); round 2 counts the real
    ``data/notes.txt`` (written into ``workspace`` here when given) and is accepted.  ``extra``: more queues."""
    if workspace is not None:
        (workspace / "data").mkdir(parents=True)
        (workspace / "data" / "notes.txt").write_text("a\nb\nc\n")
    count = "the line count of notes.txt is reported"
    return scenario(
        TaskSpec=[spec("count_notes", "count the lines in notes.txt")],
        Plan=[plan([subtask("count notes lines", [count])], ["the count is reported"]),
              plan([subtask("find notes.txt and count its lines", [count])], ["the count is reported"])],
        tools=[call("shell", command="wc -l missing/notes.txt"), done("no such file", status="failed"),
               call("shell", command="wc -l < data/notes.txt"), done("3")],
        AgentVerdict=[agent(verdict(count, False, "environmental", "No such file or directory")),
                      agent(verdict(count, True, evidence="wc printed 3"))],
        TaskVerdict=[task_verdict(verdict("the count is reported", True))],
        **extra,
    )


def requests_by_schema(server) -> dict[str, int]:
    """How many requests the scripted server saw per schema NAME."""
    counts: dict[str, int] = {}
    for request in server.requests:
        name = request.get("schema") or request.get("name")
        counts[name] = counts.get(name, 0) + 1
    return counts


def megrams_against(store, path, tool: str = "shell", limit: int = 5) -> list:
    """Every Megram memory holds against ``tool`` on ``path``, whichever access it blames (#26).

    A check that nothing was blamed must look at every spelling (``path:``, ``read:``, ``write:`` …),
    or it would pass for a blame written under another access."""
    from artoo.config.contracts import ACCESSES
    from artoo.memory.tags import path_entity

    return [m for access in ("all", *ACCESSES) for m in store.recent(f"tool:{tool}", path_entity(str(path), access),
                                                                     limit=limit)]
