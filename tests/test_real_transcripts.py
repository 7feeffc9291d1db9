"""What a real model really wrote, replayed: every answer in tests/transcripts/ must reach the roles valid.

The transcripts are the raw HTTP exchanges between artoo and real servers running Qwen2.5-Coder-1.5B-Instruct
(Q4 GGUF, sha256 cc324af0…933bb046) on this machine, recorded by ``bench/record_proxy.py`` (README of
tests/transcripts/ says which run made each).  Each recorded answer is served again, byte for byte, by
the scripted server to the real client with the request's own messages, so CI checks the negotiation
and the repairs against real output without running a model.  A recorded answer that no repair can
save is listed in UNREPAIRABLE with the reason (it must be re-asked once, never taken); every other one
must come back valid.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from artoo.config.errors import LLMOutputError
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer, route_name
from artoo.tasks.llm.testing.transcript import entry_of, read_transcript, scenario_from_transcript

HERE = Path(__file__).parent / "transcripts"
TRANSCRIPTS = sorted(HERE.glob("*.jsonl"))
ROLE_OF = {"TaskSpec": "R1", "Plan": "R2", "AgentVerdict": "R4a", "TaskVerdict": "R4b", "FailureReport": "R2",
           "Consolidation": "dreamer", "tools": "R3"}
UNREPAIRABLE: dict[tuple[str, int], str] = {
    ("llama-server-count-lines-3.jsonl", 12): "an empty tool_calls list in the content protocol: no call and no "
    "result to repair into one, so the client re-asks for the ExecutionResult (the recorded re-ask follows it)",
    ("llama-server-count-lines-4.jsonl", 6): "the same empty tool_calls list, after write_file (run t4): re-asked; "
    "the recorded re-ask (line 7) answered a valid failed",
}
"""(transcript, line) → why that recorded answer cannot be made valid (it is then re-asked in the run)."""


def _answers() -> list[tuple[Path, int, dict]]:
    """Every answered chat exchange of every transcript (refusals are replayed by the negotiation tests)."""
    found = []
    for path in TRANSCRIPTS:
        for line, record in enumerate(read_transcript(path), 1):
            if str(record.get("path", "")).endswith("/chat/completions") and record.get("status") == 200:
                found.append((path, line, record))
    return found


ANSWERS = _answers()


def test_the_transcripts_hold_real_answers_of_every_kind() -> None:
    """The fixtures are there and cover the planner, the executor and a validator (a guard on the data)."""
    kinds = {route_name(record["request"], set(ROLE_OF)) for _, _, record in ANSWERS}
    assert {"TaskSpec", "Plan", "tools", "AgentVerdict"} <= kinds, kinds


@pytest.mark.parametrize(("path", "line", "record"), ANSWERS,
                         ids=[f"{p.stem}:{n}" for p, n, _ in ANSWERS])
def test_every_recorded_answer_reaches_the_role_valid(path: Path, line: int, record: dict, artoo_env: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    request = record["request"]
    name = route_name(request, set(ROLE_OF))
    entry = entry_of(record)
    entry.repeat = True  # a re-ask would get the same answer: the repair must save it, not a second sample
    with ScriptedLLMServer(Scenario(answers={name: [entry]})) as server:
        for key, value in (("OPENAI_BASE_URL", server.base_url), ("OPENAI_MODEL", "qwen"),
                           ("OPENAI_API_KEY", "local"), ("ARTOO_LLM__CONTEXT_TOKENS", "32768")):
            monkeypatch.setenv(key, value)
        llm = OpenAICompatLLM(load_settings(), max_retries=0)
        messages = request["messages"]
        if (path.name, line) in UNREPAIRABLE:  # never taken as it is: re-asked once, then an honest error
            ask = (llm.tool_turn("R3", _wire_messages(messages), request.get("tools") or []) if name == "tools"
                   else llm.structured(ROLE_OF[name], name, messages))
            with pytest.raises(LLMOutputError):
                asyncio.run(ask)
            assert [r["status"] for r in server.requests] == [200, 200]
            return
        if name == "tools":
            turn = asyncio.run(llm.tool_turn("R3", _wire_messages(messages), request.get("tools") or []))
            assert turn.tool_calls or turn.final is not None
            if turn.tool_calls:
                assert all(c.name and "_invalid" not in c.arguments for c in turn.tool_calls)
        else:
            answer = asyncio.run(llm.structured(ROLE_OF[name], name, messages))
            assert answer is not None
        asked = [r for r in server.requests if r["status"] == 200]
        assert len(asked) == 1, f"re-asked: the recorded answer was not repaired ({llm.records[-1].error})"


def _wire_messages(messages: list[dict]) -> list[dict]:
    """A recorded executor conversation as the executor keeps it (the wire format is sent unchanged)."""
    return json.loads(json.dumps(messages))


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_a_transcript_becomes_a_replayable_scenario(path: Path) -> None:
    scenario = scenario_from_transcript(path)
    served = sum(len(entries) for entries in scenario.answers.values())
    chats = sum(1 for r in read_transcript(path) if str(r.get("path", "")).endswith("/chat/completions"))
    assert served == chats and scenario.answers
