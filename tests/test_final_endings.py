"""Every way a run can end, as a table: what decided the criteria, what the votes said, and the directive, exit code
and final word that follow.  Only a result code checked is called accepted and exits 0 as accepted."""

from __future__ import annotations

import pytest

from artoo.config.contracts import (
    EXIT_CODES,
    FINAL_WORDS,
    CriterionVerdict,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
)
from artoo.config.settings import GGSParams
from artoo.tasks.checks.votes import Decision, ends_unsure
from artoo.tasks.ggs.controller import GGSController

TASK = "t"
PARAMS = GGSParams(accept_judged=False)
"""The default, explicit: the suite's conftest turns accept_judged on for stories about other things."""


def verdict(name: str, result: str = "pass", by: str = "check", mode: str = "verifiable") -> CriterionVerdict:
    return CriterionVerdict(criterion=name, verdict=result, by=by, mode=mode,
                            failure_class="logical" if result == "fail" else None)


def step(status: str, *verdicts: CriterionVerdict) -> SubTaskOutcome:
    return SubTaskOutcome(subtask_id="s1", parent_task_id=TASK, status=status, criteria_verdicts=list(verdicts))


def accepted(*verdicts: CriterionVerdict, task=()) -> OutcomeSummary:
    return OutcomeSummary(task_id=TASK, outcomes=[step("matched", *verdicts)], task_criteria_verdicts=list(task))


def rejected(*verdicts: CriterionVerdict) -> ReplanRequest:
    return ReplanRequest(task_id=TASK, failed_outcomes=[step("failed", *verdicts)])


CHECKED = verdict("out.txt holds 3")
JUDGED = verdict("out.txt holds 3", by="model")
TONE = verdict("the summary reads well", by="model", mode="plausible")
TONE_FAILS = verdict("the summary reads well", "fail", by="model", mode="plausible")
WRONG = verdict("out.txt holds 3", "fail")

ENDINGS = {
    # name: (message, elapsed share of the time budget, calls spent, the votes' outcome) → (directive, word)
    "accept: a check decided every verifiable criterion": (accepted(CHECKED, TONE), 0.0, 0, None, "accept"),
    "accept: the votes' quorum decided it (a check verdict)": (accepted(CHECKED), 0.0, 0, "accept", "accept"),
    "accept beside split votes: a check decided it": (accepted(CHECKED), 0.0, 0, "unsure", "accept"),
    "unverified: a model alone judged a verifiable criterion": (accepted(JUDGED, TONE), 0.0, 0, None, "unverified"),
    "unverified: the task's verifiable criterion only R4b judged": (accepted(CHECKED, task=[JUDGED]), 0.0, 0, None,
                                                                    "unverified"),
    "unverified: no criterion code could check": (accepted(TONE), 0.0, 0, None, "unverified"),
    "success: within δ, every verifiable criterion checked": (rejected(CHECKED, CHECKED, CHECKED, TONE_FAILS), 0.0, 0,
                                                              None, "success"),
    "unverified: within δ, a verifiable criterion judged": (rejected(JUDGED, CHECKED, CHECKED, TONE_FAILS), 0.0, 0,
                                                            None, "unverified"),
    "unsure: votes split, the GGS would only have accepted on a model's word": (accepted(JUDGED), 0.0, 0, "unsure",
                                                                                "unsure"),
    "unsure: votes split and the round failed": (rejected(WRONG), 0.0, 0, "unsure", "unsure"),
    "abandon: the time budget spent": (rejected(WRONG), 1.0, 0, None, "abandon"),
    "abandon: the call budget spent": (rejected(WRONG), 0.0, PARAMS.max_calls, None, "abandon"),
    "abandon even when a check passed: the time budget spent": (accepted(CHECKED), 1.0, 0, None, "abandon"),
}


def ending(message, elapsed_share: float, spent: float, votes: str | None) -> str:
    """The directive a run ends with, as the medium loop reaches it: the GGS's final, unless the votes split."""
    final = GGSController(TASK, "count the lines", PARAMS).evaluate(message, elapsed_share * PARAMS.time_budget_ms,
                                                                    spent=spent).final
    decision = Decision(outcome=votes, reason="votes") if votes else None
    if ends_unsure(decision, final.directive if final is not None else None):
        return "unsure"
    assert final is not None, "the GGS replans: the task has not ended"
    return final.directive


@pytest.mark.parametrize("name", list(ENDINGS))
def test_every_ending_has_its_directive_exit_code_and_word(name):
    message, share, spent, votes, expected = ENDINGS[name]
    directive = ending(message, share, spent, votes)
    assert directive == expected
    assert (EXIT_CODES[directive] == 0) == (directive in ("accept", "success"))
    assert ("accept" in FINAL_WORDS[directive]) == (directive == "accept")


def test_the_table_covers_every_directive_and_each_has_its_own_code():
    assert {row[-1] for row in ENDINGS.values()} == set(EXIT_CODES) == set(FINAL_WORDS)
    assert len({EXIT_CODES[d] for d in ("abandon", "unsure", "unverified")}) == 3  # each its own exit code


def test_a_model_trusted_as_judge_may_accept_what_it_judged():
    params = GGSParams(accept_judged=True)
    decision = GGSController(TASK, "count the lines", params).evaluate(accepted(JUDGED, TONE), 0.0)
    assert decision.final.directive == "accept" and "verified: " not in decision.megrams[0].content


def test_an_unverified_summary_names_what_a_model_judged_and_memory_keeps_it_unverified():
    decision = GGSController(TASK, "count the lines", PARAMS).evaluate(accepted(JUDGED, TONE), 0.0)
    assert decision.final.directive == "unverified" and decision.state == "accept"
    assert decision.final.summary.startswith("Done, unverified") and "out.txt holds 3" in decision.final.summary
    assert "verified: " not in decision.megrams[0].content  # a model-judged episode: no verified line
    checked = GGSController(TASK, "count the lines", PARAMS).evaluate(accepted(CHECKED), 0.0)
    assert checked.final.directive == "accept" and "verified: " in checked.megrams[0].content
