"""locate: fast personal file search (the spec's mdfind, on Linux).

A plocate/locate index answers at once when the machine has one; otherwise a bounded
breadth-first ``os.scandir`` walk of the home directory does, capped in entries visited
and in seconds so a huge home cannot stall a run, skipping hidden directories unless
the query itself starts with a dot.  A query with glob characters matches names by
glob, otherwise by case-insensitive substring.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

RESULT_CAP = 200
VISIT_CAP = 300_000
WALK_SECONDS = 5.0


@dataclass
class LocateAnswer:
    """Paths found, how, and whether the search stopped early."""

    paths: list[str]
    source: str
    complete: bool = True

    def render(self, query: str, where: str) -> str:
        """One path per line, or a clear "no match", plus a note when incomplete."""
        body = "\n".join(self.paths) if self.paths else f"no files match {query!r} {where}"
        if not self.complete:
            body += f"\n(search stopped early ({self.source}); results may be incomplete)"
        return body


def name_matches(name: str, query: str) -> bool:
    """Glob match when the query has glob characters, else case-insensitive substring."""
    if any(ch in query for ch in "*?["):
        return fnmatch.fnmatch(name.lower(), query.lower())
    return query.lower() in name.lower()


def locate(query: str, home: Path, under: list[Path] | None = None, use_index: bool = True,
           limit: int = RESULT_CAP, visit_cap: int = VISIT_CAP, seconds: float = WALK_SECONDS) -> LocateAnswer:
    """Find files by name: the locate index when present, else a bounded walk of ``home`` (or ``under``)."""
    roots = under or [home]
    if use_index:
        indexed = _from_index(query, roots, limit)
        if indexed is not None:
            return indexed
    found: list[str] = []
    complete = True
    for root in roots:
        answer = walk(query, root, limit - len(found), visit_cap, seconds)
        found += answer.paths
        complete = complete and answer.complete
    return LocateAnswer(found, "walk", complete)


def _from_index(query: str, roots: list[Path], limit: int) -> LocateAnswer | None:
    binary = shutil.which("plocate") or shutil.which("locate")
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, "-i", "-b", "-l", str(limit * 5), "--", query], capture_output=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in (0, 1) or (done.returncode == 1 and done.stderr.strip()):
        return None  # no database, or it failed: walk instead
    prefixes = [str(r).rstrip("/") + "/" for r in roots]
    lines = done.stdout.decode("utf-8", errors="replace").splitlines()
    paths = [p for p in lines if any(p.startswith(pre) for pre in prefixes)]
    return LocateAnswer(paths[:limit], Path(binary).name, len(paths) <= limit)


def walk(query: str, root: Path, limit: int = RESULT_CAP, visit_cap: int = VISIT_CAP,
         seconds: float = WALK_SECONDS) -> LocateAnswer:
    """Breadth-first name search under ``root``, bounded in results, entries visited and time."""
    show_hidden = query.startswith(".")
    deadline = time.monotonic() + seconds
    queue, found, visited = deque([str(root)]), [], 0
    while queue:
        folder = queue.popleft()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    visited += 1
                    if name_matches(entry.name, query):
                        found.append(entry.path)
                    if entry.is_dir(follow_symlinks=False) and (show_hidden or not entry.name.startswith(".")):
                        queue.append(entry.path)
        except OSError:
            continue
        if len(found) >= limit or visited >= visit_cap or time.monotonic() > deadline:
            return LocateAnswer(sorted(found[:limit]), "walk", not queue and len(found) <= limit)
    return LocateAnswer(sorted(found), "walk", True)
