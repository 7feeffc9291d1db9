"""Statistics across restarts: ``audit_stats.json`` is a checkpointed fold of the log.

Choice: the statistics are *persisted and kept in step with the log* rather than
recomputed from scratch each time.  The state file records how far it has folded the
log (line count, byte offset, link of that line); whoever needs a report takes the lock,
folds only the records appended since, saves, and builds the report.  When the log does
not continue from where the state stopped (replaced, truncated) or the state file is
missing or unreadable, the whole log is refolded, keeping the past windows' role counts
when the old state had them.  A periodic report closes the window (artoo.tasks.audit.stats.
reset_window); an on-demand one does not.  Every report is appended to ``reports.jsonl``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Literal

from pydantic import ValidationError

from artoo.config.audit_contracts import AuditReport
from artoo.tasks.audit.anomalies import AuditParams
from artoo.tasks.audit.chain import GENESIS, link_of
from artoo.tasks.audit.log import AuditPaths, iter_records, locked, write_atomic
from artoo.tasks.audit.report import build_report
from artoo.tasks.audit.stats import StatsState, fold, reset_window


def load_state(paths: AuditPaths) -> StatsState | None:
    """The saved state, or None when there is none or it is unreadable."""
    try:
        return StatsState.model_validate_json(paths.stats.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def save_state(paths: AuditPaths, state: StatsState) -> None:
    """Write the state atomically."""
    write_atomic(paths.stats, state.model_dump_json())


def _fresh(old: StatsState | None, now: datetime) -> StatsState:
    if old is None:
        return StatsState(window_start=now)
    return StatsState(window_start=old.window_start, history=old.history)


def _continues(paths: AuditPaths, state: StatsState) -> bool:
    size = paths.log.stat().st_size if paths.log.exists() else 0
    if size < state.through_offset:
        return False
    for _, record, _ in iter_records(paths.log, state.through_offset):
        return record is not None and record.get("prev_hash") == state.through_link
    return True


def refresh(paths: AuditPaths, state: StatsState | None, now: datetime) -> StatsState:
    """Fold the records appended after ``state`` (refolding everything when the log changed under it)."""
    if state is None or (state.through_offset and not _continues(paths, state)):
        state = _fresh(state, now)
    for position, record, line in iter_records(paths.log, state.through_offset):
        number = state.through_seq + 1
        if record is None or not isinstance(record.get("seq"), int):
            state.unreadable.append(number)
        else:
            fold(state, {**record, "seq": number})
        state.through_seq, state.through_offset, state.through_link = number, position, link_of(line)
    if state.through_seq == 0:
        state.through_link = GENESIS
    return state


def publish_report(paths: AuditPaths, trigger: Literal["periodic", "on-demand"],
                   params: AuditParams | None = None, now: datetime | None = None) -> AuditReport:
    """Bring the statistics up to date, build the report, log it; a periodic report closes the window."""
    now = now or datetime.now(UTC)
    with locked(paths):
        state = refresh(paths, load_state(paths), now)
        report = build_report(state, trigger, params)
        with open(paths.reports, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"at": now.isoformat(), "report": report.model_dump(mode="json")}) + "\n")
        if trigger == "periodic":
            reset_window(state, now)
        save_state(paths, state)
    return report


def read_reports(paths: AuditPaths) -> list[dict]:
    """Every report logged so far (unreadable lines skipped)."""
    if not paths.reports.exists():
        return []
    reports = []
    for line in paths.reports.read_text(encoding="utf-8").splitlines():
        try:
            reports.append(json.loads(line))
        except ValueError:
            continue
    return reports
