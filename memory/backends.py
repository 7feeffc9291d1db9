"""Which MKCT store a process opens: the embedded DuckDB file, or the shared PostgreSQL.

Why one function: the task flow, the Dreamer and the CLI must never disagree about where
memory is, so each asks ``open_store`` with the settings' ``memory`` section rather than
constructing a store class itself.  Embedded DuckDB stays the default; the PostgreSQL
backend is what several workers on several machines share (README "Scaling out").
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from artoo.config.contracts import Megram, Potentials, SOPRecord
from artoo.config.settings import MemoryParams


@runtime_checkable
class MemoryService(Protocol):
    """What the roles, the flows, the Dreamer flow and the CLI use of a memory store, typed for either backend.

    Both backends implement it; a method one of them lacks would fail only where it is called
    (the PostgreSQL store once had no ``recent`` nor ``query_c_prefix``, so every calibration on a
    cluster failed and planners saw no memory), so tests/test_memory_postgres.py checks both against it.
    """

    params: MemoryParams

    def write(self, m: Megram) -> None: ...
    def record_negative_feedback(self, rule_id: str, content: str) -> Megram: ...
    def query_mk(self, space: str, entity: str, at: datetime | None = None) -> Potentials: ...
    def query_c(self, space: str, entity: str, *, recall: bool = True) -> list[SOPRecord]: ...
    def query_c_prefix(self, prefix: str, *, recall: bool = True) -> list[SOPRecord]: ...
    def recent(self, space: str, entity: str, limit: int = 3) -> list[Megram]: ...
    def pairs_with_space_prefix(self, prefix: str, at: datetime | None = None
                                ) -> list[tuple[str, str, Potentials]]: ...
    def stats(self) -> dict: ...
    def ingest(self) -> int: ...
    def compact(self, force: bool = False) -> bool: ...
    def export_parquet(self, path: Path) -> int: ...
    def import_parquet(self, path: Path) -> int: ...
    def close(self) -> None: ...


def open_store(home: Path, params: MemoryParams | None = None,
               reader_idle_s: float | None = None) -> MemoryService:
    """A MemoryStore under ``home`` (duckdb) or a PostgresMemoryStore at ``params.postgres_url``.

    ``reader_idle_s``: how long the DuckDB store keeps an idle read-only connection (its default when None);
    a waiting writer closes it sooner.
    """
    params = params or MemoryParams()
    if params.backend == "postgres":
        from artoo.memory.pg_store import PostgresMemoryStore

        return PostgresMemoryStore(params.postgres_url, params)
    from artoo.memory.store import MemoryStore

    if reader_idle_s is None:
        return MemoryStore(home, params)
    return MemoryStore(home, params, reader_idle_s=reader_idle_s)
