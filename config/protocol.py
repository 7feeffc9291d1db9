"""The LLM protocol: what any OpenAI-compatible model is asked to answer.

These are the structured-output schemas, named exactly as the model sees them
(``response_format.json_schema.name``).  They are deliberately smaller than the bus
contracts: ids, raw input and tool evidence are filled in by code, never by a model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from artoo.config.contracts import Constraints, Criterion, FailureClass


class Answer(BaseModel):
    """Base of every LLM answer: extra keys are refused, so drift is caught."""

    model_config = ConfigDict(extra="forbid")


class TaskSpecAnswer(Answer):
    """R1's answer (schema name ``TaskSpec``)."""

    task_id: str
    """Short snake_case id."""
    intent: str
    """The user's goal, faithfully restated."""
    constraints: Constraints
    """Scope and deadline, null when not stated."""


class PlannedSubTask(Answer):
    """One subtask as the planner writes it; its UUID is assigned by code."""

    sequence: int
    """Same number runs in parallel; higher numbers run later."""
    intent: str
    """What the subtask must achieve."""
    context: str
    """Everything the executor needs beyond the intent."""
    success_criteria: list[Criterion]
    """Concrete checkable assertions about the subtask's output."""
    tools: list[str] = Field(default_factory=list)
    """The executor tools this subtask means to use; the plan rules check these names, not its prose."""


class PlanAnswer(Answer):
    """R2's answer (schema name ``Plan``)."""

    task_criteria: list[Criterion]
    """Assertions about the combined output of all subtasks."""
    subtasks: list[PlannedSubTask]
    """The plan."""


class ExecutionAnswer(Answer):
    """R3's final answer when it stops calling tools (schema name ``ExecutionResult``)."""

    status: Literal["completed", "uncertain", "failed"]
    """The executor's own claim."""
    output: str
    """The answer."""


# Evidence before the verdict: a model writes the fields in schema order (a grammar holds it to it), and a small
# model that writes ``verdict`` first commits to it before it has read the evidence, then spends its tokens
# justifying it.  The docstring is the schema's description: the model reads it, so it stays one line.
class VerdictAnswer(Answer):
    """One criterion's verdict as a validator writes it: the evidence first, then the verdict."""

    criterion: str
    """The criterion text (or its number)."""
    evidence: str
    """The evidence the verdict rests on."""
    verdict: Literal["pass", "fail"]
    """pass or fail."""
    failure_class: FailureClass | None
    """logical or environmental when failing, else null."""


class AgentVerdict(Answer):
    """R4a's answer (schema name ``AgentVerdict``)."""

    verdicts: list[VerdictAnswer]
    """One per subtask criterion."""
    what_was_wrong: str | None
    """The gap, when any criterion failed."""
    what_to_do: str | None
    """The correction for the next attempt."""


class TaskVerdict(Answer):
    """R4b's answer (schema name ``TaskVerdict``)."""

    verdicts: list[VerdictAnswer]
    """One per task criterion."""
    summary: str
    """One paragraph for the user."""


class Consolidation(Answer):
    """The Dreamer's distilled rule (schema name ``Consolidation``)."""

    kind: Literal["best_practice", "constraint"]
    """best_practice (positive) or constraint (negative)."""
    content: str = Field(description="The rule, one or two sentences.")
    """The rule."""


class FailureReport(Answer):
    """R2's short report on an abandoned task (schema name ``FailureReport``; spec v0.9 graceful failure)."""

    achieved: str
    """What was achieved: the partial result the user can still use."""
    blocked_by: str
    """What blocked the task, in plain words."""
    try_next: list[str]
    """Up to three concrete things the user can try next."""


SCHEMAS: dict[str, type[Answer]] = {
    "TaskSpec": TaskSpecAnswer,
    "Plan": PlanAnswer,
    "ExecutionResult": ExecutionAnswer,
    "AgentVerdict": AgentVerdict,
    "TaskVerdict": TaskVerdict,
    "Consolidation": Consolidation,
    "FailureReport": FailureReport,
}
"""Schema NAME → answer model; the NAME is what the endpoint sees."""
