"""What a reader sees of the spools: Megrams written but not yet ingested.

Fresh experience must steer the very next plan, so queries union the DuckDB rows with
the spool lines past the committed offsets.  Exactness rests on the lock protocol: a
reader holds the shared lock for the whole life of its connection, so neither the DuckDB
snapshot nor the committed ``spool_offsets`` nor the set of spool files can change under
it (only the exclusive writer ingests or deletes).  A line therefore counts either in
DuckDB or here, never in both and never in neither.  Writers only append, so each
refresh reads just the new bytes; a trailing partial line waits for its newline.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from artoo.memory.spool import SPOOL_SUFFIX, line_problem


@dataclass(frozen=True, slots=True)
class PendingMegram:
    """A spooled Megram as the query paths need it."""

    id: str
    level: str
    space: str
    entity: str
    content: str
    state: str
    f: float
    sigma: float
    k: float
    created_us: int
    recalled_us: int | None
    derived_from: tuple[str, ...]

    @property
    def ref_us(self) -> int:
        """Decay reference: last recall, else creation."""
        return self.recalled_us if self.recalled_us is not None else self.created_us


class PendingView:
    """Incrementally parsed spool tails beyond the committed offsets of one DuckDB snapshot."""

    def __init__(self, spool_dir: Path, committed: dict[str, int]) -> None:
        self._dir = spool_dir
        self._committed = committed
        self._pos: dict[str, int] = {}
        self._by_id: dict[str, PendingMegram] = {}
        self._by_pair: dict[tuple[str, str], list[PendingMegram]] = {}
        self.files = 0
        """Spool files seen at the last refresh."""
        self.bytes = 0
        """Their total size."""

    def refresh(self) -> PendingView:
        """Read whatever complete lines were appended since the last refresh."""
        files = total = 0
        with os.scandir(self._dir) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(SPOOL_SUFFIX):
                    continue
                size = entry.stat().st_size
                files, total = files + 1, total + size
                pos = self._pos.get(entry.name, self._committed.get(entry.name, 0))
                if size > pos:
                    pos += self._read(entry.path, pos, size - pos)
                self._pos[entry.name] = pos
        self.files, self.bytes = files, total
        return self

    def _read(self, path: str, pos: int, length: int) -> int:
        try:
            with open(path, "rb") as handle:
                handle.seek(pos)
                data = handle.read(length)
        except FileNotFoundError:
            return 0
        cut = data.rfind(b"\n") + 1
        for line in data[:cut].split(b"\n")[:-1]:
            self._add(line)
        return cut

    def _add(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            return  # ingest quarantines it and says so
        if line_problem(obj) or obj["op"] != "m" or obj["id"] in self._by_id:
            return
        megram = PendingMegram(
            id=obj["id"],
            level=obj["level"],
            space=obj["space"],
            entity=obj["entity"],
            content=obj["content"],
            state=obj["state"],
            f=float(obj["f"]),
            sigma=float(obj["sigma"]),
            k=float(obj["k"]),
            created_us=obj["created_at"],
            recalled_us=obj.get("last_recalled_at"),
            derived_from=tuple(obj.get("derived_from") or ()),
        )
        self._by_id[megram.id] = megram
        self._by_pair.setdefault((megram.space, megram.entity), []).append(megram)

    def of_pair(self, space: str, entity: str, levels: tuple[str, ...]) -> list[PendingMegram]:
        """Pending Megrams of one tag pair at the given levels."""
        return [m for m in self._by_pair.get((space, entity), ()) if m.level in levels]

    def with_space(self, space: str, prefix: bool, levels: tuple[str, ...]) -> list[PendingMegram]:
        """Pending Megrams whose space equals (or starts with) ``space``."""
        return [
            m
            for (s, _), group in self._by_pair.items()
            if (s.startswith(space) if prefix else s == space)
            for m in group
            if m.level in levels
        ]

    def get(self, megram_id: str) -> PendingMegram | None:
        """A pending Megram by id."""
        return self._by_id.get(megram_id)

    @property
    def count(self) -> int:
        """Distinct pending Megrams."""
        return len(self._by_id)

    def level_counts(self) -> dict[str, int]:
        """Pending Megrams per level."""
        counts: dict[str, int] = {}
        for m in self._by_id.values():
            counts[m.level] = counts.get(m.level, 0) + 1
        return counts
