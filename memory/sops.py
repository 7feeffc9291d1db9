"""SOPs made by code from repeated successes: what worked, said so the next plan can copy it.

Why code and not an LLM: an SOP here only restates a fact memory already holds — the same
intent succeeded N times with the same method — so distilling it needs no judgement, costs
no model call, and works with no endpoint configured.  The spec's consolidation by
potentials and an LLM distil (``artoo.memory.dreamer``) stays as it is beside it.

**The method of an episode.**  The GGS writes an intent Megram's content with
``artoo.memory.tags.episode_content``: a ``tried:`` line of calls ``r<round> <tool>:
<input> → <output>`` joined by ``; ``.  The method is read from the calls of the *last*
round only (the round that was accepted; earlier rounds are what failed), as steps in
first-use order without repeats:

* a shell call is ``shell `<heads>```: each command of the command line by its head, the
  command word (a path's basename) and, when the next word is an option, that option
  (``wc -l`` counts lines and ``wc -w`` words: the option is the method; the paths,
  patterns and further options are the task's own and would split one method into many).
  Pipes stay ``|``; ``;``, ``&&``, ``||`` become ``;``.  Wrappers (``xargs``, ``sudo``,
  ``env`` …) keep their name and the wrapped command's head (``xargs wc -l``).  ``cd`` is
  dropped: it changes where, not how.  Environment assignments (``LC_ALL=C``) are dropped.
* any other tool (glob, read_file, write_file, locate, search) is its name: its argument
  is a path or a query, which varies by task.

An episode with no recorded call has no method (nothing to teach).  A call line the GGS
cut at 160 characters may lose its tail; its heads are read from what is left.

**Whether a plan follows an SOP** (``plan_follows``) is read from words, not meaning: the
plan names every non-shell tool of the method and every command the shell steps run
(wrappers aside: ``-exec wc -l`` follows ``xargs wc -l``).  A plan that says "find the
files" matches ``find``; the check is a count for the eval, never a rule that rejects.
Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from artoo.memory.tags import EPISODE_TRIED, episode_verified

Method = tuple[str, ...]
"""The steps of a method, e.g. ``("glob", "shell `find | xargs wc -l`", "write_file")``."""

SUCCESS_STATES = frozenset({"accept", "success"})
"""Terminal GGS states that count as a success of the intent."""
SOP_STATE = "sop"
"""The ``state`` of a C Megram distilled here (the LLM path writes best_practice/constraint)."""

WRAPPERS = frozenset({"xargs", "sudo", "env", "time", "nice", "nohup", "command", "exec", "stdbuf"})
"""Commands that run another command: the head keeps both names."""
DROPPED = frozenset({"cd", "pushd", "popd"})
"""Commands that choose where, not how."""

_CALL = re.compile(r"(?:^|(?<=; ))r(\d+) ([A-Za-z_][\w-]*): ")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_SOP = re.compile(r"^SOP \(worked \d+ times? for requests like .*\): use (?P<steps>.+?)\. \(commands by their heads")
_SHELL_STEP = re.compile(r"^shell `(?P<heads>[^`]*)`$")
SUFFIX = ". (commands by their heads; paths and arguments are each task's own)"


# ── the method of an episode ──────────────────────────────────────────────────────


def episode_calls(content: str) -> list[tuple[int, str, str]]:
    """(round, tool, input) of each call on an intent Megram's ``tried:`` line, in order."""
    line = next((ln[len(EPISODE_TRIED):] for ln in content.splitlines() if ln.startswith(EPISODE_TRIED)), "")
    starts = list(_CALL.finditer(line))
    calls = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() - 2 if i + 1 < len(starts) else len(line)
        text = line[match.end():end]
        calls.append((int(match.group(1)), match.group(2), text.split(" → ", 1)[0].strip()))
    return calls


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes (often a call line the GGS cut): read up to the open quote
        cut = min((i for i in (command.find("'"), command.find('"')) if i >= 0), default=len(command))
        return _tokens(command[:cut]) if cut < len(command) else command.split()


def _separator(token: str) -> str | None:
    """``|`` for a pipe, ``;`` for a sequence, None for a word or a redirection."""
    if not token or any(ch.isalnum() for ch in token) or "<" in token or ">" in token:
        return None
    if token in ("|", "|&"):
        return "|"
    return ";" if set(token) & set(";&|") else None


def _head(words: list[str]) -> str:
    """``wc -l`` of ``wc -l a.txt``; ``xargs wc -l`` of ``xargs -0 wc -l``; '' for nothing to keep."""
    words = [w for w in words if w not in ("(", ")", "{", "}") and not _ASSIGNMENT.match(w)]
    if not words:
        return ""
    name = PurePosixPath(words[0]).name or words[0]
    if name in DROPPED:
        return ""
    if name in WRAPPERS:
        rest = words[1:]
        while rest and (rest[0].startswith("-") or rest[0].isdigit() or rest[0] == "{}"):
            rest = rest[1:]
        inner = _head(rest)
        return f"{name} {inner}".strip()
    option = words[1] if len(words) > 1 and re.match(r"^-[A-Za-z-]", words[1]) else ""
    return f"{name} {option}".strip()


def command_heads(command: str) -> str:
    """A shell command line by its heads: ``find . -name '*.txt' | xargs wc -l`` → ``find | xargs wc -l``."""
    shown, segment, joiner = "", [], None
    for token in [*_tokens(command), ";"]:
        sep = _separator(token)
        if sep is None:
            segment.append(token)
            continue
        head, segment = _head(segment), []
        if head:
            shown = f"{shown}{' | ' if joiner == '|' else '; '}{head}" if shown else head
            joiner = None
        # heads joined only by pipes are a pipeline; any other separator between them makes a sequence
        joiner = "|" if sep == "|" and joiner in (None, "|") else ";"
    return shown


def step_of(tool: str, given: str) -> str:
    """One call as a method step: ``shell `wc -l``` or the tool's name ('' for a shell call of nothing)."""
    if tool != "shell":
        return tool
    heads = command_heads(given)
    return f"shell `{heads}`" if heads else ""


def last_round_calls(content: str) -> list[tuple[str, str]]:
    """(tool, input) of the calls of an episode's last round: the one that was accepted, earlier ones failed."""
    calls = episode_calls(content)
    last = max((r for r, _, _ in calls), default=None)
    return [(tool, given) for r, tool, given in calls if r == last]


def method_of(content: str) -> Method:
    """The method of a successful intent Megram: its last round's calls as steps (``()`` if none)."""
    steps = (step_of(tool, given) for tool, given in last_round_calls(content))
    return tuple(dict.fromkeys(s for s in steps if s))


def intent_of(content: str) -> str:
    """The intent an episode was written for (its first line is ``<state>: <intent>``)."""
    first = content.splitlines()[0] if content else ""
    return first.split(": ", 1)[1].strip() if ": " in first else first.strip()


# ── the SOP text, and reading it back ─────────────────────────────────────────────


def distil_sop(intent: str, method: Method, successes: int) -> str:
    """The SOP's words, made by code; ``sop_method`` reads the method back out of them."""
    if not method:
        raise ValueError("an SOP needs a method with at least one step")
    times = "time" if successes == 1 else "times"
    shown = " ".join(intent.split())
    shown = shown if len(shown) <= 120 else shown[:119] + "…"
    return f"SOP (worked {successes} {times} for requests like {shown!r}): use {', then '.join(method)}{SUFFIX}"


def sop_method(sop_content: str) -> Method | None:
    """The method an SOP written by ``distil_sop`` prescribes; None for any other rule's words."""
    match = _SOP.match(" ".join(sop_content.split()))
    return tuple(match.group("steps").split(", then ")) if match else None


# ── does a plan follow it ─────────────────────────────────────────────────────────


def _plan_words(plan_text: str) -> str:
    """Every string of a JSON plan (its keys and values) one per line; the text itself if not JSON."""
    try:
        data = json.loads(plan_text)
    except ValueError:
        return plan_text
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                found.append(str(key))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif node is not None:
            found.append(str(node))

    walk(data)
    return "\n".join(found)


def _says(text: str, words: str) -> bool:
    """``words`` appear in ``text`` as whole words, in order, any whitespace between them."""
    pattern = r"\s+".join(re.escape(w) for w in words.split())
    return re.search(rf"(?<![\w.-]){pattern}(?![\w-])", text) is not None


def _commands(heads: str) -> list[str]:
    """The commands a shell step runs, wrappers aside: ``find | xargs wc -l`` → ``find``, ``wc -l``."""
    found = []
    for head in re.split(r"\s*[|;]\s*", heads):
        words = head.split()
        while words and words[0] in WRAPPERS and len(words) > 1:
            words = words[1:]
        if words:
            found.append(" ".join(words))
    return found


def plan_follows(sop_content: str, plan_text: str) -> bool:
    """True when the plan uses the SOP's method: it names each tool step and each command of the shell steps.

    An SOP whose method cannot be read (one an LLM distilled) is never followed by this test.
    """
    method = sop_method(sop_content)
    if not method:
        return False
    text = _plan_words(plan_text)
    for step in method:
        shell = _SHELL_STEP.match(step)
        needed = _commands(shell.group("heads")) if shell else [step]
        if not all(_says(text, words) for words in needed):
            return False
    return True


# ── which SOPs a store's episodes call for ────────────────────────────────────────


@dataclass(frozen=True)
class Episode:
    """One successful intent Megram, as the Dreamer reads it (newest first)."""

    id: str
    content: str


@dataclass(frozen=True)
class SOPDraft:
    """An SOP to write: its words and the episodes it was distilled from."""

    method: Method
    content: str
    evidence_ids: list[str]


def sop_drafts(episodes: Iterable[Episode], covered: set[str], ruled: set[Method],
               min_successes: int, min_verified: int | None = None) -> list[SOPDraft]:
    """The SOPs one (intent, entity) pair calls for: a method with ≥ ``min_successes`` episodes, or with
    ≥ ``min_verified`` verified ones (code checked them: artoo.memory.tags.episode_verified), no rule was
    distilled from (``covered``) and no C rule of the pair already prescribes (``ruled``).

    ``episodes`` are newest first; the SOP quotes the newest one's intent.
    """
    groups: dict[Method, list[Episode]] = {}
    for episode in episodes:
        method = method_of(episode.content)
        if method and episode.id not in covered:
            groups.setdefault(method, []).append(episode)
    drafts = []
    for method, group in groups.items():
        verified = sum(episode_verified(e.content) is not None for e in group)
        enough = len(group) >= max(1, min_successes) or (min_verified is not None and verified >= max(1, min_verified))
        if enough and method not in ruled:
            content = distil_sop(intent_of(group[0].content), method, len(group))
            drafts.append(SOPDraft(method, content, [e.id for e in group]))
    return drafts
