"""Text shaping for tool output: what the model sees and what the evidence line keeps.

The spec's ``headTail(result, 4000)`` keeps both ends of a long output — the head for
context, the tail for the result (exit codes and summaries come last) — with a marker
saying how much was cut.  ``HeadTailBuffer`` does the same while a process is still
writing, so a 50 MB output never sits in memory: it holds a fixed head and a bounded
tail and only counts the rest.
"""

from __future__ import annotations

import re

MARKER = "\n… {n} characters omitted …\n"


def head_tail(text: str, limit: int = 4000) -> str:
    """Text unchanged when it fits, else its head and tail around an omission marker (≤ limit)."""
    if len(text) <= limit:
        return text
    middle = len(text) // 2
    return join_head_tail(text[:middle], text[middle:], 0, limit)


headTail = head_tail  # the spec's name


def join_head_tail(head: str, tail: str, omitted: int, limit: int) -> str:
    """``head`` + marker + ``tail`` within ``limit``; ``omitted`` characters were already dropped between them."""
    if omitted == 0 and len(head) + len(tail) <= limit:
        return head + tail
    worst = MARKER.format(n=len(head) + len(tail) + omitted)
    budget = limit - len(worst)
    if budget <= 0:
        return (head + tail)[:max(limit, 0)]
    keep_head = min(len(head), budget // 2)
    keep_tail = min(len(tail), budget - keep_head)
    keep_head = min(len(head), budget - keep_tail)
    dropped = omitted + (len(head) - keep_head) + (len(tail) - keep_tail)
    tail_part = tail[len(tail) - keep_tail:] if keep_tail else ""
    return head[:keep_head] + MARKER.format(n=dropped) + tail_part


def with_note(main: str, note: str, limit: int, note_min: int = 600) -> str:
    """``main`` then ``note`` within ``limit``, the note cut first (down to ``note_min`` characters).

    The note is artoo's own addition to a tool's output (the committed change set): it must not
    push out what the command itself printed, which is the answer a user asked for.
    """
    if len(main) + len(note) <= limit:
        return main + note
    note = head_tail(note, min(len(note), max(note_min, limit - len(main))))
    return head_tail(main, max(limit - len(note), 0)) + note


def first_n(text: str, n: int = 200) -> str:
    """The first n characters, ending in … when cut (the evidence of a tool call)."""
    if len(text) <= n:
        return text
    return text[: max(n - 1, 0)] + "…"


_STATUS = re.compile(r"^\[(?:exit code -?\d+|killed by [^\]\n]*)\]$", re.MULTILINE)
"""How a command ended, as the shell tool writes it on a line of its own."""
_SANDBOX = re.compile(r"^\[artoo sandbox\] [^:\n]*", re.MULTILINE)
"""The headline of what the sandbox stopped (artoo.tasks.tools.blocks): a ``pkill`` that exited 0 reached nothing."""


def evidence_of(text: str, n: int = 200) -> str:
    """``first_n`` of a tool's output, followed, when the cut hid them, by how the command ended and the
    headline of each block of the sandbox it met.

    The validators judge from these entries ("the tool calls, recorded by code, are the ground
    truth"): a command that printed 300 characters and then exited 2 must not read as a success.
    """
    shown = first_n(text, n)
    if shown == text:
        return text
    status = dict.fromkeys(m.group(0) for m in _STATUS.finditer(text) if m.end() > n - 1)
    status.update(dict.fromkeys(m.group(0) for m in _SANDBOX.finditer(text) if m.end() > n - 1))
    return shown + "".join(f" {line}" for line in status)


class HeadTailBuffer:
    """Keeps the first ``head_bytes`` and the last ``tail_bytes`` of a byte stream, counting the rest."""

    def __init__(self, head_bytes: int, tail_bytes: int) -> None:
        self.head_bytes, self.tail_bytes = head_bytes, tail_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Add a chunk; memory stays within head_bytes + 2 × tail_bytes."""
        self.total += len(chunk)
        room = self.head_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk[-self.tail_bytes:] if self.tail_bytes else b""
            if len(self.tail) > 2 * self.tail_bytes:
                del self.tail[: len(self.tail) - self.tail_bytes]

    @property
    def held(self) -> int:
        """Bytes currently kept in memory."""
        return len(self.head) + len(self.tail)

    def text(self, limit: int) -> str:
        """The stream decoded (invalid UTF-8 replaced), head and tail kept, within ``limit`` characters."""
        tail = bytes(self.tail[-self.tail_bytes:]) if self.tail_bytes else b""
        dropped = self.total - len(self.head) - len(tail)
        head_text = bytes(self.head).decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        return join_head_tail(head_text, tail_text, dropped, limit)
