"""The one small LLM interface the roles depend on, the tiers that serve them, and the bookkeeping types.

Why: roles (R1 … R4b, the Dreamer) ask for a validated answer model or an executor tool turn and never
see the ``openai`` package, so everything they and the layers below share lives here, free of I/O.
Fakes for pure-logic tests implement ``LLM``; the real client (``OpenAICompatLLM``) implements it over
HTTP.  Every request leaves a ``CallRecord`` so the cost of a run can be reported per role (spec:
token cost vs. time cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from artoo.config.protocol import SCHEMAS, Answer, ExecutionAnswer

__all__ = ["LLM", "ROLE_TIER", "TOOLS_SCHEMA", "CallRecord", "Endpoint", "Repair", "Tier", "ToolCallRequest",
           "ToolTurn", "answer_model", "cached_tokens_of", "cost_report", "tier_of"]

Tier = Literal["brain", "tool"]

ROLE_TIER: dict[str, Tier] = {
    "R1": "brain", "R2": "brain", "R4b": "brain", "dreamer": "brain", "R3": "tool", "R4a": "tool", "vote": "tool",
}
"""Which model tier serves each role."""

TOOLS_SCHEMA = "tools"
"""The schema name recorded for (and routed by) executor tool-calling turns."""


def tier_of(role: str) -> Tier:
    """The tier serving a role; ValueError for an unknown role."""
    try:
        return ROLE_TIER[role]
    except KeyError:
        raise ValueError(f"unknown LLM role {role!r}; known roles: {', '.join(ROLE_TIER)}") from None


def answer_model(schema: str) -> type[Answer]:
    """The answer model for a schema NAME; ValueError for an unknown name."""
    try:
        return SCHEMAS[schema]
    except KeyError:
        raise ValueError(f"unknown answer schema {schema!r}; known: {', '.join(SCHEMAS)}") from None


@dataclass(frozen=True)
class Endpoint:
    """One resolved tier endpoint: where a role's requests go, as the settings name it."""

    tier: str
    base_url: str
    model: str
    api_key: str
    timeout_s: float

    @property
    def key(self) -> tuple[str, str]:
        """What an endpoint profile is kept under: the server and the model it serves."""
        return self.base_url, self.model

    def env(self, field: str) -> str:
        """The environment variables that set a field of this tier, e.g. BRAIN_MODEL / OPENAI_MODEL."""
        return f"{self.tier.upper()}_{field} / OPENAI_{field}"


class Repair(NamedTuple):
    """One deterministic fix applied to a model's answer before it was used (artoo.tasks.llm.output.repair)."""

    kind: str
    """Machine-readable: fenced_json, to_string, enum_case, sequence_base, …"""
    detail: str
    """What was done, for a person reading the decision log."""


@dataclass
class CallRecord:
    """One HTTP request made (or one scripted answer), for the per-role cost report."""

    role: str
    model: str
    schema: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    ok: bool
    error: str | None = None
    budget: dict | None = None
    """The prompt budget of the request (artoo.tasks.llm.transport.budget): window, its source, estimate, cuts."""
    repairs: list[Repair] = field(default_factory=list)
    """The fixes that made this answer valid without asking the model again."""
    cached_tokens: int | None = None
    """Prompt tokens the server served from its cache (llama.cpp's ``timings.cache_n``, or OpenAI's
    ``prompt_tokens_details.cached_tokens``); None when the server does not say."""


def cached_tokens_of(response: Any) -> int | None:
    """How many of a completion's prompt tokens the server's cache served, when it says."""
    timings = getattr(response, "timings", None)
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        return timings["cache_n"]
    details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    return cached if isinstance(cached, int) else None


class ToolCallRequest(BaseModel):
    """One tool call the model asked for; ``arguments`` is {"_invalid": raw} when not a JSON object."""

    id: str
    name: str
    arguments: dict


class ToolTurn(BaseModel):
    """One executor turn: tool calls to run, or the final ExecutionResult answer."""

    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    final: ExecutionAnswer | None = None
    assistant_message: dict
    """The assistant message (openai wire format) to append before the tool results."""


@runtime_checkable
class LLM(Protocol):
    """What every role needs from a model."""

    records: list[CallRecord]
    spent: float
    """The task's LLM calls so far, each weighed by its cost: the GGS counts them in Ω against ggs.max_calls."""

    async def structured(self, role: str, schema: str, messages: list[dict]) -> Answer:
        """An instance of SCHEMAS[schema], validated."""
        ...

    async def tool_turn(self, role: str, messages: list[dict], tools: list[dict]) -> ToolTurn:
        """One tool-calling turn of the executor."""
        ...

    async def command(self, role: str, messages: list[dict]) -> str | None:
        """One free answer's shell command (its first fenced block), or None when it holds none."""
        ...

    def send_early(self, role: str, schema: str, messages: list[dict], tools: list[dict] | None = None) -> bool:
        """Send a request the role will make, before its task starts; False when nothing was sent."""
        ...

    def tool_mode(self, tier: str) -> str:
        """How the executor acts on this tier's endpoint: native, content, or bash (its prompt says it so)."""
        ...

    async def aclose(self) -> None:
        """Release the connections; the run calls it once, as it ends."""
        ...


def cost_report(records: list[CallRecord]) -> dict[str, dict]:
    """Per role: calls, prompt_tokens, cached_tokens (those the server's cache served, when it says),
    completion_tokens, llm_seconds, and largest_prompt_tokens: the biggest single prompt, which the model's
    context window must hold (llm.context_tokens)."""
    report: dict[str, dict] = {}
    for record in records:
        row = report.setdefault(record.role, {"calls": 0, "prompt_tokens": 0, "cached_tokens": 0,
                                              "completion_tokens": 0, "llm_seconds": 0.0,
                                              "largest_prompt_tokens": 0})
        row["calls"] += 1
        row["prompt_tokens"] += record.prompt_tokens
        row["cached_tokens"] += record.cached_tokens or 0
        row["largest_prompt_tokens"] = max(row["largest_prompt_tokens"], record.prompt_tokens)
        row["completion_tokens"] += record.completion_tokens
        row["llm_seconds"] += record.latency_s
    for row in report.values():
        row["llm_seconds"] = round(row["llm_seconds"], 3)
    return report
