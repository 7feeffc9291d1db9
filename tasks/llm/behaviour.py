"""Tool-call negotiation by behaviour: a model that never calls native ``tools`` moves to the content protocol.

Why: a server that *accepts* ``tools`` is not a model that *uses* them.  Qwen2.5-Coder-1.5B on
``llama-server --jinja`` took every native tool request and answered each one with a final
``{"status": "completed", "output": …}`` with invented counts, or an ``uncertain`` guess, and no tool
call, on every attempt of two rounds (tests/transcripts/llama-server-count-lines-2.jsonl).  Given
the JSON-in-content protocol, where the two allowed answers are spelled out side by side, the same
model called ``glob`` on its first turn.  A refusal never comes, so the refusal-driven fallback never
moves; this watch does.

The signal is narrow on purpose: an executor answer on the **first turn** of an attempt (no tool result
in the conversation yet), with tools offered, that gives a final answer without calling anything.
That is a result with no evidence, which R4a rejects (Law 0).  One such answer can be honest ("say
hello" needs no tool), so only ``limit`` of them **in a row** per endpoint and model switch the mode;
any native tool call resets the count.  Pure state, no I/O: the client logs and remembers the switch.

The watch's three attempts cost a round: in t32 of #25 (a fresh home) the second attempt answered "failed",
which ends a subtask, so the move came in round 2.  So the client first **probes** (``llm.content_probe``):
such a first turn is asked once more in the content protocol, and a call there moves the mode at once
(``probe_reason``); a final answer there too leaves the count to the watch.
"""

from __future__ import annotations

import threading


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
    """Why the mode moved, as the log and the negotiated store say it."""
    return (f"behaviour: {limit} executor attempts in a row gave a final answer on their first turn without "
            "calling any of the native tools offered (a server that accepts tools, a model that does not use them)")


def probe_reason(tool: str) -> str:
    """Why the mode moved after one probe, as the log and the negotiated store say it."""
    return (f"behaviour: an executor's first turn gave a final answer under native tools, and the same turn in the "
            f"content protocol called {tool}")
