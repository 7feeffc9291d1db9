"""R3 — Executor: the plant of the fast loop, one subtask through a tool-calling loop.

The model chooses tools; code runs them and records the evidence.  Each ``tool_calls``
entry is the toolbox's own ``name: input → firstN(output, 200)`` line, never text the
model wrote, so R4a judges against what really happened (Law 0).  Tool output returns to
the model fenced as untrusted data.  Code also bounds the attempt: at most
``max_tool_calls`` calls; the same call asked right after itself is not run (the model is told why),
and asked once more it ends the attempt; a shell command the step already ran (in this attempt or an earlier
one) is not run again, and asked again after that it ends the attempt; so does a turn asking for the
same several calls as the turn before (a model that repeats a turn which appends to a file grows the file each
time) — all end as ``uncertain`` with the reason, never as a claimed success.  The executor never retries on
its own; a retry is R4a's CorrectionSignal, stated in the next attempt's prompt.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable

from artoo.config.contracts import REFERENCE_CRITERION, CorrectionSignal, ExecutionResult, SubTask, ToolCall
from artoo.tasks.law1.judge import judge_command
from artoo.tasks.roles.prompting import (
    cap,
    fence_untrusted,
    file_names,
    in_shared,
    numbered,
    system,
    user,
    working_folder,
)
from artoo.tasks.tools.specs import SPECS

CALL_OUTPUT_CHARS = 1500
"""Characters of each call's output kept in the structured record (the planner sees it on a replan)."""

PRINTED_CHARS = 4000
"""Characters of what the last listing printed that are added to an answer which leaves it out."""
LISTING_TOOLS = frozenset({"shell", "glob", "locate"})
"""Tools whose printed output is the data a request may ask for ("find the files …", "count …")."""
_END = re.compile(r"^\[(?:exit code -?\d+|killed by [^\]\n]*)\]$")

RULES = """- Your first answer acts: you know nothing about the files or the machine until a command's output tells
  you, and a result without one is rejected.
- Never pretend a command ran or invent its output; the recorded calls are the evidence of your work.
- Do not repeat a call that already answered: a call asked twice in a row is not run, a third ends the attempt."""
"""What every executor is told, whichever way it acts."""

ROLE = f"""Role R3, Executor. Carry out ONE subtask by calling tools, then report honestly.
{{chain}}
Rules:
{RULES}
- A file that must hold a command's output: redirect the command into it in the same call, e.g. for "put
  each .log file's count of ERROR lines into errors.txt" the one call
  {{"name": "shell", "arguments": {{"command": "grep -c ERROR *.log > errors.txt"}}}}
  or write it in a later turn, once the output came back.{{write_note}}
- When the tool output shows the subtask is done (or that it cannot be done), call no more tools and
  answer with only a JSON object:
  {{"status": "completed" | "uncertain" | "failed", "output": "<the result itself: the data, paths, counts>"}}
  completed: the subtask is done; uncertain: you are not sure it is; failed: it could not be done.
  Put the concrete result in output, not a description of it."""
"""R3's role text when it acts through tool calls (native tools, or the JSON-in-content protocol); ``{chain}`` is
the tools offered, in priority order (``tool_chain``)."""


WRITE_NOTE = " A write_file asked in the same turn as the call\n  whose output it needs is not run."
"""The role's rule about write_file, said only where write_file is offered."""


def tool_chain(specs: list[dict]) -> str:
    """The tools offered to this attempt by name, in the toolbox's priority order.  Built from the served tools,
    so a blocked tool or one the machine cannot serve (``search`` offline) is never named; what each does is said
    once, by the tool's own definition (``tasks/tools/specs.py``), which the request carries."""
    names = [s.get("function", s).get("name") for s in specs]
    return "Tools, in priority order (use the first that applies; each tool's definition says what it does): " \
        + ", ".join(f"{i}. {name}" for i, name in enumerate(names, 1)) + "."

BASH_ROLE = f"""Role R3, Executor. Carry out ONE subtask by running bash commands, then report honestly.
Rules:
{RULES}
- A file that must hold a command's output: redirect the command into it, e.g. for "put each .log file's
  count of ERROR lines into errors.txt": grep -c ERROR *.log > errors.txt
- DONE: with the result itself (the data, paths, counts), not a description of it."""
"""R3's role text in the bash-block protocol: no tool definitions, the format is the protocol's own note."""


def role_text(mode: str, specs: list[dict] | None = None) -> str:
    """The executor's role text for how it acts (``llm.tool_mode``, or negotiated), naming the tools ``specs``
    offers (every tool when None)."""
    if mode == "bash":
        return BASH_ROLE
    specs = SPECS if specs is None else specs
    writes = any(s.get("function", s).get("name") == "write_file" for s in specs)
    return ROLE.replace("{chain}", tool_chain(specs)).replace("{write_note}", WRITE_NOTE if writes else "")


def acts_by(llm) -> str:
    """How the executor acts on ``llm``'s tool tier: native, content or bash."""
    return llm.tool_mode("tool")


def _correction_block(correction: CorrectionSignal) -> str:
    tried = "\n".join(f"- {c}" for c in correction.prior_tool_calls) or "- (none recorded)"
    unmet = "\n".join(f"- {c}" for c in correction.unmet_criteria) or "- (not stated)"
    return "\n".join([
        f"RETRY: attempt {correction.attempt} fell short ({correction.failure_class} failure).",
        f"Unmet criteria:\n{unmet}",
        f"What was wrong: {correction.what_was_wrong or '(not stated)'}",
        f"What to do: {correction.what_to_do or '(not stated)'}",
        "Tool calls already tried — do not repeat them:",
        fence_untrusted("previous attempt tool calls", tried),
        "Use a different approach from the previous attempt, and keep to the output format above.",
    ])


def shown_criteria(subtask: SubTask) -> str:
    """The criteria as the executor sees them: each with the read-only test code will run, as tests are shown
    before the code.  The plan's reference run, and any check that writes (code runs it as a reference of its
    own), are left out: an executor shown one ran it word for word, and then agreed with it."""
    own = [c for c in subtask.success_criteria if c.criterion != REFERENCE_CRITERION]
    return numbered(own, {c.criterion: f"code checks it with: {c.check.strip()}" for c in own
                          if c.check.strip() and not judge_command(c.check).irreversible})


def messages_for(subtask: SubTask, correction: CorrectionSignal | None, workspace: str = "",
                 mode: str = "native", specs: list[dict] | None = None) -> list[dict]:
    """R3's opening prompt: intent, the working folder, context, criteria, and on retry the CorrectionSignal;
    ``mode``: how it acts (the role text says it); ``specs``: the tools served to it."""
    folder = [working_folder(workspace)] if workspace and not in_shared(workspace) else []
    parts = [f"Subtask intent: {subtask.intent}", *folder,
             f"Context:\n{subtask.context.strip() or '(none)'}",
             f"Success criteria the result will be checked against:\n{shown_criteria(subtask)}"]
    if correction is not None:
        parts.append(_correction_block(correction))
    return [system(role_text(mode, specs)), user("\n\n".join(parts))]


REDIRECT = ("A file that must hold what a command prints is made by that command redirected into it, in one "
            "shell call (command > file), never written by hand. ")
"""Said after a tool result while a file the criteria name does not exist yet: a small model tends to write such a
file by hand from what it remembers of the output, and the same rule in the role text, thousands of tokens back, does
not reach it."""


def with_checklist(messages: list[dict], subtask: SubTask, files: list[str] | None = None) -> list[dict]:
    """The conversation as sent: after a tool result, the criteria again and when to stop, at the end.

    Why: a small model that has done the subtask may keep calling tools and overwrite its own result, because the
    criteria it should stop at are thousands of tokens back, in the first message.  Only the request carries the
    reminder: the kept conversation does not grow by one per turn.

    ``files``: the files the criteria name, as they are now (read by code).  A small model, after
    ``wc -l *.txt`` the model alternated ``read_file totals.md`` and ``glob`` until the call limit, never
    writing the file the criteria named; a line saying "totals.md: does not exist" says what is missing."""
    if not messages or messages[-1].get("role") != "tool":
        return messages
    now = "".join(f"\n- {line}" for line in files or [])
    create = REDIRECT if any(": does not exist" in line for line in files or []) else ""
    reminder = (f"\n\nThis subtask is checked against:\n{shown_criteria(subtask)}\n"
                + (f"The files these name, as they are now:{now}\nCreate or fix any the criteria need. {create}"
                   if now else "")
                + "If the results so far already meet these, act no more: give your final answer now.")
    return [*messages[:-1], {**messages[-1], "content": f"{messages[-1]['content']}{reminder}"}]


def _files_now(toolbox, subtask: SubTask) -> list[str]:
    """The criteria's named files as the toolbox sees them now; none when the toolbox cannot say."""
    names = [n for c in subtask.success_criteria for n in file_names(c.criterion)]
    files_now = getattr(toolbox, "files_now", None)
    return files_now(names) if names and files_now is not None else []


def _signature(name: str, arguments: dict) -> str:
    return name + json.dumps(arguments, sort_keys=True, default=str)


def _tool_message(call_id: str, name: str, result) -> dict:
    status = "ok" if result.ok else f"failed ({result.failure_class or 'unclassified'})"
    content = f"tool {name} status: {status}\n" + fence_untrusted(f"{name} output", result.output)
    return {"role": "tool", "tool_call_id": call_id, "content": content}


REPEATED = ("this is the same call as the one just before, and its output is above. Use that output: make "
            "the next call the subtask needs (your next turn is offered every tool but {tool}), or give the "
            "final answer. Asking for the same call again ends this attempt.")
"""Why a call asked twice in a row is not run, once per attempt (the second repeat ends the attempt).

A small model may ask for the call that just answered again.  Ending the attempt at the first repeat spends it
before the model is told the output it needs is in front of it; told so, it may still repeat, so the next turn is
offered every tool but the repeated one (``offered``), which a server's grammar then holds the answer to."""


def offered(specs: list[dict], held_out: str | None) -> list[dict]:
    """The tools offered for a turn: all but ``held_out`` (the tool whose call was just asked again).

    Never none: where the repeated tool is the only one, it stays offered and the next repeat ends the attempt.
    """
    rest = [s for s in specs if s.get("function", s).get("name") != held_out]
    return rest or specs
WRITTEN_BLIND = ("this write was composed in the same turn as {tool}, before its output came back, so it "
                 "cannot hold that output. Write the file again now, with the output above in it{redirect}.")
"""Why a write_file after a call that printed data in the same turn is not run.

The model asks for all of a turn's calls before any runs.  One real turn held ``glob *.txt``,
``wc -l *.txt`` and ``write_file totals.md`` with the content ``{{ total_lines }}``: a placeholder for
counts it had not seen.  Held back, the write comes again in the next turn, after the counts.  Once
the model asked for the same turn again (a header line as content): where the output came from a shell
command, the message also names that command redirected into the file, a call that cannot be blind."""


def _blind_write(printer: tuple[str, str], path: object) -> str:
    """The not-run reason for a write composed before ``printer``'s (tool, input) output came back."""
    tool, command = printer
    redirect = (f", or run the command with its output redirected into the file: shell {command} > {path}"
                if tool == "shell" and command and isinstance(path, str) and path.strip() else "")
    return WRITTEN_BLIND.format(tool=f"{tool} {command}".strip(), redirect=redirect)


def _not_run(call_id: str, name: str, why: str) -> dict:
    """The tool message for a call code did not run, and why: the model reads it like any tool result."""
    return {"role": "tool", "tool_call_id": call_id, "content": f"tool {name} status: not run\nNot run: {why}"}


def _record(name: str, result) -> ToolCall:
    """The structured record of one call: what a failure is attributed to, and what the planner sees."""
    return ToolCall(tool=name, input=getattr(result, "input", ""), targets=list(getattr(result, "targets", [])),
                    ok=result.ok, failure_class=result.failure_class, output=cap(result.output, CALL_OUTPUT_CHARS),
                    denied=bool(getattr(result, "denied", False)))


def printed(output: str) -> list[str]:
    """The non-empty lines a listing printed, up to the shell tool's ``[exit code N]`` line."""
    lines: list[str] = []
    for line in output.splitlines():
        if _END.match(line.strip()):
            break
        if line.strip():
            lines.append(line.rstrip())
    return lines


def _quotes(answer: str, lines: list[str]) -> bool:
    """Whether the answer holds at least half of the printed lines (of the first 50), each as the whole line,
    its last word or a path's file name, in whole words: one folder named in a sentence is not the list."""
    text = answer.casefold()
    shown = lines[:50]

    def held(line: str) -> bool:
        words = line.strip().casefold()
        return any(piece and re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", text)
                   for piece in {words, words.split()[-1], os.path.basename(words.rstrip("/"))})
    return 2 * sum(1 for line in shown if held(line)) >= len(shown)


def with_printed(answer: str, tool: str, lines: list[str]) -> str:
    """The executor's answer, with what its last listing printed added when the answer quotes none of it.

    Why: the result a person asked for ("find the files modified in the last 30 days") is what the
    command printed, and a small model answers with a sentence about it ("the files are listed in the output"),
    which would leave the person never shown a file.  Code adds the lines, labelled as recorded by code, so the
    answer holds the data; an answer that quotes half of it is left alone.
    """
    if not lines or _quotes(answer, lines):
        return answer
    return f"{answer.rstrip()}\n\n{tool} printed (recorded by code):\n{cap(chr(10).join(lines), PRINTED_CHARS)}"


def _stopped(subtask: SubTask, reason: str, evidence: list[str], last_text: str | None,
             calls: list[ToolCall]) -> ExecutionResult:
    output = f"stopped before a final answer: {reason}"
    if last_text and last_text.strip():
        output += f"\nlast executor note: {last_text.strip()}"
    return ExecutionResult(subtask_id=subtask.subtask_id, status="uncertain", output=output,
                           tool_calls=evidence, calls=calls, stopped=reason)


SETTLED = "every check of this step passes after: {call}"
"""The answer of an attempt code ended because its checks all passed (no turn is spent asking the model)."""


TRIED = ("this exact call was made in an earlier attempt of this step, and that attempt did not meet the criteria; "
         "it was not run again. Change it: another program, other options, or another way.")
"""Why a call an earlier attempt made is not run again (a small model re-sent its failed command every attempt,
whatever the correction said)."""

RAN = ("this exact command already ran in this attempt and its output is above; it was not run again. Use that "
       "output: make the next call the subtask needs, or give the final answer.")
"""Why a command this attempt already ran is not run again: a model alternating two commands (A, B, A, …) would
otherwise spend the attempt's calls, and the task's, repeating itself."""


def _primary(arguments: dict) -> str:
    """A call's main argument (the command, the path, the pattern), for telling one call from another."""
    return next((str(v) for v in arguments.values() if isinstance(v, str)), json.dumps(arguments, sort_keys=True))


async def execute(llm, subtask: SubTask, toolbox, correction: CorrectionSignal | None,
                  max_tool_calls: int = 10, settled: Callable[[], Awaitable[bool]] | None = None,
                  tried: frozenset[tuple[str, str]] = frozenset()) -> ExecutionResult:
    """One attempt at a subtask; LLM EnvironmentalFailure propagates to the fast loop.  ``settled``: when checks
    alone decide the step, a probe that is true once they all pass; the attempt then ends after that call.
    ``tried``: (tool, command) of the shell calls earlier attempts of the step made: not run again, nor is a shell
    command this attempt ran already; one refused and asked again ends the attempt."""
    if max_tool_calls < 1:
        raise ValueError(f"max_tool_calls must be at least 1, got {max_tool_calls}")
    messages = messages_for(subtask, correction, str(getattr(toolbox, "workspace", "") or ""), acts_by(llm),
                            toolbox.specs())
    evidence: list[str] = []
    calls: list[ToolCall] = []
    previous: str | None = None
    previous_turn: list[str] = []
    reminded = False
    ran: set[tuple[str, str]] = set()  # the shell commands this attempt ran (``tried``: the earlier attempts')
    refused: set[tuple[str, str]] = set()  # those refused once in this attempt: asked again, the attempt ends
    listing: tuple[str, list[str]] = ("", [])
    held_out: str | None = None
    while True:
        files = _files_now(toolbox, subtask) if messages[-1].get("role") == "tool" else []
        tools = offered(toolbox.specs(), held_out)
        held_out = None
        turn = await llm.tool_turn("R3", with_checklist(messages, subtask, files), tools)
        note = turn.assistant_message.get("content") if isinstance(turn.assistant_message, dict) else None
        if not turn.tool_calls:
            if turn.final is None:
                return _stopped(subtask, "the model gave neither a tool call nor a final answer",
                                evidence, note, calls)
            answer = turn.final.output
            if turn.final.status == "completed":
                answer = with_printed(answer, *listing)
            return ExecutionResult(subtask_id=subtask.subtask_id, status=turn.final.status,
                                   output=answer, tool_calls=evidence, calls=calls)
        asked = [_signature(c.name, c.arguments) for c in turn.tool_calls]
        if len(asked) > 1 and asked == previous_turn:
            return _stopped(subtask, "the same calls were requested again: "
                            + ", ".join(c.name for c in turn.tool_calls), evidence, note, calls)
        previous_turn = asked
        messages.append(turn.assistant_message)
        blind_after: tuple[str, str] | None = None  # the latest call of this turn that printed data
        for call in turn.tool_calls:
            signature = _signature(call.name, call.arguments)
            if signature == previous:
                if reminded:
                    return _stopped(subtask, f"the same call was requested twice in a row: {call.name} "
                                             f"{json.dumps(call.arguments, default=str)[:200]}", evidence, note, calls)
                reminded, held_out = True, call.name
                messages.append(_not_run(call.id, call.name, REPEATED.format(tool=call.name)))
                continue
            if call.name == "write_file" and blind_after:
                messages.append(_not_run(call.id, call.name, _blind_write(blind_after, call.arguments.get("path"))))
                continue
            command = (call.name, _primary(call.arguments))
            if call.name == "shell" and (command in tried or command in ran):
                earlier = "an earlier attempt made" if command in tried else "this attempt ran"
                if command in refused:
                    return _stopped(subtask, f"a call {earlier} was asked again after it was refused: "
                                    f"{call.name} {command[1][:200]}", evidence, note, calls)
                refused.add(command)
                messages.append(_not_run(call.id, call.name, TRIED if command in tried else RAN))
                continue
            if len(evidence) >= max_tool_calls:
                return _stopped(subtask, f"the tool-call limit of {max_tool_calls} was reached",
                                evidence, note, calls)
            previous = signature
            if call.name == "shell":
                ran.add(command)
            result = await toolbox.call(call.name, call.arguments)
            evidence.append(result.evidence)
            calls.append(_record(call.name, result))
            if result.ok:  # the last call that worked is the product: a later write or silent command ends a listing
                listing = (call.name, printed(result.output)) if call.name in LISTING_TOOLS else ("", [])
                if listing[1]:
                    blind_after = (call.name, str(getattr(result, "input", "") or ""))
                if settled is not None and await settled():
                    done = SETTLED.format(call=f"{call.name} {cap(str(getattr(result, 'input', '')), 200)}")
                    return ExecutionResult(subtask_id=subtask.subtask_id, status="completed",
                                           output=with_printed(done, *listing), tool_calls=evidence, calls=calls)
            messages.append(_tool_message(call.id, call.name, result))
