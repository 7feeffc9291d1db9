"""The spec's message contracts, one pydantic model each, field names as in the spec, with the enumerations and
the base model they share and what memory answers the planner (one concept: the data that passes between roles).

Every model that travels on the bus carries a ``kind`` literal so a mixed stream of
messages (the Auditor's view) parses into the right type through ``BusMessage``.
Where we extend a contract (criteria modes of v0.9, urgency, all outcomes in a
ReplanRequest so D can count every criterion) the extra field has a default, so a
message written to the spec's shape still validates.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

FailureClass = Literal["logical", "environmental"]
CriterionMode = Literal["verifiable", "plausible"]
MacroState = Literal["abandon", "success", "break_symmetry", "change_approach", "change_path", "refine"]
ActionDirective = Literal["refine", "change_path", "change_approach", "break_symmetry"]
FinalDirective = Literal["accept", "success", "abandon", "unsure", "unverified"]
"""Two of artoo's extensions.  unsure: the independent runs of the request split and none reached the quorum;
nothing was applied, and the alternatives are in the output.  unverified: the GGS would accept, but no check or vote
decided some verifiable criterion (a model alone judged it), so the run is done without the word "accepted"."""
EXIT_CODES: dict[str, int] = {"accept": 0, "success": 0, "abandon": 1, "unsure": 3, "unverified": 4}
"""How a run that ended with each directive exits (2 is a usage or configuration error)."""
FINAL_WORDS: dict[str, str] = {"accept": "accept", "success": "success", "abandon": "abandon", "unsure": "unsure",
                               "unverified": "done, unverified"}
"""How the final line names each directive: only a result code checked is ever called accepted."""
Urgency = Literal["low", "normal", "high"]
MemoryAction = Literal["Ignore", "Exploit", "Avoid", "Caution"]
Level = Literal["M", "K", "C", "T"]
OutcomeKind = Literal["matched", "failed", "skipped", "denied"]
Access = Literal["read", "write", "execute", "delete", "all"]
"""How a call used a target; ``all`` is every access (a blame recorded before accesses were told apart, or one
that cannot tell)."""
ACCESSES: tuple[str, ...] = ("read", "write", "execute", "delete")
"""The single accesses, ``all`` aside."""
ANY_USE: tuple[str, ...] = ("all", "read")
"""Accesses whose block forbids naming the target at all: reading is the least use a plan can make of it."""


class Contract(BaseModel):
    """Base: unknown fields are refused so a typo never silently drops data."""

    model_config = ConfigDict(extra="forbid")


class BlockedTarget(Contract):
    """One input that failed for environmental reasons, and the access that failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # hashable: the GGS keys its blame by it

    target: str
    """The normalised path (or query) that failed."""
    access: Access = "all"
    """The access refused: a write refused on a read-only file leaves it readable."""

    @classmethod
    def of(cls, item: BlockedTarget | str | dict) -> BlockedTarget:
        """A blocked target from its current form, or from a bare string (every access, as older homes wrote it)."""
        if isinstance(item, BlockedTarget):
            return item
        if isinstance(item, str):
            return cls(target=item)
        return cls.model_validate(item)

    @property
    def any_use(self) -> bool:
        """Blocked for every use (read or all), not only for writing, executing or deleting."""
        return self.access in ANY_USE

    def label(self) -> str:
        """``/w/data.csv (write)``: how a prompt or a log line names it."""
        return self.target if self.access == "all" else f"{self.target} ({self.access})"


# ---- what memory answers R2 at planning time (not bus messages: MemoryQuery carries Potentials) ----------


class Potentials(Contract):
    """Live dual-channel convolution for one tag pair."""

    attention: float
    """Σ|f|·e^(−kΔt): where to look."""
    decision: float
    """Σσ·f·e^(−kΔt): what to do."""
    action: MemoryAction
    """Ignore, Exploit, Avoid or Caution by the spec's thresholds."""


class SOPRecord(Contract):
    """A C-level rule served to R2."""

    id: str
    """The C Megram's id."""
    space: str
    """Tag space."""
    entity: str
    """Tag entity."""
    content: str
    """The rule."""
    sigma: float
    """>0: SHOULD PREFER; ≤0: MUST NOT."""


REFERENCE_CRITERION = "the folder ends as an independent run of the request leaves it"
"""The task criterion a plan's reference run stands for: verifiable, decided by comparing change sets."""


class Criterion(Contract):
    """One checkable assertion with its v0.9 mode and the check code runs to decide it."""

    criterion: str
    """The assertion, in words a validator can check."""
    mode: CriterionMode = "verifiable"
    """verifiable: a tool result proves it; plausible: judged, weighted by k/N in D."""
    check: str = ""
    """A shell command code runs to decide it, written with the plan: a read-only test (exit 0 = met), or a
    command that does the work, whose changes are compared with the executor's; empty when there is none."""


class Constraints(Contract):
    """Limits the user stated; nothing inferred."""

    scope: str | None = None
    """Where the work may happen (a folder, a project), or null."""
    deadline: str | None = None
    """ISO8601 deadline the user gave, or null."""


class TaskSpec(Contract):
    """R1's faithful restatement of the request; never carries success criteria."""

    kind: Literal["task_spec"] = "task_spec"
    """Bus discriminator."""
    task_id: str
    """Short snake_case id of the task."""
    intent: str
    """The user's goal, restated without narrowing or expanding it."""
    constraints: Constraints = Field(default_factory=Constraints)
    """Scope and deadline the user stated."""
    raw_input: str = ""
    """The verbatim user input, filled in by code."""


class SubTask(Contract):
    """One unit of work for an Effector Agent, dispatched by code with a UUID."""

    kind: Literal["subtask"] = "subtask"
    """Bus discriminator."""
    subtask_id: str
    """UUID assigned by the dispatcher, never by the LLM."""
    parent_task_id: str
    """The TaskSpec.task_id this subtask serves."""
    intent: str
    """What this subtask must achieve."""
    context: str = ""
    """Everything the executor needs beyond the intent (prior outputs, constraints, paths)."""
    success_criteria: list[Criterion] = Field(default_factory=list)
    """Concrete checkable assertions about this subtask's output."""
    sequence: int = 1
    """Same sequence runs in parallel; a later sequence sees earlier outputs."""


class DispatchManifest(Contract):
    """What R2 dispatched in one round; R4b reads task_criteria from here."""

    kind: Literal["dispatch_manifest"] = "dispatch_manifest"
    """Bus discriminator."""
    task_id: str
    """The task this round belongs to."""
    round: int = 1
    """1 for the initial plan, +1 per replan."""
    subtask_ids: list[str] = Field(default_factory=list)
    """UUIDs of the dispatched subtasks."""
    task_criteria: list[Criterion] = Field(default_factory=list)
    """Assertions about the combined output of all subtasks."""
    reference: str = ""
    """R2's independent command for the whole request: run on a copy of the folder as it was before the task,
    its changes are compared with the task's; empty when the plan gave none."""


class ToolCall(Contract):
    """One tool call as code recorded it (artoo's extension): what the GGS attributes a failure to."""

    tool: str
    """The tool's name."""
    input: str = ""
    """The tool's primary argument as the model gave it (a path, a command, a query)."""
    targets: list[str] = Field(default_factory=list)
    """Normalised targets: the resolved path, or a command's path arguments resolved in the workspace."""
    ok: bool = True
    """True when the tool did what was asked."""
    failure_class: FailureClass | None = None
    """Class of the call's own failure, null when it succeeded."""
    output: str = ""
    """The tool's output or error, capped; the planner sees it fenced."""
    denied: bool = False
    """True when the Law-1 gate refused the call (a constraint, never a failed target)."""


class ExecutionResult(Contract):
    """R3's answer for one attempt; tool_calls are recorded by code, never by the model."""

    kind: Literal["execution_result"] = "execution_result"
    """Bus discriminator."""
    subtask_id: str
    """The subtask executed."""
    status: Literal["completed", "uncertain", "failed"]
    """The executor's own claim about the attempt."""
    output: str = ""
    """The executor's answer (a claim; tool_calls are the ground truth)."""
    tool_calls: list[str] = Field(default_factory=list)
    """Evidence, one entry per call: ``name: input → firstN(output, 200)``."""
    calls: list[ToolCall] = Field(default_factory=list)
    """The same calls, structured: tool, normalised targets, success, capped output."""
    stopped: str = ""
    """Why code ended the attempt before the model's final answer (a limit, a repeated call); empty otherwise."""


class CriterionVerdict(Contract):
    """One criterion scored against evidence."""

    criterion: str
    """The criterion as written in the plan."""
    verdict: Literal["pass", "fail"]
    """pass only when the evidence shows it."""
    failure_class: FailureClass | None = None
    """Why it failed: the approach (logical) or the world (environmental)."""
    evidence: str = ""
    """The tool output or fact the verdict rests on."""
    mode: CriterionMode = "verifiable"
    """Copied from the plan's criterion by code; weights D."""
    by: Literal["check", "model"] = "model"
    """Who decided it: a check code ran (no model can overrule it), or a model's judgement."""
    check: str = ""
    """The predicate code ran to decide it ('' for a model's verdict and for the plan's reference run, whose
    command no later role may copy); memory keeps it beside a verified method."""


class CorrectionSignal(Contract):
    """R4a's directed feedback to R3 for the next attempt."""

    kind: Literal["correction_signal"] = "correction_signal"
    """Bus discriminator."""
    subtask_id: str
    """The subtask being corrected."""
    attempt: int
    """The attempt that fell short (1-based)."""
    failure_class: FailureClass = "logical"
    """Dominant class of the unmet criteria."""
    unmet_criteria: list[str] = Field(default_factory=list)
    """Criteria that failed in that attempt."""
    what_was_wrong: str = ""
    """The gap, grounded in the evidence."""
    what_to_do: str = ""
    """The change the next attempt must make."""
    prior_tool_calls: list[str] = Field(default_factory=list)
    """Calls already tried, to avoid repeating them."""


class GapPoint(Contract):
    """One attempt on the fast loop's gap trajectory."""

    attempt: int
    """1-based attempt number."""
    score: float
    """Fraction of criteria that passed in this attempt."""
    unmet_criteria: list[str] = Field(default_factory=list)
    """Criteria that failed in this attempt."""
    failure_class: FailureClass | None = None
    """Dominant failure class of this attempt, null when all passed."""


class SubTaskOutcome(Contract):
    """The only message that leaves a fast loop."""

    kind: Literal["subtask_outcome"] = "subtask_outcome"
    """Bus discriminator."""
    subtask_id: str
    """The subtask."""
    parent_task_id: str
    """Its task."""
    status: Literal["matched", "failed"]
    """matched when every criterion passed."""
    output: Any = None
    """The last attempt's output."""
    failure_reason: str | None = None
    """Why it failed, when it did."""
    failure_class: FailureClass | None = None
    """Class of the failure when it failed (environmental for infrastructure errors)."""
    gap_trajectory: list[GapPoint] = Field(default_factory=list)
    """Per-attempt scores: the history that makes the gradient history-aware."""
    criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)
    """Verdicts of the final attempt."""
    tool_calls: list[str] = Field(default_factory=list)
    """Evidence of the final attempt."""
    intent: str = ""
    """The subtask's intent, kept for summaries and memory tags."""
    outcome: OutcomeKind | None = None
    """matched, failed, skipped (an earlier group failed) or denied (Law 1); null means ``status``."""
    calls: list[ToolCall] = Field(default_factory=list)
    """Structured tool calls of the final attempt: a failure is attributed to the call that failed."""
    what_was_wrong: str = ""
    """R4a's account of the gap in the final attempt, for the planner."""
    what_to_do: str = ""
    """R4a's advice for the next attempt, for the planner."""


class OutcomeSummary(Contract):
    """R4b's accept path: every subtask matched and every task criterion passed."""

    kind: Literal["outcome_summary"] = "outcome_summary"
    """Bus discriminator."""
    task_id: str
    """The task."""
    merged_output: Any = None
    """Concrete data merged from all subtasks, not a prose summary."""
    summary: str = ""
    """One-paragraph account for the user."""
    outcomes: list[SubTaskOutcome] = Field(default_factory=list)
    """Every outcome of the round, so the GGS can compute D."""
    task_criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)
    """R4b's verdicts on the task criteria."""


class ReplanRequest(Contract):
    """R4b's reject path, always to the GGS, never to R2."""

    kind: Literal["replan_request"] = "replan_request"
    """Bus discriminator."""
    task_id: str
    """The task."""
    failed_outcomes: list[SubTaskOutcome] = Field(default_factory=list)
    """Outcomes with status failed."""
    gap_summary: str = ""
    """What is missing, in one paragraph."""
    matched_outcomes: list[SubTaskOutcome] = Field(default_factory=list)
    """Outcomes that matched: their criteria still count in D's denominator."""
    task_criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)
    """R4b's verdicts on task criteria (empty when R4b skipped its call)."""
    merged_output: Any = None
    """What was achieved so far, delivered honestly on abandon."""


class Loss(Contract):
    """The loss components of one round."""

    D: float
    """Intent-result distance in [0, 1]."""
    P: float
    """Process implausibility in [0, 1]."""
    Omega: float
    """Resource cost in [0, 1]."""
    L: float
    """α·D + β·(1−Ω)·P + λ·Ω."""


class PlanDirective(Contract):
    """The GGS's directed correction for R2's next round."""

    kind: Literal["plan_directive"] = "plan_directive"
    """Bus discriminator."""
    task_id: str
    """The task."""
    loss: Loss
    """Loss of the round that produced this directive."""
    prev_directive: str = "init"
    """The previous directive, ``init`` on the first round."""
    directive: ActionDirective
    """What kind of change R2 must make."""
    blocked_tools: list[str] = Field(default_factory=list)
    """Tools R2 must not use (logical failures)."""
    blocked_targets: list[BlockedTarget] = Field(default_factory=list)
    """Inputs that failed and how, accumulated over all rounds (environmental failures); a bare string is
    every access (as older directives wrote it)."""
    failed_criterion: str = ""
    """The most persistent failing criterion."""
    failure_class: Literal["logical", "environmental", "mixed"] = "logical"
    """Class of the round's failures."""
    budget_pressure: float = 0.0
    """Ω: how much of the budget is spent."""
    grad_l: float = 0.0
    """∇L = L_t − L_{t−1}."""
    rationale: str = ""
    """Why this directive, in one sentence."""
    urgency: Urgency = "normal"
    """From ∇L's sign (v0.9): low when improving, high when worsening."""
    refused: list[str] = Field(default_factory=list)
    """Law-1 refusals so far: actions the user did not approve, a constraint for the plan (not a target)."""

    @field_validator("blocked_targets", mode="before")
    @classmethod
    def _bare_targets(cls, value: object) -> object:
        """Older directives on the bus and in logs hold bare strings: every access."""
        return [BlockedTarget.of(v) for v in value] if isinstance(value, list) else value


class FinalResult(Contract):
    """The one answer a task gives, emitted by the GGS alone."""

    kind: Literal["final_result"] = "final_result"
    """Bus discriminator."""
    task_id: str
    """The task."""
    summary: str
    """What was achieved, honestly; [LAW1] when a confirmation was denied."""
    output: Any = None
    """The merged output (partial on abandon)."""
    loss: Loss
    """Loss of the last round."""
    grad_l: float = 0.0
    """∇L of the last round."""
    replans: int = 0
    """Replan rounds used."""
    prev_directive: str = "init"
    """The directive before the final one."""
    directive: FinalDirective
    """accept, success, abandon, unsure or unverified."""
    next_steps: list[str] = Field(default_factory=list)
    """On abandon: what to try next (R2's graceful failure)."""


class Megram(Contract):
    """The MKCT base tuple ⟨ID, Level, created_at, last_recalled_at, space, entity, content, state, f, σ, k⟩."""

    kind: Literal["megram"] = "megram"
    """Bus discriminator."""
    id: str
    """Unique id (UUID); ingest is idempotent on it."""
    level: Level = "M"
    """M (event), K (knowledge), C (common sense), T (laws)."""
    created_at: datetime
    """When it was written (UTC)."""
    last_recalled_at: datetime | None = None
    """Last QueryC hit; decay counts from here (created_at when null)."""
    space: str
    """Tag: ``tool:<name>`` or ``intent:<slug>``."""
    entity: str
    """Tag: ``path:<target>`` or ``env:local``."""
    content: str = ""
    """What happened or what the rule says."""
    state: str = ""
    """The GGS macro-state (or rule kind) that produced it."""
    f: float
    """Magnitude (salience)."""
    sigma: float
    """Valence: +1 good, −1 bad, 0 neutral."""
    k: float
    """Decay per day; 0 for C and T."""
    derived_from: list[str] = Field(default_factory=list)
    """For consolidated C Megrams: ids of the Megrams they distil."""


class MemoryQuery(Contract):
    """R2's read of memory at planning time, published for the Auditor."""

    kind: Literal["memory_query"] = "memory_query"
    """Bus discriminator."""
    task_id: str
    """The task planning."""
    space: str
    """Queried space."""
    entity: str
    """Queried entity."""
    potentials: Potentials | None = None
    """What QueryMK answered."""
    sop_count: int = 0
    """How many SOPs QueryC answered."""


BusMessage = Annotated[
    TaskSpec | SubTask | DispatchManifest | ExecutionResult | CorrectionSignal | SubTaskOutcome
    | OutcomeSummary | ReplanRequest | PlanDirective | FinalResult | Megram | MemoryQuery,
    Field(discriminator="kind"),
]
"""Any message that travels on the bus, parsed by its ``kind``."""


