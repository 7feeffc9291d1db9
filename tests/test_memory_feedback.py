"""The negative-feedback rule: which served SOPs a round's outcome contradicted (pure, table-driven)."""

from __future__ import annotations

import pytest

from artoo.config.contracts import SOPRecord, ToolCall
from artoo.memory.feedback import contradicted

INTENT_RULE = SOPRecord(id="i", space="intent:count_the_errors", entity="env:local", content="grep it", sigma=1.0)
INTENT_BAN = SOPRecord(id="b", space="intent:count_the_errors", entity="env:local", content="never rm", sigma=-1.0)
SHELL_RULE = SOPRecord(id="s", space="tool:shell", entity="path:/w/app.log", content="grep app.log", sigma=1.0)
SHELL_BAN = SOPRecord(id="x", space="tool:shell", entity="path:/w/app.log", content="not there", sigma=-1.0)
ALL = [INTENT_RULE, INTENT_BAN, SHELL_RULE, SHELL_BAN]


def shell(target: str, ok: bool, denied: bool = False, output: str = "grep: app.log: No such file") -> ToolCall:
    return ToolCall(tool="shell", input=f"grep x {target}", targets=[target], ok=ok, denied=denied, output=output)


@pytest.mark.parametrize(
    ("state", "reason", "calls", "expected"),
    [
        ("break_symmetry", None, [], ["i"]),
        ("change_approach", None, [shell("/w/app.log", False)], ["i", "s"]),
        ("abandon", "budget", [], ["i"]),
        ("abandon", "law2", [], ["i"]),
        ("abandon", "omega", [], []),  # out of time says nothing about the rule
        ("change_path", None, [], []),  # environmental: the approach stands
        ("refine", None, [shell("/w/app.log", False)], ["s"]),  # the shell rule's own call failed
        ("accept", None, [shell("/w/app.log", True)], []),
        ("change_path", None, [shell("/w/app.log", False, denied=True)], []),  # the person said no
        ("change_path", None, [shell("/w/other.log", False)], []),  # another target
        ("change_path", None, [ToolCall(tool="read_file", targets=["/w/app.log"], ok=False)], []),  # another tool
    ],
)
def test_contradicted_rules(state, reason, calls, expected):
    found = contradicted(state, reason, ALL, calls)
    assert [sop.id for sop, _ in found] == expected  # a MUST NOT rule (σ ≤ 0) is never contradicted


def test_the_feedback_says_what_contradicted_the_rule():
    ((_, why_intent), (_, why_shell)) = contradicted("break_symmetry", None, ALL, [shell("/w/app.log", False)])
    assert why_intent == "a plan made with this rule failed: the GGS chose break_symmetry"
    assert why_shell == "shell on /w/app.log failed: grep: app.log: No such file"
    ((_, why),) = contradicted("abandon", "law2", [INTENT_RULE], [])
    assert why == "a plan made with this rule failed: abandoned (law2)"
