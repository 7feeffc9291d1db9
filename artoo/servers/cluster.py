"""Scaling out: one Prefect server, a process work pool, N workers, one memory.

Why this module: Prefect already distributes runs (work pools, workers, concurrency limits);
what artoo adds is the setup a worker needs before ``prefect worker start`` — the ``artoo``
process pool, the three deployments registered to it (the same ones ``artoo serve`` and
prefect.yaml declare), and the cluster-wide ``artoo-dreamer`` concurrency limit — plus the
check that a worker's memory settings can scale (the embedded DuckDB store is per machine,
so several workers need ``memory.backend = "postgres"``).  ``artoo worker`` calls
``prepare`` and then runs the Prefect worker in the foreground.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from artoo.config.errors import ConfigurationError
from artoo.config.settings import Settings

POOL = "artoo"
"""The work pool prefect.yaml and ``artoo worker`` use."""


async def ensure_pool(name: str = POOL) -> None:
    """Create the process work pool ``name`` unless it exists."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    async with get_client() as client:
        with contextlib.suppress(ObjectAlreadyExists):
            await client.create_work_pool(WorkPoolCreate(name=name, type="process"))


async def deploy_to_pool(settings: Settings, pool: str = POOL, names: tuple[str, ...] | None = None,
                         suffix: str = "") -> dict[str, str]:
    """Register artoo's deployments (all, or ``names``) to the pool, idempotently; name → deployment id.

    ``suffix`` is appended to each deployment's name (a harness's private pool must not replace the
    team's ``artoo-task/artoo-task``).
    """
    from artoo.flows.deployments import runner_deployments

    ids = {}
    # to_deployment answers a coroutine when called on an event loop: build them on a thread, sync
    for deployment in await asyncio.to_thread(runner_deployments, settings):
        if names is not None and deployment.name not in names:
            continue
        deployment.name += suffix
        ids[deployment.name] = str(await deployment.aapply(work_pool_name=pool))
    return ids


async def ensure_dreamer_limit() -> None:
    """The global concurrency limit every Dreamer pass holds (flows.dreamer creates it too)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectAlreadyExists

    from artoo.flows.dreamer import DREAMER_LIMIT

    async with get_client() as client:
        with contextlib.suppress(ObjectAlreadyExists):  # a concurrent creator won: it exists
            await client.upsert_global_concurrency_limit_by_name(DREAMER_LIMIT, 1)


def memory_problem(settings: Settings) -> str | None:
    """Why this worker's memory would not be shared with other workers, or None."""
    if settings.memory.backend != "postgres":
        return ("memory.backend is 'duckdb': this worker's memory stays on this machine. For a shared memory "
                "set ARTOO_MEMORY__BACKEND=postgres and ARTOO_MEMORY__POSTGRES_URL on every worker.")
    return None


async def prepare(settings: Settings, pool: str = POOL) -> dict[str, str]:
    """Pool, deployments and the Dreamer limit: everything a worker needs on the server."""
    if settings.memory.backend == "postgres":
        from artoo.memory.pg_store import PostgresMemoryStore

        PostgresMemoryStore(settings.memory.postgres_url, settings.memory).close()  # reachable, migrated
    await ensure_pool(pool)
    await ensure_dreamer_limit()
    return await deploy_to_pool(settings, pool)


def worker_argv(pool: str = POOL, name: str | None = None, limit: int | None = None) -> list[str]:
    """The ``prefect worker start`` command line of one worker (this interpreter's prefect)."""
    prefect = str(Path(sys.executable).with_name("prefect"))
    argv = [prefect, "worker", "start", "--pool", pool, "--type", "process"]
    if name:
        argv += ["--name", name]
    if limit:
        argv += ["--limit", str(limit)]
    return argv


def require_api(env: dict[str, str] | None = None) -> str:
    """PREFECT_API_URL: a worker without a server has nothing to run."""
    url = (env or os.environ).get("PREFECT_API_URL", "").strip()
    if not url:
        raise ConfigurationError("artoo worker needs PREFECT_API_URL: the URL of the team's Prefect server "
                                 "(e.g. http://server:4200/api; see README 'Scaling out')")
    return url
