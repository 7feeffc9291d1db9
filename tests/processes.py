"""Process helpers shared by tests that kill or outlive real processes."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Iterator
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie counts as dead (only its parent's reaping is missing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def read_until(stream, marker: bytes, timeout_s: float) -> bytes:
    """Read ``stream`` (a pipe or a pty) until ``marker`` shows, it closes, or ``timeout_s`` passes."""
    seen, deadline = b"", time.monotonic() + timeout_s
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            chunk = os.read(stream if isinstance(stream, int) else stream.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
    return seen


def command_lines() -> Iterator[tuple[int, bytes]]:
    """Each running process's pid and raw command line (its arguments, each ended by a NUL byte)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = cmdline.read_bytes()
        except OSError:  # gone meanwhile
            continue
        yield int(cmdline.parent.name), raw


def wait_for_command(argv: list[str], timeout_s: float) -> int:
    """Wait until a process runs exactly ``argv`` (e.g. the sandboxed ``sleep 60`` a story's tool started);
    its pid."""
    wanted = b"".join(a.encode() + b"\0" for a in argv)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid, raw in command_lines():
            if raw == wanted:
                return pid
        time.sleep(0.1)
    raise AssertionError(f"no `{' '.join(argv)}` process started")
