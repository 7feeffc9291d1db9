"""``RequestBuilder``: what a role's request to its tier's endpoint is, word for word, and sending it early.

Why apart from the client: ``artoo run`` sends R1 before it imports ``openai`` (≈ 0.45 s) or Prefect
(artoo.runner), so everything that fixes a request's words — the tier's endpoint, the form the
endpoint negotiated (``negotiator``), the prompt cut to the model's window (``budget``), the sampling
settings — lives here, free of openai, and so does ``send_early`` (its HTTP is ``early_http``).
``OpenAICompatLLM`` (artoo.tasks.llm.client) is this plus sending, reading, repairing and recording.
"""

from __future__ import annotations

import concurrent.futures
import copy
import logging

from artoo.config.errors import ConfigurationError
from artoo.config.settings import Settings
from artoo.tasks.llm.base import TOOLS_SCHEMA, tier_of
from artoo.tasks.llm.budget import PromptTooLong, fit_request
from artoo.tasks.llm.context import context_window
from artoo.tasks.llm.early import EARLY, request_key
from artoo.tasks.llm.early_http import post_chat
from artoo.tasks.llm.endpoint import Endpoint
from artoo.tasks.llm.negotiated import NegotiationStore, negotiated_path
from artoo.tasks.llm.negotiator import Negotiator
from artoo.tasks.llm.parsing import structured_request
from artoo.tasks.llm.wire import sampling, tool_request

log = logging.getLogger("artoo.llm")


class RequestBuilder:
    """The requests of the roles to their tiers' endpoints, in each endpoint's negotiated form."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.negotiator = Negotiator(self._negotiation_store, settings.llm.silent_tool_answers)
        """The request forms each endpoint and model takes (artoo.tasks.llm.negotiator)."""

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

    def format_mode(self, tier: str) -> str:
        """The structured-output mode this tier's endpoint and model use (after any fallback)."""
        return self.negotiator.mode(self.endpoint(tier), "structured")

    def tool_mode(self, tier: str) -> str:
        """The tool-call mode this tier's endpoint and model use: native ``tools`` or the content protocol."""
        return self.negotiator.mode(self.endpoint(tier), "tools")

    def _negotiation_store(self) -> NegotiationStore:
        """This home's store; one that remembers nothing when ARTOO_HOME is unusable (never fatal to a call)."""
        try:
            return NegotiationStore(negotiated_path(self.settings.home_dir))
        except ConfigurationError as exc:
            log.warning("negotiated formats are not remembered: %s", exc)
            return NegotiationStore(None)

    def send_early(self, role: str, schema: str, messages: list[dict], tools: list[dict] | None = None) -> bool:
        """Send the request a role is about to make now, before its task starts (artoo.tasks.llm.early).

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

    def _grammar(self, ep: Endpoint) -> bool:
        """Whether the endpoint's server holds answers to a schema with a grammar that takes ``maxLength``."""
        return context_window(self.settings.llm, ep.base_url, ep.model, ep.api_key).grammar

    def _fit(self, role: str, ep: Endpoint, request: dict) -> tuple[dict, dict]:
        """The request cut to the model's context window, and its budget record (artoo.tasks.llm.budget),
        with the sampling settings the person chose (``llm.temperature``, ``llm.max_tokens``; sent only when
        set, so a hosted model that refuses them is never sent them by default)."""
        window = context_window(self.settings.llm, ep.base_url, ep.model, ep.api_key)
        fitted, budget = fit_request(role, window, self.settings.llm, request)
        return {**fitted, **sampling(self.settings.llm)}, budget
