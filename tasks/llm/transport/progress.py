"""Which LLM requests are in flight right now: the hook a terminal shows a slow call with.

Why: a local CPU model takes 10–60 s per answer, and a terminal that prints nothing for a
minute looks hung.  The client marks each request it sends (``track``: start and end; ``tokens``
where a server streams); a display elsewhere (``artoo.inflight``, for ``artoo run`` and ``chat``)
reads ``calls()`` and draws it.  Nothing here prints, imports Prefect or knows about terminals.

Requests run on several threads (Prefect's worker threads, the early-request lane), so every
method is thread-safe.  ``question`` lets code that takes the terminal for a question (Law 1's
console gate) hide every display at once, before it writes its prompt.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

__all__ = ["INFLIGHT", "Call", "Inflight"]


@dataclass(frozen=True)
class Call:
    """One request in flight."""

    role: str
    model: str
    tier: str
    started: float
    """time.monotonic() when it was sent."""
    tokens: int | None = None
    """Answer tokens received so far (streaming servers only)."""


class Inflight:
    """The requests of this process that have no answer yet, and who watches them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, Call] = {}
        self._ids = itertools.count(1)
        self._questions = 0
        self._listeners: list[Callable[[], None]] = []

    def start(self, role: str, model: str, tier: str) -> int:
        """A request was sent; its id for ``tokens`` and ``end``."""
        with self._lock:
            call_id = next(self._ids)
            self._calls[call_id] = Call(role, model, tier, time.monotonic())
        self._changed()
        return call_id

    def tokens(self, call_id: int, count: int) -> None:
        """A streaming answer has ``count`` tokens so far."""
        with self._lock:
            if call_id in self._calls:
                self._calls[call_id] = replace(self._calls[call_id], tokens=count)

    def end(self, call_id: int) -> None:
        """The request ended: answered, failed or abandoned."""
        with self._lock:
            self._calls.pop(call_id, None)
        self._changed()

    @contextmanager
    def track(self, role: str, model: str, tier: str) -> Iterator[int]:
        """``start`` … ``end`` around one request, however it ends (a cancellation too)."""
        call_id = self.start(role, model, tier)
        try:
            yield call_id
        finally:
            self.end(call_id)

    def calls(self) -> list[Call]:
        """The requests in flight, oldest first; none while a question holds the terminal."""
        with self._lock:
            return [] if self._questions else sorted(self._calls.values(), key=lambda c: c.started)

    @contextmanager
    def question(self) -> Iterator[None]:
        """The terminal is someone's question: every display is told to hide before this returns."""
        with self._lock:
            self._questions += 1
        self._changed()
        try:
            yield
        finally:
            with self._lock:
                self._questions -= 1
            self._changed()

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` on every start, end and question (it must be quick); returns the remover."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
        return remove

    def _changed(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:  # a display never fails a request
                continue


INFLIGHT = Inflight()
"""This process's requests in flight (OpenAICompatLLM marks them)."""
