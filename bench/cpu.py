"""CPU seconds spent by process trees, read from Linux's /proc: where a benchmark's time goes.

The cluster benchmark asks "where does the limit lie": the LLM's latency, the workers' own
Python, the Prefect server, or PostgreSQL.  Wall time cannot say; the CPU each of those
process trees burned over the measured interval can.  A tree's total is every live process's
own time plus the time of the children it has already reaped (``cutime``/``cstime``), so a
flow-run subprocess that came and went under a worker is still counted.  No psutil: the
fields are a handful of integers in ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # from field 3 (state) on; the name may hold spaces
    return int(fields[1]), sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime


def tree_cpu_s(roots: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far of each named group of process trees (``{"server": [pid], …}``)."""
    stats = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(p.name))}
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _) in stats.items():
        children[ppid].append(pid)

    def total(pid: int) -> float:
        return stats.get(pid, (0, 0.0))[1] + sum(total(c) for c in children[pid])

    return {name: sum(total(p) for p in pids) for name, pids in roots.items()}


def machine_busy_s() -> tuple[float, float]:
    """(busy CPU seconds, total CPU seconds) of the whole machine since boot, all cores (/proc/stat)."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(x) for x in first]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / TICK, sum(ticks[:8]) / TICK


def postmaster_pid(data_dir: Path) -> int | None:
    """The running PostgreSQL cluster's root process (first line of ``postmaster.pid``)."""
    try:
        return int((data_dir / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None
