"""R4b — Meta-Validator: the fan-in gate and the sensor of the medium loop.

R4b merges the matched outputs into concrete data, asks the brain model whether every
task criterion holds, and decides: an OutcomeSummary only when every subtask matched AND
every task criterion passed; otherwise a ReplanRequest for the GGS (never for R2).  The
gates are code: when any subtask failed the model is not asked at all (``needs_llm``),
and a task criterion the model did not address counts as failed — ambiguity rejects.

After a replan the round redoes only what failed, so the results earlier rounds validated
("kept results", ``keep_results``) join this round's in the merged output, labelled with
their round, and R4b's prompt shows them in their own section; they never gate the model.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from artoo.config.contracts import (
    CriterionVerdict,
    DispatchManifest,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
)
from artoo.config.protocol import TaskVerdict
from artoo.tasks.roles import grounding
from artoo.tasks.roles.prompting import (
    align_verdicts,
    as_text,
    cap,
    criterion_key,
    fence_untrusted,
    file_paths,
    numbered,
    objected,
    system,
    user,
)

EVIDENCE_CHARS = 1500
"""Characters of one subtask's tool evidence shown to the model."""
KEPT_HEADING = "Results validated in earlier rounds (kept, not redone this round)"
"""The heading of the prompt section that shows the kept results."""

ROLE = """Role R4b, Meta-Validator. Decide whether the COMBINED result meets every task criterion.
- Judge each task criterion against the recorded tool evidence and the files as code read them.
- Accept a criterion only when the evidence clearly shows it. When the evidence is ambiguous, fail it:
  the default is REJECT. The task is accepted only when ALL task criteria pass.
- For every criterion: the criterion text copied exactly, verdict pass or fail, the evidence, and when
  failing a failure_class (logical: the approach or plan was wrong; environmental: the world blocked it).
- Results validated in earlier rounds (when shown) were checked by their own validator and are part of the
  combined result: judge the task criteria on them together with this round's.
- "Files the task criteria name, as they are now" was read by code after the round: it is ground truth for
  whether a file exists and what it holds. A file that does not exist there fails its criterion. For a
  criterion about a file, the evidence is a line of what that file holds there.
- summary: one honest paragraph for the user on what was achieved and what is missing."""
"""R4b's role text.  The file-evidence line: a small judge passes a file criterion by quoting the executor's
sentence even with the file as code read it in front of it, and code then fails that pass (grounding.ECHOED),
spending the round."""


class KeptResult(BaseModel):
    """A subtask result an earlier round validated (matched), carried into the later rounds' merge."""

    round: int = Field(ge=1)
    """The round whose R4a validated it."""
    outcome: SubTaskOutcome
    """That round's matched outcome (intent, output, tool evidence)."""


def _intent_key(outcome: SubTaskOutcome) -> str:
    """Two subtasks do the same step when their intents match, case and spacing folded."""
    return " ".join(outcome.intent.casefold().split()) or outcome.subtask_id


def keep_results(kept: list[KeptResult], round_no: int, outcomes: list[SubTaskOutcome]) -> list[KeptResult]:
    """``kept`` plus round ``round_no``'s matched outcomes; one of them with a kept result's intent replaces it."""
    fresh = [KeptResult(round=round_no, outcome=o) for o in outcomes if o.status == "matched"]
    return carried(outcomes, kept) + fresh


def carried(outcomes: list[SubTaskOutcome], kept: list[KeptResult]) -> list[KeptResult]:
    """The kept results this round did not redo: no matched outcome of this round has their intent.

    A failed redo does not count: what an earlier round validated stays achieved."""
    redone = {_intent_key(o) for o in outcomes if o.status == "matched"}
    return [k for k in kept if _intent_key(k.outcome) not in redone]


def _data(value: Any) -> Any:
    """A string holding a JSON object or array becomes that data; anything else stays as it is."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def kept_label(kept: KeptResult) -> str:
    """The merged output's key of a kept result: its intent, and the round that validated it."""
    return f"{kept.outcome.intent.strip() or kept.outcome.subtask_id} (validated in round {kept.round})"


def merge_outputs(outcomes: list[SubTaskOutcome], kept: list[KeptResult] = ()) -> dict:
    """The matched outputs as data keyed by subtask intent, in the order given (sequence order), after
    the kept results of earlier rounds this round did not redo, each keyed by ``kept_label``."""
    merged: dict[str, Any] = {}
    labelled = [(kept_label(k), k.outcome) for k in carried(outcomes, list(kept))]
    labelled += [(o.intent.strip() or o.subtask_id, o) for o in outcomes if o.status == "matched"]
    for label, outcome in labelled:
        key, n = label, 2
        while key in merged:
            key = f"{label} ({n})"
            n += 1
        merged[key] = _data(outcome.output)
    return merged


def needs_llm(outcomes: list[SubTaskOutcome]) -> bool:
    """True only when there are outcomes and every one matched (R4b's model is never asked otherwise)."""
    return bool(outcomes) and all(o.status == "matched" for o in outcomes)


def _calls(outcome: SubTaskOutcome) -> str:
    return cap("\n".join(outcome.tool_calls) or "(no tool calls)", EVIDENCE_CHARS)


def _kept_block(kept: list[KeptResult]) -> str:
    """Each kept result: its round and intent and its tool evidence (never its executor's own sentence)."""
    return "\n\n".join(
        f"[validated in round {k.round}] {k.outcome.intent or k.outcome.subtask_id}\n"
        f"tool evidence:\n{_calls(k.outcome)}" for k in kept)


def named_files(manifest: DispatchManifest) -> list[str]:
    """The file names the task criteria name, in order: the files whose state R4b is shown."""
    return [n for c in manifest.task_criteria for n in file_paths(c.criterion)]


def messages_for(manifest: DispatchManifest, outcomes: list[SubTaskOutcome], kept: list[KeptResult] = (),
                 found: list[str] = (), notes: dict[str, str] | None = None) -> list[dict]:
    """R4b's prompt: the task criteria (with what a check found under any it could not decide), each subtask's
    tool evidence, the results earlier rounds validated that this round did not redo, and ``found`` (the named
    files as code read them after the round), fenced.

    The merged output (the executors' own sentences) is never shown: a small judge quotes it back as evidence."""
    evidence = "\n\n".join(f"[{o.status}] {o.intent or o.subtask_id}\n" + _calls(o) for o in outcomes)
    sections = [
        f"Task criteria (about the combined output):\n{numbered(manifest.task_criteria, notes)}",
        "Tool evidence per subtask, recorded by code:\n" + fence_untrusted("subtask evidence", evidence),
    ]
    earlier = carried(outcomes, list(kept))
    if earlier:
        sections.append(f"{KEPT_HEADING}:\n" + fence_untrusted("kept results", _kept_block(earlier)))
    if found:
        sections.append("Files the task criteria name, as they are now (read by code after the round, ground "
                        "truth):\n" + fence_untrusted("files now", "\n\n".join(found)))
    return [system(ROLE, "TaskVerdict"), user("\n\n".join(sections))]


async def judge_task(llm, manifest: DispatchManifest, outcomes: list[SubTaskOutcome],
                     kept: list[KeptResult] = (), found: list[str] = (),
                     objection: str | None = None, notes: dict[str, str] | None = None) -> TaskVerdict:
    """Ask the brain model for task-criteria verdicts (role R4b, schema ``TaskVerdict``); with ``objection``,
    once more after code turned a pass (``grounding.objection``)."""
    messages = objected(messages_for(manifest, outcomes, kept, found, notes), objection)
    return await llm.structured("R4b", "TaskVerdict", messages)


def in_plan_order(manifest: DispatchManifest, decided: dict[str, CriterionVerdict],
                  judged: list[CriterionVerdict]) -> list[CriterionVerdict]:
    """One verdict per task criterion in the plan's order: a check's where one decided, else the judge's
    (a criterion without either fails: ambiguity rejects)."""
    by_text = {v.criterion: v for v in judged}
    return [decided.get(c.criterion) or by_text.get(c.criterion) or CriterionVerdict(
        criterion=c.criterion, verdict="fail", failure_class="logical", evidence="no verdict", mode=c.mode)
        for c in manifest.task_criteria]


def checked_summary(verdicts: list[CriterionVerdict]) -> str:
    """The round's account when checks decided every task criterion and no model was asked."""
    met = sum(v.verdict == "pass" for v in verdicts)
    failed = [f"{v.criterion} ({v.evidence.splitlines()[0] if v.evidence else 'unmet'})"
              for v in verdicts if v.verdict == "fail"]
    if not failed:
        return f"Every task criterion was met, each decided by a check code ran ({met} of {len(verdicts)})."
    return f"Checks code ran: {met} of {len(verdicts)} task criteria met; unmet: " + "; ".join(failed)


def task_verdicts(manifest: DispatchManifest, answer: TaskVerdict) -> list[CriterionVerdict]:
    """One verdict per task criterion, by text; a criterion the model skipped fails."""
    return align_verdicts(manifest.task_criteria, answer.verdicts)


def grounded(verdicts: list[CriterionVerdict], outcomes: list[SubTaskOutcome], kept: list[KeptResult] = (),
             found: list[str] = (), absent: list[str] = (),
             existed: set[str] | None = None) -> tuple[list[CriterionVerdict], list[str]]:
    """Task verdicts with each model pass on a file that rests on a claim alone turned to a fail, and the criteria
    turned (the rules R4a's passes meet: ``grounding.RULES``).  The ground is every tool call of this round's
    outcomes and of the kept results, and the files as code read them; the claim is what their executors said."""
    shown = [*outcomes, *(k.outcome for k in carried(list(outcomes), list(kept)))]
    facts = grounding.Facts(calls=[c for o in shown for c in o.tool_calls],
                            claim="\n".join(as_text(o.output) for o in shown), found=list(found),
                            absent=list(absent), existed=existed)
    return grounding.overrule(verdicts, lambda v: grounding.why_ungrounded(v.criterion, v.evidence or "", facts))


def unjudged(manifest: DispatchManifest, cause: str, failure_class: str) -> list[CriterionVerdict]:
    """R4b's model could not be asked: every task criterion fails with that cause (never an accept)."""
    return [CriterionVerdict(criterion=c.criterion, verdict="fail", failure_class=failure_class,
                             evidence=f"not judged: {cause}"[:500], mode=c.mode) for c in manifest.task_criteria]


def _unverified(manifest: DispatchManifest, verdicts: list[CriterionVerdict] | None) -> list[str]:
    """Task criteria without a passing verdict (all of them when R4b's model was not asked)."""
    passed = {criterion_key(v.criterion) for v in verdicts or [] if v.verdict == "pass"}
    return [c.criterion for c in manifest.task_criteria if criterion_key(c.criterion) not in passed]


def _gap_summary(failed: list[SubTaskOutcome], verdicts: list[CriterionVerdict] | None,
                 unverified: list[str], summary: str) -> str:
    lines = [f"subtask '{o.intent or o.subtask_id}' failed: {o.failure_reason or 'no reason given'}"
             for o in failed]
    by_key = {criterion_key(v.criterion): v for v in verdicts or []}
    for criterion in unverified:
        verdict = by_key.get(criterion_key(criterion))
        why = verdict.evidence if verdict is not None and verdict.evidence else "not evaluated"
        lines.append(f"task criterion not met: {criterion} ({why})")
    if summary.strip():
        lines.append(summary.strip())
    return "\n".join(lines) or "no subtask outcome was received"


def decide(task_id: str, manifest: DispatchManifest, outcomes: list[SubTaskOutcome], merged: dict,
           verdicts: list[CriterionVerdict] | None, summary: str) -> OutcomeSummary | ReplanRequest:
    """Accept only when every outcome matched and every task criterion passed; else a ReplanRequest."""
    failed = [o for o in outcomes if o.status != "matched"]
    matched = [o for o in outcomes if o.status == "matched"]
    unverified = _unverified(manifest, verdicts)
    if outcomes and not failed and not unverified:
        return OutcomeSummary(task_id=task_id, merged_output=merged, summary=summary, outcomes=list(outcomes),
                              task_criteria_verdicts=list(verdicts or []))
    return ReplanRequest(task_id=task_id, failed_outcomes=failed, matched_outcomes=matched,
                         task_criteria_verdicts=list(verdicts or []),
                         gap_summary=_gap_summary(failed, verdicts, unverified, summary),
                         merged_output=merged)
