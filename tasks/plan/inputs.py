"""What bounds one round's plan before R2 is asked: memory's calibration and the MUST NOT set.

Worked out once per round, by the round itself or earlier by the medium loop (which sends R2's
request before the round's subflow exists and keeps these in the run's record until the round
takes them: artoo.tasks.roles.runtime.RunRecord.prepared).  Plain data, so the record that holds
it stays typed without importing the flows above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    one blocked only for writing, executing or deleting is the toolbox's to refuse, per call (#26)."""
    pairs: list[tuple[str, str, str]]
    """Memory's (tool, target, access) pairs: that tool on that target, that way, only."""
    block: str
    """The calibration as R2's prompt shows it."""
