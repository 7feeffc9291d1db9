"""What a server says about itself: its window, its grammar and its prompt cache, from ``GET /props`` or ``/models``.

Why its own module: llama.cpp's ``/props`` and vLLM's ``/models`` bodies are read into one ``ServerFacts`` by
pure functions, apart from the openai-free HTTP that asks for them (artoo.tasks.llm.transport.http) and from
the negotiator that keeps what they say in the profile.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from artoo.tasks.llm.capability import CacheBehaviour, ContextWindow

__all__ = ["ServerFacts", "facts_from_props", "from_models", "from_props", "server_root"]


class ServerFacts(BaseModel):
    """What one ``GET /props`` or ``/models`` said about the server serving a model."""

    model_config = ConfigDict(frozen=True)

    window: ContextWindow
    grammar: bool = False
    """Its JSON-schema grammar takes ``maxLength`` (llama.cpp), so free-text fields may be bounded."""
    cache: CacheBehaviour = Field(default_factory=CacheBehaviour)


def server_root(base_url: str) -> str:
    """The server root of an OpenAI base URL: llama.cpp serves /props beside /v1, not under it."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def from_props(body: object) -> int | None:
    """llama.cpp's served window from a ``GET /props`` body: ``default_generation_settings.n_ctx`` (its
    ``meta.n_ctx_train`` elsewhere is the training context, not the served one)."""
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def facts_from_props(body: object, root: str) -> ServerFacts | None:
    """What a llama.cpp ``GET /props`` body says: the window, a grammar that takes ``maxLength``, and a prompt
    cache per slot that a request may name (``cache_prompt``, ``id_slot``); None when it is no such body."""
    tokens = from_props(body)
    if tokens is None or not isinstance(body, dict):
        return None
    cache = CacheBehaviour(prompt_cache=True, id_slot=True, slots=_positive(body.get("total_slots")))
    return ServerFacts(window=ContextWindow(tokens=tokens, source=f"server {root}/props n_ctx"), grammar=True,
                       cache=cache)


def from_models(body: object, model: str) -> int | None:
    """vLLM's ``max_model_len`` of ``model`` (or of the only model listed) from a ``GET /models`` body."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    return _positive(named[0].get("max_model_len")) if named else None
