"""Every contract of the spec survives model → JSON → model, and mixed bus messages parse by kind."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter, ValidationError

from artoo.config import audit_contracts as ac
from artoo.config import contracts as c
from artoo.config.protocol import SCHEMAS

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CRIT = c.Criterion(criterion="report.md exists", mode="verifiable")
VERDICT = c.CriterionVerdict(criterion="report.md exists", verdict="fail", failure_class="environmental",
                             evidence="ls: no such file", mode="plausible")
OUTCOME = c.SubTaskOutcome(
    subtask_id="6f1c", parent_task_id="logs", status="failed", output={"files": ["a.log"]},
    failure_reason="timeout", failure_class="environmental",
    gap_trajectory=[c.GapPoint(attempt=1, score=0.5, unmet_criteria=["report.md exists"], failure_class="logical")],
    criteria_verdicts=[VERDICT], tool_calls=["shell: ls → a.log"], intent="find logs")
LOSS = c.Loss(D=0.5, P=0.25, Omega=0.1, L=0.4)

SAMPLES = {
    "TaskSpec": c.TaskSpec(task_id="summarise_logs", intent="summarise errors",
                           constraints=c.Constraints(scope="~/srv", deadline="2026-11-23T00:00:00Z"),
                           raw_input="find the three largest logs"),
    "SubTask": c.SubTask(subtask_id="6f1c", parent_task_id="logs", intent="find logs", context="under ~/srv",
                         success_criteria=[CRIT], sequence=2),
    "DispatchManifest": c.DispatchManifest(task_id="logs", round=2, subtask_ids=["6f1c"], task_criteria=[CRIT]),
    "ExecutionResult": c.ExecutionResult(subtask_id="6f1c", status="uncertain", output="maybe",
                                         tool_calls=["glob: *.log → a.log"]),
    "CorrectionSignal": c.CorrectionSignal(subtask_id="6f1c", attempt=1, failure_class="logical",
                                           unmet_criteria=["report.md exists"], what_was_wrong="wrong dir",
                                           what_to_do="use locate", prior_tool_calls=["shell: ls"]),
    "SubTaskOutcome": OUTCOME,
    "OutcomeSummary": c.OutcomeSummary(task_id="logs", merged_output={"a": 1}, summary="done", outcomes=[OUTCOME],
                                       task_criteria_verdicts=[VERDICT]),
    "ReplanRequest": c.ReplanRequest(task_id="logs", failed_outcomes=[OUTCOME], gap_summary="missing",
                                     task_criteria_verdicts=[VERDICT], merged_output=[1, 2]),
    "PlanDirective": c.PlanDirective(task_id="logs", loss=LOSS, prev_directive="init", directive="change_path",
                                     blocked_tools=["shell"], blocked_targets=["/srv/x"],
                                     failed_criterion="report.md exists", failure_class="mixed",
                                     budget_pressure=0.1, grad_l=-0.2, rationale="stuck", urgency="low"),
    "FinalResult": c.FinalResult(task_id="logs", summary="abandoned honestly", output={"partial": True}, loss=LOSS,
                                 grad_l=0.3, replans=3, prev_directive="refine", directive="abandon",
                                 next_steps=["grant read access to /srv"]),
    "Megram": c.Megram(id="m1", level="C", created_at=NOW, last_recalled_at=NOW, space="intent:summarise_errors",
                       entity="env:local", content="prefer locate", state="success", f=0.8, sigma=1.0, k=0.0,
                       derived_from=["a", "b"]),
    "Potentials": c.Potentials(attention=1.5, decision=-0.7, action="Avoid"),
    "SOPRecord": c.SOPRecord(id="m1", space="intent:x", entity="env:local", content="rule", sigma=-1.0),
    "MemoryQuery": c.MemoryQuery(task_id="logs", space="intent:x", entity="env:local",
                                 potentials=c.Potentials(attention=0, decision=0, action="Ignore"), sop_count=2),
    "AuditEvent": ac.AuditEvent(seq=3, event_id="e1", occurred=NOW, task_id="logs", message="plan_directive",
                               from_role="R7", to_role="R2", task_seq=9, payload={"x": 1}, prev_hash="0" * 64,
                               hash="f" * 64),
    "AuditReport": ac.AuditReport(trigger="on-demand", window_start=NOW, tasks_observed=2, total_corrections=1,
                                 gap_trends=[ac.GapTrend(task_id="logs", trend="worsening")],
                                 boundary_violations=["R3→R5"], drift_alerts=["R3 rising"],
                                 anomalies=["ggs_thrashing: logs"],
                                 tool_health=ac.ToolHealth(execution_failures=1, environmental_retries=2,
                                                          logical_retries=3)),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_round_trip(name: str):
    model = SAMPLES[name]
    again = type(model).model_validate_json(model.model_dump_json())
    assert again == model
    assert type(again).__name__ == name


@pytest.mark.parametrize("name", sorted(n for n, m in SAMPLES.items() if hasattr(m, "kind")))
def test_bus_messages_parse_by_kind(name: str):
    model = SAMPLES[name]
    parsed = TypeAdapter(c.BusMessage).validate_json(model.model_dump_json())
    assert type(parsed) is type(model) and parsed == model


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_unknown_fields_are_refused(name: str):
    data = SAMPLES[name].model_dump(mode="json") | {"typo_field": 1}
    with pytest.raises(ValidationError):
        type(SAMPLES[name]).model_validate(data)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_llm_answer_schemas_are_strict_json_schemas(name: str):
    from artoo.tasks.llm.output.modes import strict_json_schema

    schema = strict_json_schema(SCHEMAS[name])
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])
