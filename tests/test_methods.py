"""A directed replan blocks a method, never the shell (artoo.tasks.blame.methods), table-driven on failures real
runs of the 1.5B model had: the program and the options that failed are what the next round may not use."""

from __future__ import annotations

import pytest

from artoo.config.contracts import SubTaskOutcome, ToolCall
from artoo.tasks.blame.methods import blamed_methods, complained, method_of, methods, refused_method


@pytest.mark.parametrize("command, expected", [
    ("grep -E 'a,30$' data.csv > out.csv", ["grep -E"]),
    ("mkdir archive && mv *.bak archive/", ["mkdir", "mv"]),
    ("LC_ALL=C sort -rn scores.txt | head -n 3", ["sort -rn", "head -n"]),
    ("grep -rl TODO --include=*.py .", ["grep --include -rl"]),
    ("find logs/ -type f -name '*.log' -exec grep -c ERROR {} +", ["find -c -exec -name -type"]),
    ("cat x | wc -l", ["cat", "wc -l"]),
    ("if [ -f x ]; then echo y; fi", ["test", "echo"]),  # the grammar reads [ … ] as test
    ("echo 'unclosed", []),  # the grammar cannot read it: no method to blame
])
def test_methods(command, expected):
    assert methods(command) == expected


@pytest.mark.parametrize("command, output, blamed", [
    # a retry's mkdir met the folder the first attempt made: mkdir failed, the mv was never the problem
    ("mkdir archive && mv *.bak archive/", "mkdir: cannot create directory 'archive': File exists\n[exit code 1]",
     ["mkdir"]),
    ("cp *.csv backup", "cp: target 'backup' is not a directory\n[exit code 1]", ["cp"]),
    # rm spoke, but runs under xargs: no program of the line spoke by its own name, so all of them are blamed
    ("cat list.txt | xargs rm", "rm: cannot remove 'x': No such file or directory\n[exit code 123]",
     ["cat", "xargs"]),
    ("grep -E 'a,30$' data.csv > out.csv", "[exit code 1]", ["grep -E"]),  # no program spoke: all of them
])
def test_only_the_programs_that_complained_are_blamed(command, output, blamed):
    assert complained(command, output) == blamed


def outcome(*calls: ToolCall) -> SubTaskOutcome:
    return SubTaskOutcome(subtask_id="s", parent_task_id="t", status="failed", calls=list(calls))


@pytest.mark.parametrize("calls, blocked", [
    ([ToolCall(tool="shell", input="mkdir archive && mv *.bak archive/", ok=False,
               output="mkdir: cannot create directory 'archive': File exists")], ["shell:mkdir"]),
    ([ToolCall(tool="shell", input="ls *.log > out.txt"), ToolCall(tool="shell", input="cat out.txt")],
     ["shell:cat"]),  # nothing failed but the step did: its last command's method
    ([ToolCall(tool="glob", input="*.log", ok=False)], []),  # no shell call: nothing of the shell to block
    ([ToolCall(tool="shell", input="rm -rf x", ok=False, denied=True)], []),  # a person's "no" blames no method
])
def test_blamed_methods(calls, blocked):
    assert blamed_methods([outcome(*calls)]) == blocked


@pytest.mark.parametrize("command, blocked, refused", [
    ("grep -E 'x' data.csv", {"grep -E"}, "grep -E"),
    ("grep -e 'x' data.csv", {"grep -E"}, None),  # the same program another way stays open
    ("awk -F, '$3>30' data.csv", {"grep -E"}, None),  # another program stays open
    ("mkdir -p archive", {"mkdir"}, None),
    ("mkdir archive", {"mkdir"}, "mkdir"),
])
def test_refused_method(command, blocked, refused):
    assert refused_method(command, blocked) == refused


def test_a_program_path_is_its_name():
    assert method_of(["/usr/bin/grep", "-c", "x"]) == "grep -c"
