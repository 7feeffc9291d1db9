"""A validator asked once more when code turns its pass (``llm.rejudge_ungrounded``): re-ask before failing.

The answer code turns is a real one: run t12 of #25 (llama-server, Qwen2.5-Coder-1.5B), whose totals.md was
right (``wc -l *.txt > totals.md``), and whose R4b passed the task criterion quoting the executor's sentence
"The total number of lines is written to totals.md": by today's rules a claim, so code turns it.  Asked once
more with code's reason, the validator can quote the file it was shown; without the re-ask the right work
would be redone in another round.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from artoo.config.contracts import (
    Criterion,
    CriterionVerdict,
    DispatchManifest,
    ExecutionResult,
    SubTask,
    SubTaskOutcome,
)
from artoo.config.protocol import AgentVerdict, TaskVerdict
from artoo.tasks.llm.testing.fake import ScriptedLLM
from artoo.tasks.llm.testing.transcript import read_transcript
from artoo.tasks.roles import agent_validator, grounding, meta_validator

T12 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-7.jsonl"
CRITERION = "totals.md holds the total number of lines of all .txt files in the working folder"
CALLS = ["glob: *.txt → /w/a.txt\n/w/b.txt\n/w/c.txt",
         "shell: wc -l *.txt > totals.md → [exit code 0]\n[changes committed]\ncreated /w/totals.md (36 B)"]
FOUND = ["totals.md: exists, 36 bytes, 4 lines:\n 3 a.txt\n 5 b.txt\n 1 c.txt\n 9 total\n"]
CLAIM = "The total number of lines is written to totals.md"


def t12_r4b() -> TaskVerdict:
    """R4b's real answer in t12 (the last exchange of the run)."""
    last = [r for r in read_transcript(T12) if r.get("status") == 200][-1]
    return TaskVerdict.model_validate_json(json.loads(last["response"])["choices"][0]["message"]["content"])


MANIFEST = DispatchManifest(task_id="count_lines_txt_files", round=1, subtask_ids=["s1"],
                            task_criteria=[Criterion(criterion=CRITERION)])
OUTCOME = SubTaskOutcome(subtask_id="s1", parent_task_id="count_lines_txt_files", status="matched", output=CLAIM,
                         intent="Find all .txt files in the working folder and count their lines", tool_calls=CALLS)


def test_t12s_real_r4b_pass_is_turned_and_the_objection_names_why():
    answer = t12_r4b()
    assert answer.verdicts[0].evidence == CLAIM  # the model quoted the executor, not the file it was shown
    verdicts, turned = meta_validator.grounded(meta_validator.task_verdicts(MANIFEST, answer), [OUTCOME], [],
                                               FOUND, [])
    assert turned == [CRITERION] and verdicts[0].verdict == "fail"
    said = grounding.objection(verdicts, turned, FOUND)
    assert f"- {CRITERION}: {grounding.CLAIMED}" in said
    assert said.startswith("An earlier answer to this was checked by code") and "Judge every criterion again" in said
    # the file right under its criterion (p2 of #25: re-asked with the reason alone, R4b failed a right file)
    assert "totals.md as code read it after the work: '3 a.txt\\n 5 b.txt\\n 1 c.txt\\n 9 total'" in said
    assert "as code read it after the work" not in grounding.objection(verdicts, turned)  # nothing read, nothing said


@pytest.mark.parametrize("turned, listed", [
    (["a"], ["a"]),
    (["a", "b"], ["a", "b"]),
    ([], []),
])
def test_the_objection_lists_only_the_turned_criteria(turned, listed):
    verdicts = [CriterionVerdict(criterion=c, verdict="fail" if c in turned else "pass", evidence=f"why {c}")
                for c in ("a", "b", "c")]
    said = grounding.objection(verdicts, turned)
    assert [line[2:].split(":")[0] for line in said.splitlines() if line.startswith("- ")] == listed


def test_r4b_asked_again_gets_the_same_prompt_with_the_objection_at_its_end_and_not_its_own_answer():
    """Given its answer as the assistant's turn, the real model sent it back word for word (t34's R4a, t36's R4b)."""
    again = TaskVerdict(verdicts=[], summary="s")
    llm = ScriptedLLM({"TaskVerdict": [again]})
    got = asyncio.run(meta_validator.judge_task(llm, MANIFEST, [OUTCOME], [], FOUND, objection="OBJECTION"))
    sent = llm.calls[0]["messages"]
    bare = meta_validator.messages_for(MANIFEST, [OUTCOME], [], FOUND)
    assert got == again and [m["role"] for m in sent] == ["system", "user"] and sent[0] == bare[0]
    assert sent[1]["content"] == bare[1]["content"] + "\n\nOBJECTION"
    # t37: shown the executor's sentence, R4b quoted it; it is never shown now, the file always is
    assert CLAIM not in bare[1]["content"] and "9 total" in bare[1]["content"]


def test_r4a_asked_again_gets_the_objection_at_the_end_and_without_one_the_prompt_is_unchanged():
    subtask = SubTask(subtask_id="s1", parent_task_id="t", intent="count the lines into totals.md",
                      success_criteria=[Criterion(criterion="totals.md holds the counts")], sequence=1)
    result = ExecutionResult(subtask_id="s1", status="completed", output=CLAIM, tool_calls=CALLS)
    first = AgentVerdict(verdicts=[], what_was_wrong=None, what_to_do=None)
    llm = ScriptedLLM({"AgentVerdict": [first, first]})
    asyncio.run(agent_validator.judge(llm, subtask, result, FOUND))
    asyncio.run(agent_validator.judge(llm, subtask, result, FOUND, objection="OBJECTION"))
    plain, again = (c["messages"] for c in llm.calls)
    assert plain == agent_validator.messages_for(subtask, result, FOUND) and CLAIM not in plain[1]["content"]
    assert len(again) == 2 and again[1]["content"] == plain[1]["content"] + "\n\nOBJECTION"
    assert "wc -l *.txt > totals.md" in again[1]["content"]
