"""What one endpoint and model accept: the request forms it takes, its context window and its prompt cache.

Why its own module: this frozen record (``EndpointProfile``, one per base URL and model, with the modes and the
window and cache it names) is the vocabulary the rest of the LLM layer speaks: the refusals that move it, the
server's facts that fill it, the store that keeps it and the negotiator that moves it all import it, and it
imports none of them.  ``describe`` is what ``artoo config`` prints for each endpoint.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "FEATURE_KIND", "KINDS", "SAMPLING_FIELDS", "STRUCTURED_MODES", "TOOL_MODES", "CacheBehaviour", "ContextWindow",
    "EndpointProfile", "Feature", "Kind", "StructuredMode", "ToolMode", "describe",
]

# ---- the forms a request may take -------------------------------------------------------------------------

StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "text"]
"""How a structured answer is asked for, best first: OpenAI's strict ``json_schema``; llama.cpp's ``json_object``
with a ``schema`` key (the schema's title set to its NAME); plain JSON mode with the schema described in the
system message; no ``response_format`` at all (the schema in the system message, the JSON read from the text)."""
ToolMode = Literal["native", "content", "bash"]
"""How the executor calls tools, best first: the ``tools`` request field, then the JSON-in-content protocol
(artoo.tasks.llm.output.modes).  A further mode is one more name here and its request and reading in output."""
Kind = Literal["structured", "tools", "turn"]
"""What is negotiated per endpoint and model.  ``turn``: the schema a content-protocol tool turn is held to,
apart from ``structured`` because a server may take one schema and refuse the other (the turn's is an anyOf)."""

STRUCTURED_MODES: tuple[StructuredMode, ...] = get_args(StructuredMode)
TOOL_MODES: tuple[ToolMode, ...] = get_args(ToolMode)
KINDS: dict[str, tuple[str, ...]] = {"structured": STRUCTURED_MODES, "tools": TOOL_MODES, "turn": STRUCTURED_MODES}
"""Each kind's modes, best first; an endpoint only ever moves down its list."""
SAMPLING_FIELDS = ("temperature", "max_tokens")
"""The sampling fields artoo sends, each only when the person set it (``llm.temperature``, ``llm.max_tokens``)."""
Feature = Literal["response_format", "tools", "temperature", "max_tokens"]
"""A request field a server may refuse."""
FEATURE_KIND: dict[str, str] = {"response_format": "structured", "tools": "tools"}
"""The request field a refusal names → the kind it moves (a refused sampling field is no longer sent instead)."""


# ---- its window and its prompt cache ---------------------------------------------------------------------------


class ContextWindow(BaseModel):
    """A context window in tokens and where the number came from (shown in the decision log)."""

    model_config = ConfigDict(frozen=True)

    tokens: int
    source: str
    known: bool = True
    """False for the assumed default: the server did not say and no setting does, so the real window may be larger."""


class CacheBehaviour(BaseModel):
    """The server's prompt cache, as far as it has shown it; None where it has not said."""

    model_config = ConfigDict(frozen=True)

    prompt_cache: bool | None = None
    """It reuses the cached prefix of a prompt (llama.cpp's ``cache_prompt``, on by default there)."""
    id_slot: bool | None = None
    """A request may name the slot it runs on (llama.cpp's ``id_slot``), so one run's requests share a cache."""
    slots: int | None = None
    """How many slots it runs (``total_slots``)."""
    reports_cache_n: bool | None = None
    """Its answers carry ``timings.cache_n``: how many prompt tokens came from the cache."""

    def known(self) -> bool:
        """Whether anything about the cache has been learnt."""
        return any(value is not None for value in self.model_dump().values())


# ---- the profile --------------------------------------------------------------------------------------------


class EndpointProfile(BaseModel):
    """What one endpoint and model was found to do; what was never learnt keeps its default (the best form).

    The flat ``<kind>`` / ``<kind>_because`` fields are the store's entry as earlier releases wrote it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    base_url: str
    model: str
    structured: StructuredMode = "json_schema"
    structured_because: str | None = None
    """Why the structured mode is what it is: "accepted", or the refusal that moved it; None: not used yet."""
    tools: ToolMode = "native"
    tools_because: str | None = None
    turn: StructuredMode = "json_schema"
    turn_because: str | None = None
    sampling_refused: dict[str, str] = Field(default_factory=dict)
    """Sampling fields the endpoint refused, no longer sent, each with the refusal."""
    grammar: bool | None = None
    """Its JSON-schema grammar takes ``maxLength`` (as the server last said)."""
    window: ContextWindow | None = None
    """The window as the server last reported it; each process asks again (a server restarted with another -c)."""
    cache: CacheBehaviour = Field(default_factory=CacheBehaviour)
    updated: str | None = None

    def mode(self, kind: str) -> str:
        """The mode of one kind (Kind)."""
        return getattr(self, kind)

    def learnt(self, kind: str) -> bool:
        """Whether the kind's mode was settled by a request (accepted or refused), not assumed."""
        return getattr(self, f"{kind}_because") is not None

    @classmethod
    def from_stored(cls, base_url: str, model: str, entry: dict[str, Any]) -> EndpointProfile:
        """The profile of a stored entry; a field it cannot take (a mode a later release added, a broken value)
        keeps its default, and the rest of the entry still counts."""
        data = {key: value for key, value in entry.items() if key in cls.model_fields}
        data.update(base_url=base_url, model=model)
        for kind in KINDS:  # a mode without its reason (or the reverse) is not a learnt mode
            if f"{kind}_because" in data and data.get(kind) not in KINDS[kind]:
                data.pop(f"{kind}_because")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            bad = {error["loc"][0] for error in exc.errors() if error["loc"]} - {"base_url", "model"}
            kept = {key: value for key, value in data.items()
                    if key not in bad and key.removesuffix("_because") not in bad}
            return cls.model_validate(kept)


def describe(profile: EndpointProfile) -> list[str]:
    """The profile as ``artoo config`` prints it: one line per thing learnt (each request kind always)."""
    lines = []
    for kind in ("structured", "tools", "turn"):
        if kind == "turn" and not profile.learnt(kind):
            continue  # moved only by a refusal of the content-protocol turn's schema
        lines.append(f"{kind:<10} {profile.mode(kind)}  ({getattr(profile, f'{kind}_because') or 'not used yet'})")
    for field, because in sorted(profile.sampling_refused.items()):
        lines.append(f"{'sampling':<10} {field} not sent  ({because})")
    if profile.window is not None:
        bounded = "; its grammar takes maxLength" if profile.grammar else ""
        lines.append(f"{'window':<10} {profile.window.tokens} tokens  ({profile.window.source}{bounded})")
    cache = profile.cache
    if cache.known():
        said = [("prompt cache reused" if cache.prompt_cache else "no prompt cache")
                if cache.prompt_cache is not None else "",
                (f"id_slot over {cache.slots or '?'} slot(s)" if cache.id_slot else "no id_slot")
                if cache.id_slot is not None else "",
                ("answers report timings.cache_n" if cache.reports_cache_n else "answers carry no timings.cache_n")
                if cache.reports_cache_n is not None else ""]
        lines.append(f"{'cache':<10} {', '.join(s for s in said if s)}")
    return lines
