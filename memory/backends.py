"""Which MKCT store a process opens: the embedded DuckDB file, or the shared PostgreSQL.

Why one function: the task flow, the Dreamer and the CLI must never disagree about where
memory is, so each asks ``open_store`` with the settings' ``memory`` section rather than
constructing a store class itself.  Embedded DuckDB stays the default; the PostgreSQL
backend is what several workers on several machines share (README "Scaling out").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from artoo.config.settings import MemoryParams


def open_store(home: Path, params: MemoryParams | None = None, reader_idle_s: float | None = None) -> Any:
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
