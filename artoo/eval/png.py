"""Tiny PNG charts: zlib and struct only (matplotlib is not a dependency of artoo).

Bar panels side by side, one bar per strategy in each, and a line chart (cumulative solved over the
task index, cold vs sequence), with a 3×5 pixel font for titles, values and legends — enough to read
"solved rate" and "LLM calls per solved task" or whether memory bends the curve, at a glance.
"""

from __future__ import annotations

import struct
import zlib

FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001010010",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", "%": "101001010100101",
    " ": "000000000000000", "-": "000000111000000", "/": "001001010100100", "A": "010101111101101",
    "B": "110101110101110", "C": "111100100100111", "D": "110101101101110", "E": "111100111100111",
    "G": "111100101101111", "I": "111010010010111", "L": "100100100100111", "M": "101111111101101",
    "N": "110101101101101", "O": "111101101101111", "P": "111101111100100", "R": "110101110101101",
    "S": "111100111001111", "T": "111010010010010", "V": "101101101101010", "Y": "101101010010010",
    "K": "101101110101101", "H": "101101111101101", "F": "111100111100100", "U": "101101101101111",
    "Q": "111101101111001", "W": "101101111111101", "X": "101101010101101", "J": "001001001101111",
    "Z": "111001010100111", "(": "010100100100010", ")": "010001001001010", ":": "000010000010000",
}
COLOURS = [(46, 125, 50), (198, 40, 40), (21, 101, 192), (239, 108, 0)]
WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (200, 200, 200)


class Canvas:
    """An RGB pixel grid."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = [[WHITE] * width for _ in range(height)]

    def rect(self, x: int, y: int, w: int, h: int, colour: tuple[int, int, int]) -> None:
        """Fill a rectangle (clipped)."""
        for row in range(max(y, 0), min(y + h, self.height)):
            for col in range(max(x, 0), min(x + w, self.width)):
                self.pixels[row][col] = colour

    def text(self, x: int, y: int, text: str, scale: int = 2, colour=BLACK) -> None:
        """Write upper-case text in the 3×5 font; unknown characters are blank."""
        for i, char in enumerate(text.upper()):
            bits = FONT.get(char, FONT[" "])
            for n, bit in enumerate(bits):
                if bit == "1":
                    self.rect(x + (i * 4 + n % 3) * scale, y + (n // 3) * scale, scale, scale, colour)

    def segment(self, start: tuple[int, int], end: tuple[int, int], colour: tuple[int, int, int]) -> None:
        """A 2-pixel line from ``start`` to ``end`` (steps along the longer axis)."""
        (x0, y0), (x1, y1) = start, end
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for n in range(steps + 1):
            self.rect(x0 + (x1 - x0) * n // steps, y0 + (y1 - y0) * n // steps, 2, 2, colour)

    def png(self) -> bytes:
        """The canvas as PNG bytes (8-bit RGB, no filter)."""
        raw = b"".join(b"\x00" + bytes(v for px in row for v in px) for row in self.pixels)

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + \
            chunk(b"IEND", b"")


def bar_panels(panels: list[tuple[str, list[tuple[str, float, str]]]], width: int = 640,
               height: int = 320) -> bytes:
    """Panels of bars: [(title, [(label, value, shown text)])] → PNG bytes."""
    canvas = Canvas(width, height)
    panel_w = width // max(len(panels), 1)
    top, bottom = 40, height - 40
    for p, (title, bars) in enumerate(panels):
        x0 = p * panel_w
        canvas.text(x0 + 12, 10, title)
        canvas.rect(x0 + 10, bottom, panel_w - 20, 2, GREY)
        peak = max((v for _, v, _ in bars), default=0) or 1.0
        slot = (panel_w - 20) // max(len(bars), 1)
        for b, (label, value, shown) in enumerate(bars):
            bar_h = int((bottom - top - 20) * value / peak)
            x = x0 + 10 + b * slot + slot // 4
            canvas.rect(x, bottom - bar_h, slot // 2, bar_h, COLOURS[b % len(COLOURS)])
            canvas.text(x, bottom - bar_h - 14, shown)
            canvas.text(x, bottom + 10, label)
    return canvas.png()


def line_chart(title: str, series: list[tuple[str, list[float]]], width: int = 640, height: int = 320) -> bytes:
    """One panel of lines over a shared x (the task index): [(label, values)] → PNG bytes, legend on top."""
    canvas = Canvas(width, height)
    canvas.text(12, 10, title)
    left, right, top, bottom = 50, width - 20, 60, height - 40
    canvas.rect(left, bottom, right - left, 2, GREY)
    canvas.rect(left - 2, top, 2, bottom - top, GREY)
    longest = max((len(v) for _, v in series), default=0)
    peak = max((x for _, v in series for x in v), default=0) or 1.0
    canvas.text(8, top, f"{peak:g}")
    canvas.text(8, bottom - 10, "0")
    canvas.text(right - 40, bottom + 10, str(longest))

    def point(i: int, value: float) -> tuple[int, int]:
        x = left + (i + 1) * (right - left) // max(longest, 1)
        return x, bottom - int((bottom - top) * value / peak)

    for s, (label, values) in enumerate(series):
        colour = COLOURS[s % len(COLOURS)]
        canvas.rect(left + s * 150, 34, 16, 8, colour)
        canvas.text(left + s * 150 + 22, 32, label)
        previous = point(-1, 0.0)
        for i, value in enumerate(values):
            current = point(i, value)
            canvas.segment(previous, current, colour)
            previous = current
    return canvas.png()
