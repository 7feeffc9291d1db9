"""Doors out of the sandbox, closed: Unix sockets, and artoo's own home.

WHY: bubblewrap's read-only root still lets a process ``connect()`` to a filesystem
socket (the docker, database and D-Bus daemons listen on them), and a daemon acts outside
the sandbox and outside the overlay, where no change set can see it.  So tool commands
get no Unix sockets at all: ``socket(AF_UNIX, …)`` fails with EACCES through a seccomp
filter handed to bubblewrap (``--seccomp``), and ``/run`` (``/var/run``), where most
daemons listen, is an empty tmpfs besides.  (``connect`` itself cannot be filtered by
address family: seccomp cannot read the address it points to.  ``socketpair`` stays
allowed: it reaches nobody.)  The filter also refuses the x32 ABI and any foreign
architecture (32-bit binaries), whose socket calls it could not check.  artoo's home
(memory, audit log, settings, history) is an empty tmpfs to every tool command: the spec
keeps them out of every agent's reach.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from pathlib import Path

AF_UNIX = 1
X32_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
"""machine → (AUDIT_ARCH_*, the number of the ``socket`` syscall)."""
SOCKET_DIRS = ("/run", "/var/run")


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program refusing ``socket(AF_UNIX, …)`` (None on an unknown architecture)."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, nr_socket = arch
    deny = RET_ERRNO | errno.EACCES
    program = [  # (code, jt, jf, k); jumps count instructions after the next one
        (0x20, 0, 0, 4),            # 0: A = seccomp_data.arch
        (0x15, 0, 6, audit_arch),   # 1: foreign architecture → deny
        (0x20, 0, 0, 0),            # 2: A = seccomp_data.nr
        (0x35, 4, 0, X32_BIT),      # 3: x32 ABI → deny
        (0x15, 0, 2, nr_socket),    # 4: not socket() → allow
        (0x20, 0, 0, 16),           # 5: A = low word of args[0] (the address family)
        (0x15, 1, 0, AF_UNIX),      # 6: AF_UNIX → deny
        (0x06, 0, 0, RET_ALLOW),    # 7: allow
        (0x06, 0, 0, deny),         # 8: deny with EACCES
    ]
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


def filter_fd(machine: str | None = None) -> int | None:
    """A readable fd holding the filter, for ``bwrap --seccomp FD`` (the caller closes it)."""
    program = unix_socket_filter(machine)
    if program is None:
        return None
    fd = os.memfd_create("artoo-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def mask_args(hidden: list[Path], workspace: Path) -> tuple[list[str], list[str]]:
    """bwrap arguments hiding the socket directories and ``hidden`` paths: (before, after) the workspace bind.

    A hidden directory that holds the workspace is masked before the workspace is bound back
    inside it; one inside the workspace is masked after, so the bind cannot uncover it.
    """
    real_ws = os.path.realpath(workspace)
    before: list[str] = []
    after: list[str] = []
    seen: set[str] = set()
    for path in [*SOCKET_DIRS, *(str(h) for h in hidden)]:
        real = os.path.realpath(path)
        if real in seen or not os.path.isdir(real) or real == real_ws:
            continue
        seen.add(real)
        inside = real.startswith(real_ws.rstrip("/") + "/")
        (after if inside else before).extend(["--tmpfs", real])
    resolv = os.path.realpath("/etc/resolv.conf")  # often a link into /run: keep name resolution working
    if any(resolv.startswith(d + "/") for d in seen) and os.path.isfile(resolv):
        before.extend(["--ro-bind", resolv, resolv])
    return before, after
