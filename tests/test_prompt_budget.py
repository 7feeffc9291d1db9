"""Prompts that fit the model: the context window (setting, server, default) and the prompt budget.

The budgeting rules are pure and tested table-driven; the window probe and the whole path (a long
replan prompt cut to fit, a prompt that cannot fit refused unsent) go over real HTTP to the scripted
server acting as ``llama-server -c N`` (GET /props, HTTP 400 exceed_context_size_error).
"""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from rich.console import Console

from artoo.config.contracts import FinalResult, Loss, PlanDirective, SubTaskOutcome, TaskSpec, ToolCall
from artoo.config.errors import RunFailure
from artoo.config.settings import LLMParams, load_settings
from artoo.runner import report
from artoo.tasks.decisions.log import DecisionLog
from artoo.tasks.llm import CallRecord, OpenAICompatLLM, cost_report
from artoo.tasks.llm.server_facts import from_models, from_props, server_root
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.budget import (
    BLOCK_FLOOR,
    MESSAGE_TOKENS,
    PromptTooLong,
    block_kind,
    blocks,
    estimate_tokens,
    fit_messages,
    message_chars,
    shorten_plan,
)
from artoo.tasks.llm.transport.requests import context_window, forget
from artoo.tasks.roles import perceiver, planner
from artoo.tasks.roles.prompting import fence_untrusted
from artoo.timeline import render


@pytest.fixture(autouse=True)
def _fresh_windows():
    """Windows are learnt once per endpoint per process: a port reused by a server with another window
    must not inherit one, here or in a later test module."""
    forget()
    yield
    forget()


# ---- pure rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "kind"), [
    ("shell output", "evidence"), ("read_file output", "evidence"), ("tool calls", "evidence"),
    ("subtask evidence", "evidence"), ("validator advice", "evidence"), ("something new", "evidence"),
    ("memory", "memory"), ("past experiences", "memory"),
    ("session history", "history"), ("previous rounds", "history"),
    ("kept results", "results"), ("merged output", "results"), ("result of count lines", "results"),
    ("earlier step output: find logs", "results"), ("subtask context", "results"),
])
def test_each_fenced_block_has_a_kind(label, kind):
    assert block_kind(label) == kind


@pytest.mark.parametrize(("sizes", "excess", "floor", "planned"), [
    ([1000], 400, 100, [600]),                      # one block gives exactly what is needed
    ([1000, 1000], 400, 100, [600, 1000]),          # the earliest block goes first, the newest stays whole
    ([1000, 1000], 1200, 100, [100, 700]),          # the earliest down to its floor, then the next
    ([50, 1000], 400, 100, [50, 600]),              # a block under the floor is left alone
    ([1000, 200], 5000, 100, [100, 100]),           # not enough room: everything to the floor
    ([1000], 0, 100, [1000]), ([], 10, 100, []),
])
def test_blocks_are_shortened_earliest_first_down_to_the_floor(sizes, excess, floor, planned):
    assert shorten_plan(sizes, excess, floor) == planned


@pytest.mark.parametrize(("chars", "messages", "ratio", "tokens"), [
    (0, 0, 3.0, 0), (3000, 2, 3.0, 1000 + 2 * MESSAGE_TOKENS), (3001, 1, 3.0, 1001 + MESSAGE_TOKENS),
    (4000, 1, 4.0, 1000 + MESSAGE_TOKENS),
])
def test_estimate_is_characters_per_token_plus_the_template(chars, messages, ratio, tokens):
    assert estimate_tokens(chars, messages, ratio) == tokens


def _kinds(messages: list[dict]) -> set[str]:
    return {b.kind for b in blocks(messages)}


@pytest.mark.parametrize(("build", "kinds"), [
    (lambda: perceiver.messages_for("do it again", [{"input": "count lines", "summary": "3 files"}]), {"history"}),
    (lambda: planner.messages_for(SPEC, "SHOULD PREFER: wc -l", None, set(), set(), "round 1: 2 of 3 done"),
     {"memory", "history"}),
    (lambda: planner.messages_for(SPEC, "", None, set(), set(), evidence=planner.evidence_block([_failed(1)])),
     {"evidence"}),
])
def test_the_roles_real_prompts_label_their_blocks_with_the_kinds_the_budget_knows(build, kinds):
    """A renamed fence label would silently turn memory or history into evidence, cut first."""
    assert _kinds(build()) == kinds


TASK = "The user's words: count the lines of every .txt file and write totals.md"
CRITERIA = "Success criteria:\n1. [verifiable] totals.md lists every file"


def _prompt(evidence: int = 0, memory: int = 0, history: int = 0, results: int = 0) -> list[dict]:
    """A user message with the task and criteria (never cut) and one fenced block per kind asked for."""
    parts = [TASK, CRITERIA]
    for label, size, letter in (("shell output", evidence, "e"), ("memory", memory, "m"),
                                ("session history", history, "h"), ("kept results", results, "r")):
        if size:
            parts.append(fence_untrusted(label, letter * size))
    return [{"role": "system", "content": "You are R2."}, {"role": "user", "content": "\n\n".join(parts)}]


def _bodies(messages: list[dict]) -> dict[str, int]:
    """The body length of each kind's block (one block per kind in these prompts)."""
    return {b.kind: b.size for b in blocks(messages)}


def _tokens(messages: list[dict]) -> int:
    return estimate_tokens(sum(message_chars(m) for m in messages), len(messages), 3.0)


F = BLOCK_FLOOR


@pytest.mark.parametrize(("sizes", "over", "left"), [
    # it fits: nothing is cut
    ({"evidence": 3000, "memory": 3000}, -10, {"evidence": 3000, "memory": 3000}),
    # 1000 characters too many: evidence alone gives them, memory stays whole
    ({"evidence": 3000, "memory": 3000}, 1000, {"evidence": 2000, "memory": 3000}),
    # more than evidence can give: evidence to its floor, then memory
    ({"evidence": 1000, "memory": 3000}, 1500, {"evidence": F, "memory": 3000 - 1500 + 1000 - F}),
    # evidence and memory to their floors, then history; kept results last of all
    ({"evidence": 500, "memory": 500, "history": 2000, "results": 2000}, 1000,
     {"evidence": F, "memory": F, "history": 2000 - 1000 + 2 * (500 - F), "results": 2000}),
    # every block at its floor is not enough: whole blocks go, evidence first
    ({"evidence": 500, "memory": 500, "history": 500, "results": 500}, 1600,
     {"history": F, "results": F}),
])
def test_blocks_are_cut_lowest_priority_first(sizes, over, left):
    messages = _prompt(**sizes)
    limit = _tokens(messages) - over // 3
    fit = fit_messages(messages, 0, limit, 3.0)
    assert fit.fits and fit.prompt_tokens_estimated <= limit
    got = _bodies(fit.messages)
    assert set(got) == set(left)  # dropped blocks are gone, fence and all
    for kind, size in left.items():
        assert abs(got[kind] - size) <= 5, (kind, got)  # ±5: the token limit rounds to characters
    shortened = [c["kind"] for c in fit.cuts if "blocks" in c]
    assert shortened == [k for k in ("evidence", "memory", "history", "results")
                         if k in sizes and got.get(k, 0) < sizes[k]]
    assert [c["kind"] for c in fit.cuts if "dropped" in c] == [k for k in sizes if k not in got]
    assert TASK in fit.messages[-1]["content"] and CRITERIA in fit.messages[-1]["content"]


def test_a_cut_block_keeps_head_and_tail_and_says_so():
    messages = _prompt()
    messages[-1]["content"] += "\n\n" + fence_untrusted("shell output", "HEAD" + "x" * 5000 + "TAIL")
    fit = fit_messages(messages, 0, _tokens(messages) - 1000, 3.0)
    text = fit.messages[-1]["content"]
    assert "HEAD" in text and "TAIL" in text and "characters cut]" in text
    assert [(c["kind"], c["blocks"], c["chars_before"], c["labels"]) for c in fit.cuts] == [
        ("evidence", 1, 5008, ["shell output"])]
    assert fit.cuts[0]["chars_after"] <= 5008 - 2990  # 1000 tokens ≈ 3000 characters


@pytest.mark.parametrize(("extra", "fits"), [(0, True), (6000, False)])
def test_what_is_never_cut_can_make_a_prompt_impossible(extra, fits):
    """Unfenced text (the task, the criteria, the schema) and the tool definitions are never cut."""
    messages = _prompt(evidence=4000)
    fit = fit_messages(messages, extra, 1000, 3.0)
    assert fit.fits is fits
    assert TASK in fit.messages[-1]["content"] and CRITERIA in fit.messages[-1]["content"]
    assert (fit.prompt_tokens_estimated <= 1000) is fits


def _turn(n: int) -> list[dict]:
    """One executor turn as R3's conversation carries it: the assistant's call, then the fenced tool output."""
    call = {"id": f"c{n}", "type": "function", "function": {"name": "shell", "arguments": f'{{"command": "cat {n}"}}'}}
    output = f"[output {n} head]" + "x" * 4000 + f"[output {n} tail]"
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "tool shell status: ok\n"
             + fence_untrusted("shell output", output)}]


def test_a_growing_conversation_keeps_its_cut_head_identical_and_its_newest_output_whole():
    """llama.cpp reuses the cached prefix of the previous turn only when the head of the prompt is unchanged."""
    opening = _prompt()
    three = opening + _turn(1) + _turn(2) + _turn(3)
    limit = _tokens(three) - 5000 // 3  # about one and a half outputs too many
    first = fit_messages(three, 0, limit, 3.0)
    second = fit_messages(three + _turn(4), 0, limit, 3.0)
    assert first.fits and second.fits
    assert second.messages[:4] == first.messages[:4]  # output 1, cut to its floor, reads the same next turn
    assert first.messages[-1] == three[-1] and second.messages[-1] == _turn(4)[-1]  # the newest output whole
    assert "characters cut]" in first.messages[5]["content"] and "characters cut]" in second.messages[7]["content"]


@pytest.mark.parametrize(("base_url", "root"), [
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"), ("http://h:1/v1/", "http://h:1"),
    ("http://h:1/api", "http://h:1/api"),
])
def test_props_is_read_at_the_server_root(base_url, root):
    assert server_root(base_url) == root


@pytest.mark.parametrize(("body", "tokens"), [
    ({"default_generation_settings": {"n_ctx": 4096, "params": {}}, "total_slots": 1}, 4096),
    ({"default_generation_settings": {}}, None), ({"error": "x"}, None), ([], None),
    ({"default_generation_settings": {"n_ctx": True}}, None),
])
def test_window_from_llama_cpp_props(body, tokens):
    assert from_props(body) == tokens


@pytest.mark.parametrize(("body", "tokens"), [
    ({"data": [{"id": "m", "max_model_len": 32768}]}, 32768),                       # vLLM
    ({"data": [{"id": "other", "max_model_len": 8}, {"id": "m", "max_model_len": 16}]}, 16),
    ({"data": [{"id": "only", "max_model_len": 2048}]}, 2048),                      # the one model served
    ({"data": [{"id": "m", "meta": {"n_ctx_train": 131072}}]}, None),              # llama.cpp: training ctx
    ({"data": []}, None), ({}, None),
])
def test_window_from_the_models_list(body, tokens):
    assert from_models(body, "m") == tokens


# ---- the window, over HTTP ----------------------------------------------------------------------


@pytest.mark.parametrize(("scenario", "setting", "tokens", "source"), [
    ({"n_ctx": 3072}, None, 3072, "/props n_ctx"),
    ({"n_ctx": 3072}, 16384, 16384, "setting llm.context_tokens"),   # the person knows better
    ({"max_model_len": 12000}, None, 12000, "/models max_model_len"),
    ({}, None, 8192, "default llm.default_context_tokens"),
])
def test_the_window_comes_from_the_setting_else_the_server_else_the_default(scenario, setting, tokens, source):
    with ScriptedLLMServer({"answers": {}, **scenario}) as srv:
        params = LLMParams(context_tokens=setting)
        window = context_window(params, srv.base_url, "scripted", "k")
    assert window.tokens == tokens and source in window.source
    if setting is None:  # asked once per endpoint and model: the answer outlives the server
        assert context_window(params, srv.base_url, "scripted", "k") == window


# ---- the whole path: a replan prompt cut to fit, an impossible one refused ------------------------

PLAN = {"task_criteria": [{"criterion": "totals.md exists", "mode": "verifiable"}],
        "subtasks": [{"sequence": 1, "intent": "count lines", "context": "wc -l *.txt",
                      "success_criteria": [{"criterion": "counts listed", "mode": "verifiable"}]}]}
SPEC = TaskSpec(task_id="totals", intent="count the lines of every .txt file into totals.md",
                raw_input="count the lines of every .txt file in this folder and write the totals to totals.md")


def _failed(n: int) -> SubTaskOutcome:
    calls = [ToolCall(tool="shell", input=f"cat big{n}_{i}.log", ok=False, failure_class="logical",
                      output=f"line {i} of a very long log\n" * 40) for i in range(6)]
    return SubTaskOutcome(subtask_id=f"s{n}", parent_task_id="totals", status="failed", intent=f"step {n}",
                          failure_class="logical", calls=calls, what_was_wrong="wrong file", what_to_do="use wc")


DIRECTIVE = PlanDirective(task_id="totals", loss=Loss(D=0.75, P=1.0, Omega=0.2, L=0.81), directive="change_approach",
                          failed_criterion="totals.md lists every file", rationale="cat is not a count")


def _replan_messages() -> list[dict]:
    """A round-2 replan after three failed subtasks of six tool calls each, with memory lines."""
    evidence = planner.evidence_block([_failed(n) for n in range(3)])
    return planner.messages_for(SPEC, "SHOULD PREFER: wc -l for line counts\n" * 20, DIRECTIVE, {"cat"}, set(),
                                evidence=evidence)


def _client(srv, home, **llm):
    settings = load_settings(openai_base_url=srv.base_url, openai_model="scripted", openai_api_key="k",
                             llm_timeout_s=10.0, llm=LLMParams(**llm), home=home)
    log = DecisionLog(home, "run-budget", settings)
    client = OpenAICompatLLM(settings, max_retries=0)
    client.observer = log.llm_call
    return client, log


def _records(log: DecisionLog) -> list[dict]:
    return [json.loads(line) for line in log.path.read_text().splitlines() if '"kind": "llm"' in line]


def test_a_long_replan_prompt_is_cut_to_fit_a_small_window_and_the_log_says_what(artoo_env):
    messages = _replan_messages()
    assert sum(len(m["content"]) for m in messages) // 4 > 4096  # as built, llama-server -c 4096 refuses it
    with ScriptedLLMServer({"n_ctx": 4096, "answers": {"Plan": [{"answer": PLAN}]}}) as srv:
        client, log = _client(srv, artoo_env / "home")
        answer = asyncio.run(client.structured("R2", "Plan", messages))
        sent = srv.requests
    assert answer.subtasks[0].intent == "count lines"
    assert [r["status"] for r in sent] == [200]
    content = sent[0]["body"]["messages"][-1]["content"]
    for kept in (SPEC.raw_input, planner.directive_block(DIRECTIVE), "Blocked tools: cat"):
        assert kept in content  # the task's own words and the directive are never cut
    assert "characters cut]" in content
    budget = _records(log)[0]["budget"]
    assert budget["context_tokens"] == 4096 and "/props" in budget["source"]
    assert budget["prompt_tokens_estimated"] <= 4096 - budget["answer_tokens"]
    # evidence is shortened first, then memory, and only then are whole evidence blocks dropped
    assert [(c["kind"], "dropped" in c) for c in budget["cuts"]] == [
        ("evidence", False), ("memory", False), ("evidence", True)]
    assert client.records[0].budget == budget


def test_a_prompt_that_cannot_fit_is_refused_unsent_with_the_way_out(artoo_env):
    messages = perceiver.messages_for("count the lines of every .txt file", [])
    with ScriptedLLMServer({"n_ctx": 1200, "answers": {"TaskSpec": []}}) as srv:
        client, log = _client(srv, artoo_env / "home")
        assert client.send_early("R1", "TaskSpec", messages) is False
        with pytest.raises(PromptTooLong) as raised:
            asyncio.run(client.structured("R1", "TaskSpec", messages))
        sent = srv.requests
    assert sent == []
    assert isinstance(raised.value, RunFailure)
    text = str(raised.value)
    for part in ("R1's prompt does not fit", "1200 tokens", "/props", "llama-server -c", "llm.context_tokens",
                 "ARTOO_LLM__CONTEXT_TOKENS"):
        assert part in text, part
    record = _records(log)[0]
    assert record["ok"] is False and record["budget"]["context_tokens"] == 1200
    assert client.records == []  # nothing was sent, so nothing is counted as a request


@pytest.mark.parametrize(("budget", "shown"), [
    (None, None),
    ({"context_tokens": 4096, "cuts": []}, None),
    ({"context_tokens": 4096, "cuts": [{"kind": "evidence", "blocks": 18}, {"kind": "memory", "blocks": 1},
                                       {"kind": "evidence", "dropped": 10}]},
     " · prompt cut to fit 4096 tokens: evidence 18 shortened, memory 1 shortened, evidence 10 dropped"),
])
def test_artoo_log_says_when_a_prompt_was_cut(budget, shown):
    line = render([{"kind": "llm", "role": "R2", "schema": "Plan", "model": "m", "ok": True, "budget": budget}])[0]
    assert line.endswith(shown or "· ok")


def test_the_runs_cost_table_shows_each_roles_largest_prompt():
    out = io.StringIO()
    cost = {"R3": {"calls": 2, "prompt_tokens": 4100, "largest_prompt_tokens": 2600, "completion_tokens": 80,
                   "llm_seconds": 2.0}}
    final = FinalResult(task_id="t", directive="accept", summary="done", output="ok",
                        loss=Loss(D=0.0, P=0.0, Omega=0.1, L=0.04))
    report(final, {"cost": cost}, Console(file=out, width=200, highlight=False))
    header, row = [line for line in out.getvalue().splitlines() if "largest prompt" in line or "R3" in line][:2]
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:4] == ["R3", "2", "4100", "2600"] and "largest prompt" in header


def test_cost_report_sums_per_role_and_names_the_largest_prompt():
    """largest_prompt_tokens: each role's biggest single prompt, which the model's window must hold."""
    records = [CallRecord("R1", "m", "TaskSpec", 10, 5, 0.5, True),
               CallRecord("R3", "t", "tools", 7, 3, 0.25, True, cached_tokens=5),
               CallRecord("R1", "m", "TaskSpec", 0, 0, 0.125, False, "HTTP 500"),
               CallRecord("R3", "t", "tools", 12, 1, 0.25, True, cached_tokens=10)]
    assert cost_report(records) == {
        "R1": {"calls": 2, "prompt_tokens": 10, "cached_tokens": 0, "completion_tokens": 5, "llm_seconds": 0.625,
               "largest_prompt_tokens": 10},
        "R3": {"calls": 2, "prompt_tokens": 19, "cached_tokens": 15, "completion_tokens": 4, "llm_seconds": 0.5,
               "largest_prompt_tokens": 12}}
    assert cost_report([]) == {}
