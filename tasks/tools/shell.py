"""The shell tool's mechanics: the locate redirect for find, and running bash with bounds (see sandbox.py).

Commands run as written: nothing here edits a command's text, because a model (or a
person) that writes ``-maxdepth 1`` means "not the subdirectories", and dropping it
changes what the command answers.  The one redirect is the spec's: a plain
``find <personal path> -name X`` (``~``, ``$HOME``, ``/home/…``, ``/root``) is answered by
locate, because walking a whole home directory is slow and locate is built for it; a
find that limits its depth is never redirected (locate cannot honour the limit).  A
command runs as its own process group so a timeout kills everything it started, and its
output is read in chunks into a head+tail buffer, so memory stays bounded whatever it prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path

from artoo.tasks.shell.parse import ParseError, parse
from artoo.tasks.tools.sandbox import Sandbox, wrap
from artoo.tasks.tools.text import HeadTailBuffer

CHUNK = 65_536
PERSONAL = re.compile(r"^(~|~/.*|\$HOME(/.*)?|\$\{HOME\}(/.*)?|/home/[^/]+(/.*)?|/root(/.*)?|/Users/[^/]+(/.*)?)$")
SAFE_PRIMARIES = {"-print": 0, "-name": 1, "-iname": 1, "-type": 1}
"""The find primaries locate answers with the same meaning (no depth limits: locate has none)."""


def build_shell_argv(command: str, sandbox: Sandbox | None = None) -> list[str]:
    """The argv that runs one shell command, confined by ``sandbox`` (limits, plus bubblewrap when it works)."""
    argv = ["bash", "-c", command]
    return argv if sandbox is None else wrap(argv, sandbox)


@dataclass
class FindQuery:
    """A find that locate can answer: name pattern, personal roots, optional type (f or d)."""

    pattern: str
    roots: list[Path]
    kind: str | None


def find_on_personal_path(command: str) -> FindQuery | None:
    """The locate query for a plain ``find <personal path> -name X`` command, else None."""
    try:
        script = parse(command)
    except ParseError:
        return None
    if script.substitutions or len(script.commands) != 1:
        return None
    simple = script.commands[0]
    words = simple.words
    if simple.redirects or simple.here_input is not None or not words or words[0] != "find":
        return None
    roots, i = [], 1
    while i < len(words) and not words[i].startswith("-"):
        roots.append(words[i])
        i += 1
    if not roots or not all(PERSONAL.match(r) for r in roots):
        return None
    pattern, kind = None, None
    while i < len(words):
        word = words[i]
        if word not in SAFE_PRIMARIES or i + SAFE_PRIMARIES[word] >= len(words):
            return None
        value = words[i + SAFE_PRIMARIES[word]]
        if word in ("-name", "-iname"):
            pattern = value
        elif word == "-type":
            kind = value
        i += 1 + SAFE_PRIMARIES[word]
    if pattern is None or kind not in (None, "f", "d"):
        return None
    home = str(Path.home())
    expanded = [Path(os.path.expanduser(r.replace("${HOME}", home).replace("$HOME", home))) for r in roots]
    return FindQuery(pattern, expanded, kind)


@dataclass
class Completed:
    """How a command ended: its capped output, exit code (None when killed), and whether it timed out."""

    output: str
    returncode: int | None
    timed_out: bool
    total_bytes: int


async def run_capped(argv: list[str], cwd: Path, timeout_s: float, limit: int,
                     env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()) -> Completed:
    """Run argv in its own process group; keep at most ``limit`` characters of head+tail output."""
    buffer = HeadTailBuffer(limit, limit)
    proc = await asyncio.create_subprocess_exec(*argv, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, env=env, pass_fds=pass_fds,
                                                stderr=asyncio.subprocess.STDOUT, start_new_session=True)

    async def pump() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(CHUNK):
            buffer.feed(chunk)

    reader = asyncio.create_task(pump())
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid)
        await proc.wait()
    try:  # background children may still hold the pipe open: give them a moment, then end them
        await asyncio.wait_for(asyncio.shield(reader), 2.0)
    except TimeoutError:
        _kill_group(proc.pid)
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    return Completed(buffer.text(limit), None if timed_out else proc.returncode, timed_out, buffer.total)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
