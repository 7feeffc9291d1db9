"""What bounds one round's plan before R2 is asked: memory's calibration and the MUST NOT set.

Worked out once per round, by the round itself or earlier by the medium loop (which sends R2's
request before the round's subflow exists and keeps these in the run's record until the round
takes them: artoo.tasks.roles.runtime.RunRecord.prepared), and for round 1 earlier still, by
``artoo run`` before its flow exists (artoo.runner).  Free of Prefect, so that last one can run
while Prefect is still importing; ``plan_messages`` is R2's request as all three send it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from artoo.config.contracts import BlockedTarget, PlanDirective, TaskSpec
from artoo.memory.calibration import calibrate_from_store
from artoo.tasks.roles import planner

if TYPE_CHECKING:
    from artoo.config.settings import Settings
    from artoo.memory.calibration import Calibration


@dataclass
class RoundInputs:
    """A round's memory calibration and MUST NOT set, worked out once: before its subflow exists when the
    medium loop sends R2's request early (``send_plan_early``), else by the round itself."""

    calibration: Calibration | None
    """The Calibration memory served, or None (no store, the retry ablation, or memory trouble)."""
    calibration_error: str
    """Why memory could not calibrate this round ('' when it could or was not asked)."""
    must_not_tools: set[str]
    """The GGS's blocked tools and memory's."""
    must_not_targets: set[str]
    """The GGS's blocked targets and memory's that may not be used at all (blocked for reading or every access);
    one blocked only for writing, executing or deleting is the toolbox's to refuse, per call, since plan
    text cannot say how a step will use it."""
    pairs: list[tuple[str, str, str]]
    """Memory's (tool, target, access) pairs: that tool on that target, that way, only."""
    block: str
    """The calibration as R2's prompt shows it."""


def round_inputs(settings: Settings, store: Any, spec: TaskSpec, blocked_tools: list[str],
                 blocked_targets: list[BlockedTarget]) -> RoundInputs:
    """R2's memory calibration (no LLM call) and the MUST NOT set; memory trouble never stops planning."""
    calibration, error = None, ""
    if store is not None and settings.ablation.strategy != "retry":  # the retry ablation plans without memory
        try:
            calibration = calibrate_from_store(store, spec.intent, set(blocked_tools), blocked_targets)
        except Exception as exc:  # memory must never block the operational path
            error = str(exc) or type(exc).__name__
    return RoundInputs(
        calibration=calibration, calibration_error=error,
        must_not_tools=set(blocked_tools) | set(getattr(calibration, "must_not_tools", set())),
        must_not_targets={b.target for b in map(BlockedTarget.of, blocked_targets) if b.any_use}
        | set(getattr(calibration, "must_not_targets", set())),
        pairs=sorted(getattr(calibration, "must_not_pairs", set())),
        block=calibration.prompt_block() if calibration is not None else "")


def shown(settings: Settings, inputs: RoundInputs, directive: PlanDirective | None
          ) -> tuple[str, PlanDirective | None, set[str]]:
    """What R2's prompt shows: the calibration block, the directive and the blocked targets."""
    if settings.ablation.planner_sees_blocked_targets:
        one_way = {f"{b.target} ({b.access} refused: other uses of it are fine)"
                   for b in (directive.blocked_targets if directive else []) if not b.any_use}
        return inputs.block, directive, inputs.must_not_targets | one_way  # the MUST NOT set R2 reads
    # debug: hide one channel; still enforced by validate_plan and by the toolbox, only the prompt loses them
    block = "\n".join(line for line in inputs.block.splitlines()
                      if not any(t in line for t in inputs.must_not_targets))
    return block, directive.model_copy(update={"blocked_targets": []}) if directive else None, set()


def plan_messages(settings: Settings, inputs: RoundInputs, spec: TaskSpec, directive: PlanDirective | None,
                  prior_summary: str, evidence: str, workspace: str) -> list[dict]:
    """R2's first request of a round, word for word (the plan task asks with these very messages)."""
    block, shown_directive, shown_targets = shown(settings, inputs, directive)
    return planner.messages_for(spec, block, shown_directive, inputs.must_not_tools, shown_targets, prior_summary,
                                None, evidence, workspace)
