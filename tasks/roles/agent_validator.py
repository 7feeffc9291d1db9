"""R4a — Agent-Validator: sensor and controller of the fast loop.

The model judges each criterion against the evidence; everything around that judgement
is pure code here, so it is testable without a model: aligning the answer to the plan's
criteria by text (a criterion the model skipped fails — silence is not a pass), the gap
score of an attempt, the CorrectionSignal for the retry, the immediate failure on an
executor ``failed`` status or an infrastructure error, and the SubTaskOutcome that is the
only message to leave the fast loop.
"""

from __future__ import annotations

from collections import Counter

from artoo.config.contracts import (
    CorrectionSignal,
    CriterionVerdict,
    ExecutionResult,
    FailureClass,
    GapPoint,
    SubTask,
    SubTaskOutcome,
)
from artoo.config.protocol import AgentVerdict
from artoo.tasks.roles import grounding
from artoo.tasks.roles.prompting import (
    align_verdicts,
    cap,
    fence_untrusted,
    file_paths,
    numbered,
    objected,
    system,
    user,
)

CONTEXT_CHARS = 2000
"""Characters of the subtask context shown to the validator."""
EVIDENCE_CHARS = 200
"""Characters of an error kept as the evidence of an immediate failure."""
NO_CRITERIA = "the subtask has checkable success criteria"
"""The synthetic criterion that fails when a plan gave a subtask none."""

ROLE = """Role R4a, Agent-Validator. Judge ONE executor attempt against each success criterion.
Evidence grounding rule:
- The tool calls, recorded by code, are the ground truth. If the primary tool call shows an error, an
  interruption or truncation without a completion signal, fail the criterion.
- A check after a failed primary action (ls, find, stat) does NOT prove the action succeeded.
- Empty results from a search that really ran are a valid answer: absence can pass a criterion.
- No tool call supporting a verifiable criterion means it fails.
- "Files the criteria name, as they are now" was read by code after the attempt: it is ground truth for
  whether a file exists and what it contains. A file that does not exist there fails its criterion.
For every criterion give: criterion, its number ("1"); verdict pass or fail; evidence, one short line
quoted from the tool call or the file it rests on; and when failing a failure_class:
  logical — the approach was wrong (wrong tool, wrong command, wrong reading of the task);
  environmental — the world blocked a sound approach (network, permission, file not found, timeout).
When anything fails, what_was_wrong says the gap and what_to_do the concrete change for the next
attempt; otherwise both are null."""
"""R4a's role text.  The criterion by number and evidence in one line: a small model copies a criterion's text
with its "1. [plausible]" label, and asked to quote the tool call may repeat one tool line until ``max_tokens``
(minutes on a CPU); numbers are aligned by code."""


def named_files(subtask: SubTask) -> list[str]:
    """The file names the criteria name, then the intent's: the files whose state R4a is shown."""
    return [n for text in [*(c.criterion for c in subtask.success_criteria), subtask.intent]
            for n in file_paths(text)]


def messages_for(subtask: SubTask, result: ExecutionResult, found: list[str] | None = None,
                 notes: dict[str, str] | None = None) -> list[dict]:
    """R4a's prompt: the criteria (with what a check found under any it could not decide), the tool calls code
    recorded and the named files as code read them after the attempt (tasks/tools/found.py), all fenced.

    The executor's own sentences are never shown: a small judge quotes them back as evidence, so the evidence
    it sees is only what code recorded."""
    calls = "\n".join(result.tool_calls) or "(no tool was called)"
    files = (["Files the criteria name, as they are now (read by code after the attempt, ground truth):\n"
              + fence_untrusted("files now", "\n\n".join(found))] if found else [])
    content = "\n\n".join([
        f"Subtask intent: {subtask.intent}",
        "Subtask context:\n"
        + fence_untrusted("subtask context", cap(subtask.context or "(none)", CONTEXT_CHARS)),
        f"Success criteria:\n{numbered(subtask.success_criteria, notes)}",
        f"Tool calls recorded by code ({len(result.tool_calls)}), the ground truth:\n"
        + fence_untrusted("tool calls", calls),
        *([f"Code stopped the attempt before a final answer: {result.stopped}"] if result.stopped else []),
        *files,
    ])
    return [system(ROLE, "AgentVerdict"), user(content)]


async def judge(llm, subtask: SubTask, result: ExecutionResult, found: list[str] | None = None,
                objection: str | None = None, notes: dict[str, str] | None = None) -> AgentVerdict:
    """Ask the tool-tier model for per-criterion verdicts on one attempt (schema ``AgentVerdict``);
    with ``objection``, once more after code turned a pass (``grounding.objection``)."""
    messages = objected(messages_for(subtask, result, found, notes), objection)
    return await llm.structured("R4a", "AgentVerdict", messages)


def _synthetic(criterion: str, failure_class: FailureClass, evidence: str) -> list[CriterionVerdict]:
    return [CriterionVerdict(criterion=criterion, verdict="fail", failure_class=failure_class,
                             evidence=evidence)]


def verdicts_for(subtask: SubTask, answer: AgentVerdict) -> list[CriterionVerdict]:
    """One verdict per planned criterion, by text; missing ones fail, extra ones are ignored."""
    if not subtask.success_criteria:
        return _synthetic(NO_CRITERIA, "logical", "the plan gave this subtask no success criteria")
    return align_verdicts(subtask.success_criteria, answer.verdicts)


def in_plan_order(subtask: SubTask, decided: dict[str, CriterionVerdict],
                  judged: list[CriterionVerdict]) -> list[CriterionVerdict]:
    """One verdict per planned criterion in the plan's order: a check's where one decided, else the judge's
    (a criterion without either fails: silence is not a pass)."""
    if not subtask.success_criteria:
        return list(judged)
    by_text = {v.criterion: v for v in judged}
    return [decided.get(c.criterion) or by_text.get(c.criterion) or CriterionVerdict(
        criterion=c.criterion, verdict="fail", failure_class="logical", evidence="no verdict", mode=c.mode)
        for c in subtask.success_criteria]


def subject_files(subtask: SubTask) -> list[str]:
    """The files the subtask's intent names: what its criteria are about when they name none."""
    return file_paths(subtask.intent)


def grounded(verdicts: list[CriterionVerdict], result: ExecutionResult, found: list[str] | None = None,
             *, absent: list[str] = (), subject: list[str] = (),
             existed: set[str] | None = None) -> tuple[list[CriterionVerdict], list[str]]:
    """Verdicts with each model pass that rests on a claim alone turned to a fail, and the criteria turned (the
    rules: ``grounding.RULES``).  ``subject``: the files the intent names, so a criterion that names none is still
    about them; ``existed``: the named files that were there before the task (None: unknown)."""
    facts = grounding.Facts(calls=list(result.tool_calls), claim=result.output, found=list(found or []),
                            absent=list(absent), subject=list(subject), existed=existed)
    return grounding.overrule(verdicts, lambda v: grounding.why_ungrounded(v.criterion, v.evidence or "", facts))


def dominant_class(verdicts: list[CriterionVerdict]) -> FailureClass | None:
    """The most common class among failed verdicts (logical on a tie), None when none failed."""
    counts = Counter(v.failure_class or "logical" for v in verdicts if v.verdict == "fail")
    if not counts:
        return None
    return "environmental" if counts["environmental"] > counts["logical"] else "logical"


def gap_point(attempt: int, verdicts: list[CriterionVerdict]) -> GapPoint:
    """The attempt's point on the gap trajectory: score = passed / total (0 when nothing was scored)."""
    passed = sum(1 for v in verdicts if v.verdict == "pass")
    return GapPoint(attempt=attempt, score=passed / len(verdicts) if verdicts else 0.0,
                    unmet_criteria=[v.criterion for v in verdicts if v.verdict == "fail"],
                    failure_class=dominant_class(verdicts) if verdicts else "logical")


def correction(subtask: SubTask, attempt: int, verdicts: list[CriterionVerdict], answer: AgentVerdict,
               result: ExecutionResult) -> CorrectionSignal:
    """The retry directive: what was wrong and what to do, grounded in the failed verdicts."""
    failed = [v for v in verdicts if v.verdict == "fail"]
    wrong = (answer.what_was_wrong or "").strip() or "; ".join(
        f"{v.criterion}: {v.evidence or 'no evidence'}" for v in failed) or "the attempt was not accepted"
    checked = failed and all(v.by == "check" for v in failed)
    todo = (answer.what_to_do or "").strip() or (
        ("change the result until code's checks pass; what they found is above: " if checked else
         "use a different approach that produces tool evidence for: ") + "; ".join(v.criterion for v in failed))
    return CorrectionSignal(subtask_id=subtask.subtask_id, attempt=attempt,
                            failure_class=dominant_class(verdicts) or "logical",
                            unmet_criteria=[v.criterion for v in failed], what_was_wrong=wrong,
                            what_to_do=todo, prior_tool_calls=list(result.tool_calls))


def immediate_failure(subtask: SubTask, result_or_error: str,
                      failure_class: FailureClass) -> list[CriterionVerdict]:
    """Every criterion fails with one class (executor said failed, or infrastructure broke): no retry."""
    evidence = cap(result_or_error or "no detail", EVIDENCE_CHARS)
    if not subtask.success_criteria:
        return _synthetic(f"the subtask is done: {subtask.intent}", failure_class, evidence)
    return [CriterionVerdict(criterion=c.criterion, verdict="fail", failure_class=failure_class,
                             evidence=evidence, mode=c.mode) for c in subtask.success_criteria]


def _reason(verdicts: list[CriterionVerdict]) -> str:
    failed = [f"{v.criterion} ({v.evidence})" if v.evidence else v.criterion
              for v in verdicts if v.verdict == "fail"]
    return "unmet: " + "; ".join(failed) if failed else "no criterion was shown to pass"


def outcome(subtask: SubTask, status: str, result: ExecutionResult | None, verdicts: list[CriterionVerdict],
            trajectory: list[GapPoint], failure_reason: str | None = None,
            failure_class: FailureClass | None = None, *, answer: AgentVerdict | None = None,
            kind: str | None = None) -> SubTaskOutcome:
    """The fast loop's one message out; ValueError when ``matched`` is claimed over a failed verdict.

    ``answer`` (R4a's last verdict) lends its what_was_wrong / what_to_do to the planner's
    evidence; ``kind`` says a failure was a skip or a Law-1 denial rather than a real failure.
    """
    if status == "matched" and (not verdicts or any(v.verdict == "fail" for v in verdicts)):
        raise ValueError("an outcome is matched only when every criterion passed")
    failed = status == "failed"
    return SubTaskOutcome(
        subtask_id=subtask.subtask_id, parent_task_id=subtask.parent_task_id, status=status,
        output=result.output if result is not None else None,
        failure_reason=(failure_reason or _reason(verdicts)) if failed else None,
        failure_class=(failure_class or dominant_class(verdicts) or "logical") if failed else None,
        gap_trajectory=list(trajectory), criteria_verdicts=list(verdicts),
        tool_calls=list(result.tool_calls) if result is not None else [], intent=subtask.intent,
        outcome=kind or status, calls=list(result.calls) if result is not None else [],
        what_was_wrong=((answer.what_was_wrong or "").strip() if answer and failed else ""),
        what_to_do=((answer.what_to_do or "").strip() if answer and failed else ""))
