"""The decision log: every LLM call, tool call, verdict and GGS decision of a run, kept to explain it later.

Why per-run append-only JSONL and not a DuckDB table: DuckDB allows one read-write process
per file, and the memory store already needs a single-writer design with a spool for that
reason.  A run that writes its own file needs no coordination at all: concurrent runs
(a deployment run and an ``artoo run``) each append to their own file, ``artoo log`` can read
while a run is still writing, and a crash loses at most the line being written (each
record is one ``write`` followed by ``fsync``; a torn last line is skipped by the reader).
Retention is deleting whole files, which cannot corrupt anything else.

Layout under ``ARTOO_HOME/decisions/``: one ``<UTC start>-<run id>.jsonl`` per run, and
``index.jsonl`` mapping run ids and task ids to files (the task id is only known after R1,
whose LLM call is already in the file by then).  Every record carries ``seq``, ``t``,
``kind`` and the ``scope`` (round, subtask, attempt) it happened in, set by the flows
through ``in_scope``.

Bounded: every string is cut to ``max_field_chars`` (head and tail kept), and once a run's
file passes ``max_run_mb`` only the small records (verdicts, GGS decisions, messages
without payload) are still written, after one ``truncated`` marker.  Secrets never reach
the disk: every record passes through ``artoo.tasks.decisions.redact`` first.
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from artoo.config.errors import ConfigurationError
from artoo.config.settings import DecisionLogParams, Settings
from artoo.tasks.decisions.redact import Redactor

DIR = "decisions"
INDEX = "index.jsonl"
VERSION = 1
SMALL_KINDS = frozenset({"run", "task", "verdict", "ggs", "end", "truncated"})
"""Kinds still written after a run's file reached its size bound (they carry the decisions)."""

SCOPE: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("artoo_decision_scope",
                                                                           default=MappingProxyType({}))
"""Where the current code runs: {"round": n, "subtask": id, "attempt": k}; set by the flows."""


@contextmanager
def in_scope(**scope: Any) -> Iterator[None]:
    """Add keys to the scope recorded with every record written inside the block."""
    token = SCOPE.set({**SCOPE.get(), **scope})
    try:
        yield
    finally:
        SCOPE.reset(token)


def decisions_dir(home: Path) -> Path:
    """The directory holding every run's decision log."""
    return Path(home) / DIR


class DecisionLog:
    """One run's decision log file; thread-safe appends, never raises into the run."""

    def __init__(self, home: Path, run_id: str, settings: Settings, request: str = "") -> None:
        self.params: DecisionLogParams = settings.decisions
        self.run_id = str(run_id)
        self.root = decisions_dir(home)
        self.root.mkdir(parents=True, exist_ok=True)
        started = datetime.now(UTC)
        self.path = self.root / f"{started:%Y%m%dT%H%M%S}-{self.run_id}.jsonl"
        self._redact = Redactor.from_settings(settings)
        self._lock = threading.Lock()
        self._seq = 0
        self._bytes = 0
        self._truncated = False
        self.errors = 0
        prune(self.root, self.params)
        self.write("run", run_id=self.run_id, request=request, version=VERSION,
                   settings={"ggs": settings.ggs.model_dump(mode="json")})
        self._index({"run_id": self.run_id, "file": self.path.name, "started": started.isoformat(),
                     "request": request[:200]})

    # ---- writing -------------------------------------------------------------------------------

    def write(self, kind: str, **data: Any) -> None:
        """Append one record (redacted, bounded, fsynced); failures are counted, never raised."""
        if not self.params.enabled:
            return
        try:
            self._append(kind, data)
        except Exception:  # the log explains a run; it must never break one
            self.errors += 1

    def _append(self, kind: str, data: dict[str, Any]) -> None:
        limit = self.params.max_run_mb * 1024 * 1024
        with self._lock:
            if self._bytes >= limit and kind not in SMALL_KINDS:
                if self._truncated:
                    return
                self._truncated = True
                kind, data = "truncated", {"reason": f"the run's log reached {self.params.max_run_mb} MB; "
                                                     "only verdicts and GGS decisions follow"}
            self._seq += 1
            record = {"seq": self._seq, "t": datetime.now(UTC).isoformat(), "kind": kind,
                      "scope": dict(SCOPE.get()), **data}
            line = json.dumps(self._redact(_bounded(record, self.params.max_field_chars)), default=str) + "\n"
            encoded = line.encode("utf-8")
            _append_synced(self.path, encoded)
            self._bytes += len(encoded)

    def task(self, task_id: str, intent: str) -> None:
        """R1 named the task: record it and index it so ``artoo log TASK`` finds this run."""
        self.write("task", task_id=task_id, intent=intent)
        self._index({"run_id": self.run_id, "task_id": task_id, "file": self.path.name})

    def llm_call(self, call: dict[str, Any]) -> None:
        """The LLM client's observer: role, model, full request, response, tokens, latency."""
        self.write("llm", **call)

    def tool_call(self, call: dict[str, Any]) -> None:
        """The ToolBox's observer: name, arguments, output, exit status, change set."""
        self.write("tool", **call)

    def bus_message(self, record: dict[str, Any]) -> None:
        """A Bus sink: every inter-role message (plan, subtasks, outcomes, directives, the FinalResult)."""
        resource = record.get("resource", {})
        self.write("message", event=record.get("event"), sender=resource.get("artoo.from"),
                   to=resource.get("artoo.to"), payload=record.get("payload"))

    def verdict(self, role: str, answer: Any, **where: Any) -> None:
        """One validator answer (R4a per attempt, R4b per round)."""
        data = answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer
        self.write("verdict", role=role, answer=data, **where)

    def ggs(self, *, task_id: str, intent: str, round_no: int, elapsed_ms: float, params: Any,
            message: Any, decision: Any, paused_ms: float = 0.0, spent: float = 0.0) -> None:
        """One GGS evaluation: exactly the controller's inputs (for replay) and what it decided.

        ``paused_ms`` is the part of ``elapsed_ms`` spent waiting for a Law-1 answer (not in Ω); ``spent`` the
        task's weighed LLM calls so far (Ω's calls term).
        """
        directive = decision.directive.model_dump(mode="json") if decision.directive is not None else None
        final = decision.final.model_dump(mode="json") if decision.final is not None else None
        self.write("ggs", task_id=task_id, intent=intent, round=round_no, elapsed_ms=elapsed_ms, paused_ms=paused_ms,
                   spent=spent,
                   params=params.model_dump(mode="json"), message=message.model_dump(mode="json"),
                   state=decision.state, loss=decision.loss.model_dump(mode="json"), grad_l=decision.grad_l,
                   urgency=decision.urgency, abandon_reason=decision.abandon_reason, log_line=decision.log_line,
                   directive=directive, final=final)

    def _index(self, entry: dict[str, Any]) -> None:
        try:
            _append_synced(self.root / INDEX, (json.dumps(self._redact(entry)) + "\n").encode("utf-8"))
        except OSError:
            self.errors += 1


# ---- reading -----------------------------------------------------------------------------------


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every whole record of one run's file, in order (a torn or corrupt line is skipped)."""
    records = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and "kind" in item:
            records.append(item)
    return records


def index_entries(home: Path) -> list[dict[str, Any]]:
    """The index, one entry per run (task ids merged in), oldest first, only runs whose file exists."""
    root = decisions_dir(home)
    runs: dict[str, dict[str, Any]] = {}
    path = root / INDEX
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict) and item.get("run_id"):
                runs.setdefault(item["run_id"], {}).update(item)
    known = {e.get("file") for e in runs.values()}
    for orphan in sorted(root.glob("*.jsonl")) if root.exists() else []:  # an index line lost in a crash
        if orphan.name != INDEX and orphan.name not in known:
            runs[orphan.stem.split("-", 1)[-1]] = {"run_id": orphan.stem.split("-", 1)[-1], "file": orphan.name}
    entries = [e for e in runs.values() if (root / str(e.get("file"))).is_file()]
    return sorted(entries, key=lambda e: str(e.get("file")))


def find_run(home: Path, key: str | None = None) -> Path | None:
    """The file of the run named by ``key`` (a task id, or a run id or its prefix); the latest when None."""
    entries = index_entries(home)
    if not entries:
        return None
    root = decisions_dir(home)
    if not key:
        return root / entries[-1]["file"]
    matches = [e for e in entries if e.get("task_id") == key or str(e.get("run_id", "")).startswith(key)]
    return root / matches[-1]["file"] if matches else None


def load_run(home: Path, key: str | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """The file and records of a task or run (the latest when ``key`` is None); ConfigurationError if none."""
    path = find_run(home, key)
    if path is None:
        what = f"task or run {key!r}" if key else "any run"
        raise ConfigurationError(f"no decision log for {what} under {decisions_dir(home)} "
                                 "(runs are recorded from this release on; retention may have removed old ones)")
    return path, read_records(path)


# ---- bounds and retention ----------------------------------------------------------------------


def prune(root: Path, params: DecisionLogParams, now: float | None = None) -> list[Path]:
    """Delete run files beyond ``keep_runs`` (oldest first) or older than ``keep_days``; returns them."""
    files = sorted(p for p in root.glob("*.jsonl") if p.name != INDEX)
    cutoff = (now if now is not None else time.time()) - timedelta(days=params.keep_days).total_seconds()
    doomed = files[:max(0, len(files) - params.keep_runs)]
    doomed += [p for p in files[len(doomed):] if _mtime(p) < cutoff]
    for path in doomed:
        try:
            path.unlink()
        except OSError:
            continue
    if doomed:
        _compact_index(root)
    return doomed


def _compact_index(root: Path) -> None:
    """Rewrite the index without lines for deleted files (atomically: write, fsync, rename)."""
    path = root / INDEX
    if not path.exists():
        return
    keep = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and (root / str(item.get("file"))).is_file():
            keep.append(line + "\n")
    temporary = path.with_suffix(".tmp")
    with temporary.open("w", encoding="utf-8") as fh:
        fh.writelines(keep)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temporary, path)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()


def _append_synced(path: Path, data: bytes) -> None:
    """One O_APPEND write and an fsync: the record is on disk before the run goes on."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _bounded(value: Any, limit: int) -> Any:
    """Every string cut to ``limit`` characters, head and tail kept with a marker between."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        half = max(limit // 2, 1)
        return f"{value[:half]}\n…[{len(value) - 2 * half} characters cut]…\n{value[-half:]}"
    if isinstance(value, dict):
        return {k: _bounded(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bounded(v, limit) for v in value]
    return value
