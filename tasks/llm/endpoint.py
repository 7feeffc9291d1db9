"""A tier's resolved endpoint, and the refusal that moves it to its next request form.

Why apart from ``errors``: the request side (``outgoing``, ``negotiator``, the early lane) needs
these two and must not import ``openai`` (≈ 0.45 s), so ``artoo run`` can send R1 before it has.
"""

from __future__ import annotations

from dataclasses import dataclass

from artoo.tasks.llm.refusals import Feature


@dataclass(frozen=True)
class Endpoint:
    """One resolved tier endpoint."""

    tier: str
    base_url: str
    model: str
    api_key: str
    timeout_s: float

    def env(self, field: str) -> str:
        """The environment variables that set a field of this tier, e.g. BRAIN_MODEL / OPENAI_MODEL."""
        return f"{self.tier.upper()}_{field} / OPENAI_{field}"


class FeatureRefused(Exception):
    """The endpoint refused a request feature it does not support (internal: triggers the next mode)."""

    def __init__(self, feature: Feature, detail: str):
        super().__init__(detail)
        self.feature = feature
