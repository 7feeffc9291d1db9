"""Early requests: an LLM request goes out as soon as its words are fixed, not when its task starts.

Why: between two model calls artoo does Prefect bookkeeping that the next request does not depend
on — a cold ``artoo run`` waits ≈ 3 s for its server before R1, every round and subtask subflow
costs four API calls before its first role asks the model.  When the next request's messages are
already known (R1's as soon as the command has the request and the history, R2's as soon as the
GGS has chosen the directive, R3's first turn as soon as the plan is dispatched), sending it first
lets the model think while Prefect creates the runs.

The task that makes the call still makes it: ``OpenAICompatLLM._request`` looks here first and,
only when an identical request (same endpoint, model and every request field) was sent early,
awaits that answer instead of sending a second one.  Recording, parsing, the repair attempt and
the retries of environmental failures are the task's own, exactly as for a request it sent itself,
so the run graph, the cost report and the decision log read the same.  A request whose words
changed in between (memory written by another run, a format fallback) is sent normally; the early
answer is then dropped unread, costing one request.

The early requests run on one background event loop per process (``_Lane``), because the code
that knows the words may be synchronous (the CLI) or on another loop than the task that awaits
the answer; ``asyncio.wrap_future`` bridges the two.  Nothing here imports Prefect or does HTTP (the
request itself is ``http.post_chat``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["EARLY", "EXPIRE_S", "EarlyRequests", "answer_of", "request_key"]

EXPIRE_S = 600.0
"""An early answer nobody asked for within this long is dropped (its run ended or took another path)."""


def request_key(base_url: str, model: str, request: dict[str, Any]) -> str:
    """The identity of one chat-completions request: endpoint, model and every field sent."""
    text = json.dumps({"base_url": base_url, "model": model, "request": request}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class _Lane:
    """One daemon thread running an event loop for the early requests of this process."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="artoo-early-llm", daemon=True).start()
            return self._loop


class EarlyRequests:
    """Requests sent ahead of their task, each answered to at most one taker."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[float, concurrent.futures.Future]] = {}
        self._sent: dict[str, float] = {}
        """Every request sent early within EXPIRE_S, taken or not: it is never sent early twice."""
        self._lock = threading.Lock()
        self._lane = _Lane()
        self.sent = 0
        """Requests sent early in this process."""
        self.taken = 0
        """Early answers a task used."""

    def send(self, key: str, call: Callable[[], Awaitable[Any]]) -> concurrent.futures.Future | None:
        """Start ``call()`` on the lane unless the same request was sent early already: its answer to come, or None.

        Already means pending or taken: two senders may work out the same request (``artoo run`` sends round
        1's R2 before its flow exists, and the flow would send it again), and one that comes late, after the
        task took the first answer, must not ask the model a second time for an answer nobody will read."""
        with self._lock:
            self._expire()
            if key in self._sent:  # every pending request is in _sent too
                return None
            future = asyncio.run_coroutine_threadsafe(_timed(call), self._lane.loop())
            self._pending[key] = (time.monotonic(), future)
            self._sent[key] = time.monotonic()
            self.sent += 1
            return future

    def take(self, key: str) -> concurrent.futures.Future | None:
        """The pending early answer of this request (removed: one taker), or None."""
        with self._lock:
            entry = self._pending.pop(key, None)
            if entry is not None:
                self.taken += 1
            return entry[1] if entry else None

    def clear(self) -> None:
        """Forget every early request, pending or sent (a test starting afresh; nothing else needs it)."""
        with self._lock:
            for _, future in self._pending.values():
                future.cancel()
            self._pending.clear()
            self._sent.clear()

    def pending(self) -> int:
        """Early requests nobody has taken yet."""
        with self._lock:
            return len(self._pending)

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (at, _) in self._pending.items() if now - at > EXPIRE_S]:
            self._pending.pop(key)[1].cancel()
        for key in [k for k, at in self._sent.items() if now - at > EXPIRE_S]:
            del self._sent[key]


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """The answer and how long the endpoint took (the CallRecord's latency)."""
    started = time.perf_counter()
    answer = await call()
    return answer, time.perf_counter() - started


async def answer_of(future: concurrent.futures.Future) -> tuple[Any, float]:
    """Await an early answer from any loop: (response, latency_s), or the request's own exception."""
    return await asyncio.wrap_future(future)


EARLY = EarlyRequests()
"""This process's early requests (the CLI sends R1's; the flows send R2's and R3's first turn)."""
