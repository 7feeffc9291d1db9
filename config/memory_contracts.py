"""What memory answers R2 at planning time: the potentials of a tag pair and the C-level rules.

Not bus messages (``MemoryQuery`` carries Potentials onto the bus), so they live apart from the
message contracts; ``artoo.config.contracts`` re-exports them.
"""

from __future__ import annotations

from artoo.config.contract_base import Contract, MemoryAction


class Potentials(Contract):
    """Live dual-channel convolution for one tag pair."""

    attention: float
    """Σ|f|·e^(−kΔt): where to look."""
    decision: float
    """Σσ·f·e^(−kΔt): what to do."""
    action: MemoryAction
    """Ignore, Exploit, Avoid or Caution by the spec's thresholds."""


class SOPRecord(Contract):
    """A C-level rule served to R2."""

    id: str
    """The C Megram's id."""
    space: str
    """Tag space."""
    entity: str
    """Tag entity."""
    content: str
    """The rule."""
    sigma: float
    """>0: SHOULD PREFER; ≤0: MUST NOT."""
