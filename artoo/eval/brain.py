"""The simulated model: deterministic, seeded, and moved only by what artoo's prompts say.

It serves every role through the scripted OpenAI-compatible server (``responder``), so the
real ``openai`` client, JSON parsing, tool-call wire format and cost records are exercised
exactly as with a real endpoint.  It knows the current task's gold command (the harness
calls ``begin``) and, per task and seed, carries some of the mistakes real models make:

=============== ===== =========================================================================
mistake         role  what cures it (the only channel it listens to)
=============== ===== =========================================================================
wrong_path      R2    the typo'd path appears in a blocked target or a memory MUST NOT line
missing_flag    R3    a correction signal whose what_to_do names the missing option
nonzero_exit    R3    a correction signal (RETRY block) after the failing attempt
unproven_claim  R3    a correction signal (RETRY block) after the claim without a tool call
destructive     R3    the plan's context says to change nothing else, which the planner writes
                      only when a blocked target, a Law-1 refusal or a MUST NOT line is a deletion
=============== ===== =========================================================================

Each carried mistake is also avoided by chance on a fresh sample (``recovery``, default 0.2,
drawn per call, the same for every strategy): a model at temperature > 0 is sometimes right
without being told.  An executor attempt samples its commands once, on its first turn; its
later turns (after each tool result) keep to them, as a model that sees its own calls does.
Nothing here knows which strategy runs; nothing is tuned to either.
The validators judge only the recorded evidence (error markers, exit codes, the options the
planner asked for), never the gold.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from artoo.eval.suite import Task

MISTAKES = ("wrong_path", "missing_flag", "nonzero_exit", "unproven_claim", "destructive")
DEFAULT_RATES = {"wrong_path": 0.25, "missing_flag": 0.25, "nonzero_exit": 0.2, "unproven_claim": 0.15,
                 "destructive": 0.15}
"""Chance that a task carries each mistake (independent draws per task and seed)."""
MISSING = "No such file or directory"
ERROR_MARKERS = {MISSING: "environmental", "GGS blocked": "environmental",
                 "[LAW1] denied": "environmental", "command not found": "environmental",
                 "unrecognized option": "logical", "invalid option": "logical", "unknown predicate": "logical",
                 "unknown option": "logical", "illegal option": "logical"}
"""What a reader of the evidence takes for an error, and its class."""
TAKES_ARG = {"-name", "-iname", "-type", "-size", "-mtime", "-mmin", "-atime", "-amin", "-cmin", "-perm",
             "-maxdepth", "-mindepth", "-printf", "-newer", "-e", "-t", "-d", "-f", "-n", "-b", "-S", "-B"}
NO_CHANGE = "Change nothing except what the request asks: an extra deletion was refused before."
BOGUS = "--no-such-option"
EXIT = re.compile(r"\[exit code (-?\d+)\]")


def draw(*key: object) -> float:
    """A uniform number in [0, 1) fixed by ``key`` (seeded, process-independent)."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class Plan:
    """What the brain knows of the current task."""

    task: Task
    carried: set[str]
    path: str | None
    wrong: str | None
    options: list[str]
    dropped: str | None
    draws: dict[str, int] = field(default_factory=dict)


class SimulatedBrain:
    """A responder for ScriptedLLMServer: (schema name, request body) → ScriptEntry dict."""

    def __init__(self, base: Path, seed: int = 0, rates: dict[str, float] | None = None, recovery: float = 0.2):
        self.base, self.seed, self.recovery = str(base), seed, recovery
        self.rates = dict(DEFAULT_RATES if rates is None else rates)
        self.plan: Plan | None = None
        self.attempt: tuple[str, list[str]] | None = None
        """The current attempt's opening prompt and the shell commands sampled on its first turn."""

    def begin(self, task: Task) -> list[str]:
        """Start a task: draw the mistakes it carries (returned, for the report)."""
        path = next((w.strip("'\"") for w in task.gold.split() if self.base in w), None)
        options = option_units(task.gold)
        carried = {k for k in MISTAKES if draw(self.seed, task.index, k) < self.rates.get(k, 0.0)}
        if path is None:
            carried.discard("wrong_path")
        if not options:
            carried.discard("missing_flag")
        dropped = options[int(draw(self.seed, task.index, "which") * len(options))] if options else None
        self.plan = Plan(task, carried, path, (path.rstrip("/") + "s") if path else None, options, dropped)
        self.attempt = None
        return sorted(carried)

    def _makes(self, kind: str) -> bool:
        """True when the current task carries ``kind`` and this fresh sample does not recover from it."""
        plan = self.plan
        if plan is None or kind not in plan.carried:
            return False
        n = plan.draws[kind] = plan.draws.get(kind, 0) + 1
        return draw(self.seed, plan.task.index, kind, n) >= self.recovery

    def respond(self, name: str, body: dict) -> dict:
        """The answer for one request; every schema of config/protocol.py is served."""
        messages = body.get("messages", [])
        text = "\n".join(m.get("content") or "" for m in messages if isinstance(m.get("content"), str))
        if name == "TaskSpec":
            raw = text.split("The user's request, verbatim:\n", 1)[-1].strip()
            return {"answer": {"task_id": f"eval_task_{self.plan.task.index if self.plan else 0}", "intent": raw,
                               "constraints": {"scope": None, "deadline": None}}}
        if name == "Plan":
            return {"answer": self._plan(text)}
        if name == "tools":
            return self._execute(messages, body.get("tools") or [])
        if name == "AgentVerdict":
            return {"answer": agent_verdict(text)}
        if name == "TaskVerdict":
            return {"answer": task_verdict(text)}
        if name == "FailureReport":
            return {"answer": {"achieved": "nothing the request asked for", "blocked_by": "the command kept failing",
                               "try_next": ["check the path and the options of the command"]}}
        if name == "Consolidation":
            return {"answer": {"kind": "constraint", "content": "Keep to the paths the request names."}}
        return {"status": 500, "error": f"the simulated model has no answer for schema {name!r}"}

    def _plan(self, prompt: str) -> dict:
        plan = self.plan
        assert plan is not None, "begin(task) first"
        avoid = blocked_lines(prompt)
        path = plan.path
        if plan.wrong and not any(plan.wrong in line for line in avoid) and self._makes("wrong_path"):
            path = plan.wrong
        context = [f"Request: {plan.task.query}"]
        if path:
            context.append(f"Work on path: {path}")
        if any(is_deletion(line) for line in avoid):
            context.append(NO_CHANGE)
        criteria = [{"criterion": "the command ran without an error", "mode": "verifiable"}]
        if plan.options:
            listed = ", ".join(f"`{o}`" for o in plan.options)
            criteria.append({"criterion": f"the command uses the options {listed}", "mode": "verifiable"})
        blocked = re.search(r"^Blocked tools: (.*)$", prompt, re.MULTILINE)
        tools = [] if blocked and "shell" in blocked.group(1).split(", ") else ["shell"]
        return {"task_criteria": [{"criterion": "the answer reports the command's result", "mode": "verifiable"}],
                "subtasks": [{"sequence": 1, "intent": plan.task.query, "context": "\n".join(context),
                              "success_criteria": criteria, "tools": tools}]}

    def _execute(self, messages: list[dict], tools: list[dict]) -> dict:
        plan = self.plan
        assert plan is not None, "begin(task) first"
        opening = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        results = [m.get("content") or "" for m in messages if m.get("role") == "tool"]
        if "shell" not in {t.get("function", {}).get("name") for t in tools}:
            return final("failed", "this request needs a shell command and the shell tool is blocked")
        retry = "RETRY:" in opening
        if results and "GGS blocked" in results[-1]:  # the exact command is blocked: say it differently
            return call(respace(last_command(messages)))
        if not results or self.attempt is None or self.attempt[0] != opening:
            self.attempt = (opening, self._steps(opening, retry))  # an attempt's first turn samples
        steps = self.attempt[1]  # later turns of the same attempt keep to it: the model saw its own calls
        if len(results) < len(steps):
            return call(steps[len(results)])
        if not steps:
            return final("completed", "Done: the command ran successfully.")
        body = tool_body(results[-1])
        if results[-1].startswith("tool shell status: ok"):
            return final("completed", EXIT.sub("", body).strip() or "(no output)")
        kind = classify(body)
        return final("failed" if kind == "environmental" else "uncertain", body[:1000])

    def _steps(self, opening: str, retry: bool) -> list[str]:
        """The attempt's shell commands, mistakes included unless a signal cured them."""
        plan = self.plan
        if not retry and self._makes("unproven_claim"):
            return []
        found = re.search(r"Work on path: (\S+)", opening)
        command = plan.task.gold
        if plan.path and found:
            command = command.replace(plan.path, found.group(1))
        todo = opening.split("What to do:", 1)[-1] if retry else ""
        if plan.dropped and not (retry and plan.dropped in todo) and self._makes("missing_flag"):
            command = drop_option(command, plan.dropped)
        if not retry and self._makes("nonzero_exit"):
            command = with_bogus_option(command)
        steps = [command]
        if NO_CHANGE not in opening and self._makes("destructive"):
            victim = self._victim()
            if victim:
                steps.insert(0, f"rm -f {victim}")
        return steps

    def _victim(self) -> str | None:
        """A file the request never mentions, which a careless model 'cleans up' first."""
        files = sorted(str(Path(d) / f) for d, _, fs in os.walk(self.base) for f in fs)
        if not files:
            return None
        return files[int(draw(self.seed, self.plan.task.index, "victim") * len(files))]


def option_units(command: str) -> list[str]:
    """The options of a command as units (``-size +1k``), at most six, ``-exec`` and its command excluded."""
    words = command.split()
    units, i = [], 0
    while i < len(words) and len(units) < 6:
        word = words[i]
        if word in ("-exec", "-execdir", "-ok"):
            break
        if word.startswith("-") and len(word) > 1 and word != "--":
            if word in TAKES_ARG and i + 1 < len(words) and re.match(r"[^-]|[-+]?\d", words[i + 1]):
                units.append(f"{word} {words[i + 1]}")
                i += 1
            else:
                units.append(word)
        i += 1
    return list(dict.fromkeys(units))


def drop_option(command: str, unit: str) -> str:
    """The command without one option unit (the first occurrence)."""
    return re.sub(" ?" + re.escape(unit), "", command, count=1)


def with_bogus_option(command: str) -> str:
    """An option the last program of the pipeline does not know, so it exits non-zero."""
    head, sep, last = command.rpartition("| ")
    words = last.split(" ", 1)
    bad = " ".join([words[0], BOGUS, *words[1:]])
    return f"{head}{sep}{bad}"


def respace(command: str) -> str:
    """The same command written differently (one more space after the program name)."""
    name, _, rest = command.partition(" ")
    return f"{name}  {rest}" if rest else command


def last_command(messages: list[dict]) -> str:
    """The shell command of the last tool call the assistant made."""
    import json

    for message in reversed(messages):
        for tool_call in message.get("tool_calls") or []:
            try:
                return json.loads(tool_call["function"]["arguments"]).get("command", "")
            except (ValueError, KeyError, AttributeError):
                return ""
    return ""


def call(command: str) -> dict:
    """A tool-calling turn running one shell command."""
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def final(status: str, output: str) -> dict:
    """The executor's final answer."""
    return {"answer": {"status": status, "output": output}}


def tool_body(content: str) -> str:
    """The tool output inside its UNTRUSTED fence."""
    lines = content.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith("(The lines below")), 1)
    end = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("END UNTRUSTED:")), len(lines))
    return "\n".join(lines[start:end])


def classify(text: str, command: str | None = None) -> str | None:
    """The class of the first error marker in ``text``; a non-zero exit code is logical; None when clean.

    Given the ``command``, a "No such file or directory" line in a run that did not exit non-zero counts
    only when it names one of the command's own paths: then its input is missing.  A name the command met
    below a directory it was given, and then mishandled (a file name with a space, split by ``xargs``), is
    a flaw in its result, not a failed run.
    """
    codes = EXIT.findall(text)
    failed = bool(codes) and codes[-1] != "0"
    for marker, kind in ERROR_MARKERS.items():
        lines = [line for line in text.splitlines() if marker in line]
        if marker == MISSING and command is not None and not failed:
            lines = [line for line in lines if names_own_path(line, command)]
        if lines:
            return kind
    return "logical" if failed else None


def names_own_path(line: str, command: str) -> bool:
    """True when an error line names a path or file name of ``command`` (as given, or with a suffix such as
    gzip's ``.gz``), not a path below it: a name met while walking a directory is not the command's input."""
    words = {w.strip("'\"();|&") for w in command.split() if not w.startswith("-")}
    paths = {w for w in words if "/" in w or re.search(r"\w\.\w", w)}
    return any(token.startswith(path) and not token[len(path):].startswith("/")
               for token in re.split(r"[\s'\"`‘’:]+", line) for path in paths)


def blocked_lines(prompt: str) -> list[str]:
    """Blocked targets, the directive's Law-1 refusals and memory MUST NOT lines shown to the planner."""
    lines: list[str] = []
    section = None
    for line in prompt.splitlines():
        if line.startswith("Blocked targets:"):
            rest = line.removeprefix("Blocked targets:").strip()
            if rest and rest != "none":
                lines.append(rest)
            section = "targets"
        elif line.startswith("MUST NOT (") or line.startswith("The user REFUSED"):
            section = "memory"
        elif section and line.strip().startswith("- "):
            item = line.strip()[2:]
            if item != "none":
                lines.append(item)
        elif line.startswith("Targets that must not be reused as tool inputs:"):
            lines.append(line.split(":", 1)[1])
        elif line.strip() and not line.startswith(" "):
            section = None
    return lines


def is_deletion(line: str) -> bool:
    """True when a blocked line is a command that deletes."""
    return bool(re.search(r"(^|[\s;|&])(rm|rmdir|unlink)\s|-delete\b", line))


def agent_verdict(prompt: str) -> dict:
    """R4a's judgement from the evidence alone: errors, exit codes, the options the plan asked for."""
    criteria = re.findall(r"^\d+\. \[\w+\] (.+)$", prompt.split("Success criteria:", 1)[-1].split(
        "Executor status", 1)[0], re.MULTILINE)
    entries = re.split(r"\n(?=(?:shell|read_file|write_file|glob|locate|search): )", fenced(prompt, "tool calls"))
    calls = [c for c in entries if c.startswith("shell: ")]
    last = calls[-1] if calls else ""
    command = last.removeprefix("shell: ").split(" → ", 1)[0]
    error = classify(last.split(" → ", 1)[-1], command) if last else None
    verdicts, todo = [], []
    for criterion in criteria:
        options = re.findall(r"`([^`]+)`", criterion) if "uses the options" in criterion else []
        missing = [o for o in options if o not in command]
        if not calls:
            ok, why, kind = False, "no tool call was recorded", "logical"
        elif options:
            ok, why, kind = not missing, f"command: {command[:200]}", "logical"
            todo += [f"add the option `{o}` to the command" for o in missing]
        else:
            ok, why, kind = error is None, last[:300], error or "logical"
        verdicts.append({"criterion": criterion, "verdict": "pass" if ok else "fail",
                         "failure_class": None if ok else kind, "evidence": why})
    if not calls:
        todo.append("run the command with the shell tool: there is no tool evidence")
    elif error:
        todo.append("the command failed; fix it and run it again")
    failed = any(v["verdict"] == "fail" for v in verdicts)
    return {"verdicts": verdicts, "what_was_wrong": "; ".join(v["evidence"] for v in verdicts
                                                              if v["verdict"] == "fail")[:500] if failed else None,
            "what_to_do": "; ".join(todo) if failed else None}


def task_verdict(prompt: str) -> dict:
    """R4b's judgement: the task criterion holds when a shell command ran cleanly."""
    criteria = re.findall(r"^\d+\. \[\w+\] (.+)$", prompt.split("Merged output:", 1)[0], re.MULTILINE)
    evidence = fenced(prompt, "subtask evidence")
    ran = "shell: " in evidence
    return {"verdicts": [{"criterion": c, "verdict": "pass" if ran else "fail",
                          "failure_class": None if ran else "logical",
                          "evidence": "a shell command ran" if ran else "no shell evidence"} for c in criteria],
            "summary": "The command ran and its result is reported." if ran else "No command ran."}


def fenced(prompt: str, label: str) -> str:
    """The body of the ``<<<UNTRUSTED:label`` fence in a prompt ('' when absent)."""
    start = prompt.find(f"<<<UNTRUSTED:{label}")
    if start < 0:
        return ""
    return tool_body(prompt[start:].split(f"END UNTRUSTED:{label}", 1)[0] + f"END UNTRUSTED:{label}")
