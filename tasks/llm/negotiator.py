"""The modes an endpoint and model use, in one process: loaded from the home's store, moved on refusals
and on behaviour, logged once and remembered (``negotiated.py`` is the file; this is the state).

Why apart from the client: the client sends requests; which *form* each request takes is a small
state machine of its own (each kind's modes best first, never moving backwards), shared by every
role and event loop of the process, so it sits behind one lock here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from artoo.config.errors import ConfigurationError
from artoo.tasks.llm.behaviour import SilentToolWatch, probe_reason, silent_reason
from artoo.tasks.llm.endpoint import Endpoint, FeatureRefused
from artoo.tasks.llm.negotiated import NegotiationStore
from artoo.tasks.llm.parsing import MODES
from artoo.tasks.llm.tool_protocol import TOOL_MODES

KINDS = {"structured": MODES, "tools": TOOL_MODES, "turn": MODES}
"""What is negotiated per endpoint and model, and each kind's modes best first.  ``turn``: the schema a
content-protocol tool turn is held to, apart from ``structured`` because a server may take one schema
and refuse the other (the turn's is an ``anyOf``)."""
FEATURE_KIND = {"response_format": "structured", "tools": "tools"}
"""The request field a refusal names → the kind it moves."""

_log = logging.getLogger("artoo.llm")


class Negotiator:
    """Per (base_url, model): the mode of each kind in use; ``store`` is called once, when first needed."""

    def __init__(self, store: Callable[[], NegotiationStore], silent_tool_answers: int = 0):
        self._store_factory = store
        self._store: NegotiationStore | None = None
        self._modes: dict[tuple[str, str], dict[str, str]] = {}
        self._confirmed: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self.watch = SilentToolWatch(silent_tool_answers)
        """Moves native tools to the content protocol on behaviour (artoo.tasks.llm.behaviour)."""

    def store(self) -> NegotiationStore:
        """The home's store, made on first use (an unusable home remembers nothing; never fatal)."""
        if self._store is None:
            self._store = self._store_factory()
        return self._store

    def modes(self, ep: Endpoint) -> dict[str, str]:
        """This endpoint and model's modes, read from the store the first time (unknown modes ignored)."""
        key = (ep.base_url, ep.model)
        with self._lock:
            if key not in self._modes:
                stored = self.store().get(*key)
                self._modes[key] = {kind: stored[kind] for kind, modes in KINDS.items() if stored.get(kind) in modes}
                self._confirmed.update((*key, kind) for kind in self._modes[key])
            return self._modes[key]

    def mode(self, ep: Endpoint, kind: str) -> str:
        """The mode of one kind (the best one until something moved it)."""
        return self.modes(ep).get(kind, KINDS[kind][0])

    def shape(self, ep: Endpoint) -> str:
        """The mode a content-protocol turn is held to: the worse of the structured and the turn modes."""
        return MODES[max(MODES.index(self.mode(ep, "structured")), MODES.index(self.mode(ep, "turn")))]

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

    def confirm(self, ep: Endpoint, kind: str, mode: str) -> None:
        """The first request of a kind a server accepted: log and remember the mode (once per process)."""
        key = (ep.base_url, ep.model, kind)
        with self._lock:
            if key in self._confirmed:
                return
            self._confirmed.add(key)
        _log.info("LLM endpoint %s model %r: %s mode %s accepted", ep.base_url, ep.model, kind, mode)
        self.store().remember(ep.base_url, ep.model, kind, mode, "accepted")

    def tool_answer(self, ep: Endpoint, messages: list[dict], *, called: bool) -> None:
        """One executor answer under native tools: the behaviour watch may move tools to the content protocol."""
        if self.mode(ep, "tools") != "native":
            return
        first_turn = not any(m.get("role") == "tool" for m in messages)
        if self.watch.observe((ep.base_url, ep.model), called=called, first_turn=first_turn):
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
        modes_now = self.modes(ep)
        modes = KINDS[kind]
        with self._lock:
            if modes.index(modes_now.get(kind, modes[0])) > modes.index(sent_mode):  # another request moved on
                return
            modes_now[kind] = to
            self._confirmed.add((ep.base_url, ep.model, kind))
        _log.info("LLM endpoint %s model %r: %s mode %s -> %s, because %s", ep.base_url, ep.model, kind,
                  sent_mode, to, why)
        self.store().remember(ep.base_url, ep.model, kind, to, because)
