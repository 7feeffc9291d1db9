"""Law 0 by code: a model's pass that rests on a claim alone is turned to a fail.

Checks decide the criteria that carry one (artoo.tasks.checks); what is left is judged by a model, and a small
one passes what it is told.  What it says it saw is checked here against what code recorded: the tool calls,
the named files as code read them after the work, and which files existed before the task.  Each rule is a
named object with one reason (``RULES``) reading recorded facts and a criterion's file names (by path syntax);
one, ``echoes``, also compares the evidence with the criterion's words (docs/deviations.md lists the rules that
read English words, with the tests that keep them).  R4a and R4b share them (a role never imports another).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from artoo.config.contracts import CriterionVerdict
from artoo.tasks.roles.prompting import file_paths

CLAIM_WORDS = 4
"""Evidence of fewer words is too short to tell a quoted claim from a fact ("totals.md exists")."""
ECHO_SHARE = 0.7
"""Share of a criterion's words an evidence must repeat to be read as the criterion said back."""
QUOTED_SHARE = 0.5
"""Share of a file's words evidence must hold to be read as quoting the file."""

NO_CALL = "no tool was called: a claim about {names} is not evidence (read, list or write it with a tool)"
MISSING = ("{name} does not exist (code looked after the work; it did not exist before the task and this run did "
           "not delete it): a criterion about it cannot pass")
ECHOED = ("the evidence is the executor's own claim restating the criterion, found in no tool call: "
          "a criterion said back is not evidence; quote what a tool printed")
CLAIMED = ("the evidence is the executor's own claim, found in no tool call and no file as code read it: "
           "quote what a tool printed or what the file holds")
ELSEWHERE = ("the evidence neither names {name} nor quotes what it holds; code read {name} after the work: "
             "{head!r}. A pass on what a file holds rests on that file")
UNRUN = ("{name} holds {expr!r} as text: write_file wrote it there literally and runs no shell, so the file "
         "does not hold that command's output")
PARROTED = ("the evidence repeats code's objection to an earlier answer: code's words are not evidence; quote what a "
            "tool printed or what the file holds")

SCRIPT_SUFFIXES = frozenset({
    ".bash", ".cfg", ".conf", ".env", ".fish", ".ini", ".js", ".mk", ".pl", ".ps1", ".py", ".rb", ".sh",
    ".toml", ".ts", ".yaml", ".yml", ".zsh",
})
"""File types where ``$(…)`` is code meant to stay text (a script, a config): never judged by ``LITERAL``."""
CODE_WORDS = ("is not evidence", "found in no tool call", "a criterion said back", "no tool was called",
              "had no ground", "as text: write_file wrote it")
"""Phrases of code's own reasons above: evidence holding one quotes code's objection, not the work."""
_SUBSTITUTION = re.compile(r"\$\([^)\n]*\)|\$\{[^}\n]*\}")
_QUOTED_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


@dataclass(frozen=True)
class Facts:
    """What code recorded about the work a validator judged."""

    calls: list[str]
    """The tool calls as code recorded them (``tool: input → output``)."""
    claim: str = ""
    """What the executors said (never shown to a validator; a pass quoting it quotes nothing recorded)."""
    found: list[str] = field(default_factory=list)
    """The named files as code read them after the work (``name: exists, …``)."""
    absent: list[str] = field(default_factory=list)
    """The named files code found missing after the work."""
    subject: list[str] = field(default_factory=list)
    """The files the work was to produce: a criterion that names none is about them."""
    existed: Collection[str] | None = None
    """The named files that existed before the task (None: no copy of the folder was kept to tell)."""


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


def subject_file(criterion: str) -> str | None:
    """The criterion's first named file (by path syntax), the one code checks it against; None when it names none."""
    named = file_paths(criterion)
    return named[0] if named else None


def content_now(name: str | None, found: list[str]) -> str | None:
    """What code read in ``name`` after the work (its head), or None when it did not read it."""
    state = next((f for f in found if name and f.startswith(f"{name}: exists, ")), None)
    return state.split("\n", 1)[1] if state and "\n" in state else None


def _written_here(name: str, calls: list[str]) -> bool:
    """Whether a recorded ``write_file`` call of this work names ``name`` (by its base name) as its path."""
    base = os.path.basename(name)
    return any(c.startswith("write_file:") and base in c.split("→", 1)[0] for c in calls)


def parroted(criterion: str, evidence: str, facts: Facts) -> str | None:
    """Evidence holding one of code's own reasons quotes code's objection, not the work."""
    said = words(evidence)
    return PARROTED if any(words(phrase) in said for phrase in CODE_WORDS) else None


def no_call(criterion: str, evidence: str, facts: Facts) -> str | None:
    """A pass on a file with no tool call at all behind it rests on a claim."""
    named = file_paths(criterion) or list(facts.subject)
    return NO_CALL.format(names=", ".join(named)) if named and not facts.calls else None


def missing(criterion: str, evidence: str, facts: Facts) -> str | None:
    """A pass on a file that is not there, was not there before the task and that no call of the run deleted.

    Whether the file existed before is known from the copy of the folder the task kept; without one, a file
    that no tool call names (by its base name) stands in for "never there" (a call that deleted it names it)."""
    name = subject_file(criterion)
    if name is None or name not in facts.absent:
        return None
    if facts.existed is not None:
        return None if name in facts.existed else MISSING.format(name=name)
    named = os.path.basename(name).casefold() in "\n".join(facts.calls).casefold()
    return None if named else MISSING.format(name=name)


def claimed(criterion: str, evidence: str, facts: Facts) -> str | None:
    """A pass whose evidence is the executor's sentence, found in no tool call and no file as code read it."""
    if not claim_only(evidence, words(facts.claim), words("\n".join([*facts.calls, *facts.found]))):
        return None
    if echoes(evidence, criterion):
        return ECHOED
    return CLAIMED if file_paths(criterion) or facts.subject else None


def literal(criterion: str, evidence: str, facts: Facts) -> str | None:
    """A data file that ``write_file`` wrote holding a shell substitution as text holds no command's output."""
    name = subject_file(criterion)
    content = content_now(name, facts.found)
    if (content is None or os.path.splitext(name)[1].casefold() in SCRIPT_SUFFIXES
            or not _written_here(name, facts.calls)):
        return None
    expr = _SUBSTITUTION.search(_QUOTED_CODE.sub(" ", content))
    return UNRUN.format(name=name, expr=expr.group(0)) if expr else None


def elsewhere(criterion: str, evidence: str, facts: Facts) -> str | None:
    """A pass on what a file holds whose evidence quotes another call and neither names nor quotes the file."""
    name, said = subject_file(criterion), words(evidence)
    content = content_now(name, facts.found)
    source = [c for c in facts.calls if said and f" {said} " in f" {words(c)} "]
    if content is None or not source or said.count(" ") < CLAIM_WORDS - 1:
        return None
    base = os.path.basename(name).casefold()
    held = set(words(content).split())
    if (not held or any(base in c.casefold() for c in [evidence, *source])
            or len(held & set(said.split())) > QUOTED_SHARE * len(held)):
        return None
    return ELSEWHERE.format(name=name, head=content.strip()[:80])


@dataclass(frozen=True)
class Rule:
    """One reason a model's pass is not evidence, as a named, separately tested object."""

    name: str
    test: Callable[[str, str, Facts], str | None]
    """(criterion, evidence, facts) → why the pass fails, or None."""


RULES = (Rule("parroted", parroted), Rule("no_call", no_call), Rule("missing", missing), Rule("claimed", claimed),
         Rule("literal", literal), Rule("elsewhere", elsewhere))
"""In order: the first rule with a reason turns the pass."""


def why_ungrounded(criterion: str, evidence: str, facts: Facts) -> str | None:
    """Why a pass on ``criterion`` rests on a claim alone; None when it may stand."""
    for rule in RULES:
        reason = rule.test(criterion, evidence or "", facts)
        if reason:
            return reason
    return None


REJUDGE = ("An earlier answer to this was checked by code against the tool calls it recorded and the files as "
           "it read them, and its passes on these had no ground:\n{reasons}\nJudge every criterion again. A pass "
           "needs evidence quoted from a recorded tool call or from a file as code read it (shown above where "
           "code read one): pass a criterion that such a file or call shows met, quoting it, and fail one that "
           "nothing there shows met.")
"""What a validator is told when code turned some of its passes: asked once more before the verdict stands."""
READ_CHARS = 300
"""Characters of a criterion's file, as code read it, repeated under that criterion in the re-ask."""


def objection(verdicts: list[CriterionVerdict], turned: list[str], found: list[str] = ()) -> str:
    """The re-ask after an overrule: each turned criterion with code's reason and, where code read the criterion's
    file, what it holds, right there (a small model re-asked with the reason alone turned a right file's pass to a
    fail although the file stood in its prompt a thousand tokens back)."""
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
    """Each model pass ``why`` has a reason against turned to a logical fail with that reason as evidence (a check's
    verdict is never turned); the verdicts, and the criteria turned."""
    out, turned = [], []
    for v in verdicts:
        reason = why(v) if v.verdict == "pass" and v.by == "model" else None
        if reason:
            turned.append(v.criterion)
            v = v.model_copy(update={"verdict": "fail", "failure_class": "logical", "evidence": reason})
        out.append(v)
    return out, turned
