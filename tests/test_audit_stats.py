"""Window statistics and anomaly detectors, table-driven over scripted message streams.

Each case is a conversation as the bus would carry it (kind, from, to, sequence, payload);
the records are folded into a fresh state exactly as the Auditor folds its log, and the
report is checked for the anomalies the story must (and must not) raise.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from artoo.tasks.audit.anomalies import AuditParams, drift_alerts, trend
from artoo.tasks.audit.report import anomaly_names, build_report, render_markdown
from artoo.tasks.audit.stats import StatsState, fold, reset_window

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ROUTE = {"task_spec": ("R1", "R2"), "dispatch_manifest": ("R2", "R4b"), "subtask": ("R2", "R3"),
         "execution_result": ("R3", "R4a"), "correction_signal": ("R4a", "R3"), "subtask_outcome": ("R4a", "R4b"),
         "outcome_summary": ("R4b", "R7"), "replan_request": ("R4b", "R7"), "plan_directive": ("R7", "R2"),
         "final_result": ("R7", "user"), "megram": ("R7", "R5"), "memory_query": ("R2", "R5")}


def msg(kind: str, **payload) -> tuple[str, dict]:
    return kind, payload


def directive(name: str, d: float, grad: float = 0.0) -> tuple[str, dict]:
    return msg("plan_directive", directive=name, grad_l=grad, loss={"D": d, "L": d, "P": 1, "Omega": 0})


def final(name: str, d: float = 0.0, grad: float = 0.0, summary: str = "done", output=None) -> tuple[str, dict]:
    return msg("final_result", directive=name, grad_l=grad, summary=summary, output=output,
               loss={"D": d, "L": d, "P": 0, "Omega": 0})


def outcome(status: str = "matched", tools: tuple[str, ...] = ("shell: echo hi → hi",), reason=None):
    return msg("subtask_outcome", status=status, tool_calls=list(tools), failure_reason=reason)


ROUND = [msg("dispatch_manifest"), msg("subtask"), msg("execution_result", status="completed")]
CLEAN = [msg("task_spec"), *ROUND, outcome(), msg("outcome_summary", outcomes=[{"tool_calls": ["shell: ls"]}]),
         final("accept")]


class Stream:
    """Audit records for scripted conversations, numbered like the log numbers them."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def add(self, messages, task: str = "t", seqs: list[int] | None = None, times: list[float] | None = None,
            route: dict | None = None, run: str = "") -> Stream:
        for i, (kind, payload) in enumerate(messages):
            frm, to = (route or {}).get(kind, ROUTE[kind])
            at = times[i] if times else len(self.records)
            self.records.append({"seq": len(self.records) + 1, "task_id": task, "message": kind,
                                 "occurred": datetime.fromtimestamp(T0.timestamp() + at, UTC).isoformat(),
                                 "from_role": frm, "to_role": to, "task_seq": seqs[i] if seqs else i + 1,
                                 "payload": {"kind": kind, **payload}, **({"run": run} if run else {})})
        return self

    def state(self) -> StatsState:
        state = StatsState(window_start=T0)
        for record in self.records:
            fold(state, record)
        return state


def names(stream: Stream) -> set[str]:
    return anomaly_names(build_report(stream.state(), "on-demand"))


THRASH = [msg("task_spec"), *ROUND, directive("break_symmetry", 1.0), *ROUND, directive("break_symmetry", 1.0),
          *ROUND, directive("break_symmetry", 1.0), *ROUND, final("abandon", 1.0, summary="replan budget spent")]
CASES = [
    ("a clean accept raises nothing", Stream().add(CLEAN), set()),
    ("break_symmetry three times at D=1 is thrashing", Stream().add(THRASH), {"ggs_thrashing"}),
    ("break_symmetry with D falling is not", Stream().add([msg("task_spec"), directive("break_symmetry", 1.0),
                                                            directive("break_symmetry", 0.5)]), set()),
    ("one break_symmetry is not", Stream().add([msg("task_spec"), directive("break_symmetry", 1.0),
                                                directive("refine", 1.0)]), set()),
    ("worsening twice is a convergence failure",
     Stream().add([msg("task_spec"), directive("change_path", 0.5, 0.0), directive("change_approach", 0.5, 0.32),
                   final("abandon", 1.0, 0.32)]), {"convergence_failure"}),
    ("a Law-2 abandon is a convergence failure",
     Stream().add([msg("task_spec"), final("abandon", 1.0, 0.05, summary="the Law-2 kill switch fired")]),
     {"convergence_failure"}),
    ("worsening, improving, worsening is not",
     Stream().add([msg("task_spec"), directive("refine", 0.5, 0.32), directive("refine", 0.4, 0.05),
                   directive("refine", 0.5, 0.32)]), set()),
    ("a missing sequence number is a bus gap", Stream().add(CLEAN, seqs=[1, 2, 3, 4, 6, 7, 8]), {"bus_gap"}),
    ("a number published well after a higher one is a bus gap",
     Stream().add(CLEAN, times=[0, 1, 2, 9, 3, 4, 5]), {"bus_gap"}),
    ("a sub-second race between parallel publishers is not",
     Stream().add(CLEAN, times=[0, 1, 2, 3.4, 3.0, 4, 5]), set()),
    ("a number seen twice is a bus gap", Stream().add(CLEAN, seqs=[1, 2, 3, 4, 4, 5, 6]), {"bus_gap"}),
    ("a message without a number is a bus gap", Stream().add(CLEAN, seqs=[1, 2, 3, 4, 0, 6, 7]), {"bus_gap"}),
    ("a route the spec does not allow is a boundary violation",
     Stream().add(CLEAN, route={"plan_directive": ("R7", "R3"), "final_result": ("R3", "user")}),
     {"boundary_violation"}),
    ("[LAW1] in the final summary", Stream().add([*CLEAN[:-1], final("accept", summary="ok [LAW1] denied: rm")]),
     {"law1_denied"}),
    ("[LAW1] in an outcome", Stream().add([msg("task_spec"), *ROUND, outcome("failed", (), "[LAW1] denied: rm -rf x"),
                                           final("abandon", 1.0)]), {"law1_denied"}),
    ("an accept with no tool call anywhere is unverified",
     Stream().add([msg("task_spec"), *ROUND, outcome(tools=()), msg("outcome_summary", outcomes=[{"tool_calls": []}]),
                   final("success", 0.2)]), {"unverified_success"}),
    ("tool evidence in an earlier round only is unverified",
     Stream().add([msg("task_spec"), *ROUND, outcome(), directive("refine", 0.5), *ROUND, outcome(tools=()),
                   final("accept")]), {"unverified_success"}),
    ("evidence in the final output counts", Stream().add([msg("task_spec"), *ROUND, outcome(tools=()),
                                                          final("accept", output={"tool_calls": ["shell: ls"]})]),
     set()),
    ("an abandon needs no evidence", Stream().add([msg("task_spec"), *ROUND, outcome(tools=()), final("abandon", 1.0)]),
     set()),
    ("two runs of the same task_id are two conversations", Stream().add(CLEAN).add(CLEAN), set()),
]


@pytest.mark.parametrize(("story", "stream", "expected"), CASES, ids=[c[0] for c in CASES])
def test_anomalies(story: str, stream: Stream, expected: set[str]):
    assert names(stream) == expected


def test_each_anomaly_names_its_task():
    report = build_report(Stream().add(THRASH, task="find_answer").state(), "on-demand")
    assert report.anomalies == ["ggs_thrashing: task find_answer: 3 consecutive break_symmetry directives "
                                "without D decreasing (D=1.00)"]
    assert "ggs_thrashing" in render_markdown(report)


@pytest.mark.parametrize(("ds", "expected"), [
    ([1.0, 0.5, 0.0], "improving"), ([0.5, 0.5, 1.0], "worsening"), ([1.0], "stable"), ([], "stable"),
    ([0.5, 0.505], "stable"), ([0.5, 1.0, 0.5], "stable"),
])
def test_gap_trend_follows_d(ds: list[float], expected: str):
    stream = Stream().add([msg("task_spec"), *(directive("refine", d) for d in ds)])
    conv = next(iter(stream.state().conversations.values()))
    assert trend(conv, AuditParams()) == expected


def test_window_counts_tasks_corrections_and_tool_health():
    retry = [msg("correction_signal", failure_class="environmental"), msg("execution_result", status="failed"),
             msg("correction_signal", failure_class="logical"), msg("correction_signal", failure_class="logical")]
    stream = Stream().add([msg("task_spec"), *ROUND, *retry, final("abandon", 1.0)], task="a").add(CLEAN, task="b")
    report = build_report(stream.state(), "periodic")
    assert (report.tasks_observed, report.total_corrections) == (2, 3)
    assert report.tool_health.model_dump() == {"execution_failures": 1, "environmental_retries": 1,
                                               "logical_retries": 2}
    assert [(g.task_id, g.trend) for g in report.gap_trends] == [("a", "stable"), ("b", "stable")]


def test_a_window_reset_forgets_counts_but_not_a_running_conversation():
    records = Stream().add(CLEAN[:4], task="long").add(CLEAN, task="done").add(CLEAN[4:], task="long").records
    for record in records[11:]:
        record["task_seq"] += 4  # the rest of "long", numbered after its first four messages
    state = StatsState(window_start=T0)
    for record in records[:11]:
        fold(state, record)
    reset_window(state, T0)
    assert build_report(state, "on-demand").tasks_observed == 0
    for record in records[11:]:  # in the next window
        fold(state, record)
    report = build_report(state, "on-demand")
    assert (report.tasks_observed, anomaly_names(report)) == (1, set())  # no false gap across the reset
    reset_window(state, T0)
    reset_window(state, T0)
    assert state.conversations == {}  # finished conversations are dropped after an idle window


@pytest.mark.parametrize(("history", "current", "alerts"), [
    ([{"R3": [1, 10]}, {"R3": [3, 10]}], {"R3": [6, 10]}, ["drift: R3 correction rate rising across 3 windows: "
                                                            "0.10 → 0.30 → 0.60"]),
    ([{"R3": [1, 10]}, {"R3": [3, 10]}], {"R3": [2, 10]}, []),  # fell in the last window
    ([{"R3": [1, 10]}, {"R3": [3, 10]}], {"R3": [6, 1]}, []),  # too few samples now
    ([{"R3": [1, 10]}], {"R3": [6, 10]}, []),  # not enough windows yet
    ([{"R3": [10, 100]}, {"R3": [11, 100]}], {"R3": [12, 100]}, []),  # rising, but by less than the minimum
    ([{"R2": [0, 3]}, {"R2": [1, 3]}, {"R2": [0, 0]}], {"R2": [2, 3]}, [
        "drift: R2 correction rate rising across 3 windows: 0.00 → 0.33 → 0.67"]),  # empty window skipped
])
def test_drift(history, current, alerts):
    assert drift_alerts(history, current, AuditParams()) == alerts
