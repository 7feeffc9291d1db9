"""Negotiation: this process's endpoint profiles, moved by refusals and by how the model behaves.

Why its own module: ``Negotiator`` is the one stateful owner of the profiles in use (shared by every role and
event loop behind one lock), each kind's modes best first and never moving backwards, each move logged once
and kept in the store; the silent-tool watch lives here because only the negotiator acts on what it sees.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from artoo.config.errors import ConfigurationError
from artoo.tasks.llm.base import Endpoint
from artoo.tasks.llm.capability import FEATURE_KIND, KINDS, STRUCTURED_MODES, CacheBehaviour, EndpointProfile
from artoo.tasks.llm.profile_store import ProfileStore
from artoo.tasks.llm.refusals import FeatureRefused
from artoo.tasks.llm.server_facts import ServerFacts

__all__ = ["Negotiator", "SilentToolWatch", "probe_reason", "silent_reason"]

_log = logging.getLogger("artoo.llm")


# ---- behaviour: a model that accepts native tools and never calls one ------------------------------------------
#
# A server that accepts ``tools`` is not a model that uses them: a small model may answer every native tool
# request with a final answer (invented results, or an ``uncertain`` guess) and no tool call, yet call a tool at
# once in the JSON-in-content protocol, where the two allowed answers are spelled out side by side.  No refusal
# ever comes, so the refusal-driven fallback never moves; this watch does.
#
# The signal is narrow on purpose: an executor answer on the first turn of an attempt (no tool result in the
# conversation yet), with tools offered, that gives a final answer without calling anything: a result with no
# evidence, which R4a rejects.  One such answer can be honest ("say hello" needs no tool), so only ``limit`` of
# them in a row per endpoint and model switch the mode, and any native tool call resets the count.  Three such
# attempts cost a round (an attempt answering "failed" ends a subtask), so the client first probes
# (``llm.content_probe``): such a first turn is asked once more in the content protocol, and a call there moves
# the mode at once (``probe_reason``).


class SilentToolWatch:
    """Counts first-turn final answers without a tool call under native tools, per endpoint and model."""

    def __init__(self, limit: int):
        self.limit = limit
        """How many such answers in a row switch the mode; 0 never switches."""
        self._silent: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def observe(self, key: tuple[str, str], *, called: bool, first_turn: bool) -> bool:
        """Record one native-tools executor answer; True exactly when this one reaches the limit.

        ``called``: the answer called a tool (else it was a final answer); ``first_turn``: no tool result
        was in the conversation yet.  A later turn's final answer neither counts nor resets."""
        with self._lock:
            if called:
                self._silent.pop(key, None)
                return False
            if not first_turn or self.limit < 1:
                return False
            self._silent[key] = self._silent.get(key, 0) + 1
            return self._silent[key] == self.limit

    def count(self, key: tuple[str, str]) -> int:
        """The current run of silent answers of one endpoint and model."""
        with self._lock:
            return self._silent.get(key, 0)


def silent_reason(limit: int) -> str:
    """Why the mode moved, as the log and the store say it."""
    return (f"behaviour: {limit} executor attempts in a row gave a final answer on their first turn without "
            "calling any of the native tools offered (a server that accepts tools, a model that does not use them)")


def probe_reason(tool: str) -> str:
    """Why the mode moved after one probe, as the log and the store say it."""
    return (f"behaviour: an executor's first turn gave a final answer under native tools, and the same turn in the "
            f"content protocol called {tool}")


# ---- negotiation: this process's profiles -------------------------------------------------------------------


class Negotiator:
    """Per (base_url, model): the profile in use, read from the store once, moved on refusals and behaviour.

    Shared by every role and event loop of the process, so it sits behind one lock; ``store`` is called
    once, when first needed (an unusable home remembers nothing and is never fatal)."""

    def __init__(self, store: Callable[[], ProfileStore], silent_tool_answers: int = 0, tool_mode: str = "auto"):
        self.forced_tools = None if tool_mode == "auto" else tool_mode
        """The executor's tool mode the person chose (``llm.tool_mode``), whatever was negotiated; None: negotiated."""
        self._store_factory = store
        self._store: ProfileStore | None = None
        self._profiles: dict[tuple[str, str], EndpointProfile] = {}
        self._confirmed: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self.watch = SilentToolWatch(silent_tool_answers)
        """Moves native tools to the content protocol on behaviour."""

    def store(self) -> ProfileStore:
        """The home's store, made on first use."""
        if self._store is None:
            self._store = self._store_factory()
        return self._store

    def profile(self, ep: Endpoint) -> EndpointProfile:
        """This endpoint and model's profile, read from the store the first time."""
        with self._lock:
            if ep.key not in self._profiles:
                found = self.store().profile(*ep.key)
                self._profiles[ep.key] = found
                self._confirmed.update((*ep.key, kind) for kind in KINDS if found.learnt(kind))
            return self._profiles[ep.key]

    def mode(self, ep: Endpoint, kind: str) -> str:
        """The mode of one kind (the best one until something moved it; the person's choice of tool mode first)."""
        if kind == "tools" and self.forced_tools is not None:
            return self.forced_tools
        return self.profile(ep).mode(kind)

    def shape(self, ep: Endpoint) -> str:
        """The mode a content-protocol turn is held to: the worse of the structured and the turn modes."""
        modes = STRUCTURED_MODES
        return modes[max(modes.index(self.mode(ep, "structured")), modes.index(self.mode(ep, "turn")))]

    def fall_back(self, ep: Endpoint, refused: FeatureRefused, sent_mode: str, kind: str | None = None) -> None:
        """Move this endpoint's kind past the refused mode, log it and remember it (never backwards).

        ``kind``: the kind to move; by default the one the refused request field belongs to."""
        kind = kind or FEATURE_KIND[refused.feature]
        modes = KINDS[kind]
        if modes.index(sent_mode) + 1 >= len(modes):
            raise ConfigurationError(
                f"the {ep.tier} tier endpoint {ep.base_url} (model {ep.model!r}) refused every {kind} mode "
                f"({', '.join(modes)}); last answer: {refused}") from None
        self._move(ep, kind, sent_mode, modes[modes.index(sent_mode) + 1], f"it answered {refused}", str(refused))

    def refuse_sampling(self, ep: Endpoint, refused: FeatureRefused) -> None:
        """A sampling field the endpoint refused is no longer sent to it; the person's setting is not honoured
        there, which the log says once."""
        field = refused.feature
        self.profile(ep)
        with self._lock:
            profile = self._profiles[ep.key]
            if field in profile.sampling_refused:
                return
            because = str(refused)[:500]
            self._profiles[ep.key] = profile.model_copy(
                update={"sampling_refused": {**profile.sampling_refused, field: because}})
        _log.warning("LLM endpoint %s model %r refused %s (llm.%s is set), so it is no longer sent there: %s",
                     ep.base_url, ep.model, field, field, refused)
        self.store().update(*ep.key, {"sampling_refused": {field: because}})

    def confirm(self, ep: Endpoint, kind: str, mode: str) -> None:
        """The first request of a kind a server accepted: log and remember the mode (once per process)."""
        key = (*ep.key, kind)
        self.profile(ep)
        with self._lock:
            if key in self._confirmed:
                return
            self._confirmed.add(key)
            self._profiles[ep.key] = self._profiles[ep.key].model_copy(update={f"{kind}_because": "accepted"})
        _log.info("LLM endpoint %s model %r: %s mode %s accepted", ep.base_url, ep.model, kind, mode)
        self.store().remember(ep.base_url, ep.model, kind, mode, "accepted")

    def saw_server(self, ep: Endpoint, facts: ServerFacts) -> None:
        """What the server said about itself (its window, grammar and cache): kept when it differs from the profile."""
        said = _said(facts.cache)
        self._learn(ep, lambda profile: {"window": facts.window, "grammar": facts.grammar,
                                         "cache": profile.cache.model_copy(update=said)})

    def saw_timings(self, ep: Endpoint, timings: object) -> None:
        """An answer's ``timings`` (llama.cpp): whether the server reports how much of the prompt its cache served."""
        reports = isinstance(timings, dict) and isinstance(timings.get("cache_n"), int)
        self._learn(ep, lambda profile: {"cache": profile.cache.model_copy(update={"reports_cache_n": reports})})

    def _learn(self, ep: Endpoint, observed: Callable[[EndpointProfile], dict[str, Any]]) -> None:
        """Apply what was observed (worked out from the profile under the lock); only a change is logged and
        written, so a server that says the same every run costs no write."""
        self.profile(ep)
        with self._lock:
            profile = self._profiles[ep.key]
            changed = {key: value for key, value in observed(profile).items() if getattr(profile, key) != value}
            if not changed:
                return
            self._profiles[ep.key] = profile.model_copy(update=changed)
        stored = {key: value.model_dump(mode="json") if isinstance(value, BaseModel) else value
                  for key, value in changed.items()}
        _log.info("LLM endpoint %s model %r: %s", ep.base_url, ep.model,
                  ", ".join(f"{key} {value}" for key, value in stored.items()))
        self.store().update(*ep.key, stored)

    def tool_answer(self, ep: Endpoint, messages: list[dict], *, called: bool) -> None:
        """One executor answer under native tools: the behaviour watch may move tools to the content protocol."""
        if self.mode(ep, "tools") != "native":
            return
        first_turn = not any(m.get("role") == "tool" for m in messages)
        if self.watch.observe(ep.key, called=called, first_turn=first_turn):
            reason = silent_reason(self.watch.limit)
            self._move(ep, "tools", "native", "content", reason, reason)

    def probe_due(self, ep: Endpoint, messages: list[dict]) -> bool:
        """Whether a native-tools final answer on this turn is worth asking again in the content protocol:
        tools are native, no tool result is in the conversation yet, and the watch has not moved the mode."""
        return self.mode(ep, "tools") == "native" and not any(m.get("role") == "tool" for m in messages)

    def probed(self, ep: Endpoint, tool: str) -> None:
        """The content protocol got a call where native tools got a final answer: move tools to content."""
        reason = probe_reason(tool)
        self._move(ep, "tools", "native", "content", reason, reason)

    def _move(self, ep: Endpoint, kind: str, sent_mode: str, to: str, why: str, because: str) -> None:
        self.profile(ep)
        modes = KINDS[kind]
        with self._lock:
            profile = self._profiles[ep.key]
            if modes.index(profile.mode(kind)) > modes.index(sent_mode):  # another request moved on
                return
            self._profiles[ep.key] = profile.model_copy(update={kind: to, f"{kind}_because": because[:500]})
            self._confirmed.add((*ep.key, kind))
        _log.info("LLM endpoint %s model %r: %s mode %s -> %s, because %s", ep.base_url, ep.model, kind,
                  sent_mode, to, why)
        self.store().remember(ep.base_url, ep.model, kind, to, because)


def _said(cache: CacheBehaviour) -> dict[str, Any]:
    """The cache fields a server stated (the rest stays as learnt from its answers)."""
    return {key: value for key, value in cache.model_dump().items() if value is not None}
