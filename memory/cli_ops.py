"""Plain functions behind ``artoo memory …``: open the store, do one thing, return data.

No typer or rich here: the CLI formats; these return dicts and lists that are also
JSON-ready.  Inspecting SOPs from the CLI is not a planner's recall, so it does not
reset their decay clocks.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from artoo.memory.store import MemoryStore


def _open(home: Path) -> Any:
    """The store the settings name: the embedded one under ``home``, or the shared PostgreSQL."""
    from artoo.config.settings import load_settings
    from artoo.memory.backends import open_store

    params = load_settings().memory
    return open_store(home, params) if params.backend == "postgres" else MemoryStore(home)


def potentials(home: Path, space: str, entity: str, at: datetime | None = None) -> dict:
    """Live attention, decision and action of one tag pair."""
    with _open(home) as store:
        p = store.query_mk(space, entity, at)
    return {"space": space, "entity": entity, "at": at.isoformat() if at else None, **p.model_dump()}


def sops(home: Path, space: str, entity: str) -> list[dict]:
    """The C-level rules of one tag pair (without counting as a recall)."""
    with _open(home) as store:
        return [r.model_dump() for r in store.query_c(space, entity, recall=False)]


def stats(home: Path) -> dict:
    """Counts per level, pending spool records, sizes, journal counts."""
    with _open(home) as store:
        return store.stats()


def export(home: Path, file: Path) -> dict:
    """Ingest pending spools, then write every Megram to a Parquet file."""
    with _open(home) as store:
        rows = store.export_parquet(Path(file))
    return {"file": str(file), "rows": rows}


def import_(home: Path, file: Path) -> dict:
    """Validate a Parquet export whole, then add its new Megrams (all or nothing)."""
    with _open(home) as store:
        imported = store.import_parquet(Path(file))
    return {"file": str(file), "imported": imported}


def ingest(home: Path) -> dict:
    """Move pending spools into DuckDB now."""
    with _open(home) as store:
        return {"ingested": store.ingest()}


def dream(home: Path, at: datetime | None = None) -> dict:
    """One Dreamer pass without LLM consolidation (no LLM from the CLI's plain path); SOPs by code are written."""
    from artoo.memory.dreamer import dream as run_dream

    with _open(home) as store:
        return run_dream(store, at).model_dump(mode="json")
