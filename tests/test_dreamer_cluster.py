"""The Dreamer on a cluster: one pass at a time through the Prefect global concurrency limit, and the
dreamer flow working on the shared PostgreSQL memory the settings name (real server, real database)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from artoo.config.contracts import Megram
from artoo.flows.dreamer import DREAMER_LIMIT, dreamer, one_pass_at_a_time
from artoo.memory.pg_store import PostgresMemoryStore

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_two_passes_started_together_never_overlap():
    spans: list[tuple[float, float]] = []

    async def one_pass() -> None:
        async with one_pass_at_a_time():
            began = time.monotonic()
            await asyncio.sleep(1.0)
            spans.append((began, time.monotonic()))

    async def both() -> None:
        await asyncio.gather(one_pass(), one_pass())

    asyncio.run(both())
    first, second = sorted(spans)
    assert first[1] <= second[0], spans

    async def limit():
        from prefect.client.orchestration import get_client

        async with get_client() as client:
            return await client.read_global_concurrency_limit_by_name(DREAMER_LIMIT)

    found = asyncio.run(limit())
    assert (found.limit, found.active_slots) == (1, 0)


def test_the_dreamer_flow_forgets_in_the_shared_memory(artoo_env, memory_pg_url, monkeypatch):
    monkeypatch.setenv("ARTOO_MEMORY__BACKEND", "postgres")
    monkeypatch.setenv("ARTOO_MEMORY__POSTGRES_URL", memory_pg_url)
    old = datetime.now(UTC) - timedelta(days=400)
    with PostgresMemoryStore(memory_pg_url) as store:
        for i in range(4):
            store.write(Megram(id=f"old-{i}", level="M", created_at=old, space="tool:shell", entity="env:local",
                               f=0.5, sigma=1.0, k=0.05))
        store.write(Megram(id="fresh", level="M", created_at=datetime.now(UTC), space="tool:shell",
                           entity="env:local", f=0.9, sigma=1.0, k=0.05))
    report = asyncio.run(dreamer())
    assert (report["deleted"], report["consolidation_skipped"]) == (4, True)
    with PostgresMemoryStore(memory_pg_url) as store:
        assert store.stats()["total"] == 1
