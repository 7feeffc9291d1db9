"""Law 0 by code (tasks/roles/grounding.py): which validator passes rest on a claim alone, table-driven.

The rows are the real cases of #25's runs with Qwen2.5-Coder-1.5B (t3, t10, t14) and the passes that
must stand beside them (a criterion about no file, a file that is meant to be gone, a fact quoted from
a tool).  The validators' own tables (test_roles_agent_validator, test_roles_meta_validator) check how
each role feeds these rules.
"""

from __future__ import annotations

import pytest

from artoo.config.contracts import CriterionVerdict
from artoo.tasks.roles.grounding import (
    CLAIMED,
    ECHOED,
    ELSEWHERE,
    MISSING,
    NO_CALL,
    PARROTED,
    RULES,
    UNRUN,
    Facts,
    claim_only,
    echoes,
    missing,
    overrule,
    why_ungrounded,
)

T14_TASK = "totals.md holds the total number of lines of every .txt file in the working folder"
T14_SAID = "The total number of lines is calculated correctly."  # step 2's executor output, quoted by R4a and R4b
T14_CALLS = ["glob: *.txt → a.txt\nb.txt\nc.txt", "shell: wc -l *.txt →  3 a.txt\n 5 b.txt\n 1 c.txt\n 9 total"]
WROTE = ["shell: wc -l *.txt > totals.md → [exit code 0]"]
FILE = "totals.md: exists, 44 bytes, 4 lines:\n 3 a.txt\n 5 b.txt\n 1 c.txt\n 9 total"


T19_STEP = "The total number of lines is written to totals.md"  # t19's step criterion; R4a quoted wc's output
T19_WC = "shell: wc -l *.txt → 3 a.txt\n 5 b.txt\n 1 c.txt\n 9 total"
T19_FILE = "totals.md: exists, 17 bytes, 1 line:\n{{ total_lines }}"
T19_WHY = ELSEWHERE.format(name="totals.md", head="{{ total_lines }}")


T30_STEP = "totals.md exists and holds the total number of lines of every .txt file in the working folder"
T30_WRITE = ("write_file: totals.md → created /w/totals.md (33 characters). Note: the content was written literally, "
             "$(cat *.txt | wc -l) included: write_file runs no shell.")
T30_FILE = "totals.md: exists, 33 bytes, 1 line:\nTotal lines: $(cat *.txt | wc -l)"
T30_R4B = "The file 'totals.md' exists, has 33 bytes, and contains the line 'Total lines: $(cat *.txt | wc -l)'"
T30_WHY = UNRUN.format(name="totals.md", expr="$(cat *.txt | wc -l)")




FS3_TASK2 = "files in the /w directory with pattern *.c that larger than 1 Kilobytes exist"
FS3_SAID = "Files in the /w directory with pattern *.c that larger than 1 Kilobytes exist."
FS3_GLOB = ["glob: *.c → /w/dir1/file.c\n/w/dir1/hello.c\n/w/dir1/sum.c"]


@pytest.mark.parametrize("criterion, evidence, calls, claim, found, absent, subject, why", [
    # t14, R4b: the task criterion names totals.md; nothing wrote it, code found it absent
    (T14_TASK, T14_SAID, T14_CALLS, T14_SAID, [], ["totals.md"], [], MISSING.format(name="totals.md")),
    # t14, R4a: the step's criterion names no file; the evidence is the executor saying it back
    ("The total number of lines is calculated correctly", T14_SAID, T14_CALLS, T14_SAID, [], [], ["totals.md"],
     ECHOED),
    ("The total number of lines is calculated correctly", T14_SAID, T14_CALLS, T14_SAID, [], [], [], ECHOED),
    # the claim quoted, not an echo: a file the step was to write makes it a claim about that file
    ("the sum is computed", "nine lines were counted in all", T14_CALLS, "nine lines were counted in all", [], [],
     ["totals.md"], CLAIMED),
    ("the sum is computed", "nine lines were counted in all", T14_CALLS, "nine lines were counted in all", [], [],
     [], None),  # about no file: the answer may be the product
    # t3: no tool call behind a pass on a file
    (T14_TASK, "totals.md exists", [], "totals.md exists", [], ["totals.md"], [], NO_CALL.format(names="totals.md")),
    ("the sum is right", "9", [], "9", [], [], ["totals.md"], NO_CALL.format(names="totals.md")),
    # the file is there and the evidence is what it holds, or what a tool printed: the pass stands
    (T14_TASK, "3 a.txt 5 b.txt 1 c.txt 9 total", WROTE, "done", [FILE], [], [], None),
    (T14_TASK, "wc -l *.txt > totals.md, exit code 0", WROTE, "I wrote totals.md with wc -l", [], [], [], None),
    # absent, but a tool call names it: the model saw that call, code cannot say more (moved, another cwd)
    (T14_TASK, "wc -l *.txt > totals.md", WROTE, "done", [], ["totals.md"], [], None),
    # absent and named by no call, with no copy of the folder to tell whether it was there before: missing
    ("old.log is deleted from the folder", "rm ran", ["shell: rm -f x → [exit code 0]"], "", [], ["old.log"], [],
     MISSING.format(name="old.log")),
    # only the first file named is the criterion's subject: an input named second may live elsewhere
    ("report.md lists the errors of app.log", "ERROR x", ["shell: grep ERROR srv/app.log > report.md → "], "",
     [], ["app.log"], [], None),
    # named by its path, reached by another: the call names it by its name, so code cannot say it is missing
    ("/w/dir1/a.c is listed", "a.c is listed", ["shell: find /w -name '*.c' → ./dir1/a.c"], "", [], ["/w/dir1/a.c"],
     [], None),
    ("/w/dir1/a.c is listed", "a.c is listed", ["shell: find /w -name '*.h' → "], "", [], ["/w/dir1/a.c"], [],
     MISSING.format(name="/w/dir1/a.c")),
    # #25's eval, fs3 task 2: no file named, but the evidence is R3's sentence saying the criterion back
    (FS3_TASK2, FS3_SAID, FS3_GLOB, FS3_SAID, [], [], [], ECHOED),
    (FS3_TASK2, "glob: *.c → /w/dir1/file.c /w/dir1/hello.c", FS3_GLOB, FS3_SAID, [], [], [], None),
    # the answer is the product and the evidence quotes it: not an echo of the criterion
    ("a joke about cats is told", "Why did the cat sit on the computer? To keep an eye on the mouse.",
     ["shell: echo ok → ok"], "Why did the cat sit on the computer? To keep an eye on the mouse.", [], [], [], None),
    # t19, R4a: real output quoted, but not totals.md's: the file held the placeholder written blind
    (T19_STEP, T19_WC, [T19_WC, "write_file: totals.md → created"], "written", [T19_FILE], [], [], T19_WHY),
    # the evidence names the file, quotes what it holds, or quotes what code showed about it: it stands
    (T19_STEP, "3 a.txt 5 b.txt 1 c.txt 9 total", [T19_WC], "done", [FILE], [], [], None),
    (T19_STEP, T19_WC, [T19_WC], "done", ["totals.md: exists, 8 bytes, 1 line:\n9 total\n"], [], [], None),
    (T19_STEP, "write_file: totals.md → created", [T19_WC], "done", [T19_FILE], [], [], None),
    ("totals.md exists", "exists, 17 bytes, 1 line", [T19_WC], "done", [T19_FILE], [], [], None),
    (T19_STEP, "see tool calls", [T19_WC], "done", [T19_FILE], [], [], None),  # quotes no call: left to the judge
    (T19_STEP, "3 a.txt 5 b.txt 1 c.txt 9 total", ["shell: wc -l *.txt | tee totals.md → 3 a.txt 5 b.txt 1 c.txt "
     "9 total"], "done", [T19_FILE], [], [], None),  # the call it quotes names the file
    ("totals.md is deleted", T19_WC, [T19_WC], "done", [T19_FILE], [], [],  # still there: quoting wc proves nothing
     ELSEWHERE.format(name="totals.md", head="{{ total_lines }}")),
    # t30: write_file wrote a shell substitution as text; R4a quoted wc, R4b quoted the file itself
    (T30_STEP, T19_WC, [T19_WC, T30_WRITE], "Total lines: 33", [T30_FILE], [], [], T30_WHY),
    (T14_TASK, T30_R4B, [T19_WC, T30_WRITE], "Total lines: 33", [T30_FILE], [], [], T30_WHY),
    ("totals.md holds ${TOTAL}", T30_R4B, ["write_file: totals.md → created"], "done",
     ["totals.md: exists, 8 bytes, 1 line:\n${TOTAL}"], [], [], UNRUN.format(name="totals.md", expr="${TOTAL}")),
    # the same text where it is meant to stay text: a script, Markdown code, a file this work did not write
    ("count.sh prints the total", "echo $(cat *.txt | wc -l)", ["write_file: count.sh → created"], "done",
     ["count.sh: exists, 28 bytes, 1 line:\necho $(cat *.txt | wc -l)"], [], [], None),
    ("notes.md explains the count", "notes.md: `$(cat *.txt | wc -l)` counts", ["write_file: notes.md → created"],
     "done", ["notes.md: exists, 36 bytes, 1 line:\nRun `$(cat *.txt | wc -l)` to count"], [], [], None),
    (T30_STEP, T30_R4B, [T19_WC, "shell: cat totals.md → Total lines: $(cat *.txt | wc -l)"], "done", [T30_FILE],
     [], [], None),
    # no file at all: the answer may be the product
    ("a greeting is printed", "Hello there my friend", [], "Hello there my friend", [], [], [], None),
])
def test_why_ungrounded(criterion, evidence, calls, claim, found, absent, subject, why):
    facts = Facts(calls=calls, claim=claim, found=found, absent=absent, subject=subject)
    assert why_ungrounded(criterion, evidence, facts) == why


@pytest.mark.parametrize("criterion, absent, existed, calls, missing_name", [
    # deleted by this run (it was there before the task): absence is the work, whatever the criterion says
    ("old.log is deleted from the folder", ["old.log"], {"old.log"}, ["shell: rm *.log → [exit code 0]"], None),
    ("backup/a.csv is moved into archive/", ["backup/a.csv"], {"backup/a.csv"}, ["shell: mv backup/*.csv archive/"],
     None),
    # never there and still not there: a criterion about it cannot pass, even if a call names it
    ("report.md holds the summary", ["report.md"], set(), ["shell: cat report.md → No such file"], "report.md"),
    ("backup/report.md exists", ["backup/report.md"], set(), ["shell: cp report.md backup/ → [exit code 1]"],
     "backup/report.md"),
    ("notes.txt is not empty", ["notes.txt"], set(), [], "notes.txt"),
    # there now: the rule says nothing (content is the judge's and the checks' business)
    ("out.txt lists the matching logs", [], set(), ["shell: grep -l ERROR *.log > out.txt"], None),
])
def test_missing_reads_what_existed_before_the_task_not_the_criterions_words(criterion, absent, existed, calls,
                                                                             missing_name):
    facts = Facts(calls=calls, absent=absent, existed=existed)
    assert missing(criterion, "ok", facts) == (MISSING.format(name=missing_name) if missing_name else None)


def test_the_rules_are_named_objects_in_their_order():
    assert [r.name for r in RULES] == ["parroted", "no_call", "missing", "claimed", "literal", "elsewhere"]


@pytest.mark.parametrize("evidence, claim, ground, expected", [
    ("The total number of lines is calculated correctly.", "the total number of lines is calculated correctly",
     "wc l txt 9 total", True),
    ("totals.md exists", "totals md exists", "", False),  # three words: too short to tell
    ("9 total lines in all", "9 total lines in all", "9 total lines in all files", False),  # a tool printed it too
    ("5 total lines in all", "25 total lines in all", "", False),  # whole words, not a substring
    ("lines is calculated correctly", "the total number of lines", "", False),  # not what was claimed
])
def test_claim_only(evidence, claim, ground, expected):
    assert claim_only(evidence, claim, ground) is expected


def test_missing_without_a_copy_needs_the_name_in_no_call_case_folded():
    def named(absent, calls):
        return missing("Totals.md holds the counts", "ok", Facts(calls=calls, absent=absent))
    assert named(["Totals.md"], ["shell: cat TOTALS.MD → no such file"]) is None
    assert named(["Totals.md"], ["glob: *.txt → a.txt"]) == MISSING.format(name="Totals.md")
    assert named([], ["glob: *.txt → a.txt"]) is None


def test_overrule_turns_only_passes_and_says_why():
    given = [CriterionVerdict(criterion="a", verdict="pass", evidence="e"),
             CriterionVerdict(criterion="b", verdict="pass", evidence="e"),
             CriterionVerdict(criterion="c", verdict="fail", failure_class="environmental", evidence="net down")]
    out, turned = overrule(given, lambda v: "no" if v.criterion != "b" else None)
    assert turned == ["a"]
    assert [(v.verdict, v.failure_class, v.evidence) for v in out] == [
        ("fail", "logical", "no"), ("pass", None, "e"), ("fail", "environmental", "net down")]


@pytest.mark.parametrize("evidence, criterion, expected", [
    (FS3_SAID, FS3_TASK2, True),
    ("The total number of lines is calculated correctly.", "The total number of lines is calculated correctly", True),
    ("The total number of lines is calculated correctly.", T14_TASK, False),  # t14's R4b: 4 of 11 words
    ("3 a.txt 5 b.txt 1 c.txt 9 total", T14_TASK, False),
    ("it is done", "it is done", False),  # under three words of three letters: never an echo
])
def test_echoes(evidence, criterion, expected):
    assert echoes(evidence, criterion) is expected


T39_R4A_AGAIN = ("The total number of lines is written to totals.md in the working folder: the evidence is the "
                 "executor's own claim restating the criterion, found in no tool call: a criterion said back is not "
                 "evidence; quote what a tool printed")
"""t39's R4a, re-asked after code turned its pass: its claim, then code's reason, copied as evidence (a pass)."""


@pytest.mark.parametrize("evidence, parroted", [
    (T39_R4A_AGAIN, True),
    ("totals.md as code read it after the work: '3 a.txt\\n 5 b.txt\\n 1 c.txt\\n 9 total'", False),  # t38, p5
    ("shell: wc -l *.txt > totals.md → [exit code 0]", False),
    ("no tool was called", True),
])
def test_evidence_that_repeats_codes_objection_fails(evidence, parroted):
    why = why_ungrounded("totals.md holds the total", evidence,
                         Facts(calls=["shell: wc -l *.txt > totals.md → [exit code 0]"]))
    assert (why == PARROTED) is parroted
