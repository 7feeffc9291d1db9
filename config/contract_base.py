"""The base of every contract model and the spec's enumerations, apart so the contracts stay one screenful each.

``artoo.config.contracts`` re-exports all of these; import them from there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

FailureClass = Literal["logical", "environmental"]
CriterionMode = Literal["verifiable", "plausible"]
MacroState = Literal["abandon", "success", "break_symmetry", "change_approach", "change_path", "refine"]
ActionDirective = Literal["refine", "change_path", "change_approach", "break_symmetry"]
FinalDirective = Literal["accept", "success", "abandon"]
Urgency = Literal["low", "normal", "high"]
MemoryAction = Literal["Ignore", "Exploit", "Avoid", "Caution"]
Level = Literal["M", "K", "C", "T"]
OutcomeKind = Literal["matched", "failed", "skipped", "denied"]


class Contract(BaseModel):
    """Base: unknown fields are refused so a typo never silently drops data."""

    model_config = ConfigDict(extra="forbid")
