"""artoo eval --sequence (issue #26): memory carries from task to task in one home, and not cold.

The story runs the real artoo-eval flow (real Prefect, the real artoo-task flow per task, real DuckDB
memory, the real dreamer flow between tasks) on two requests of one intent slug (their first three words):
the GGS writes the first one's accepted episode, and calibration quotes it to the second one's planner.
The table tests hold the report's figures on hand-made rows and decision-log records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artoo.eval.sequence import cumulative_solved, mode_totals, task_memory
from artoo.memory.sops import distil_sop

SETUP = ("#!/bin/bash\nrm -rf /data\nmkdir -p /data\nprintf 'keep me\\nand me\\n' > /data/keep.txt\n"
         "echo other > /data/other.txt\n")


def _two_tasks_of_one_intent(root: Path) -> Path:
    folder = root / "suite"
    folder.mkdir()
    (folder / "queries.json").write_text(json.dumps([
        {"query": "show the content of /data/keep.txt", "gold": "cat /data/keep.txt"},
        {"query": "show the content of /data/other.txt", "gold": "cat /data/other.txt"}]))
    (folder / "setup.sh").write_text(SETUP)
    return folder


def test_the_second_task_of_a_sequence_is_planned_with_what_the_first_one_learnt(prefect_api, artoo_env: Path):
    from artoo.eval.harness import EvalOptions, run_eval

    seen: list[tuple[str, int, bool]] = []
    document = run_eval(EvalOptions(
        suite=_two_tasks_of_one_intent(artoo_env), brain="simulated", strategies=("ggs",), seed=3, rates={},
        sequence=True, dream_every=1, progress=lambda label, index, row: seen.append((label, index, row is None))))
    cold, sequence = document["tasks"]["ggs cold"], document["tasks"]["ggs sequence"]
    assert [r["solved"] for r in cold + sequence] == [True] * 4
    # the only task before it in that home ran `cat …/keep.txt`: its planner is told what worked, quoting it
    assert any("keep.txt" in line and "cat " in line for line in sequence[1]["memory_seen_round1"])
    assert cold[1]["memory_seen_round1"] == [] and sequence[0]["memory_seen_round1"] == []
    block = document["sequence"]["ggs"]
    assert block["modes"]["sequence"]["tasks_with_memory_in_round1"] == 1
    assert block["modes"]["cold"]["memory_lines"] == 0
    assert [d["after_task"] for d in block["dreams"]] == [1]  # one real pass between the two tasks, none after
    assert ("ggs sequence", -1, True) in seen and {label for label, _, _ in seen} == {"ggs cold", "ggs sequence"}
    assert _artifact_keys() >= {"eval-sequence", "dreamer-report"}


def _artifact_keys() -> set[str]:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def keys() -> set[str]:
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["eval-sequence", "dreamer-report"])))
        return {a.key for a in found}

    return asyncio.run(keys())


PLAN_WC = {"subtasks": [{"sequence": 1, "intent": "count lines", "context": "run wc -l on it", "tools": ["shell"]}]}
PLAN_CAT = {"subtasks": [{"sequence": 1, "intent": "print it", "context": "run cat on it", "tools": ["shell"]}]}


def _memory(round_no: int, must_not=(), prefer=(), caution=(), sops=()) -> dict:
    return {"kind": "memory", "round": round_no, "must_not": list(must_not), "prefer": list(prefer),
            "caution": list(caution), "sops": list(sops)}


def _plan(answer: dict, ok: bool = True) -> dict:
    return {"kind": "llm", "role": "R2", "schema": "Plan", "ok": ok, "response": answer}


SOP_CASES = [  # (records but the SOP, expected); "SOP" stands for an SOP made by memory.sops.distil_sop
    ([], {"memory_lines": 0, "memory_lines_round1": 0, "planner_rounds": 0, "plans_following_sop": 0,
          "memory_seen_round1": []}),
    ([_memory(1, must_not=["use the tool 'shell' on '/d/x.txts'"]), _plan(PLAN_CAT)],
     {"memory_lines": 1, "memory_lines_round1": 1, "planner_rounds": 1, "plans_following_sop": 0,
      "memory_seen_round1": ["use the tool 'shell' on '/d/x.txts'"]}),
    ([_memory(1, prefer=["SOP"], sops=["SOP"]), _plan(PLAN_WC)],
     {"memory_lines": 1, "memory_lines_round1": 1, "planner_rounds": 1, "plans_following_sop": 1,
      "plans_following_memory": 1}),
    # a refused plan, then the re-asked one: the re-asked plan is the round's; round 2 sees two lines
    ([_memory(1, prefer=["SOP"], sops=["SOP"]), _plan(PLAN_WC, ok=False), _plan(PLAN_CAT),
      _memory(2, must_not=["a"], caution=["b"]), _plan(PLAN_WC)],
     {"memory_lines": 3, "memory_lines_round1": 1, "planner_rounds": 2, "plans_following_sop": 0,
      "memory_lines_by_kind": {"must_not": 1, "prefer": 1, "caution": 1}}),
]


@pytest.mark.parametrize(("records", "expected"), SOP_CASES)
def test_task_memory_counts_lines_served_and_plans_that_followed_an_sop(records: list, expected: dict):
    sop = distil_sop("count the lines of x", ("shell `wc -l`",), 3)
    real = json.loads(json.dumps(records).replace('"SOP"', json.dumps(sop)))
    row = task_memory(real)
    assert {key: row[key] for key in expected} == expected


def _row(index: int, solved: bool, rounds: int, calls: int, tokens: int, lines: int = 0, round1: int = 0,
         planner_rounds: int = 1, sop: int = 0) -> dict:
    return {"index": index, "solved": solved, "rounds": rounds, "llm_calls": calls, "prompt_tokens": tokens,
            "memory_lines": lines, "memory_lines_round1": round1, "planner_rounds": planner_rounds,
            "memory_lines_by_kind": {"must_not": lines, "prefer": 0, "caution": 0},
            "plans_following_memory": sop, "plans_following_sop": sop}


ROWS = [_row(0, True, 1, 5, 1000), _row(1, True, 2, 9, 3000, lines=2, round1=1, planner_rounds=2, sop=1),
        _row(2, False, 3, 12, 5000, lines=3, round1=1, planner_rounds=3), _row(3, True, 1, 6, 1000, sop=1)]


@pytest.mark.parametrize(("rows", "expected"), [
    ([], {"tasks": 0, "solved": 0, "solved_rate": 0.0, "llm_calls_per_task": None, "first_round_solved": 0,
          "memory_lines_per_round": None, "plans_following_sop": None}),
    (ROWS, {"tasks": 4, "solved": 3, "solved_rate": 0.75, "llm_calls_per_task": 8.0,
            "prompt_tokens_per_task": 2500.0, "first_round_solved": 2, "first_round_rate": 0.5,
            "planner_rounds": 7, "memory_lines": 5, "memory_lines_per_round": 0.71,
            "tasks_with_memory_in_round1": 2, "plans_following_sop": 2, "tasks_following_sop": 2,
            "tasks_following_sop_solved": 2, "memory_lines_by_kind": {"must_not": 5, "prefer": 0, "caution": 0}}),
])
def test_mode_totals(rows: list[dict], expected: dict):
    totals = mode_totals(rows)
    assert {key: totals[key] for key in expected} == expected


def test_cumulative_solved_follows_the_task_order_not_the_row_order():
    assert cumulative_solved(list(reversed(ROWS))) == [1, 2, 2, 3]
