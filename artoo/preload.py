"""What ``artoo run`` imports on its way to its first flow run, to import ahead of time.

Why: a command that starts its server (the first of the day) waits for it ~3 s; importing these
meanwhile (artoo.runner) keeps the flow's first call from importing them between two LLM requests
(bench/README.md, ``overhead.process_cold``).  Standard library only at import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

PRELOAD = (
    "prefect.main", "prefect.settings", "prefect.flow_engine", "prefect.task_engine",
    "prefect.client.orchestration", "prefect.events.clients", "prefect.logging.handlers",
    "prefect.utilities.visualization", "openai", "openai.resources", "openai.lib.streaming", "duckdb", "pyarrow",
    "typer", "rich.console", "rich.table", "rich._emoji_codes", "fastapi", "starlette.applications",
    "anyio.streams.tls", "anyio._backends._asyncio", "httpcore2", "truststore", "opentelemetry.metrics", "pydoc",
    "encodings.idna", "artoo.config.settings", "artoo.memory.store",
    "artoo.memory.potentials", "artoo.servers.embedded", "artoo.servers.lingering", "artoo.servers.log", "artoo.quiet",
    "artoo.flows.task_flow", "artoo.flows.auditor", "artoo.tasks.bus.events", "artoo.tasks.roles.perceiver",
)
"""What ``artoo run`` imports on its way to the first LLM call."""


def preload(skipped: Callable[[str, ImportError], None] | None = None) -> None:
    """Import every PRELOAD module; one another dependency version lacks is passed to ``skipped`` (it only
    costs its import later)."""
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if skipped is not None:
                skipped(name, exc)
