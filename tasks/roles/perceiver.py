"""R1 — Perceiver: the user's words, carried into the system with full fidelity.

R1 is a receiver, not a resolver: it restates the goal without narrowing, expanding or
judging feasibility, and it never writes success criteria (those are R2's).  The model
only proposes ``task_id``/``intent``/``constraints``; code keeps the verbatim input and
makes the id a safe short snake_case name, because ids end up in file names and tags.
"""

from __future__ import annotations

import json
import re

from artoo.config.contracts import TaskSpec
from artoo.config.errors import ConfigurationError
from artoo.tasks.roles.prompting import fence_untrusted, system, user

HISTORY_TURNS = 5
"""Session context: the last this-many {input, summary} pairs."""
TASK_ID_MAX = 40
"""Longest task_id kept."""
MAX_REQUEST_BYTES = 256_000
"""Largest request, measured as its JSON encoding: it travels as a flow-run parameter and Prefect's
API refuses parameters over 512 KB.  Longer text belongs in a file the request names."""

ROLE = """Role R1, Perceiver. Translate the user's request into a TaskSpec.
- task_id: a short snake_case name for the task (a few words).
- intent: the user's goal, faithfully restated. Do not narrow, expand, reframe or judge feasibility.
  Resolve references such as "do it again", "that file" or "wrong" against the session history,
  so the intent stands on its own.
- constraints.scope: where the work may happen (a folder, a project) only if the user said so, else null.
- constraints.deadline: an ISO8601 deadline only if the user gave one, else null.
Never add success criteria, tool choices or execution strategies: planning is another role's job."""


class EmptyRequest(ConfigurationError, ValueError):
    """An empty request: the person must say what they want (a usage error, exit code 2)."""


class RequestTooLong(ConfigurationError, ValueError):
    """A request too long to carry whole (a usage error, exit code 2); R1 never truncates the user's words."""


def check_request(raw_input: str) -> None:
    """EmptyRequest or RequestTooLong when the request cannot be carried into the system whole."""
    if not raw_input or not raw_input.strip():
        raise EmptyRequest("empty request: there is nothing to do; say what you want done")
    size = len(json.dumps(raw_input))
    if size > MAX_REQUEST_BYTES:
        raise RequestTooLong(
            f"the request is too long to carry whole ({len(raw_input):,} characters, {size:,} bytes encoded; "
            f"the limit is {MAX_REQUEST_BYTES:,}): put the long text in a file in the workspace and name that "
            "file in a short request")


def sanitise_task_id(raw: str) -> str:
    """Lower-case ``[a-z0-9_]``, at most 40 characters, ``task`` when nothing is left."""
    slug = re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_")
    slug = slug[:TASK_ID_MAX].rstrip("_")
    return slug or "task"


def _history_block(history: list[dict]) -> str:
    turns = history[-HISTORY_TURNS:]
    if not turns:
        return "Session history: none (this is the first request)."
    lines = [f"Turn {i}: user said: {t.get('input', '')!s}\n        result: {t.get('summary', '')!s}"
             for i, t in enumerate(turns, 1)]
    return "Session history, oldest first:\n" + fence_untrusted("session history", "\n".join(lines))


def messages_for(raw_input: str, history: list[dict]) -> list[dict]:
    """R1's prompt: the laws and role, the session history (fenced), then the request."""
    return [system(ROLE, "TaskSpec"),
            user(f"{_history_block(history)}\n\nThe user's request, verbatim:\n{raw_input}")]


_DEADLINE_WORDS = re.compile(r"\b(?:by|before|until|till|within|deadline|due|no later than|asap|tonight|today|"
                             r"tomorrow|end of (?:the )?(?:day|week|month))\b", re.IGNORECASE)


def stated_deadline(deadline: str | None, raw_input: str) -> str | None:
    """The model's deadline, kept only when the request has words that set one ("by Friday", "within an
    hour", "before 5pm", "due", "tomorrow"); else None.

    Why: a small model invents a deadline from any date-like words ("modified 30 days ago" got a
    timestamp).  R1 must not add constraints (spec R1: no narrowing), and the planner is
    shown the deadline.  Code cannot read a date, but it can see that nothing in the words sets one.
    """
    return deadline if deadline and _DEADLINE_WORDS.search(raw_input) else None


async def perceive(llm, raw_input: str, history: list[dict], repaired: list[str] | None = None) -> TaskSpec:
    """Turn free text (plus the last 5 turns) into a TaskSpec; ValueError on an empty or too long request.
    ``repaired`` (when given) receives a line per thing code took out of the model's answer."""
    check_request(raw_input)
    answer = await llm.structured("R1", "TaskSpec", messages_for(raw_input, history))
    return spec_from(answer, raw_input, repaired)


def spec_from(answer, raw_input: str, repaired: list[str] | None = None) -> TaskSpec:
    """The TaskSpec of R1's answer (a TaskSpec answer model): code's id, the verbatim input, a stated deadline.

    Apart from ``perceive`` so that ``artoo run`` reads R1's early answer exactly as the R1 task will, and
    sends round 1's R2 request before its flow exists (artoo.runner)."""
    intent = answer.intent.strip() or raw_input.strip()
    constraints = answer.constraints
    deadline = stated_deadline(constraints.deadline, raw_input)
    if deadline != constraints.deadline:
        constraints = constraints.model_copy(update={"deadline": deadline})
        if repaired is not None:
            repaired.append(f"deadline {answer.constraints.deadline} dropped: no words of the request set one")
    return TaskSpec(task_id=sanitise_task_id(answer.task_id), intent=intent,
                    constraints=constraints, raw_input=raw_input)
