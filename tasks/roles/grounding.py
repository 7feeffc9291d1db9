"""Law 0 by code: a validator's pass that rests on a claim alone is turned to a fail.

Both validators judge with a model, and with a small one they pass what they are told.  Three real
runs of #25 (Qwen2.5-Coder-1.5B) exited 0 on a file never written or written wrong: R4a passed the
executor's "totals.md exists" with no tool call behind it (t3), R4a quoted the executor's sentence
back over a wrong file (t10), and R4b passed "totals.md holds …" quoting a step's sentence when no
totals.md existed at all (t14); R4a passed quoting a real ``wc`` output while the file held a placeholder
(t19).  What a model says it saw is checked here against what code recorded:
the tool calls, and the named files as code read them after the work.  The rules are shared by R4a and
R4b (a role never imports another) and apply only to criteria about files, where code can know.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from artoo.config.contracts import CriterionVerdict
from artoo.tasks.roles.prompting import file_paths

ABSENCE_WORDS = frozenset({
    "absent", "clean", "cleaned", "delete", "deleted", "deletes", "gone", "missing", "move", "moved", "no",
    "not", "remove", "removed", "removes", "rename", "renamed", "without",
})
"""Words of a criterion for which a missing file may be the success ("old.log is deleted")."""
CLAIM_WORDS = 4
"""Evidence of fewer words is too short to tell a quoted claim from a fact ("totals.md exists")."""

NO_CALL = "no tool was called: a claim about {names} is not evidence (read, list or write it with a tool)"
"""Why a pass on a file with no tool call behind it fails."""
MISSING = ("{name} does not exist (code looked after the work, and no tool call names it): "
           "a criterion about it cannot pass")
"""Why a pass on a file that is not there fails."""
ECHO_SHARE = 0.7
"""Share of a criterion's words an evidence must repeat to be read as the criterion said back."""
ECHOED = ("the evidence is the executor's own claim restating the criterion, found in no tool call: "
          "a criterion said back is not evidence; quote what a tool printed")
"""Why a pass whose evidence is the executor's restatement of the criterion fails, whatever it is about."""
CLAIMED = ("the evidence is the executor's own claim, found in no tool call and no file as code read it: "
           "quote what a tool printed or what the file holds")
"""Why a pass whose evidence is the executor's sentence fails."""

ELSEWHERE = ("the evidence neither names {name} nor quotes what it holds; code read {name} after the work: "
             "{head!r}. A pass on what a file holds rests on that file")
"""Why a pass on a file's content whose evidence is about other output fails."""
QUOTED_SHARE = 0.5
"""Share of a file's words evidence must hold to be read as quoting the file."""
UNRUN = ("{name} holds {expr!r} as text: write_file wrote it there literally and runs no shell, so the file "
         "does not hold that command's output")
"""Why a pass on a data file holding a shell substitution write_file wrote fails."""
SCRIPT_SUFFIXES = frozenset({
    ".bash", ".cfg", ".conf", ".env", ".fish", ".ini", ".js", ".mk", ".pl", ".ps1", ".py", ".rb", ".sh",
    ".toml", ".ts", ".yaml", ".yml", ".zsh",
})
"""Suffixes of files where ``$(…)`` is code meant to stay text (a script, a config): never judged by UNRUN."""
UNSOURCED = ("{name} holds {numbers} that no tool printed: a count written by hand is not evidence; compute it "
             "with a tool (a command redirected into the file, or written after the output came back)")
"""Why a pass on a count or measure in a file written by hand, from numbers no tool printed, fails."""
MEASURE_WORDS = frozenset({
    "bytes", "count", "counted", "counts", "how", "lines", "number", "size", "sizes", "sum", "total", "totals",
    "words",
})
"""Words of a criterion about a measured quantity, whose numbers code can expect a tool to have printed."""
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_EXIT_CODE = re.compile(r"\[exit code -?\d+\]")
_SUBSTITUTION = re.compile(r"\$\([^)\n]*\)|\$\{[^}\n]*\}")
_QUOTED_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def words(text: str) -> str:
    """Text as lowercase words joined by one space (quotes, punctuation and line breaks ignored)."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def claim_only(evidence: str, claim: str, ground: str) -> bool:
    """True when ``evidence`` (long enough to tell) is text of ``claim`` found nowhere in ``ground``
    (all three as ``words``)."""
    said = words(evidence)
    return said.count(" ") >= CLAIM_WORDS - 1 and f" {said} " in f" {claim} " and f" {said} " not in f" {ground} "


def echoes(evidence: str, criterion: str) -> bool:
    """True when the evidence restates the criterion: it holds at least ECHO_SHARE of the criterion's words of
    three letters or more (a criterion with fewer than three such words is never echoed)."""
    wanted = {w for w in words(criterion).split() if len(w) >= 3}
    said = set(words(evidence).split())
    return len(wanted) >= 3 and len(wanted & said) >= ECHO_SHARE * len(wanted)


def missing(criterion: str, absent: list[str], calls: str) -> str | None:
    """The criterion's first named file when code found it absent and no tool call names it (by its
    name alone: a call may reach it by another path), unless the criterion speaks of absence (then a
    missing file may be what it asks)."""
    name = subject_file(criterion)
    if name is None or name not in absent:
        return None
    return None if os.path.basename(name).casefold() in calls.casefold() else name


def subject_file(criterion: str) -> str | None:
    """The criterion's first named file, the one code checks it against; None when it names none or
    speaks of absence (then a missing or changed file may be what it asks)."""
    named = file_paths(criterion)
    return None if not named or ABSENCE_WORDS & set(words(criterion).split()) else named[0]


def content_now(name: str | None, found: list[str]) -> str | None:
    """What code read in ``name`` after the work (its head), or None when it did not read it."""
    state = next((f for f in found if name and f.startswith(f"{name}: exists, ")), None)
    return state.split("\n", 1)[1] if state and "\n" in state else None


def unrun(criterion: str, found: list[str], calls: list[str]) -> str | None:
    """Why a pass on the criterion's first named file fails when that data file holds a shell substitution
    (``$(…)``, ``${…}``, outside Markdown code) and a recorded ``write_file`` call wrote it; else None.

    t30 of #25: ``write_file totals.md "Total lines: $(cat *.txt | wc -l)"`` ran (the tool said the text was
    written literally), and R4a passed quoting ``wc``'s output while R4b passed quoting the file itself: artoo
    exited 0 with that text as the totals.  A script or config file, where such text is the point, is left to
    the judge, as is a file no ``write_file`` call of this work names (the user's own file)."""
    name = subject_file(criterion)
    content = content_now(name, found)
    if (content is None or os.path.splitext(name)[1].casefold() in SCRIPT_SUFFIXES
            or not _written_here(name, calls)):
        return None
    expr = _SUBSTITUTION.search(_QUOTED_CODE.sub(" ", content))
    return UNRUN.format(name=name, expr=expr.group(0)) if expr else None


def _written_here(name: str, calls: list[str]) -> bool:
    """Whether a recorded ``write_file`` call of this work names ``name`` (by its base name) as its path."""
    base = os.path.basename(name)
    return any(c.startswith("write_file:") and base in c.split("→", 1)[0] for c in calls)


def _hand_written(name: str, calls: list[str]) -> bool:
    """Whether the last recorded call that wrote ``name`` (by its base name) was a ``write_file``, not a shell
    command (a redirect); reads do not write.  p6 of #25: attempt 1 wrote totals.md "0" by hand, attempt 2
    only read it back, and its pass stood: the file this work ends with is still the hand-written one."""
    base, last = os.path.basename(name), None
    for call in calls:
        tool, _, rest = call.partition(":")
        if tool in ("write_file", "shell") and base in rest.split("→", 1)[0]:
            last = tool
    return last == "write_file"


def _reads_of(name: str, call: str) -> bool:
    """Whether ``call`` reads ``name`` back: what it printed is the file itself, not a source of its numbers."""
    return call.startswith("read_file:") and os.path.basename(name) in call.split("→", 1)[0]


def unsourced(criterion: str, found: list[str], calls: list[str], earlier: list[str] = ()) -> str | None:
    """Why a pass on a measured quantity in the criterion's first named file fails when ``write_file`` wrote
    it with numbers no recorded tool output holds; else None.

    t31 and p1 of #25 (both servers): R3 listed the files with ``glob``, then wrote ``Total lines: 3`` (the
    number of files) or ``0`` with ``write_file``, and R4a passed quoting that call.  Only a criterion
    about a count or measure (``MEASURE_WORDS``), only a data file this work wrote by hand, and only numbers
    found in no tool's output (exit codes aside): a count a tool printed, or a file a command wrote, stands.
    ``earlier``: the run's earlier tool calls as code recorded them (other steps, earlier rounds): ``artoo
    demo``'s step 2 writes the 3 that step 1's ``wc`` printed, a replan's write step the count a kept result
    printed.
    """
    name = subject_file(criterion)
    content = content_now(name, found)
    if (content is None or not MEASURE_WORDS & set(words(criterion).split())
            or os.path.splitext(name)[1].casefold() in SCRIPT_SUFFIXES or not _hand_written(name, [*earlier, *calls])):
        return None
    printed = {n for c in [*calls, *earlier] if not c.startswith("write_file:") and not _reads_of(name, c)
               for n in _NUMBER.findall(_EXIT_CODE.sub(" ", c.split("→", 1)[-1]))}
    alone = [n for n in dict.fromkeys(_NUMBER.findall(content)) if n not in printed]
    return UNSOURCED.format(name=name, numbers=", ".join(alone[:5])) if alone else None


def elsewhere(criterion: str, evidence: str, found: list[str], calls: list[str]) -> str | None:
    """Why a pass on the criterion's first named file rests on another tool call's output, or None.

    The file exists and code read it (``found``); the evidence is text of recorded tool calls, none of which
    names the file, and it neither names the file nor holds more than half of the file's words.  t19 of
    #25: R4a passed "the total number of lines is written to totals.md" quoting ``wc -l *.txt``'s real
    output while totals.md held ``{{ total_lines }}``, a placeholder the model wrote before the counts
    came back.  Evidence that quotes no call ("see tool calls") is left to the judge, as is a criterion
    that speaks of absence or a file code did not read."""
    name, said = subject_file(criterion), words(evidence)
    content = content_now(name, found)
    source = [c for c in calls if said and f" {said} " in f" {words(c)} "]
    if content is None or not source or said.count(" ") < CLAIM_WORDS - 1:
        return None
    base = os.path.basename(name).casefold()
    held = set(words(content).split())
    if (not held or any(base in c.casefold() for c in [evidence, *source])
            or len(held & set(said.split())) > QUOTED_SHARE * len(held)):
        return None
    return ELSEWHERE.format(name=name, head=content.strip()[:80])


CODE_WORDS = ("is not evidence", "found in no tool call", "a criterion said back", "no tool was called",
              "had no ground", "written by hand", "as text: write_file wrote it")
"""Phrases of code's own reasons above: evidence holding one quotes code's objection, not the work."""
PARROTED = ("the evidence repeats code's objection to an earlier answer: code's words are not evidence; quote what a "
            "tool printed or what the file holds")
"""Why a pass whose evidence holds code's reason fails (t39 of #25: R4a re-asked wrote its claim followed by
code's "a criterion said back is not evidence", and passed)."""


def parrots(evidence: str) -> bool:
    """Whether the evidence holds one of code's own reasons (``CODE_WORDS``)."""
    said = words(evidence)
    return any(words(phrase) in said for phrase in CODE_WORDS)


def why_ungrounded(criterion: str, evidence: str, *, calls: list[str], claim: str, found: list[str],
                   absent: list[str], subject: list[str] = (), earlier: list[str] = ()) -> str | None:
    """Why a pass on ``criterion`` rests on a claim alone; None when it may stand.

    ``calls``: the tool calls recorded by code; ``claim``: what the executors said; ``found``: the named
    files as code read them; ``absent``: the named files code found missing; ``subject``: files the
    work was to produce, making a criterion that names none a criterion about them.  A criterion about
    no file is left to the judge (the answer itself may be the product: "a greeting is printed"), unless
    its evidence is the executor's sentence saying the criterion back (#25's eval, fs3 task 2: R3 ran
    ``glob *.c`` with no size test and answered "files … with pattern *.c that larger than 1 Kilobytes
    exist"; R4a and R4b passed that sentence).
    """
    named = file_paths(criterion) or list(subject)
    if parrots(evidence or ""):
        return PARROTED
    if not calls:
        return NO_CALL.format(names=", ".join(named)) if named else None
    gone = missing(criterion, absent, "\n".join(calls))
    if gone:
        return MISSING.format(name=gone)
    claimed = claim_only(evidence or "", words(claim), words("\n".join([*calls, *found])))
    if claimed and echoes(evidence or "", criterion):
        return ECHOED
    if claimed and named:
        return CLAIMED
    return (unrun(criterion, found, calls) or unsourced(criterion, found, calls, earlier)
            or elsewhere(criterion, evidence or "", found, calls))


REJUDGE = ("An earlier answer to this was checked by code against the tool calls it recorded and the files as "
           "it read them, and its passes on these had no ground:\n{reasons}\nJudge every criterion again. A pass "
           "needs evidence quoted from a recorded tool call or from a file as code read it (shown above where "
           "code read one), never the executor's own words: pass a criterion that such a file or call shows met, "
           "quoting it, and fail one that nothing there shows met.")
"""What a validator is told when code turned some of its passes: asked once more before the verdict stands."""


READ_CHARS = 300
"""Characters of a criterion's file, as code read it, repeated under that criterion in the re-ask."""


def objection(verdicts: list[CriterionVerdict], turned: list[str], found: list[str] = ()) -> str:
    """The re-ask after an overrule: each turned criterion with code's reason (the turned verdict's evidence)
    and, where code read the criterion's file, what it holds, right there.

    Why the file: p2 of #25 (llama-cpp-python) wrote a right totals.md with ``wc -l *.txt > totals.md``; R4b
    passed quoting the executor's sentence, and re-asked with the reason alone it turned its verdict to fail,
    though the file was in its prompt, 1,000 tokens back."""
    lines = []
    for v in verdicts:
        if v.criterion in turned:
            lines.append(f"- {v.criterion}: {v.evidence}")
            name = subject_file(v.criterion)
            content = content_now(name, list(found))
            if content is not None:
                lines.append(f"  {name} as code read it after the work: {content.strip()[:READ_CHARS]!r}")
    return REJUDGE.format(reasons="\n".join(lines))


def overrule(verdicts: list[CriterionVerdict],
             why: Callable[[CriterionVerdict], str | None]) -> tuple[list[CriterionVerdict], list[str]]:
    """Each pass ``why`` has a reason against turned to a logical fail with that reason as evidence;
    the verdicts, and the criteria turned."""
    out, turned = [], []
    for v in verdicts:
        reason = why(v) if v.verdict == "pass" else None
        if reason:
            turned.append(v.criterion)
            v = v.model_copy(update={"verdict": "fail", "failure_class": "logical", "evidence": reason})
        out.append(v)
    return out, turned
