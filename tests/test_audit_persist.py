"""Statistics survive restarts: the state file is a checkpointed fold of the real log on disk.

Every test writes a real audit log under ``tmp_path`` with the real writer, then asks for
reports the way the Auditor and ``artoo audit`` do.
"""

from __future__ import annotations

import ast
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from artoo.tasks.audit.log import AuditLog, AuditPaths
from artoo.tasks.audit.persist import load_state, publish_report, read_reports
from artoo.tasks.audit.report import anomaly_names
from tests.conftest import run_cli
from tests.test_audit_stats import CLEAN, ROUND, THRASH, Stream, msg

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[1]


def log_stream(home: Path, stream: Stream) -> AuditPaths:
    """Append the stream's messages to the real log as observed events."""
    log = AuditLog(home)
    log.append([{"event_id": str(uuid.uuid4()), **{k: r[k] for k in ("occurred", "task_id", "message", "from_role",
                                                                      "to_role", "task_seq", "payload")}}
                for r in stream.records])
    return log.paths


def test_reports_fold_only_new_records_and_a_periodic_report_closes_the_window(tmp_path: Path):
    paths = log_stream(tmp_path, Stream().add(CLEAN, task="one"))
    assert publish_report(paths, "on-demand", now=NOW).tasks_observed == 1
    assert load_state(paths).through_seq == len(CLEAN)
    log_stream(tmp_path, Stream().add(THRASH, task="two"))
    report = publish_report(paths, "periodic", now=NOW)
    assert (report.tasks_observed, anomaly_names(report)) == (2, {"ggs_thrashing"})
    after = publish_report(paths, "on-demand", now=NOW)
    assert (after.tasks_observed, after.anomalies, after.window_start) == (0, [], NOW)
    assert [r["report"]["trigger"] for r in read_reports(paths)] == ["on-demand", "periodic", "on-demand"]


def test_a_lost_or_corrupt_state_file_is_rebuilt_from_the_log(tmp_path: Path):
    paths = log_stream(tmp_path, Stream().add(THRASH, task="a").add(CLEAN, task="b"))
    first = publish_report(paths, "on-demand", now=NOW)
    paths.stats.write_text("{not json")
    assert publish_report(paths, "on-demand", now=NOW) == first
    paths.stats.unlink()
    assert publish_report(paths, "on-demand", now=NOW) == first


def test_a_replaced_log_is_refolded_instead_of_continued(tmp_path: Path):
    paths = log_stream(tmp_path, Stream().add(THRASH, task="old"))
    publish_report(paths, "on-demand", now=NOW)
    paths.log.unlink()
    paths.head.unlink()
    log_stream(tmp_path, Stream().add(CLEAN, task="new").add(CLEAN, task="newer"))
    report = publish_report(paths, "on-demand", now=NOW)
    assert [g.task_id for g in report.gap_trends] == ["new", "newer"]
    assert report.anomalies == []


def test_drift_is_seen_across_periodic_windows(tmp_path: Path):
    """The executor's correction rate per window: 1/4, 2/4, 3/4 → drift in the third report."""
    paths = AuditPaths(tmp_path)
    reports = []
    for window, corrections in enumerate((1, 2, 3)):
        retries = [msg("correction_signal", failure_class="logical")] * corrections
        tries = [msg("execution_result", status="completed")] * (4 - 1)
        log_stream(tmp_path, Stream().add([msg("task_spec"), *ROUND, *tries, *retries], task=f"w{window}"))
        reports.append(publish_report(paths, "periodic", now=NOW))
    assert [r.drift_alerts for r in reports[:2]] == [[], []]
    assert reports[2].drift_alerts == ["drift: R3 correction rate rising across 3 windows: 0.25 → 0.50 → 0.75"]


def test_artoo_audit_json_reports_from_the_log_and_flags_unreadable_lines(artoo_env: Path):
    paths = log_stream(artoo_env / "home", Stream().add(THRASH, task="find_answer"))
    code, out, _ = run_cli("audit", "--json")
    report = json.loads(out)
    assert (code, report["trigger"], report["tasks_observed"]) == (0, "on-demand", 1)
    assert report["anomalies"][0].startswith("ggs_thrashing: task find_answer")
    with open(paths.log, "ab") as handle:
        handle.write(b"garbage\n")
    code, out, _ = run_cli("audit", "--json")
    assert any(a.startswith("audit_log: unreadable record(s) at line(s) 18") for a in json.loads(out)["anomalies"])
    code, out, _ = run_cli("audit")
    assert code == 0 and "ggs_thrashing" in out


AUDIT_CODE = sorted([*(ROOT / "tasks" / "audit").glob("*.py"), ROOT / "flows" / "auditor.py"])


@pytest.mark.parametrize("path", AUDIT_CODE, ids=lambda p: p.name)
def test_audit_code_never_reaches_memory_or_publishes(path: Path):
    """The Auditor is read-only towards agents: no memory import, no publish, no emitted event."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imports |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not [m for m in imports if m == "artoo.memory" or m.startswith("artoo.memory.")]
    assert not {"Bus", "emit_event", "get_events_client"} & names
    assert not {"publish", "emit", "write_megram"} & calls
