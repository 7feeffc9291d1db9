"""``RequestBuilder``: what a role's request to its tier's endpoint is, word for word, and sending it early.

Why apart from the client: ``artoo run`` sends R1 before it imports ``openai`` (≈ 0.45 s) or Prefect
(artoo.runner), so everything that fixes a request's words lives here, free of openai: the tier's
endpoint, the form its profile negotiated (artoo.tasks.llm.negotiator), the prompt cut to the model's
window (``budget``), the sampling settings; and so does ``send_early`` (its HTTP is ``http.post_chat``).
``OpenAICompatLLM`` (artoo.tasks.llm.transport.client) is this plus sending, reading, repairing and recording.

The window a request may fill is found in this order (``context_window``):

1. the setting ``llm.context_tokens``, when set: the person knows better (Ollama's ``num_ctx``, a gateway
   in front of a small model), and the server is not asked;
2. the server, asked once per endpoint and model in this process (``server_facts``: llama.cpp's
   ``/props``, else vLLM's ``/models``), because a server may be restarted with another ``-c``;
3. ``llm.default_context_tokens``.
"""

from __future__ import annotations

import concurrent.futures
import copy
import logging
import threading
from typing import Any

from artoo.config.errors import ConfigurationError
from artoo.config.settings import LLMParams, Settings
from artoo.tasks.llm.base import TOOLS_SCHEMA, Endpoint, tier_of
from artoo.tasks.llm.capability import SAMPLING_FIELDS, ContextWindow, EndpointProfile
from artoo.tasks.llm.negotiator import Negotiator
from artoo.tasks.llm.output.modes import structured_request, tool_request
from artoo.tasks.llm.profile_store import ProfileStore, store_path
from artoo.tasks.llm.server_facts import ServerFacts
from artoo.tasks.llm.transport.budget import PromptTooLong, fit_request
from artoo.tasks.llm.transport.early import EARLY, request_key
from artoo.tasks.llm.transport.http import post_chat, probe

__all__ = ["RequestBuilder", "context_window", "forget", "sampling", "server_facts", "served", "window_of"]

log = logging.getLogger("artoo.llm")


class RequestBuilder:
    """The requests of the roles to their tiers' endpoints, in each endpoint's negotiated form."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.negotiator = Negotiator(self._profile_store, settings.llm.silent_tool_answers,
                                     getattr(settings.llm, "tool_mode", "auto"))
        """Each endpoint and model's profile: the request forms it takes (artoo.tasks.llm.capability)."""

    def endpoint(self, tier: str) -> Endpoint:
        """The resolved endpoint of a tier; ConfigurationError naming the env vars when incomplete."""
        resolved = self.settings.tier(tier)
        upper = tier.upper()
        if not resolved.base_url or not resolved.model:
            missing = [f"{upper}_{f} (or OPENAI_{f})"
                       for f, v in (("BASE_URL", resolved.base_url), ("MODEL", resolved.model)) if not v]
            raise ConfigurationError(
                f"the {tier} tier has no LLM endpoint configured: set {', '.join(missing)}")
        key = resolved.api_key.get_secret_value() if resolved.api_key else "not-needed"
        return Endpoint(tier, resolved.base_url, resolved.model, key, resolved.timeout_s)

    def profile(self, tier: str) -> EndpointProfile:
        """The profile of this tier's endpoint and model as this process knows it."""
        return self.negotiator.profile(self.endpoint(tier))

    def format_mode(self, tier: str) -> str:
        """The structured-output mode this tier's endpoint and model use (after any fallback)."""
        return self.negotiator.mode(self.endpoint(tier), "structured")

    def tool_mode(self, tier: str) -> str:
        """The tool-call mode this tier's endpoint and model use: native ``tools`` or the content protocol."""
        return self.negotiator.mode(self.endpoint(tier), "tools")

    def _profile_store(self) -> ProfileStore:
        """This home's store; one that remembers nothing when ARTOO_HOME is unusable (never fatal to a call)."""
        try:
            return ProfileStore(store_path(self.settings.home_dir))
        except ConfigurationError as exc:
            log.warning("negotiated formats are not remembered: %s", exc)
            return ProfileStore(None)

    def send_early(self, role: str, schema: str, messages: list[dict], tools: list[dict] | None = None) -> bool:
        """Send the request a role is about to make now, before its task starts (artoo.tasks.llm.transport.early).

        ``schema`` names a structured answer, or is TOOLS_SCHEMA for an executor turn offering ``tools``.
        The role's own ``structured``/``tool_turn`` call later uses the answer when its request is
        identical.  Best effort: False, and nothing sent, when the tier has no endpoint (the role's
        call reports that) or the same request was already sent early.
        """
        return self.send_ahead(role, schema, messages, tools) is not None

    def send_ahead(self, role: str, schema: str, messages: list[dict],
                   tools: list[dict] | None = None) -> concurrent.futures.Future | None:
        """``send_early``, returning the answer to come (the raw reply, which ``artoo run`` reads ahead of the
        role's task, which still takes it), or None when nothing was sent."""
        prepared = self._early_request(role, schema, messages, tools)
        if prepared is None:
            return None
        ep, kwargs, key = prepared
        return EARLY.send(key, lambda: post_chat(role, ep, kwargs))

    def _early_request(self, role: str, schema: str, messages: list[dict],
                       tools: list[dict] | None) -> tuple[Endpoint, dict, str] | None:
        """The endpoint, the request exactly as the role's call will send it, and its key; None when there is none."""
        try:
            ep = self.endpoint(tier_of(role))
        except (ConfigurationError, ValueError):
            return None
        if schema == TOOLS_SCHEMA:
            kwargs = tool_request(self.negotiator.mode(ep, "tools"), messages, tools or [], self.negotiator.shape(ep))
        else:
            kwargs = structured_request(self.negotiator.mode(ep, "structured"), schema, messages, self._grammar(ep))
        kwargs = copy.deepcopy(kwargs)  # the caller's lists may grow (an executor appends each turn)
        try:
            kwargs, _ = self._fit(role, ep, kwargs)  # the role's own call sends exactly this, cut alike
        except PromptTooLong:
            return None
        return ep, kwargs, request_key(ep.base_url, ep.model, kwargs)

    def _server(self, ep: Endpoint) -> ServerFacts | None:
        """What the server said about itself in this process, kept in its profile when it differs."""
        facts = server_facts(self.settings.llm, ep)
        if facts is not None:
            self.negotiator.saw_server(ep, facts)
        return facts

    def _grammar(self, ep: Endpoint) -> bool:
        """Whether the endpoint's server holds answers to a schema with a grammar that takes ``maxLength``."""
        facts = self._server(ep)
        return facts is not None and facts.grammar

    def _fit(self, role: str, ep: Endpoint, request: dict) -> tuple[dict, dict]:
        """The request cut to the model's context window, and its budget record (artoo.tasks.llm.transport.budget),
        with the sampling settings the person chose (``llm.temperature``, ``llm.max_tokens``; sent only when
        set, so a hosted model that refuses them is never sent them by default, and never again to an endpoint
        that refused one)."""
        window = window_of(self.settings.llm, self._server(ep))
        fitted, budget = fit_request(role, window, self.settings.llm, request)
        refused = self.negotiator.profile(ep).sampling_refused
        chosen = sampling(self.settings.llm, frozenset(refused))
        own = {k: v for k, v in fitted.items() if k not in SAMPLING_FIELDS or k not in refused}
        return {**{k: v for k, v in chosen.items() if k not in request}, **own}, budget


def sampling(params: LLMParams, refused: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The sampling fields every request carries: only those the person set (a server's default otherwise),
    and none the endpoint refused."""
    chosen = {field: getattr(params, field) for field in SAMPLING_FIELDS}
    return {key: value for key, value in chosen.items() if value is not None and key not in refused}


# ---- the context window -------------------------------------------------------------------------------------

_SERVED: dict[tuple[str, str], ServerFacts | None] = {}
_LOCK = threading.Lock()


def served(base_url: str, model: str, api_key: str, timeout_s: float) -> ServerFacts | None:
    """What the server says about itself, asked once per endpoint and model in this process (the lock makes it
    once)."""
    key = (base_url, model)
    with _LOCK:
        if key not in _SERVED:
            _SERVED[key] = probe(base_url, model, api_key, timeout_s)
            found = _SERVED[key]
            log.info("context window of %s at %s: %s", model, base_url,
                     f"{found.window.tokens} tokens ({found.window.source})" if found else "the server does not say")
        return _SERVED[key]


def forget() -> None:
    """Forget what every server said, so the next request asks again (a server restarted with another ``-c``;
    tests whose scripted servers may reuse a port another server with another window had)."""
    with _LOCK:
        _SERVED.clear()


def server_facts(params: LLMParams, ep: Endpoint) -> ServerFacts | None:
    """What this endpoint's server said about itself; None when ``llm.context_tokens`` is set (it is not asked)."""
    return None if params.context_tokens else served(ep.base_url, ep.model, ep.api_key, params.probe_timeout_s)


def window_of(params: LLMParams, facts: ServerFacts | None) -> ContextWindow:
    """The window a request may fill: the setting, else what the server said, else the default."""
    if params.context_tokens:
        return ContextWindow(tokens=params.context_tokens, source="setting llm.context_tokens")
    if facts is not None:
        return facts.window
    return ContextWindow(tokens=params.default_context_tokens,
                         source="default llm.default_context_tokens (the server did not say)", known=False)


def context_window(params: LLMParams, base_url: str, model: str, api_key: str) -> ContextWindow:
    """The window a request to this endpoint and model may fill: the setting, else the server, else the default."""
    facts = None if params.context_tokens else served(base_url, model, api_key, params.probe_timeout_s)
    return window_of(params, facts)
