"""``artoo worker`` and ``artoo audit verify --home …``: running artoo as a team's cluster.

``artoo worker`` prepares the server (the ``artoo`` process pool, the deployments, the
Dreamer's cluster-wide concurrency limit; see artoo.servers.cluster) and then becomes a Prefect
process worker of the pool, so N machines each run ``artoo worker`` against one server.
Verifying several homes checks each worker's audit chain and that they agree (tasks.audit.across).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

err = Console(stderr=True, highlight=False)


def _fail(exc: ArtooError) -> None:
    err.print(f"[bold red]artoo:[/] {exc}")
    raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1)


def worker(
    pool: Annotated[str, typer.Option(help="Work pool to take runs from.")] = "artoo",
    name: Annotated[str | None, typer.Option(help="Worker name shown in the UI (default: Prefect's).")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many runs at once on this worker.")] = None,
) -> None:
    """Run this machine as an artoo worker: take artoo-task runs from the pool of PREFECT_API_URL."""
    from artoo.config.settings import load_settings
    from artoo.servers.cluster import memory_problem, prepare, require_api, worker_argv

    try:
        api = require_api()
        settings = load_settings()
        import asyncio  # here: every other command would pay its import

        deployments = asyncio.run(prepare(settings, pool))
    except ArtooError as exc:
        _fail(exc)
    if problem := memory_problem(settings):
        err.print(f"[yellow]artoo worker:[/] {problem}")
    err.print(f"artoo worker: pool {pool!r} on {api}, deployments {', '.join(sorted(deployments))}; "
              f"home {settings.home_dir}, memory {settings.memory.backend}")
    argv = worker_argv(pool, name, limit)
    os.execv(argv[0], argv)


def verify_homes(homes: list[Path]) -> None:
    """Verify the audit chain of every home given and check the chains agree; exit 1 when not."""
    from artoo.tasks.audit.across import verify_chains

    check = verify_chains(homes)
    out = Console(highlight=False)
    for log, result in check.results.items():
        if result.ok:
            out.print(f"audit log intact: {result.records} record(s) in {log}")
        else:
            err.print(f"artoo audit verify: record {result.first_broken} of {log} is broken: {result.reason}")
    for line in check.disagreements[:20]:
        err.print(f"artoo audit verify: {line}")
    if not check.ok:
        raise typer.Exit(1)
    out.print(f"{len(homes)} chain(s) intact and in agreement: {check.events} distinct event(s)")
