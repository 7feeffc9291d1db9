"""Two plain peers on artoo's own endpoint: what a person would use instead of artoo.

* ``one-command``: ONE chat request ("answer with one bash command that does this"), the first fenced code
  block of the answer (else its first line) run once.
* ``bash-loop``: the model answers with one ```bash block, code runs it and shows the exit code and output
  (head and tail, capped) as the next user message; it ends when the model says DONE on a line of its own, or
  after ``MAX_COMMANDS`` commands.

Both talk through the real ``openai`` client with the sampling artoo sends to the same endpoint (``llm.*``),
and record every call's tokens and the server's cached prompt tokens (llama-server's ``timings.cache_n``, or
``usage.prompt_tokens_details.cached_tokens``) exactly as the eval records artoo's.  How their commands run is
the caller's (artoo.eval.everyday.run_confined: artoo's sandbox); this module only talks and decides.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artoo.eval.everyday import Ran

ONE_COMMAND = "one-command"
BASH_LOOP = "bash-loop"
PEERS = (ONE_COMMAND, BASH_LOOP)
MAX_COMMANDS = 6
FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
"""A fenced code block (any language tag; an unclosed last block runs to the end of the answer)."""
DONE = re.compile(r"^\W*DONE\W*$", re.MULTILINE)
"""DONE on a line of its own (``**DONE**`` and ``DONE.`` too)."""

ONE_COMMAND_PROMPT = ("Answer with one bash command that does the task below. It is run once, as it is, in the "
                      "folder that holds the files ({folder}).\n\nTask: {request}")
LOOP_SYSTEM = ("You work in a bash shell, in the folder that holds the user's files ({folder}). Do the user's task "
               "one command at a time: answer with exactly one ```bash code block holding the next command, and "
               "you will see its exit code and output. When the task is done, answer with the line DONE.")

Runner = Callable[[str], Awaitable[Ran]]
"""Runs one command in the task's folder (confined) and says how it ended."""


@dataclass(frozen=True)
class Call:
    """One chat request's cost: tokens as the server counted them, cached prompt tokens when it says, seconds."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    seconds: float


@dataclass
class PeerRun:
    """What a peer did: its commands and their exit codes, its calls, why it stopped, and whether it claimed
    success (one-command: its command exited 0; bash-loop: it said DONE)."""

    commands: list[str] = field(default_factory=list)
    exit_codes: list[int | None] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    stop: str = ""
    """done, limit (MAX_COMMANDS ran), no command (an answer with neither a block nor DONE), ran, or error."""
    error: str | None = None

    @property
    def accepted(self) -> bool:
        if self.error is not None:
            return False
        if self.stop == "ran":
            return self.exit_codes[-1:] == [0]
        return self.stop == "done"


def first_block(text: str) -> str | None:
    """The first fenced code block's body, stripped (None when the answer has none, or it is empty)."""
    found = FENCE.search(text or "")
    body = found.group(1).strip() if found else ""
    return body or None


def one_command_of(text: str) -> str | None:
    """The command a one-command answer gives: its first fenced block, else its first non-blank line (inline
    backticks dropped)."""
    block = first_block(text)
    if block is not None:
        return block
    line = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
    return line.strip("`").strip() or None


def said_done(text: str) -> bool:
    """True when the answer has DONE on a line of its own, outside any code block."""
    return bool(DONE.search(FENCE.sub("", text or "")))


def observation(ran: Ran, timeout_s: float) -> str:
    """The next user message of the loop: how the command ended and what it printed (already capped)."""
    head = f"timed out after {timeout_s:g} s (killed)" if ran.timed_out else f"exit code {ran.exit_code}"
    return f"{head}\noutput:\n{ran.output.rstrip() or '(no output)'}"


def cached_tokens(response: dict[str, Any] | None) -> int | None:
    """The prompt tokens a server served from its cache, when it says: llama-server's ``timings.cache_n``, else
    the OpenAI field ``usage.prompt_tokens_details.cached_tokens``; None when it says neither."""
    response = response or {}
    timings = response.get("timings") or {}
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        return timings["cache_n"]
    details = (response.get("usage") or {}).get("prompt_tokens_details") or {}
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) else None


class Chat:
    """Plain chat requests to one OpenAI-compatible endpoint, each call recorded."""

    def __init__(self, base_url: str, model: str, api_key: str | None, timeout_s: float,
                 sampling: dict[str, Any], max_retries: int = 1) -> None:
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        from artoo.tasks.llm.transport.http import verify_for

        self.model, self.sampling = model, dict(sampling)
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s,
                                  max_retries=max_retries,
                                  http_client=DefaultAsyncHttpxClient(verify=verify_for(base_url)))

    @classmethod
    def from_settings(cls, settings: Any) -> Chat:
        """The tool tier's endpoint (the one artoo's executor writes commands on), with artoo's sampling."""
        from artoo.tasks.llm.transport.requests import sampling

        tier = settings.tier("tool")
        key = tier.api_key.get_secret_value() if tier.api_key is not None else None
        return cls(str(tier.base_url), str(tier.model), key, tier.timeout_s, sampling(settings.llm),
                   settings.llm_max_retries)

    async def ask(self, messages: list[dict[str, str]]) -> tuple[str, Call]:
        """The answer's text and the call's cost."""
        started = time.perf_counter()
        response = await self.client.chat.completions.create(model=self.model, messages=messages, **self.sampling)
        seconds = time.perf_counter() - started
        body = response.model_dump(mode="json")
        usage = body.get("usage") or {}
        choices = body.get("choices") or [{}]
        text = ((choices[0] or {}).get("message") or {}).get("content") or ""
        return text, Call(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                          cached_tokens(body), round(seconds, 3))

    async def aclose(self) -> None:
        await self.client.close()


async def one_command(chat: Chat, request: str, folder: Path, run: Runner) -> PeerRun:
    """One request, its command run once."""
    import openai

    out = PeerRun()
    prompt = ONE_COMMAND_PROMPT.format(folder=folder, request=request)
    try:
        text, call = await chat.ask([{"role": "user", "content": prompt}])
    except openai.APIError as exc:
        out.stop, out.error = "error", f"{type(exc).__name__}: {exc}"
        return out
    out.calls.append(call)
    command = one_command_of(text)
    if command is None:
        out.stop = "no command"
        return out
    ran = await run(command)
    out.commands.append(command)
    out.exit_codes.append(ran.exit_code)
    out.stop = "ran"
    return out


async def bash_loop(chat: Chat, request: str, folder: Path, run: Runner, timeout_s: float) -> PeerRun:
    """Command, output, command, ... until DONE or MAX_COMMANDS commands."""
    import openai

    out = PeerRun()
    messages = [{"role": "system", "content": LOOP_SYSTEM.format(folder=folder)},
                {"role": "user", "content": request}]
    while len(out.commands) < MAX_COMMANDS:
        try:
            text, call = await chat.ask(messages)
        except openai.APIError as exc:
            out.stop, out.error = "error", f"{type(exc).__name__}: {exc}"
            return out
        out.calls.append(call)
        command = first_block(text)
        if command is None:
            out.stop = "done" if said_done(text) else "no command"
            return out
        ran = await run(command)
        out.commands.append(command)
        out.exit_codes.append(ran.exit_code)
        if said_done(text):  # DONE beside its last command: that command was the end
            out.stop = "done"
            return out
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": observation(ran, timeout_s)}]
    out.stop = "limit"
    return out
