"""The benchmark harness: its arithmetic (table-driven) and one tiny end-to-end run.

The arithmetic tests feed literal request logs to ``artoo.bench.chain`` and check the counts a
person would make by hand.  The end-to-end test runs ``artoo bench --json --quick`` as a
process against the session's Prefect server and asserts only that every figure the
issue asks for is present with the target it is held to: no timing is asserted.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from artoo.bench import scenarios
from artoo.bench.chain import Call, critical_path, economy, lane_of, role_calls, spec_minimum_chain
from artoo.bench.harness import parse
from artoo.bench.loops_bench import economy_section
from artoo.bench.report import Figure
from artoo.bench.runs import Job, Measured
from artoo.tasks.llm import CallRecord, cost_report
from tests.processes import command_lines


def req(schema: str, start: float, end: float, intent: str | None = None, extra: list[dict] | None = None) -> dict:
    """One scripted-server log record; ``intent`` puts the request in that subtask's lane."""
    text = f"Subtask intent: {intent}\nContext:\n(none)" if intent else "the request"
    messages = [{"role": "system", "content": "role"}, {"role": "user", "content": text}, *(extra or [])]
    return {"schema": schema, "body": {"messages": messages}, "received": start, "answered": end}


def turn2(intent: str, start: float, end: float) -> dict:
    """The second turn of an R3 attempt: the first turn's messages plus the tool call and its result."""
    return req("tools", start, end, intent, [{"role": "assistant", "content": None, "tool_calls": []},
                                             {"role": "tool", "content": "ok"}])


@pytest.mark.parametrize(("calls", "expected"), [
    ([], 0),
    ([Call("R1", 0, 1)], 1),
    ([Call("R1", 0, 1), Call("R2", 1, 2), Call("R4b", 2, 3)], 3),  # touching intervals chain
    ([Call("R1", 0, 1), Call("R2", 0.5, 2)], 1),  # overlapping intervals do not
    ([Call("R2", 0, 1), Call("R3", 1, 2, "a"), Call("R3", 1, 2, "b"), Call("R4b", 2, 3)], 3),  # parallel lanes
    # subtask b started late (after a finished): still parallel, never chained across lanes
    ([Call("R2", 0, 1), Call("R3", 1, 2, "a"), Call("R4a", 2, 3, "a"), Call("R3", 3, 4, "b"),
      Call("R4a", 4, 5, "b"), Call("R4b", 5, 6)], 4),
    ([Call("R3", 0, 1, "a"), Call("R4a", 1, 2, "a"), Call("R3", 2, 3, "a")], 3),  # one lane is sequential
])
def test_critical_path_counts_sequential_calls_and_respects_lanes(calls, expected):
    assert critical_path(calls) == expected


def test_critical_path_rejects_an_interval_that_ends_before_it_starts():
    with pytest.raises(ValueError, match="ends before it starts"):
        critical_path([Call("R1", 2, 1)])


@pytest.mark.parametrize(("body", "lane"), [
    ({"messages": [{"role": "user", "content": "Subtask intent: count lines\nContext: x"}]}, "count lines"),
    ({"messages": [{"role": "system", "content": "Subtask intent: not here"}]}, None),
    ({"messages": [{"role": "user", "content": "plan this request"}]}, None),
    ({}, None),
])
def test_lane_is_the_subtask_intent_line_of_the_user_message(body, lane):
    assert lane_of(body) == lane


def test_turns_of_one_attempt_form_one_r3_call_and_a_retry_is_a_new_one():
    log = [req("tools", 0, 1, "a"), turn2("a", 1, 2),
           req("tools", 3, 4, "a", [{"role": "user", "content": "RETRY: attempt 1 fell short"}])]
    calls = role_calls(log)
    assert [(c.role, c.turns, c.start, c.end) for c in calls] == [("R3", 2, 0, 2), ("R3", 1, 3, 4)]


def one_subtask_log(offset: float = 0.0) -> list[dict]:
    """R1 → R2 → R3 (tool turn, answer turn) → R4a → R4b, each 1 s, back to back."""
    t = offset
    return [req("TaskSpec", t, t + 1), req("Plan", t + 1, t + 2), req("tools", t + 2, t + 3, "a"),
            turn2("a", t + 3, t + 4), req("AgentVerdict", t + 4, t + 5, "a"), req("TaskVerdict", t + 5, t + 6)]


def test_economy_of_the_minimum_chain():
    e = economy(one_subtask_log(), subtasks_dispatched=1)
    assert (e.http_requests, e.sequential_requests, e.r3_turns, e.sequential_role_calls, e.retries) == (6, 6, 2, 5, 0)
    assert e.role_calls == {"R1": 1, "R2": 1, "R3": 1, "R4a": 1, "R4b": 1}
    assert e.sequential_role_calls == spec_minimum_chain(retries=0, replans=0)


def test_the_economy_section_reports_prompt_tokens_and_the_largest_prompt_per_role():
    """Each role's prompt tokens in total and its largest prompt (what the model's window must hold)."""
    records = [CallRecord("R1", "m", "TaskSpec", 900, 40, 1.0, True),
               CallRecord("R2", "m", "Plan", 2100, 300, 1.0, True),
               CallRecord("R3", "m", "tools", 1500, 20, 1.0, True), CallRecord("R3", "m", "tools", 2600, 60, 1.0, True),
               CallRecord("R4a", "m", "AgentVerdict", 1200, 90, 1.0, True),
               CallRecord("R4b", "m", "TaskVerdict", 1700, 80, 1.0, True)]
    run = Measured("one subtask", "ephemeral", 1.0, 7.0, 0.5, 0.5, economy(one_subtask_log(), 1),
                   cost_report(records), "accept", 0, 1)
    job = Job(scenarios.parallel(1, 1, 1.0), "ephemeral", None, runs=[run])
    section = economy_section({("one", "ephemeral"): job})
    details = section.details["one"]
    assert details["prompt_tokens"] == {"R1": 900, "R2": 2100, "R3": 4100, "R4a": 1200, "R4b": 1700}
    assert details["largest_prompt_tokens"] == {"R1": 900, "R2": 2100, "R3": 2600, "R4a": 1200, "R4b": 1700}
    largest = section.tables[-1]
    assert "largest prompt" in str(largest.title)
    assert [c._cells for c in largest.columns][-1] == ["2600"]


def test_economy_of_two_parallel_subtasks_counts_calls_twice_but_time_once():
    log = [req("TaskSpec", 0, 1), req("Plan", 1, 2)]
    for lane, skew in (("a", 0.0), ("b", 0.1)):
        log += [req("tools", 2 + skew, 3 + skew, lane), turn2(lane, 3 + skew, 4 + skew),
                req("AgentVerdict", 4 + skew, 5 + skew, lane)]
    log.append(req("TaskVerdict", 5.2, 6))
    e = economy(log, subtasks_dispatched=2)
    assert (e.role_calls["R3"], e.role_calls["R4a"], e.r3_turns) == (2, 2, 4)
    assert (e.sequential_requests, e.sequential_role_calls, e.retries) == (6, 5, 0)
    assert e.chars_sent["R3"] > e.chars_sent["R4b"]


@pytest.mark.parametrize(("retries", "replans", "abandon", "minimum"),
                         [(0, 0, False, 5), (1, 0, False, 7), (0, 3, False, 11), (2, 1, False, 11), (0, 3, True, 12)])
def test_spec_minimum_chain(retries, replans, abandon, minimum):
    assert spec_minimum_chain(retries, replans, abandon) == minimum


def test_spec_minimum_chain_rejects_negative_counts():
    with pytest.raises(ValueError):
        spec_minimum_chain(-1, 0)


@pytest.mark.parametrize(("story", "subtasks", "replans", "retries", "directive"), [
    (lambda: scenarios.parallel(1, 2), 1, 0, 0, "accept"),
    (lambda: scenarios.parallel(8, 1), 8, 0, 0, "accept"),
    (lambda: scenarios.replans(3, 1), 4, 3, 0, "abandon"),
    (lambda: scenarios.retry(1), 1, 0, 1, "accept"),
])
def test_scenarios_declare_the_shape_their_script_plays(story, subtasks, replans, retries, directive):
    s = story()
    assert (s.subtasks, s.replans, s.retries, s.directive) == (subtasks, replans, retries, directive)
    answers = s.script["answers"]
    runs = len(answers["TaskSpec"])
    assert len(answers["Plan"]) == runs * (replans + 1)
    assert len(answers["AgentVerdict"]) == runs * (subtasks + retries)
    assert len({a["answer"]["task_id"] for a in answers["TaskSpec"]}) == runs  # distinct tasks per run


def test_the_replans_story_sets_the_budget_it_spends():
    assert scenarios.replans(2).settings == {"ARTOO_GGS__MAX_REPLANS": "2"}


@pytest.mark.parametrize("bad", [lambda: scenarios.parallel(0), lambda: scenarios.parallel(2, 0),
                                 lambda: scenarios.replans(-1), lambda: scenarios.retry(0)])
def test_scenarios_reject_impossible_shapes(bad):
    with pytest.raises(ValueError):
        bad()


@pytest.mark.parametrize(("value", "target", "json_value", "json_target"), [
    (1.23456, "≤ 1.15", 1.2346, "≤ 1.15"),
    (float("nan"), "≤ 1.3", None, "≤ 1.3"),
    (7, None, 7, "none (informational)"),
])
def test_figures_serialise_with_their_target(value, target, json_value, json_target):
    data = Figure("k", "what", value, "×", target, None).as_json()
    assert (data["value"], data["target"]) == (json_value, json_target)


@pytest.mark.parametrize(("argv", "expected"), [
    ([], (0.3, 1.5, 3, False)),
    (["--quick"], (0.1, 0.3, 1, True)),
    (["--quick", "--latency", "0.5", "--repeats", "2"], (0.5, 0.3, 2, True)),
])
def test_harness_defaults(argv, expected):
    args = parse(argv)
    assert (args.latency, args.process_latency, args.repeats, args.quick) == expected


@pytest.mark.parametrize("argv", [["--only", "nope"], ["--only", ","], ["--repeats", "0"], ["--latency", "-1"]])
def test_harness_rejects_bad_options(argv):
    with pytest.raises(SystemExit):
        parse(argv)


MODES = ("ephemeral", "local")
EXPECTED = {
    **{f"overhead.{s}.{m}": (s in ("one", "replans")) for s in ("one", "par4", "replans", "replans_slow")
       for m in MODES},
    "overhead.process": True,
    "overhead.process_cold": True,
    **{f"parallel.n{n}.{m}": n == 8 for n in (1, 8) for m in MODES},
    **{f"economy.{s}.sequential_role_calls": True for s in ("one", "par4", "replans", "retry")},
    **{f"economy.{s}.prompt_tokens": False for s in ("one", "par4", "replans", "retry")},
    **{f"memory.{k}": True for k in ("query_mk_p50_ms@1e7", "write_p50_us", "ingest_per_s", "dream_s@1e7")},
    "law1_overlay.added_ms": True,
}
"""Figure key → whether the issue holds it to a target (quick runs N = 1 and 8 of the speed-up curve)."""


def lingering_servers_under(root: Path) -> list[str]:
    """Command lines of the running ``artoo.servers.lingering`` processes serving a home under ``root``."""
    found = []
    for _, raw in command_lines():
        words = raw.decode(errors="replace").split("\0")
        if "artoo.servers.lingering" in words and any(w.startswith(str(root)) for w in words):
            found.append(" ".join(words))
    return found


@pytest.mark.slow
def test_artoo_bench_json_produces_every_figure_with_its_target(prefect_api: str, tmp_path: Path):
    script = Path(sys.executable).with_name("artoo")
    done = subprocess.run([str(script), "bench", "--json", "--quick", "--api-url", prefect_api],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "TMPDIR": str(tmp_path)})  # its homes under tmp_path
    assert done.returncode == 0, done.stderr[-3000:]
    assert lingering_servers_under(tmp_path) == [], "the bench left servers running after it ended"
    doc = json.loads(done.stdout)
    figures = {f["key"]: f for f in doc["figures"]}
    missing = sorted(set(EXPECTED) - set(figures))
    assert not missing, f"figures missing from the JSON: {missing}"
    for key, judged in EXPECTED.items():
        figure = figures[key]
        has_target = figure["target"] != "none (informational)"
        assert has_target == judged, (key, figure["target"])
        measured_here = "@1e7" not in key  # quick memory sizes stop at 10⁴: those two are reported unmeasured
        measured_here = measured_here and not (key.startswith("law1_overlay.") and figure["note"])  # no overlay here
        if measured_here:
            assert isinstance(figure["value"], int | float) and math.isfinite(figure["value"]), (key, figure)
        if judged and measured_here:
            assert isinstance(figure["met"], bool), (key, figure)
    flow_runs = [k for k in figures if k.startswith("flow_runs.")]
    assert len(flow_runs) == 12 * len(MODES), flow_runs  # 8 subflow + 4 task candidates per mode
    assert set(doc["sections"]) == {"overhead", "parallel", "economy", "flow_runs", "memory", "audit",
                                    "law1_overlay"}
