"""The terminal's line for a slow LLM call: role, model and how long it has waited.

Why: a local CPU model answers in 10–60 s, and ``artoo run`` printing nothing for a minute looks
hung.  While a request has been in flight for ``show_after_s``, a terminal (stderr a TTY) shows one
line, updated in place and erased when the answer comes (rich's transient ``Live`` on the same
console the progress lines use, so they print above it).  Anywhere else (CI, a pipe) a plain line
goes to stderr at most every ``plain_every_s`` while a call is that slow; stdout is never touched,
so ``--json`` prints exactly its one object.  The requests come from the client's hook
(artoo.tasks.llm.transport.progress); a Law-1 question on the terminal hides the line before it is written.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live
from rich.text import Text

from artoo.tasks.llm.transport.progress import INFLIGHT, Call, Inflight

SHOW_AFTER_S = 2.0
"""A request answered sooner than this is not worth a line."""
PLAIN_EVERY_S = 15.0
"""Off a terminal, at most one line this often (a CI log stays readable)."""
TICK_S = 0.5


def describe(calls: Sequence[Call], now: float, show_after_s: float = SHOW_AFTER_S) -> str | None:
    """The waiting line for the requests older than ``show_after_s``, or None when none is."""
    slow = [c for c in calls if now - c.started >= show_after_s]
    if not slow:
        return None
    parts = []
    for call in slow:
        tokens = f", {call.tokens} tokens" if call.tokens is not None else ""
        parts.append(f"{call.role} ({call.model}, {call.tier} tier) {now - call.started:.0f} s{tokens}")
    return "waiting for the model: " + "; ".join(parts)


@contextmanager
def waiting_line(console: Console) -> Iterator[InflightDisplay]:
    """This process's slow requests shown on ``console`` while the block runs, ticked by a daemon thread."""
    stop = threading.Event()
    with InflightDisplay(console) as display:

        def run() -> None:
            while not stop.wait(TICK_S):
                display.tick(time.monotonic())

        threading.Thread(target=run, name="artoo-inflight", daemon=True).start()
        try:
            yield display
        finally:
            stop.set()


class InflightDisplay:
    """Shows the slow requests of ``inflight`` on ``console`` at each ``tick``; hides them as they end.

    Inside its ``with`` block it listens to ``inflight``: the line goes the moment the last request
    ends or a question takes the terminal, not at the next tick.
    """

    def __init__(self, console: Console, inflight: Inflight = INFLIGHT, show_after_s: float = SHOW_AFTER_S,
                 plain_every_s: float = PLAIN_EVERY_S) -> None:
        self.console, self.inflight = console, inflight
        self.show_after_s, self.plain_every_s = show_after_s, plain_every_s
        self._live: Live | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._last_plain = 0.0
        self._remove = lambda: None

    def __enter__(self) -> InflightDisplay:
        self._remove = self.inflight.listen(self._on_change)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._closed = True
        self._remove()
        self._hide()

    def tick(self, now: float) -> None:
        """Draw what is in flight at ``now`` (the ticker's step)."""
        calls = self.inflight.calls()
        with self._lock:
            if self._closed:
                return
            if not self.console.is_terminal:
                line = describe(calls, now, self.plain_every_s)
                if line and now - self._last_plain >= self.plain_every_s:
                    self._last_plain = now
                    self.console.print(f"artoo: {line}", markup=False, highlight=False, soft_wrap=True)
                return
            line = describe(calls, now, self.show_after_s)
            if line is None:
                self._hide()
                return
            if self._live is None:
                self._live = Live(console=self.console, auto_refresh=False, transient=True,
                                  redirect_stdout=False, redirect_stderr=False)
                self._live.start()
            self._live.update(Text(line, style="dim", no_wrap=True, overflow="ellipsis"), refresh=True)

    def _on_change(self) -> None:
        """A request ended or a question took the terminal: hide at once when nothing is left to show."""
        if not self.inflight.calls():
            self._hide()

    def _hide(self) -> None:
        with self._lock:
            if self._live is not None:
                live, self._live = self._live, None
                live.stop()
