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
Access = Literal["read", "write", "execute", "delete", "all"]
"""How a call used a target; ``all`` is every access (a blame written before #26, or one that cannot tell)."""
ACCESSES: tuple[str, ...] = ("read", "write", "execute", "delete")
"""The single accesses, ``all`` aside."""
ANY_USE: tuple[str, ...] = ("all", "read")
"""Accesses whose block forbids naming the target at all: reading is the least use a plan can make of it."""


class Contract(BaseModel):
    """Base: unknown fields are refused so a typo never silently drops data."""

    model_config = ConfigDict(extra="forbid")


class BlockedTarget(Contract):
    """One input that failed for environmental reasons, and the access that failed (#26)."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # hashable: the GGS keys its blame by it

    target: str
    """The normalised path (or query) that failed."""
    access: Access = "all"
    """The access refused: a write refused on a read-only file leaves it readable."""

    @classmethod
    def of(cls, item: BlockedTarget | str | dict) -> BlockedTarget:
        """A blocked target from its current form, or from a bare string (every access, as before #26)."""
        if isinstance(item, BlockedTarget):
            return item
        if isinstance(item, str):
            return cls(target=item)
        return cls.model_validate(item)

    @property
    def any_use(self) -> bool:
        """Blocked for every use (read or all), not only for writing, executing or deleting."""
        return self.access in ANY_USE

    def label(self) -> str:
        """``/w/data.csv (write)``: how a prompt or a log line names it."""
        return self.target if self.access == "all" else f"{self.target} ({self.access})"
