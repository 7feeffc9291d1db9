"""Every real R4a answer in tests/transcripts/ lines up with the criteria its prompt listed.

Qwen2.5-Coder-1.5B as R4a named criteria three ways: copied with the prompt's number and mode tag
(``1. [plausible] The file …``), as asked, and by number alone (``"criterion": "1"``, run t4, lines 24
and 26 of llama-server-count-lines-4.jsonl).  Before alignment learnt numbers, the last kind matched no
criterion and every judged criterion failed as "validator gave no verdict".  The answers are replayed
through the scripted server to the real client, then aligned as the fast loop aligns them.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from artoo.config.contracts import Criterion
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer, route_name
from artoo.tasks.llm.testing.transcript import entry_of, read_transcript
from artoo.tasks.roles.prompting import align_verdicts

HERE = Path(__file__).parent / "transcripts"
_LISTED = re.compile(r"^\d+\. \[(verifiable|plausible)\] (.+)$")


def _verdict_answers() -> list[tuple[str, int, dict]]:
    found = []
    for path in sorted(HERE.glob("*.jsonl")):
        for line, record in enumerate(read_transcript(path), 1):
            request = record.get("request") or {}
            if record.get("status") == 200 and route_name(request, {"AgentVerdict"}) == "AgentVerdict":
                found.append((path.name, line, record))
    return found


ANSWERS = _verdict_answers()


def _criteria(prompt: str) -> list[Criterion]:
    """The numbered criteria of R4a's prompt, as the plan gave them."""
    block = prompt.split("Success criteria:\n", 1)[1].split("\n\n", 1)[0]
    return [Criterion(criterion=m.group(2), mode=m.group(1)) for m in map(_LISTED.match, block.splitlines()) if m]


def test_the_transcripts_hold_verdicts_that_name_criteria_by_number():
    assert ("llama-server-count-lines-4.jsonl", 24) in {(name, line) for name, line, _ in ANSWERS}


@pytest.mark.parametrize(("name", "line", "record"), ANSWERS, ids=[f"{n}:{line}" for n, line, _ in ANSWERS])
def test_every_real_verdict_lines_up_with_its_criteria(name, line, record, monkeypatch, artoo_env):
    entry = entry_of(record)
    entry.repeat = True
    with ScriptedLLMServer(Scenario(answers={"AgentVerdict": [entry]})) as server:
        for key, value in (("OPENAI_BASE_URL", server.base_url), ("OPENAI_MODEL", "qwen"),
                           ("OPENAI_API_KEY", "local"), ("ARTOO_LLM__CONTEXT_TOKENS", "32768")):
            monkeypatch.setenv(key, value)
        messages = record["request"]["messages"]
        answer = asyncio.run(OpenAICompatLLM(load_settings(), max_retries=0).structured("R4a", "AgentVerdict",
                                                                                       messages))
    # the criteria are in the first user message: a re-ask (t34) ends with code's objection
    criteria = _criteria(next(m for m in messages if m["role"] == "user")["content"])
    aligned = align_verdicts(criteria, answer.verdicts)
    assert criteria and len(answer.verdicts) == len(criteria)
    assert [v.evidence for v in aligned if v.evidence == "validator gave no verdict"] == []
    assert [v.verdict for v in aligned] == [v.verdict for v in answer.verdicts]
