"""Repair before re-ask: each repair with the raw answer that needs it, and the answers no repair saves.

The raw answers are the shapes real models write: issue #25's Qwen2.5-Coder-1.5B on llama.cpp
(a 0-based plan, an object as ``output``), ```json fences (vectorize-io/hindsight#645), a list of
strings for a string field (growgraph/ontocast#50), enum values in another case
(langchain4j/langchain4j#4045), extra keys and thinking first (ollama/ollama#15514), a
``<tool_call>`` in the content (QwenLM/Qwen3#1072), a JSON object cut off (QwenLM/Qwen3.8#7).
Then the client over real HTTP (the scripted server, the real ``openai`` client): repaired answers are
not asked again, only what no repair fixes is; the last test runs ``artoo run --json`` and reads the
decision log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from artoo.config.protocol import AgentVerdict, Consolidation, ExecutionAnswer, PlanAnswer, TaskVerdict
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.output.extract import brace_pairs, object_spans
from artoo.tasks.llm.output.repair import InvalidAnswer, as_string, enum_match, plan_sequences, repair_answer
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, crit, scenario, spec, task_verdict, verdict

TOTALS = "totals.md lists the line count of every .txt file"


def _plan(*sequences: object) -> dict:
    """A plan whose subtasks carry these sequences (the key is left out for the marker ``...``)."""
    subtasks = [{"intent": f"step {i}", "context": "in the current folder",
                 "success_criteria": [crit(TOTALS)], **({} if s is ... else {"sequence": s})}
                for i, s in enumerate(sequences)]
    return {"task_criteria": [crit(TOTALS)], "subtasks": subtasks}


PLAN_0 = json.dumps(_plan(0, 1))
RESULT = '{"status": "completed", "output": "a.txt 3"}'
SHELL = {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
VERDICT = '{"criterion": "c", "verdict": "pass", "failure_class": null, "evidence": "wc printed 3"}'

REPAIRED = [
    # issue #25: the planner counted from 0 and artoo refused the plan twice per round
    ("sequence_base", PlanAnswer, PLAN_0, ["sequence_base"], lambda a: [s.sequence for s in a.subtasks] == [1, 2]),
    ("negative_sequences", PlanAnswer, json.dumps(_plan(-1, -1, 0)), ["sequence_base"],
     lambda a: [s.sequence for s in a.subtasks] == [1, 1, 2]),
    ("missing_sequences", PlanAnswer, json.dumps(_plan(..., ..., ...)), ["missing_sequence"],
     lambda a: [s.sequence for s in a.subtasks] == [1, 2, 3]),
    # issue #25: R3 put an object in output, twice, and the attempt ended with no result
    ("object_output", ExecutionAnswer, '{"status": "completed", "output": {"a.txt": 3, "b.txt": 5}}',
     ["to_string"], lambda a: a.output == '{"a.txt":3,"b.txt":5}'),
    ("number_output", ExecutionAnswer, '{"status": "completed", "output": 42}', ["to_string"],
     lambda a: a.output == "42"),
    ("list_of_strings", TaskVerdict, '{"verdicts": [' + VERDICT + '], "summary": ["Counted 3 files.", "Wrote '
     'totals.md."]}', ["to_string"], lambda a: a.summary == "Counted 3 files.\nWrote totals.md."),
    ("fenced_json", Consolidation, '```json\n{"kind": "constraint", "content": "c"}\n```', ["fenced_json"],
     lambda a: a.content == "c"),
    ("fence_without_newlines", Consolidation, '  ```JSON{"kind": "constraint", "content": "c"}```  ',
     ["fenced_json"], lambda a: a.content == "c"),
    ("prefix_and_fence", PlanAnswer, f"Here is the plan:\n```json\n{json.dumps(_plan(1))}\n```\n",
     ["fenced_json", "prefixed_json"], lambda a: len(a.subtasks) == 1),
    ("trailing_prose", ExecutionAnswer, RESULT + "\n\nLet me know if you need anything else!", ["trailing_prose"],
     lambda a: a.output == "a.txt 3"),
    ("think_block", ExecutionAnswer, '<think>The user wants {counts}. I ran wc.</think>\n' + RESULT,
     ["think_block"], lambda a: a.status == "completed"),
    ("braces_inside_strings", ExecutionAnswer,
     '{"status": "completed", "output": "ran awk \'{print $1}\' and echo \\"}\\""} (done)', ["trailing_prose"],
     lambda a: a.output == "ran awk '{print $1}' and echo \"}\""),
    ("several_objects", ExecutionAnswer, 'Draft: {"status": "pending"}\nFinal: ' + RESULT,
     ["prefixed_json", "several_objects"], lambda a: a.output == "a.txt 3"),
    ("enum_case", ExecutionAnswer, '{"status": "Completed", "output": "a.txt 3"}', ["enum_case"],
     lambda a: a.status == "completed"),
    ("enum_spaces_and_separator", Consolidation, '{"kind": "Best Practice", "content": "c"}', ["enum_case"],
     lambda a: a.kind == "best_practice"),
    ("extra_fields", ExecutionAnswer, '{"status": "completed", "output": "a.txt 3", "reasoning": "wc -l", '
     '"confidence": 0.9}', ["extra_field", "extra_field"], lambda a: a.output == "a.txt 3"),
    ("field_in_another_case", ExecutionAnswer, '{"Status": "completed", "output": "a.txt 3"}', ["field_case"],
     lambda a: a.status == "completed"),
    ("one_object_for_a_list", AgentVerdict, '{"verdicts": ' + VERDICT + ', "what_was_wrong": null, '
     '"what_to_do": null}', ["one_item_list"], lambda a: len(a.verdicts) == 1),
    ("omitted_nullable", AgentVerdict, '{"verdicts": [{"criterion": "c", "verdict": "PASS ", "evidence": "e"}]}',
     ["missing_null", "missing_null", "enum_case", "missing_null"],
     lambda a: (a.verdicts[0].verdict, a.verdicts[0].failure_class, a.what_to_do) == ("pass", None, None)),
]


@pytest.mark.parametrize("name, model, raw, kinds, holds", REPAIRED, ids=[row[0] for row in REPAIRED])
def test_each_repair_with_the_answer_that_needs_it(name, model, raw, kinds, holds):
    repaired = repair_answer(raw, None, model)
    assert sorted(r.kind for r in repaired.repairs) == sorted(kinds)
    assert all(r.detail for r in repaired.repairs)
    assert holds(repaired.answer), repaired.answer


@pytest.mark.parametrize("raw", [RESULT, f"  {RESULT}\n"])
def test_a_valid_answer_needs_no_repair(raw):
    assert repair_answer(raw, None, ExecutionAnswer).repairs == []


UNREPAIRABLE = [
    ("prose_only", ExecutionAnswer, "I counted the lines: a.txt has 3.", None,
     "no JSON object in the answer; it began: 'I counted the lines: a.txt has 3.'"),
    ("cut_off", Consolidation, '```json\n{\n  "kind": "constraint"\n', None, "not valid JSON"),
    ("cut_off_after_whole_subtasks", PlanAnswer, json.dumps(_plan(1, 2))[:-30], None, "not valid JSON"),
    ("top_level_list", Consolidation, "[1, 2]", None, "expected a JSON object, got list"),
    ("string_for_a_list", AgentVerdict, '{"verdicts": "all passed", "what_was_wrong": null, "what_to_do": null}',
     None, "verdicts: Input should be a valid list"),
    ("null_for_a_string", ExecutionAnswer, '{"status": "completed", "output": null}', None,
     "output: Input should be a valid string"),
    ("unknown_enum", ExecutionAnswer, '{"status": "done", "output": "x"}', None,
     "status: Input should be 'completed', 'uncertain' or 'failed'"),
    ("tool_call_in_content", ExecutionAnswer,
     '<tool_call>\n{"name": "shell", "arguments": {"command": "wc -l *.txt"}}\n</tool_call>', None,
     "status: Field required; output: Field required"),
    ("sequence_not_a_number", PlanAnswer, json.dumps(_plan("first", 2)), None,
     "subtasks.0.sequence: Input should be a valid integer"),
    ("none_of_several", ExecutionAnswer, '{"status": "done"} {"output": "x"}', None,
     "none of the 2 JSON objects in the answer is valid; the first does not match the schema"),
    ("refusal", ExecutionAnswer, None, "I can't help with that", "the model refused: I can't help with that"),
    ("empty", ExecutionAnswer, "  \n", None, "the answer was empty"),
]


@pytest.mark.parametrize("name, model, raw, refusal, message", UNREPAIRABLE, ids=[row[0] for row in UNREPAIRABLE])
def test_an_answer_no_repair_saves_says_what_is_wrong(name, model, raw, refusal, message):
    with pytest.raises(InvalidAnswer) as err:
        repair_answer(raw, refusal, model)
    assert message in str(err.value)


@pytest.mark.parametrize("value, allowed, expected", [
    ("PASS ", ["pass", "fail"], "pass"),
    ("Best-Practice", ["best_practice", "constraint"], "best_practice"),
    ("passed", ["pass", "fail"], None),  # another word, not another case
    ("pass", ["Pass", "PASS"], None),  # ambiguous: two values match
    ("1", [1, 2], None),
])
def test_enum_match(value, allowed, expected):
    assert enum_match(value, allowed) == expected


@pytest.mark.parametrize("value, expected", [
    ({"a.txt": 3}, '{"a.txt":3}'),
    (["x", "y"], "x\ny"),
    ([1, "y"], '[1,"y"]'),
    ([], "[]"),
    ({"é": "ü"}, '{"é":"ü"}'),
    (3.5, "3.5"),
    (True, "true"),
])
def test_as_string(value, expected):
    assert as_string(value)[0] == expected


@pytest.mark.parametrize("sequences, expected, kinds", [
    ([0, 1], [1, 2], ["sequence_base"]),
    ([0, 0, 1], [1, 1, 2], ["sequence_base"]),
    ([-2, 5], [1, 8], ["sequence_base"]),
    ([1, 2], [1, 2], []),
    ([3, 3], [3, 3], []),  # gaps and a high start are normalise_sequences' (plan_rules), not a repair
    ([..., ...], [1, 2], ["missing_sequence"]),
    ([1, ..., 1], [1, 2, 1], ["missing_sequence"]),  # after those listed before it; an explicit number stays
    ([..., 0, 1], [1, 2, 3], ["missing_sequence", "sequence_base"]),  # a first one without runs before all
    ([None, "2"], [1, 2], ["missing_sequence"]),
    (["first", 2], ["first", 2], []),  # not a number: validation says so, nothing is guessed
])
def test_plan_sequences(sequences, expected, kinds):
    data = _plan(*sequences)
    repairs = plan_sequences(data)
    assert [s.get("sequence") for s in data["subtasks"]] == expected
    assert [r.kind for r in repairs] == kinds


@pytest.mark.parametrize("text, pairs", [
    ('{"a": 1}', [(0, 8)]),
    ('{"a": "}"}', [(0, 10)]),
    ('{"a": "\\"}"}', [(0, 12)]),
    ('{"a": {"b": {}}} tail', [(0, 16), (6, 15), (12, 14)]),
    ('He said "hi {"a": 1}', [(12, 20)]),  # a quote in prose opens no string
    ('{"a": 1', []),
    ("{" * 100_000, []),  # one pass, however many braces never close
])
def test_brace_pairs(text, pairs):
    assert brace_pairs(text) == pairs


@pytest.mark.parametrize("text, objects", [
    ('use {name} here: {"a": 1}', [{"a": 1}]),
    ('{"a": 1}{"b": {"c": 2}}', [{"a": 1}, {"b": {"c": 2}}]),
    ('{"broken": } {"a": 1}', [{"a": 1}]),
    ("no braces", []),
])
def test_object_spans(text, objects):
    assert [value for _, _, value in object_spans(text)] == objects


def _llm_call(base_url: str, call) -> tuple[object, OpenAICompatLLM]:
    """Run ``call(llm)`` on a real client against the scripted server at ``base_url``; (result, llm)."""
    settings = load_settings(openai_base_url=base_url, openai_model="scripted", openai_api_key=None,
                             brain_base_url=None, brain_model=None, tool_base_url=None, tool_model=None)
    llm = OpenAICompatLLM(settings, max_retries=0)

    async def go():
        try:
            return await call(llm)
        finally:
            await llm.aclose()

    return asyncio.run(go()), llm


def test_a_zero_based_plan_is_repaired_without_a_re_ask(caplog: pytest.LogCaptureFixture):
    plan = _plan(0, 1)
    seen: list[dict] = []

    async def ask(llm):
        llm.observer = seen.append  # what the decision log receives
        return await llm.structured("R2", "Plan", [{"role": "user", "content": "plan"}])

    with ScriptedLLMServer({"answers": {"Plan": [{"raw": json.dumps(plan)}]}}) as srv, \
            caplog.at_level(logging.INFO, logger="artoo.llm"):
        result, llm = _llm_call(srv.base_url, ask)
        assert len(srv.requests) == 1
    assert "R2 Plan answer repaired: sequence_base: sequences started at 0" in caplog.text
    assert [s.sequence for s in result.subtasks] == [1, 2]
    assert [r.kind for r in llm.records[0].repairs] == ["sequence_base"] and llm.records[0].ok
    assert [(x["ok"], [r["kind"] for r in x["repairs"]]) for x in seen] == [(True, ["sequence_base"])]


def test_an_object_output_is_serialised_without_a_re_ask():
    raw = '{"status": "completed", "output": {"a.txt": 3, "b.txt": 5}}'
    with ScriptedLLMServer({"answers": {"tools": [{"raw": raw}]}}) as srv:
        turn, llm = _llm_call(srv.base_url, lambda llm: llm.tool_turn(
            "R3", [{"role": "user", "content": "count"}], [SHELL]))
        assert len(srv.requests) == 1
    assert turn.final == ExecutionAnswer(status="completed", output='{"a.txt":3,"b.txt":5}')
    assert turn.assistant_message == {"role": "assistant", "content": raw}
    assert [r.kind for r in llm.records[0].repairs] == ["to_string"]


def test_only_what_no_repair_fixes_is_re_asked_once_and_the_log_says_so():
    bad = {"status": "done", "output": {"a.txt": 3}}  # the output is repairable, the status is not
    good = '```json\n{"status": "completed", "output": "a.txt 3"}\n```'
    seen: list[dict] = []

    async def turn(llm):
        llm.observer = seen.append
        return await llm.tool_turn("R3", [{"role": "user", "content": "count"}], [SHELL])

    with ScriptedLLMServer({"answers": {"tools": [{"answer": bad}, {"raw": good}]}}) as srv:
        result, llm = _llm_call(srv.base_url, turn)
        re_ask = srv.requests[1]["body"]["messages"][-1]["content"]
        assert len(srv.requests) == 2
    assert "status: Input should be 'completed', 'uncertain' or 'failed'" in re_ask and "output:" not in re_ask
    assert result.final == ExecutionAnswer(status="completed", output="a.txt 3")
    assert [(x["ok"], [r["kind"] for r in x["repairs"]]) for x in seen] == [(False, []), (True, ["fenced_json"])]
    assert seen[0]["error"].startswith("invalid answer: does not match the schema: status:")


def count_story(workspace: Path) -> dict:
    """issue #25's task, answered as the 1.5B model answered it: a 0-based plan, an object as the output."""
    for name, lines in (("a.txt", 3), ("b.txt", 5)):
        (workspace / name).write_text("x\n" * lines)
    plan = {"task_criteria": [crit(TOTALS)], "subtasks": [
        {"sequence": 0, "intent": "count the lines of every .txt file and write totals.md", "context": "",
         "success_criteria": [crit(TOTALS)], "tools": ["shell"]}]}
    return scenario(
        TaskSpec=[spec("count_txt_lines", "count the lines of every .txt file and write the totals to totals.md")],
        Plan=[{"raw": "Here is the plan:\n```json\n" + json.dumps(plan) + "\n```"}],
        tools=[call("shell", command="wc -l *.txt > totals.md; cat totals.md"),
               {"raw": json.dumps({"status": "Completed", "output": {"a.txt": 3, "b.txt": 5, "total": 8}})}],
        AgentVerdict=[agent(verdict(TOTALS, True, evidence="totals.md: 3 a.txt, 5 b.txt"))],
        TaskVerdict=[task_verdict(verdict(TOTALS, True))],
    )


@pytest.mark.usefixtures("prefect_api")
def test_a_run_is_repaired_not_refused_and_the_decision_log_says_how(scripted, artoo_env: Path):
    workspace = artoo_env / "workspace"
    workspace.mkdir(parents=True)
    server = scripted(count_story(workspace))
    code, out, _ = run_cli("run", "--json", "count the lines of every .txt file in this folder and write the "
                                            "totals to totals.md")
    assert (code, final_from(out)["directive"]) == (0, "accept")
    asked = [r["body"].get("response_format", {}).get("json_schema", {}).get("name", "tools") for r in server.requests]
    assert asked.count("Plan") == 1 and asked.count("tools") == 2  # repaired: nothing was asked twice
    code, log_json, _ = run_cli("log", "count_txt_lines", "--json")
    llm = [r for r in json.loads(log_json)["records"] if r["kind"] == "llm"]
    repairs = {(r["role"], x["kind"]) for r in llm for x in r["repairs"]}
    assert repairs == {("R2", "fenced_json"), ("R2", "prefixed_json"), ("R2", "sequence_base"),
                       ("R3", "enum_case"), ("R3", "to_string")}
    code, timeline, _ = run_cli("log", "count_txt_lines")
    assert "repaired (sequence_base): sequences started at 0; every one shifted by +1" in timeline
    assert 'repaired (to_string): output: serialised the object as compact JSON' in timeline
