"""One model of failure for the fast loop, the GGS and the plan rules: what failed, and where.

Why one module: a failure that is attributed one way by the GGS and matched another way by
the plan validator blocks things that never failed (a user's file read fine beside a failing
write; a plan that merely *mentions* a blocked path; a subtask that never ran counted as a
wrong approach).  So every part asks the same questions here:

* which targets a tool call touched — ``call_targets``: the resolved path, or a command's
  path arguments resolved in the workspace (lexically: no filesystem access);
* which of a subtask's calls a failure belongs to — ``attributed_calls``: the calls that
  failed for environmental reasons, never the ones that worked, never a Law-1 denial;
* how a subtask ended — ``outcome_kind``: matched, failed, skipped or denied;
* which tools a logical failure blames — ``blamed_tools``: the failing subtasks' tools, never
  one a subtask of the same round matched with;
* which targets a plan would use — ``text_targets``: path-like tokens, normalised the same way,
  so plans are matched against blocked targets exactly, never by substring (a path named
  only to rule it out, "not at X", is not used).

Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from artoo.config.contracts import SubTaskOutcome, ToolCall
from artoo.tasks.blame.error_lines import ERRNO_LINE, error_paths, missing_package
from artoo.tasks.blame.traversal import split_noise, walk_notes
from artoo.tasks.shell.parse import PLACEHOLDER, ParseError, parse, strip_prefix

OUTCOME_KINDS: tuple[str, ...] = ("matched", "failed", "skipped", "denied")
"""The four ways a subtask ends."""
PATH_TOOLS = frozenset({"read_file", "write_file", "glob"})
"""Tools whose primary argument is a path."""
_EXTENSION = re.compile(r"^[\w.~+-]*\.[A-Za-z][A-Za-z0-9]{0,7}$")
_NOT_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin"})
_STRIP = "\"'`()[]{}<>,;:!?*"


_HOME_VAR = re.compile(r"^\$(?:HOME|\{HOME\})(?=/|$)")
"""``$HOME/x`` and ``${HOME}/x``: the same file as ``~/x`` (models write all three)."""


def _tilde(path: str) -> str:
    return _HOME_VAR.sub("~", path)


def normalise(path: str, workspace: str | Path) -> str:
    """``path`` as an absolute, lexically normalised path (relative ones under ``workspace``; ``~``,
    ``$HOME`` and ``${HOME}`` are the user's home)."""
    expanded = os.path.expanduser(_tilde(path.strip()))
    return os.path.normpath(os.path.join(str(workspace), expanded))


def looks_like_path(token: str) -> bool:
    """True for a token a person would read as a file path: has a slash or a file extension."""
    token = _tilde(token)
    if not token or "://" in token or token.startswith(("$", "-")) or "=" in token:
        return False
    return "/" in token or token.startswith("~") or _EXTENSION.match(token) is not None


def command_paths(command: str) -> list[str]:
    """The path arguments of a shell command: no command names, flags, operators or numbers.

    The command is read by the shell grammar (``artoo.tasks.shell``), so both see the
    same words: quotes removed, ``$( … )`` read on its own, here-document bodies and
    delimiters no paths.  Text the grammar cannot read is taken as whatever it could read.
    """
    try:
        script = parse(command, partial=True)
    except ParseError:  # partial reading never raises; kept so a grammar change cannot break attribution
        return []
    paths: list[str] = []
    for simple in script.commands:
        words = strip_prefix(simple.words)
        paths += [w for w in words[1:] if looks_like_path(w) and not PLACEHOLDER.search(w)]
        paths += [r for r in simple.reads if not PLACEHOLDER.search(r)]
        paths += [r.target for r in simple.redirects if not PLACEHOLDER.search(r.target)]
    for inner in script.substitutions:
        paths += command_paths(inner)
    return [p for p in dict.fromkeys(paths) if p not in _NOT_TARGETS and not p.startswith("&")]


def call_targets(tool: str, value: str, workspace: str | Path) -> list[str]:
    """The normalised targets of one call: a path, a command's paths, or a query as written."""
    value = (value or "").strip()
    if not value:
        return []
    if tool in PATH_TOOLS:
        return [normalise(value, workspace)]
    if tool == "shell":
        return list(dict.fromkeys(normalise(p, workspace) for p in command_paths(value)))
    return [value]  # search and locate: the query itself


_RULES_OUT_NEXT = frozenset({"not", "never", "avoid", "avoiding", "without", "except", "excluding", "instead",
                             "rather", "don't"})
"""Words that say the path after them is not used: "not at X", "instead of X", "avoid X"."""
_RULES_OUT_PREVIOUS = frozenset({"not", "missing", "nonexistent", "blocked", "doesn't", "isn't", "wasn't"})
"""Words that say the path before them is not used: "X does not exist", "X is missing"."""
_CLAUSE_END = (",", ";", ":", ".", "!", "?", ")")
_NEAR = 3


def _word(raw: str) -> str:
    return raw.strip(_STRIP + ".").casefold()


def _ruled_out(words: list[str], i: int) -> bool:
    """True when a ruling-out word stands within ``_NEAR`` words of ``words[i]``, in the same clause."""
    for j in range(i - 1, max(i - _NEAR, 0) - 1, -1):  # before it, back to the clause's start
        if words[j].endswith(_CLAUSE_END):
            break
        if _word(words[j]) in _RULES_OUT_NEXT:
            return True
    if words[i].endswith(_CLAUSE_END):
        return False
    for j in range(i + 1, min(i + 1 + _NEAR, len(words))):  # after it, up to the clause's end
        if _word(words[j]) in _RULES_OUT_PREVIOUS:
            return True
        if words[j].endswith(_CLAUSE_END):
            break
    return False


def text_targets(text: str, workspace: str | Path) -> set[str]:
    """The normalised paths a piece of plan text would use (path-like tokens only).

    A path the text names only to rule it out — "the log is not at /srv/logz/app.log", "X is
    missing", "instead of X" — is not used: models say so when told a target is blocked, and
    re-asking them for it wastes the round.  (The toolbox still refuses a blocked target at
    call time, so a wrongly spared mention can never reach a tool.)
    """
    words = text.split()
    found = set()
    for i, raw in enumerate(words):
        token = raw.lstrip(_STRIP).rstrip(_STRIP + ".")
        if looks_like_path(token) and not _ruled_out(words, i):
            found.add(normalise(token, workspace))
    return found


def outcome_kind(outcome: SubTaskOutcome) -> str:
    """matched, failed, skipped or denied (an outcome of the spec's shape: its status)."""
    return outcome.outcome or outcome.status


def outcome_counts(outcomes: Iterable[SubTaskOutcome]) -> dict[str, int]:
    """How many subtasks ended each way, every kind present (0 when none)."""
    counts = Counter(outcome_kind(o) for o in outcomes)
    return {kind: counts.get(kind, 0) for kind in OUTCOME_KINDS}


def is_evidence(outcome: SubTaskOutcome) -> bool:
    """True when the outcome says something about the approach: skipped and denied say nothing."""
    return outcome_kind(outcome) not in ("skipped", "denied")


def _dominant_class(outcome: SubTaskOutcome) -> str:
    if outcome.failure_class is not None:
        return outcome.failure_class
    env = sum(1 for v in outcome.criteria_verdicts if v.verdict == "fail" and v.failure_class == "environmental")
    logical = sum(1 for v in outcome.criteria_verdicts if v.verdict == "fail" and v.failure_class != "environmental")
    return "environmental" if env > logical else "logical"


def _legacy_calls(outcome: SubTaskOutcome) -> list[ToolCall]:
    """An outcome without structured calls: its last evidence entry is the call that ended it."""
    for entry in reversed(outcome.tool_calls):
        name, _, rest = entry.partition(":")
        value = rest.partition("→")[0].strip()
        if name.strip():
            return [ToolCall(tool=name.strip(), input=value, targets=[value] if value else [], ok=False)]
    return []


def attributed_calls(outcome: SubTaskOutcome) -> list[ToolCall]:
    """The calls an environmental failure of this subtask belongs to ([] for any other outcome).

    The calls that failed environmentally; when the tools classified none so (a command that
    exited 1 on a missing file), the last call that failed.  Law-1 denials are never blamed, nor
    are calls that worked, except when none failed: then the last shell call whose output has
    error lines (``grep ERROR /var/log/x.log | sort > report.md`` exits 0 with "No such file" and
    an empty report), blamed only by the paths those lines name (``blamed_targets``), never
    report.md.  A file's content (read_file of a log full of "Permission denied") is data, not
    the tool's own error, so only shell calls count.
    """
    if outcome_kind(outcome) != "failed" or _dominant_class(outcome) != "environmental":
        return []
    if not outcome.calls:
        return _legacy_calls(outcome)
    failed = [c for c in outcome.calls if not c.ok and not c.denied]
    if not failed:
        return [c for c in outcome.calls if c.tool == "shell" and not c.denied and error_paths(_signal(c))][-1:]
    return [c for c in failed if c.failure_class == "environmental"] or failed[-1:]


_MISSING_PROGRAM = re.compile(r"(?m)^(?:[\w./-]+: )*(?:line \d+: )?[\w.+-]+: (?:command )?not found\s*$")
"""bash's (and sh's) word for a program that is not installed: ``bash: line 1: tree: command not found``."""


def _written(command: str) -> set[str]:
    """The paths a shell command writes, as its words spell them: redirection targets and ``tee``'s files."""
    try:
        script = parse(command, partial=True)
    except ParseError:  # partial reading never raises; kept so a grammar change cannot break attribution
        return set()
    written = {r.target for simple in script.commands for r in simple.redirects}
    for simple in script.commands:
        words = strip_prefix(simple.words)
        if words and words[0] == "tee":
            written.update(w for w in words[1:] if not w.startswith("-"))
    return written


def call_workspace(call: ToolCall) -> str | None:
    """The folder the call's relative paths were resolved in, read back from its own targets."""
    raw = [call.input.strip()] if call.tool in PATH_TOOLS else command_paths(call.input or "")
    for word in raw:
        if word.startswith(("/", "~", "$")) or ".." in word.split("/"):
            continue
        tail = os.path.normpath(word)
        for target in call.targets:
            if target.endswith("/" + tail):
                return target[: -len(tail) - 1] or "/"
    return None


def _signal(call: ToolCall) -> str:
    """A call's output without the traversal noise of its walking commands (artoo.tasks.blame.traversal)."""
    output = call.output or ""
    if call.tool != "shell" or not output:
        return output
    return split_noise(call.input or "", output, call_workspace(call))[0]


def walk_notes_of(outcomes: Iterable[SubTaskOutcome]) -> list[str]:
    """What the failed subtasks' walks could not read, one short note per walk (never a blocked target)."""
    notes: dict[str, None] = {}
    for outcome in outcomes:
        if outcome_kind(outcome) == "failed":
            notes.update(dict.fromkeys(note for c in outcome.calls if c.tool == "shell" and not c.denied
                                       for note in walk_notes(c.input or "", c.output or "", call_workspace(c))))
    return list(notes)


def _within(path: str, target: str) -> bool:
    return path == target or path.startswith(target.rstrip("/") + "/")


def blamed_targets(call: ToolCall) -> list[str]:
    """The targets a failed call is blamed on: the paths its error lines name, else all of them.

    ``grep x /srv/app.log > hits.txt`` failing with ``/srv/app.log: No such file`` blames the
    log, not the output file it would have written; ``cp notes.txt backup/notes.txt`` failing
    to create the copy blames the copy, never the user's ``notes.txt`` (artoo.tasks.blame.error_lines
    reads the error wordings).  A write that failed only because its folder is missing blames
    nothing: the next plan creates the folder and writes the same path.  A shell command
    whose program is not installed (``tree /system`` → ``tree: command not found``) blames
    none of its paths: they were never touched, and blocking them (in this task and, through
    memory, in later ones) would punish a folder for a missing program.  When the error names
    a path under one of the call's targets, that path is blamed: ``find /system -empty -exec
    rm -r {} ;`` complaining about ``/system/a/b`` blames that one.  When the errors name only
    paths that are none of the call's targets (a bare folder name ``tar czf b.tgz notes.txt
    photos`` could not stat, a file a script opened, a ``cd`` folder), those named paths are
    blamed and the call's own targets are not: the user's ``notes.txt`` and the deliverable
    ``b.tgz`` did nothing wrong.  Such a path is left alone when it cannot be placed (a relative
    one, and no word of the command says which folder it ran in) or when an interpreter could not
    open it (``[Errno 2]``: a missing input, or an output into a missing folder, maybe the deliverable).
    A script an interpreter could not find (``node tools/x.js --out r.md`` → "Cannot find module") blames
    the script, never ``r.md``; a missing package ("No module named 'pandas'") blames none of the paths.
    What a walking command could not read inside the roots it walked (artoo.tasks.blame.traversal) is no
    failed target: ``find / -name '*.conf'`` meeting ``/proc/1/fd`` blames nothing.
    """
    output = _signal(call)
    if call.tool == "shell" and (_MISSING_PROGRAM.search(output) or missing_package(output)):
        return []
    written = _written(call.input or "") if call.tool == "shell" else set()
    if call.tool == "write_file":
        written = {call.input.strip()}
    workspace = call_workspace(call)
    found = error_paths(output, written)
    if not found and output != (call.output or ""):  # only a walk's unreadable corners: nothing failed
        return []
    named = [(normalise(e.path, workspace or "/"), e.missing_parent) for e in found]
    inside = [(path, parent) for path, parent in named if any(_within(path, t) for t in call.targets)]
    if inside:  # ``find /system … -exec rm`` complaining about /system/a/b blames /system/a/b, not /system
        return list(dict.fromkeys(path for path, parent in inside if not parent))
    if named:  # only paths the command's words do not hold: those, when they can be placed and were no write
        return list(dict.fromkeys(path for (path, parent), e in zip(named, found, strict=True)
                                  if not parent and not e.opened and (workspace or os.path.isabs(_tilde(e.path)))))
    if len(call.targets) < 2:
        return list(call.targets)
    mentioned = [t for t in call.targets if _named_in_errors(t, output)]
    return mentioned or list(call.targets)


def _named_in_errors(target: str, output: str) -> bool:
    """True when an error line of ``output`` names ``target``'s file as a word of its own."""
    name = os.path.basename(target.rstrip("/"))
    if not name:
        return False
    word = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
    return any(word.search(line) for line in output.splitlines() if ERRNO_LINE.search(line))


def outcome_tools(outcome: SubTaskOutcome) -> list[str]:
    """The tools a subtask called, first call first (its structured calls, else its evidence lines)."""
    if outcome.calls:
        return list(dict.fromkeys(c.tool for c in outcome.calls))
    names = (entry.partition(":")[0].strip() for entry in outcome.tool_calls)
    return list(dict.fromkeys(name for name in names if name))


def matched_tools(outcomes: Iterable[SubTaskOutcome]) -> list[str]:
    """The tools of the subtasks that matched: tools that did their job in this task."""
    return list(dict.fromkeys(tool for o in outcomes if outcome_kind(o) == "matched" for tool in outcome_tools(o)))


def blamed_tools(outcomes: Iterable[SubTaskOutcome], logical_only: bool = False,
                 worked_before: Iterable[str] = ()) -> list[str]:
    """The tools a logical failure blocks: those of the failing subtasks, minus any a subtask matched with.

    ``logical_only`` narrows to the logically failing subtasks when there are any
    (change_approach).  A tool that just did its job for another subtask of the same round
    (read_file reading the user's data.csv) is not the wrong approach: blocking it would
    take the working step away from the next plan too.  ``worked_before``: the tools a subtask
    of an earlier round of the task matched with, spared for the same reason: a small model's
    round-1 step counted with ``glob`` and ``shell`` and matched, its round-2 step ran the same
    ``wc -l *.txt`` but never wrote the file, and blocking ``glob`` and ``shell`` then would leave
    round 3 only read_file and write_file to count lines with.
    """
    outcomes = list(outcomes)
    failed = [o for o in outcomes if outcome_kind(o) == "failed"]
    if logical_only:
        failed = [o for o in failed if _dominant_class(o) == "logical"] or failed
    worked = {*matched_tools(outcomes), *worked_before}
    return [tool for tool in dict.fromkeys(t for o in failed for t in outcome_tools(o)) if tool not in worked]


def refusals(outcomes: Iterable[SubTaskOutcome]) -> list[str]:
    """What Law 1 refused in these outcomes, as constraints for the next plan."""
    found: list[str] = []
    for outcome in outcomes:
        denied = [c for c in outcome.calls if c.denied]
        if denied:
            found += [f"{c.tool} {c.input}".strip() + f" — {_one_line(c.output)}" for c in denied]
        elif outcome_kind(outcome) == "denied" and outcome.failure_reason:
            found.append(outcome.failure_reason)
    return list(dict.fromkeys(found))


def _one_line(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
