"""Benchmark: how fast ``/audit`` answers in ``artoo chat`` (spec: the report within 3 s).

The REPL's ``/audit`` is ``artoo.chat.audit_markdown``: fold the audit log's new records into the
statistics, publish the report and render it.  The bench writes an audit log of ``tasks`` whole
conversations (task spec, a round, a subtask outcome, an outcome summary, a final result; every
tenth one replanned) into a temporary ARTOO_HOME, then times ``samples`` calls.  The first call
folds the whole log (a cold REPL after a long history); later calls fold only what is new, so
both the cold figure and the p95 of warm calls are printed against the 3 s target.

    python -m artoo.bench.audit_bench [--tasks N] [--samples N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

TARGET_S = 3.0
ROUTE = {"task_spec": ("R1", "R2"), "dispatch_manifest": ("R2", "R4b"), "subtask": ("R2", "R3"),
         "execution_result": ("R3", "R4a"), "subtask_outcome": ("R4a", "R4b"),
         "outcome_summary": ("R4b", "R7"), "replan_request": ("R4b", "R7"), "plan_directive": ("R7", "R2"),
         "final_result": ("R7", "user")}


def conversation(task: str, replanned: bool) -> list[tuple[str, dict]]:
    """One task's messages as the bus carries them (payloads trimmed to what the Auditor reads)."""
    loss = {"D": 0.0, "L": 0.0, "P": 0.0, "Omega": 0.1}
    round_ = [("dispatch_manifest", {}), ("subtask", {}), ("execution_result", {"status": "completed"}),
              ("subtask_outcome", {"status": "matched", "tool_calls": ["shell: ls → a b"], "failure_reason": None})]
    messages = [("task_spec", {"task_id": task}), *round_]
    if replanned:
        messages += [("replan_request", {"failed_outcomes": []}),
                     ("plan_directive", {"directive": "change_path", "grad_l": 0.0,
                                         "loss": {"D": 1.0, "L": 0.6, "P": 0.0, "Omega": 0.05}}), *round_]
    messages += [("outcome_summary", {"outcomes": [{"tool_calls": ["shell: ls"]}]}),
                 ("final_result", {"directive": "accept", "grad_l": 0.0, "summary": "done", "output": "ok",
                                   "loss": loss})]
    return messages


def seed(home: Path, tasks: int) -> int:
    """Write ``tasks`` conversations into the audit log under ``home``; returns the records written."""
    from artoo.tasks.audit.log import AuditLog

    log, start, rows = AuditLog(home), datetime.now(UTC) - timedelta(hours=1), []
    for n in range(tasks):
        task = f"bench_task_{n}"
        for seq, (kind, payload) in enumerate(conversation(task, n % 10 == 0), start=1):
            frm, to = ROUTE[kind]
            rows.append({"event_id": str(uuid.uuid4()), "occurred": (start + timedelta(seconds=len(rows))).isoformat(),
                         "task_id": task, "message": kind, "from_role": frm, "to_role": to, "task_seq": seq,
                         "payload": {"kind": kind, **payload}})
    log.append(rows)
    return len(rows)


def run(tasks: int = 500, samples: int = 20) -> dict:
    """Time ``samples`` /audit answers over a log of ``tasks`` conversations."""
    from artoo.chat import audit_markdown
    from artoo.config.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="artoo-audit-bench-") as tmp:
        home = Path(tmp)
        records = seed(home, tasks)
        settings = load_settings(home=home)
        times = []
        for _ in range(samples):
            started = time.perf_counter()
            audit_markdown(settings)
            times.append(time.perf_counter() - started)
    warm = sorted(times[1:]) or times
    p95 = warm[min(len(warm) - 1, round(0.95 * (len(warm) - 1)))]
    return {"tasks": tasks, "records": records, "samples": samples, "cold_s": times[0],
            "p50_s": statistics.median(warm), "p95_s": p95, "target_s": TARGET_S,
            "met": times[0] <= TARGET_S and p95 <= TARGET_S}


def main(argv: list[str] | None = None) -> int:
    """Print the /audit answer times."""
    parser = argparse.ArgumentParser(prog="python -m artoo.bench.audit_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500, help="conversations in the audit log (500)")
    parser.add_argument("--samples", type=int, default=20, help="timed /audit calls (20)")
    args = parser.parse_args(argv)
    doc = run(args.tasks, args.samples)
    verdict = "met" if doc["met"] else "MISSED"
    print(f"/audit over {doc['records']} records ({doc['tasks']} tasks), {doc['samples']} calls: "
          f"cold {doc['cold_s']:.3f} s, p50 {doc['p50_s']:.3f} s, p95 {doc['p95_s']:.3f} s "
          f"(target ≤ {TARGET_S:.0f} s: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
