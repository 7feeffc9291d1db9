"""Figures, targets and tables: how every benchmark reports, so the JSON and the tables agree.

A :class:`Figure` is one number with the target it is held to (or ``None`` when none
is set: reported, not judged) and whether it met it.  A :class:`Section` is one
benchmark: its figures, a rich table of its candidates side by side, and free-form
details for the JSON document.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.table import Table


@dataclass(frozen=True)
class Figure:
    """One measured number and the target it is held to."""

    key: str
    what: str
    value: float | int | None
    unit: str
    target: str | None
    """Human-readable, e.g. "≤ 1.15"; None when no target is set (informational)."""
    met: bool | None
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        """The figure as JSON data (NaN/inf become None)."""
        data = asdict(self)
        value = data["value"]
        if isinstance(value, float):
            data["value"] = None if not math.isfinite(value) else round(value, 4)
        data["target"] = data["target"] or "none (informational)"
        return data


def at_most(value: float, limit: float) -> bool | None:
    """value ≤ limit, None when the value was not measured."""
    return None if value is None or not math.isfinite(value) else value <= limit


def mark(met: bool | None) -> str:
    """The verdict cell of a table."""
    return {True: "[green]met[/]", False: "[bold red]MISSED[/]", None: "—"}[met]


def fmt(value: float | int | None, digits: int = 2) -> str:
    """A number for a table cell."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


@dataclass
class Section:
    """One benchmark's result."""

    name: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The section as JSON data."""
        return {"title": self.title, "figures": [f.as_json() for f in self.figures], "details": self.details,
                "notes": self.notes}


def table(title: str, columns: list[str]) -> Table:
    """A table with the first column left-aligned and the others right-aligned."""
    out = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        out.add_column(column, justify="left" if index == 0 else "right")
    return out


def figures_table(section: Section) -> Table | None:
    """The figures of a section that are held to a target, with their verdicts (None when there are none)."""
    judged = [f for f in section.figures if f.target]
    if not judged:
        return None
    out = table(f"{section.title}: figures held to a target", ["figure", "value", "target", "verdict"])
    for f in judged:
        value = fmt(f.value, 3 if isinstance(f.value, float) and abs(f.value) < 10 else 1)
        out.add_row(f.what, value if value == "n/a" else f"{value} {f.unit}".strip(), f.target or "—", mark(f.met))
    return out
