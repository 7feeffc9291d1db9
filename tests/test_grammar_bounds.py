"""The validators' free text bounded by a llama.cpp grammar, and the evidence written before the verdict.

Why (#25, runs t7 and t9): Qwen2.5-Coder-1.5B as R4a repeated one sentence inside ``evidence`` until
``max_tokens`` (1,024 tokens, 250–300 s a call here), after committing to "fail" on a correct result.
llama.cpp's grammar takes ``maxLength``; OpenAI's strict mode is never sent it.  The client stories go
over real HTTP to the scripted server, which answers ``GET /props`` like llama-server when given ``n_ctx``.
"""

from __future__ import annotations

import asyncio

import pytest

from artoo.config.protocol import SCHEMAS
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.output.modes import STRING_BOUNDS, bounded, strict_schema, structured_request
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.requests import forget

VERDICT = {"verdicts": [{"criterion": "1", "evidence": "lines.txt: 3 a.txt, 5 b.txt, 1 c.txt, 9 total",
                         "verdict": "pass", "failure_class": None}], "what_was_wrong": None, "what_to_do": None}


@pytest.fixture(autouse=True)
def _fresh_windows():
    forget()
    yield
    forget()


def _lengths(schema: dict) -> dict[str, list[int | None]]:
    """Each property's maxLength per string option, over the schema and its $defs."""
    found: dict[str, list[int | None]] = {}
    for node in [schema, *schema.get("$defs", {}).values()]:
        for name, prop in node.get("properties", {}).items():
            options = [o for o in [prop, *prop.get("anyOf", [])] if o.get("type") == "string"]
            found.setdefault(name, []).extend(o.get("maxLength") for o in options)
    return found


@pytest.mark.parametrize("name, expected", [
    ("AgentVerdict", {"criterion": [None], "evidence": [300], "verdict": [None], "failure_class": [None],
                      "what_was_wrong": [400], "what_to_do": [400]}),
    ("TaskVerdict", {"criterion": [None], "evidence": [300], "verdict": [None], "failure_class": [None],
                     "summary": [800]}),
    ("Plan", {"criterion": [None], "intent": [None], "context": [None]}),  # a plan's text is never cut
])
def test_bounds_fall_on_the_validators_free_text_only(name, expected):
    lengths = _lengths(bounded(strict_schema(name)))
    assert {k: v for k, v in lengths.items() if k in expected} == expected
    assert all(v == [None] * len(v) for v in _lengths(strict_schema(name)).values())  # unbounded by default
    assert set(STRING_BOUNDS) <= {"evidence", "what_was_wrong", "what_to_do", "summary"}


def test_the_evidence_comes_before_the_verdict_in_what_the_model_is_held_to():
    props = list(strict_schema("AgentVerdict")["$defs"]["VerdictAnswer"]["properties"])
    assert props == ["criterion", "evidence", "verdict", "failure_class"]
    assert SCHEMAS["AgentVerdict"].model_validate(VERDICT).verdicts[0].verdict == "pass"


@pytest.mark.parametrize("mode", ["json_schema", "json_object_schema"])
def test_a_structured_request_is_bounded_only_when_the_server_has_the_grammar(mode):
    def schema_of(grammar: bool) -> dict:
        fmt = structured_request(mode, "AgentVerdict", [], grammar)["response_format"]
        return fmt["json_schema"]["schema"] if mode == "json_schema" else fmt["schema"]

    assert _lengths(schema_of(True))["evidence"] == [300]
    assert _lengths(schema_of(False))["evidence"] == [None]


@pytest.mark.parametrize("n_ctx, limit", [(8192, 300), (None, None)])  # llama-server's /props; a server without
def test_the_client_bounds_a_verdict_only_for_a_server_that_answers_props(tmp_path, n_ctx, limit):
    scenario = {"n_ctx": n_ctx, "answers": {"AgentVerdict": [{"answer": VERDICT}]}}
    with ScriptedLLMServer(scenario) as srv:
        settings = load_settings(home=tmp_path, brain_base_url=srv.base_url, brain_model="qwen",
                                 tool_base_url=srv.base_url, tool_model="qwen", openai_base_url=None,
                                 openai_model=None, llm_timeout_s=10)
        llm = OpenAICompatLLM(settings, max_retries=0)

        async def judge():
            try:
                return await llm.structured("R4a", "AgentVerdict", [{"role": "user", "content": "judge"}])
            finally:
                await llm.aclose()

        answer = asyncio.run(judge())
        (sent,) = [e["body"]["response_format"]["json_schema"]["schema"] for e in srv.requests]
    assert answer == SCHEMAS["AgentVerdict"].model_validate(VERDICT)
    assert _lengths(sent)["evidence"] == [limit]
