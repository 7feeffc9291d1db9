"""artoo/eval/failures.py: an unsolved eval task is counted by what stopped it, read from its decision log."""

from __future__ import annotations

import pytest

from artoo.eval.failures import by_kind, failure_kind, llm_counts

TOOL = {"kind": "tool", "name": "shell", "arguments": {"command": "wc -l a.txt"}}
FORMAT_GIVE_UP = {"kind": "message", "payload": {"failed_outcomes": [{"failure_reason": (
    "R3 gave an invalid ExecutionResult answer twice (model 'qwen', tool tier): does not match the schema")}]}}
PLAN_GIVE_UP = {"kind": "message", "payload": {"summary": "the planner broke the plan rules twice: subtask 1: …"}}


@pytest.mark.parametrize(("row", "records", "kind"), [
    ({"solved": True}, [TOOL], None),
    ({"solved": False, "error": "R1 (brain tier, model 'q' at http://127.0.0.1:8080/v1): cannot connect to the "
      "endpoint (ConnectError: refused)"}, [], "endpoint"),
    ({"solved": False}, [FORMAT_GIVE_UP], "format"),
    ({"solved": False}, [PLAN_GIVE_UP], "plan_rules"),
    ({"solved": False}, [PLAN_GIVE_UP, TOOL], "wrong_command"),  # a later round ran commands: not the rules' fault
    ({"solved": False}, [{"kind": "llm", "ok": True}], "no_tool_call"),
    ({"solved": False, "law1": [{"command": "rm -r /system/x", "approved": False}]}, [TOOL], "law1_refusal"),
    ({"solved": False, "law1": [{"command": "rm x", "approved": True}], "final_directive": "accept"}, [TOOL],
     "accepted_wrong"),
    ({"solved": False, "final_directive": "abandon"}, [TOOL], "wrong_command"),
])
def test_failure_kind(row: dict, records: list[dict], kind: str | None) -> None:
    assert failure_kind(row, records) == kind


def test_llm_counts_reads_repairs_and_invalid_answers() -> None:
    records = [
        {"kind": "llm", "ok": True, "repairs": [{"kind": "fenced_json"}, {"kind": "sequence_shift"}]},
        {"kind": "llm", "ok": False, "error": "invalid answer: does not match the schema: output: …"},
        {"kind": "llm", "ok": False,
         "error": "HTTP 500: response_format.type: Input should be 'text' or 'json_object'"},
        {"kind": "tool"},
    ]
    assert llm_counts(records) == {"llm_calls": 3, "invalid_answers": 1, "repaired_answers": 1, "repairs": 2,
                                   "format_refusals": 1}


def test_by_kind_lists_every_kind() -> None:
    counts = by_kind([{"failure": "format"}, {"failure": "format"}, {"failure": None}, {"failure": "law1_refusal"}])
    assert counts["format"] == 2 and counts["law1_refusal"] == 1 and counts["endpoint"] == 0
