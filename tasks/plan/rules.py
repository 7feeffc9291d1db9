"""Plan rules and the dispatcher: what code, not the model, guarantees about a plan.

The planner's answer is a hypothesis written by a model; before anything runs, code
checks it against the MUST NOT set and the structural rules (R2's plan validator), caps
its size, and turns it into SubTasks.  Subtask ids are UUIDs made here (spec invariant:
never by the LLM — the answer schema has no id field at all), and sequence numbers become
ordered groups: same number in parallel, a later group sees the earlier groups' outputs.
Everything here is pure: no I/O, no clock, only uuid4 for the ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from itertools import groupby
from pathlib import Path

from artoo.config.contracts import (
    ANY_USE,
    REFERENCE_CRITERION,
    Criterion,
    DispatchManifest,
    SubTask,
    SubTaskOutcome,
    ToolCall,
)
from artoo.config.protocol import PlanAnswer, PlannedSubTask
from artoo.tasks.blame.failure import looks_like_path, normalise, text_targets
from artoo.tasks.checks.contradict import contradictions
from artoo.tasks.roles.prompting import as_text, cap, criterion_key, fence_untrusted, file_names

MAX_SUBTASKS = 20
"""Most subtasks one plan may dispatch (token cost: N parallel contexts)."""
EARLIER_OUTPUT_CHARS = 2000
"""Characters of each earlier subtask's output injected into a later group's context."""
EARLIER_CALLS_CHARS = 1500
"""Characters of an earlier subtask's recorded tool calls shown to a later group (the latest kept)."""
CALL_CHARS = 500
"""Characters of one recorded call's output within them."""


def _subtask_text(sub: PlannedSubTask) -> str:
    return "\n".join([sub.intent, sub.context, *(c.criterion for c in sub.success_criteria)])


def _subtask_problems(n: int, sub: PlannedSubTask, tools: list[str], targets: list[str],
                      workspace: str | Path, pairs: list[tuple[str, str]] = ()) -> list[str]:
    """Rule breaks of one subtask: a blocked tool it declares, a blocked target its text names exactly.

    Prose is never searched for a tool's name ("search the log" does not use ``search``), and a
    target matches only as the same normalised path, never as a substring of other text.
    """
    problems = []
    if sub.sequence < 1:
        problems.append(f"subtask {n}: sequence {sub.sequence} is below 1")
    if not any(c.criterion.strip() for c in sub.success_criteria):
        problems.append(f"subtask {n} ({sub.intent!r}) has no success criteria")
    declared = {t.strip().casefold() for t in sub.tools}
    problems += [f"subtask {n} uses blocked tool {tool!r}" for tool in tools if tool.casefold() in declared]
    named = text_targets(_subtask_text(sub), workspace)
    problems += [f"subtask {n} reuses blocked target {target!r}" for target in targets if target in named]
    problems += [f"subtask {n} uses {tool!r} on {target!r}, which memory says failed (another tool may)"
                 for tool, target in pairs if tool.casefold() in declared and target in named]
    return problems


def validate_plan(plan: PlanAnswer, must_not_tools: set[str], must_not_targets: set[str],
                  max_subtasks: int | None = MAX_SUBTASKS, workspace: str | Path = "",
                  must_not_pairs: Iterable[tuple[str, ...]] = ()) -> list[str]:
    """The plan's violations of the rules and the MUST NOT set; [] when it may be dispatched.

    ``max_subtasks=None`` lets an oversized plan through (the caller caps it with ``cap_plan``).
    ``workspace`` anchors relative paths in the plan's text, as the tools resolve them.
    ``must_not_pairs`` (memory's (tool, target) restrictions) break a subtask only when it
    declares that tool *and* names that target; the tool elsewhere, or the target with
    another tool, is fine.  A pair (tool, target, access) blamed for writing, executing or deleting
    only is the toolbox's to refuse at call time: plan text cannot say how a step will use a
    file it names, and reading it is allowed.
    """
    if not plan.subtasks:
        return ["the plan has no subtasks"]
    problems = []
    if max_subtasks is not None and len(plan.subtasks) > max_subtasks:
        problems.append(f"the plan has {len(plan.subtasks)} subtasks; at most {max_subtasks} are allowed")
    tools = sorted(t.strip() for t in must_not_tools if t and t.strip())
    targets = sorted(t.strip() for t in must_not_targets if t and t.strip())
    pairs = sorted({(pair[0].strip(), normalise(pair[1], workspace) if looks_like_path(pair[1]) else pair[1].strip())
                    for pair in must_not_pairs if pair[0].strip() and pair[1].strip() and _any_use(pair)})
    for n, sub in enumerate(plan.subtasks, 1):
        problems += _subtask_problems(n, sub, tools, targets, workspace, pairs)
    return problems + contradicting_checks(plan)


def contradicting_checks(plan: PlanAnswer) -> list[str]:
    """Checks that no folder can meet together: within one subtask's criteria, and among the task criteria with
    the last step's (all hold at the end); an earlier step's state may differ from the end's, so steps apart are
    not compared."""
    last = max((s.sequence for s in plan.subtasks), default=0)
    ending = [c for s in plan.subtasks if s.sequence == last for c in s.success_criteria]
    found = [p for s in plan.subtasks for p in contradictions(s.success_criteria)]
    found += contradictions([*plan.task_criteria, *ending])
    return list(dict.fromkeys(found))


def _any_use(pair: tuple[str, ...]) -> bool:
    """A pair whose every use is refused: an old (tool, target) with no access, or one blamed for all or read."""
    return len(pair) < 3 or pair[2] in ANY_USE


def normalise_sequences(plan: PlanAnswer) -> PlanAnswer:
    """Sequences renumbered densely 1..k keeping their order (gaps and duplicates are fine).

    A plan cannot be circular: a sequence is a number, not a dependency edge, so ordering
    by it always terminates.
    """
    rank = {seq: i for i, seq in enumerate(sorted({s.sequence for s in plan.subtasks}), 1)}
    subtasks = [s.model_copy(update={"sequence": rank[s.sequence]}) for s in plan.subtasks]
    return plan.model_copy(update={"subtasks": subtasks})


def drop_blocked_tools(plan: PlanAnswer, must_not_tools: set[str]) -> tuple[PlanAnswer, list[str]]:
    """The plan with blocked tools struck from each subtask's declared ``tools``, and one note per subtask.

    Why: a small model may list a blocked tool again in the plan *and* in the re-ask, and failing the round
    for that would lose it on a rule the toolbox enforces anyway (a blocked tool is never offered to the
    executor).  Used only on the re-asked plan: the first answer is still re-asked with
    the problem stated, so a model that can change its approach does.  Pure.
    """
    blocked = {t.strip().casefold() for t in must_not_tools if t and t.strip()}
    notes, subtasks = [], []
    for n, sub in enumerate(plan.subtasks, 1):
        struck = [t for t in sub.tools if t.strip().casefold() in blocked]
        if struck:
            notes.append(f"subtask {n} ({sub.intent!r}) declared blocked tool(s) {', '.join(sorted(set(struck)))} "
                         "again after the re-ask: struck from its tools (the executor is not offered them)")
            sub = sub.model_copy(update={"tools": [t for t in sub.tools if t not in struck]})
        subtasks.append(sub)
    return (plan.model_copy(update={"subtasks": subtasks}), notes) if notes else (plan, [])


def _later_files(criterion: str, intent: str) -> list[str]:
    """File names a criterion names that the subtask's intent does not (what a later step must produce)."""
    folded = intent.casefold()
    return [name for name in file_names(criterion) if name.casefold() not in folded]


def place_task_criteria(plan: PlanAnswer) -> tuple[PlanAnswer, list[str]]:
    """Task criteria copied onto an early step moved to the last step; the plan and one note per move.

    Why: a small model may copy a task criterion onto an early step that cannot meet it ("totals.md exists"
    on a step that only finds the .txt files), so every attempt fails, the later step that writes the file
    never runs, and the round is lost.  The repair is narrow: a criterion
    of a subtask before the last sequence group that repeats a task criterion verbatim and names a file
    the subtask's intent does not.  It leaves that subtask (R4b still checks the task criterion on the
    combined output) for the last group's single subtask, and a step left with no criterion is checked on
    its own result.  Pure; a plan that needs no move comes back unchanged with no notes.
    """
    last = max((s.sequence for s in plan.subtasks), default=0)
    task = {_key(c.criterion) for c in plan.task_criteria}
    moved: list[Criterion] = []
    notes: list[str] = []
    subtasks = []
    for n, sub in enumerate(plan.subtasks, 1):
        later = {id(c): _later_files(c.criterion, sub.intent) for c in sub.success_criteria
                 if sub.sequence < last and _key(c.criterion) in task}
        gone = [c for c in sub.success_criteria if later.get(id(c))]
        if gone:
            moved += [c for c in gone if c not in moved]
            notes += [f"subtask {n} ({sub.intent!r}): the task criterion {c.criterion!r} names "
                      f"{', '.join(later[id(c)])}, which a later step produces: moved to the last step" for c in gone]
            keep = [c for c in sub.success_criteria if c not in gone] or [
                Criterion(criterion=f"the output reports what this step found or did: {sub.intent}", mode="plausible")]
            sub = sub.model_copy(update={"success_criteria": keep})
        subtasks.append(sub)
    finals = [i for i, s in enumerate(subtasks) if s.sequence == last]
    if moved and len(finals) == 1:
        final = subtasks[finals[0]]
        have = {_key(c.criterion) for c in final.success_criteria}
        extra = [c for c in moved if _key(c.criterion) not in have]
        subtasks[finals[0]] = final.model_copy(update={"success_criteria": [*final.success_criteria, *extra]})
    return (plan.model_copy(update={"subtasks": subtasks}), notes) if notes else (plan, [])


REQUEST_LINE = "The user's request, in their own words (this step is all of it): {request}"
"""How a one-subtask plan's context carries the request (``with_request``)."""


def with_request(plan: PlanAnswer, request: str) -> tuple[PlanAnswer, list[str]]:
    """A one-subtask plan whose subtask is given the request's own words at the head of its context.

    Why: a small planner may restate the request in narrower words ("write the totals to totals.md"
    becoming a criterion on "the total number of lines"), and an executor shown only the plan then does the
    narrower thing (the grand total instead of one total per file).  A single subtask is the
    whole task, so the request cannot lead it beyond its step; in a plan of several, each step would be
    drawn to do all of it, so those are left as planned.  Pure; the plan and a note, or the plan unchanged.
    """
    if len(plan.subtasks) != 1 or not request.strip():
        return plan, []
    (only,) = plan.subtasks
    if _key(request) in _key(only.intent) or request.strip() in only.context:
        return plan, []
    context = "\n".join(t for t in [REQUEST_LINE.format(request=request.strip()), only.context.strip()] if t)
    note = f"the only subtask ({only.intent!r}) is given the request's own words in its context"
    return plan.model_copy(update={"subtasks": [only.model_copy(update={"context": context})]}), [note]


def _key(text: str) -> str:
    """A criterion's matching key (prompting.criterion_key), a final period aside."""
    return criterion_key(text).rstrip(".")


def cap_plan(plan: PlanAnswer, limit: int = MAX_SUBTASKS) -> tuple[PlanAnswer, str | None]:
    """At most ``limit`` subtasks, earliest sequences first, and a note saying what was dropped."""
    if limit < 1:
        raise ValueError(f"cap limit must be at least 1, got {limit}")
    if len(plan.subtasks) <= limit:
        return plan, None
    kept = sorted(plan.subtasks, key=lambda s: s.sequence)[:limit]
    note = (f"the plan had {len(plan.subtasks)} subtasks; only the first {limit} by sequence were kept "
            f"({len(plan.subtasks) - limit} dropped)")
    return plan.model_copy(update={"subtasks": kept}), note


def dispatch(plan: PlanAnswer, task_id: str, round_no: int,
             reference: str = "") -> tuple[DispatchManifest, list[list[SubTask]]]:
    """SubTasks with fresh UUIDs, grouped by sequence in order, and the round's manifest."""
    if not plan.subtasks:
        raise ValueError("cannot dispatch a plan with no subtasks")
    if len(plan.subtasks) > MAX_SUBTASKS:
        raise ValueError(f"cannot dispatch {len(plan.subtasks)} subtasks (max {MAX_SUBTASKS}); "
                         "cap_plan first")
    if round_no < 1:
        raise ValueError(f"round numbers start at 1, got {round_no}")
    ordered = sorted(normalise_sequences(plan).subtasks, key=lambda s: s.sequence)
    whole = reference_criteria(reference) if len(ordered) == 1 else []  # one step is the whole request: checked by it
    groups = []
    for _, members in groupby(ordered, key=lambda s: s.sequence):
        groups.append([SubTask(subtask_id=str(uuid.uuid4()), parent_task_id=task_id, intent=s.intent,
                               context=s.context, sequence=s.sequence,
                               success_criteria=[*(c.model_copy() for c in s.success_criteria), *whole])
                       for s in members])
    manifest = DispatchManifest(task_id=task_id, round=round_no,
                                subtask_ids=[s.subtask_id for g in groups for s in g],
                                task_criteria=[*(c.model_copy() for c in plan.task_criteria),
                                               *reference_criteria(reference)],
                                reference=reference.strip())
    return manifest, groups


def reference_criteria(reference: str) -> list[Criterion]:
    """The task criterion the plan's reference run decides (none when there is no reference)."""
    command = reference.strip()
    return [Criterion(criterion=REFERENCE_CRITERION, mode="verifiable", check=command)] if command else []


def recorded_calls(calls: list[ToolCall], limit: int = EARLIER_CALLS_CHARS) -> str:
    """An earlier step's tool calls as code recorded them, one ``tool: input → output`` each, latest kept.

    Why: a small model's answer describes its work instead of holding it ("the count … is recorded in
    line_counts.txt" after ``wc -l *.txt`` printed the counts), and a later step shown only that sentence
    redoes the work until its attempts run out.  What the commands printed is what the later step needs,
    and code, not the model, has it.
    """
    lines = []
    for call in calls:
        shown = "refused by Law 1" if call.denied else cap(call.output.strip("\n"), CALL_CHARS) or "(printed nothing)"
        mark = "" if call.ok or call.denied else " [failed]"
        lines.append(f"{call.tool}: {call.input}{mark} →{chr(10) if chr(10) in shown else ' '}{shown}")
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if kept and used + len(line) > limit:
            break
        kept.insert(0, line)
        used += len(line) + 1
    left = len(lines) - len(kept)
    return "\n".join(([f"({left} earlier calls left out)"] if left else []) + kept)


def group_context(base: str, earlier: list[SubTaskOutcome]) -> str:
    """``base`` plus each earlier outcome's output and recorded tool calls, fenced as untrusted data, capped."""
    if not earlier:
        return base
    blocks = []
    for outcome in earlier:
        label = f"earlier step output: {outcome.intent or outcome.subtask_id}"
        text = cap(as_text(outcome.output) if outcome.output is not None else "", EARLIER_OUTPUT_CHARS)
        if outcome.calls:
            text += "\n\nIts tool calls (recorded by code):\n" + recorded_calls(outcome.calls)
        blocks.append(f"Earlier step ({outcome.status}): {outcome.intent or outcome.subtask_id}\n"
                      + fence_untrusted(label, text))
    header = "Outputs of the earlier steps this step builds on:"
    return "\n\n".join(part for part in (base.strip(), header, *blocks) if part)
