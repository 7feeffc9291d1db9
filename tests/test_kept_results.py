"""Results validated in earlier rounds: kept by the medium loop, merged and shown to R4b after a replan.

Round 1 finds the three largest logs (matched) and botches the summary; round 2 redoes only the
summary.  R4b judges the task on both, the user gets both, each earlier one labelled with its round.
"""

from __future__ import annotations

import uuid

import pytest

from artoo.config.contracts import (
    Criterion,
    CriterionVerdict,
    DispatchManifest,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
)
from artoo.tasks.roles.meta_validator import (
    KEPT_HEADING,
    KeptResult,
    decide,
    keep_results,
    merge_outputs,
    messages_for,
    needs_llm,
)
from artoo.tasks.roles.prompting import FENCE_OPEN

MANIFEST = DispatchManifest(task_id="logs", round=2, subtask_ids=[],
                            task_criteria=[Criterion(criterion="the three largest logs under srv/ are named")])


def oc(intent: str, output: str = "x", status: str = "matched") -> SubTaskOutcome:
    return SubTaskOutcome(subtask_id=str(uuid.uuid4()), parent_task_id="logs", status=status, output=output,
                          intent=intent, failure_class="environmental" if status == "failed" else None,
                          tool_calls=[f"shell: {intent} → {output}"])


FOUND = oc("find the three largest logs", "srv/b.log\nsrv/c.log\nsrv/d.log")
WROTE = oc("write summary.md", "summary.md written")
COUNTED = oc("count the errors", '{"errors": 3}')


def kr(round_no: int, outcome: SubTaskOutcome) -> KeptResult:
    return KeptResult(round=round_no, outcome=outcome)


@pytest.mark.parametrize("kept, round_no, outcomes, expected", [
    # round 1: its matched results are kept, its failures are not
    ([], 1, [FOUND, oc("write summary.md", "denied", "failed")], [(1, FOUND)]),
    # a later round's matched subtask with the same intent (case and spacing folded) replaces the kept one
    ([kr(1, FOUND)], 2, [oc("Find  the three largest LOGS", "srv/b.log")], [(2, "Find  the three largest LOGS")]),
    # a different step is appended after what was kept
    ([kr(1, FOUND)], 2, [WROTE], [(1, FOUND), (2, WROTE)]),
    # a failed redo replaces nothing: what round 1 validated stays achieved
    ([kr(1, FOUND)], 2, [oc("find the three largest logs", "no such dir", "failed")], [(1, FOUND)]),
    # several rounds: only the redone step moves to the newer round
    ([kr(1, FOUND), kr(2, COUNTED)], 3, [oc("count the errors", "4")], [(1, FOUND), (3, "count the errors")]),
    ([kr(1, FOUND)], 2, [], [(1, FOUND)]),  # a round whose plan was rejected ran nothing
])
def test_keep_results(kept, round_no, outcomes, expected):
    got = keep_results(kept, round_no, outcomes)
    assert [(k.round, k.outcome if isinstance(want, SubTaskOutcome) else k.outcome.intent)
            for k, (_, want) in zip(got, expected, strict=True)] == expected


@pytest.mark.parametrize("kept, outcomes, expected", [
    # round 1: nothing kept, the merge is this round's matched outputs
    ([], [FOUND, oc("write summary.md", "denied", "failed")],
     {"find the three largest logs": "srv/b.log\nsrv/c.log\nsrv/d.log"}),
    # kept and not redone: first, labelled with the round that validated it
    ([kr(1, FOUND)], [WROTE], {"find the three largest logs (validated in round 1)": "srv/b.log\nsrv/c.log\nsrv/d.log",
                               "write summary.md": "summary.md written"}),
    # redone this round (matched): only the redo, unlabelled
    ([kr(1, FOUND)], [oc("find the three largest logs", "srv/z.log"), WROTE],
     {"find the three largest logs": "srv/z.log", "write summary.md": "summary.md written"}),
    # redone and failed: the kept result stays, labelled (what was achieved so far)
    ([kr(1, FOUND)], [oc("find the three largest logs", "gone", "failed")],
     {"find the three largest logs (validated in round 1)": "srv/b.log\nsrv/c.log\nsrv/d.log"}),
    # JSON text is data, as for this round's outputs; two kept from two rounds keep their order
    ([kr(1, FOUND), kr(2, COUNTED)], [WROTE],
     {"find the three largest logs (validated in round 1)": "srv/b.log\nsrv/c.log\nsrv/d.log",
      "count the errors (validated in round 2)": {"errors": 3}, "write summary.md": "summary.md written"}),
])
def test_merge_outputs_with_kept_results(kept, outcomes, expected):
    merged = merge_outputs(outcomes, kept)
    assert merged == expected and list(merged) == list(expected)


def test_r4b_prompt_shows_the_kept_results_in_their_own_fenced_section():
    kept = [kr(1, FOUND), kr(1, oc("count the errors", "3"))]
    outcomes = [WROTE, oc("count the errors", "4")]  # count redone this round: not in the kept section
    prompt = messages_for(MANIFEST, outcomes, kept)[1]["content"]
    section = prompt.split(f"{KEPT_HEADING}:\n", 1)[1]
    assert section.startswith(FENCE_OPEN)
    assert "[validated in round 1] find the three largest logs" in section
    assert "shell: find the three largest logs → srv/b.log" in section
    assert "result:" not in section  # the executor's own sentence is never shown, only the recorded calls
    assert "count the errors" not in section and "write summary.md" not in section


@pytest.mark.parametrize("kept, outcomes", [
    ([], [WROTE]),  # round 1
    ([kr(1, FOUND)], [oc("find the three largest logs", "srv/b.log"), WROTE]),  # everything kept was redone
])
def test_r4b_prompt_has_no_kept_section_when_nothing_is_carried(kept, outcomes):
    prompt = messages_for(MANIFEST, outcomes, kept)[1]["content"]
    assert KEPT_HEADING not in prompt


def test_kept_results_never_make_a_failed_round_look_matched():
    kept = [kr(1, FOUND)]
    outcomes = [oc("write summary.md", "permission denied", "failed")]
    assert needs_llm(outcomes) is False  # R4b's gate reads this round only
    decision = decide("logs", MANIFEST, outcomes, merge_outputs(outcomes, kept), None, "")
    assert isinstance(decision, ReplanRequest)
    assert decision.matched_outcomes == [] and [o.status for o in decision.failed_outcomes] == ["failed"]
    assert decision.merged_output == {"find the three largest logs (validated in round 1)":
                                      "srv/b.log\nsrv/c.log\nsrv/d.log"}  # achieved so far, for an abandon


def test_an_accepted_round_delivers_the_kept_results_with_its_own():
    kept, outcomes = [kr(1, FOUND)], [WROTE]
    passed = [CriterionVerdict(criterion="the three largest logs under srv/ are named", verdict="pass",
                               evidence="kept round-1 result names them")]
    decision = decide("logs", MANIFEST, outcomes, merge_outputs(outcomes, kept), passed, "done")
    assert isinstance(decision, OutcomeSummary)
    assert decision.outcomes == outcomes  # D counts this round's subtasks only
    assert list(decision.merged_output) == ["find the three largest logs (validated in round 1)", "write summary.md"]
