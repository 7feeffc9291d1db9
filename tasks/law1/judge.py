"""Law 1, the policy half: is an action irreversible?

Law 1 says artoo never takes an irreversible action on the user's data or machine
without the user approving that exact action.  This module answers the question for a
shell command or a file write, as pure text analysis: deletion, overwriting existing
data, changing the system's configuration or permissions, and sending anything off the
machine are irreversible, wherever they hide (chains, pipes, subshells, ``$( … )``,
``sh -c``, sudo, xargs, ``find -exec`` …).  The only question asked of the world is
``exists(path)``, injected by the caller; without it every "does this exist?" is
answered "maybe", which counts as irreversible.  Text that does not parse is
irreversible too: what cannot be read cannot be called safe.  So is a program that runs
code the text does not show (``python3 cleanup.py``, ``make clean``, ``npm test``) when
that code exists, and a request to a daemon (``mysql``, ``redis-cli``, ``docker``) that may
change what it holds.

Each danger names its category first: ``deletion``, ``overwrite``, ``system``, ``network``,
``daemon`` (a server changes what it holds), ``runs code`` (code the text does not show),
``hidden`` (a command known only at run time) or ``cannot parse``.

``judge_command`` is the whole judgement (``artoo policy check``, and the shell where no
overlay can be mounted); ``judge_unobservable`` keeps only what a copy-on-write overlay
cannot see, for the transactional shell that observes file effects itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from artoo.tasks.law1.core import Ctx, Danger, exists_state, resolve, system_targets
from artoo.tasks.law1.rules import judge_argv, judge_script
from artoo.tasks.law1.rules_daemon import DAEMON_CLIENTS

Exists = Callable[[Path], bool]


class PolicyVerdict(BaseModel):
    """The Law-1 answer for one action."""

    irreversible: bool = Field(description="True when the action needs the user's explicit approval.")
    reason: str = Field(description="Why: the dangerous sub-command and its targets, or why it is safe.")
    targets: list[str] = Field(default_factory=list, description="The paths, hosts or items at risk.")


def real_exists(path: Path) -> bool:
    """The filesystem's answer (a dangling symlink exists too): the I/O edge callers inject."""
    return os.path.lexists(path)


def judge_command(command: str, cwd: Path, exists: Exists | None = None) -> PolicyVerdict:
    """Judge a shell command line run in ``cwd``; relative paths resolve against it."""
    if not command.strip():
        return PolicyVerdict(irreversible=False, reason="empty command: nothing runs")
    ctx = _root_ctx(cwd, exists)
    dangers = judge_script(command, ctx)
    return _verdict(dangers, ctx.seen)


UNOBSERVABLE = ("network", "daemon")
"""Dangers no copy-on-write overlay can see: data sent off the machine, changes a server makes for a client."""
UNREADABLE = ("runs code", "hidden", "cannot parse")
"""Commands whose code the text does not show: with the network on, they may send anything."""


def judge_unobservable(command: str, cwd: Path, exists: Exists | None = None,
                       network: bool = True) -> PolicyVerdict:
    """Only the dangers a transactional shell cannot observe, for the shell to ask about before running.

    The shell runs a command on an overlay and asks about the file changes it sees; what it cannot
    see is what leaves through a socket: data sent to another host (``network``: the sandbox lets the
    command reach one) and changes made by a daemon (databases, container engines, systemd).  With
    the network on, a program whose code the text does not show (a script, a name computed at run
    time, text that does not parse) may send anything, so it counts too.  File deletions and
    overwrites are left out: the overlay shows them exactly.
    """
    if not command.strip():
        return PolicyVerdict(irreversible=False, reason="empty command: nothing runs")
    ctx = _root_ctx(cwd, exists)
    kept = ("daemon", *(("network", *UNREADABLE) if network else ()))
    dangers = [d for d in judge_script(command, ctx) if d.category in kept or _daemon_tool(d)]
    return _verdict(dangers, ctx.seen)


def _daemon_tool(found: Danger) -> bool:
    name = found.command.split(" ", 1)[0].rsplit("/", 1)[-1]
    return name in DAEMON_CLIENTS


def judge_write(path: Path, exists: Exists | None = None) -> PolicyVerdict:
    """Judge writing a whole file at ``path`` (write_file): new files are reversible, replacing is not."""
    ctx = _root_ctx(Path("/"), exists)
    word = str(path)
    shown = str(resolve(word, ctx) or word)
    if system_targets([word], ctx):
        return PolicyVerdict(irreversible=True, reason=f"system: write_file writes into system path {shown}",
                             targets=[shown])
    state = exists_state(word, ctx)
    if state is False:
        return PolicyVerdict(irreversible=False, reason=f"write_file creates new file {shown}",
                             targets=[shown])
    why = "overwrites existing file" if state else "may overwrite (cannot check whether it exists)"
    return PolicyVerdict(irreversible=True, reason=f"overwrite: write_file {why} {shown}", targets=[shown])


def _root_ctx(cwd: Path, exists: Exists | None) -> Ctx:
    return Ctx(cwd=Path(os.path.abspath(os.path.expanduser(str(cwd)))), exists=exists, recurse_argv=judge_argv,
               recurse_text=judge_script)


def _verdict(dangers: list[Danger], seen: list[str]) -> PolicyVerdict:
    if not dangers:
        names = ", ".join(dict.fromkeys(seen)) or "no command"
        return PolicyVerdict(irreversible=False, reason=f"nothing deletes, overwrites, changes the system or "
                             f"sends data off the machine ({names})")
    reasons = list(dict.fromkeys(d.reason() for d in dangers))
    targets = list(dict.fromkeys(t for d in dangers for t in d.targets))
    return PolicyVerdict(irreversible=True, reason="; ".join(reasons), targets=targets)
