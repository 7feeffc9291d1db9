"""Session context for R1: the last few {input, summary} pairs of this user's runs.

Kept as a small JSONL file under ARTOO_HOME so "do it again" and "that file" resolve
across separate ``artoo run`` processes.  Appends are single short writes; a torn or
corrupt line is skipped rather than failing the next run.
"""

from __future__ import annotations

import json
from pathlib import Path

FILE = "session_history.jsonl"

_TAKEN: dict[str, list[dict]] = {}
"""Per request text, the history its command read when it started (and sent R1 early with)."""


def load_history(home: Path, size: int = 5) -> list[dict]:
    """The last ``size`` pairs, oldest first."""
    path = home / FILE
    if not path.exists():
        return []
    pairs = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and "input" in item:
            pairs.append({"input": str(item["input"]), "summary": str(item.get("summary", ""))})
    return pairs[-size:]


def append_history(home: Path, raw_input: str, summary: str, keep: int = 50) -> None:
    """Record one finished run; the file is trimmed to the last ``keep`` lines."""
    path = home / FILE
    line = json.dumps({"input": raw_input[:2000], "summary": summary[:2000]}) + "\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    if len(lines) > keep * 2:
        path.write_text("".join(lines[-keep:]), encoding="utf-8")


def keep_for_run(request: str, history: list[dict]) -> None:
    """Remember the history a command read for ``request``: its run's R1 uses the same one (artoo.runner).

    Without it, a run of another terminal finishing in between changed R1's words, and R1's early
    request (artoo.tasks.llm.early) was wasted and sent again.
    """
    _TAKEN[request] = history


def history_for(request: str, home: Path, size: int = 5) -> list[dict]:
    """The history kept for this request's command, else the last ``size`` pairs as they are now."""
    if request in _TAKEN:
        return _TAKEN.pop(request)
    return load_history(home, size)


def forget_run(request: str) -> None:
    """Drop what ``keep_for_run`` kept (the command ended, whether or not its run read it)."""
    _TAKEN.pop(request, None)
