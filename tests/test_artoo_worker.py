"""``artoo worker`` as README "Scaling out" documents it (#18), run as the real console script.

The three-worker test drives ``prefect worker start`` through the cluster harness; this one
checks the wrapper a team actually types: it creates the pool, registers the three
deployments to it, creates the cluster-wide Dreamer limit, migrates the shared memory, then
becomes a Prefect process worker that runs ``artoo-task`` — and ``--limit 1`` keeps two
submitted runs from overlapping on it.  Without PREFECT_API_URL it says what is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from artoo.bench.cluster import TERMINAL, Cluster, request_text, stories
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from tests.e2e.helpers import stop, wait_for

pytestmark = pytest.mark.slow

ARTOO = str(Path(sys.executable).with_name("artoo"))


def test_without_a_server_artoo_worker_exits_2_and_says_what_it_needs(tmp_path):
    env = Cluster(tmp_path, "", "postgresql://nowhere/db", "http://127.0.0.1:9/v1").env(0)
    env.pop("PREFECT_API_URL")
    done = subprocess.run([ARTOO, "worker"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "PREFECT_API_URL" in done.stderr and "Traceback" not in done.stderr


async def _pool_state(pool: str) -> tuple[list[str], dict[str, str], int | None]:
    """(online workers, deployment name → its pool, the artoo-dreamer limit) on the server."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from artoo.flows.dreamer import DREAMER_LIMIT

    async with get_client() as client:
        try:
            await client.read_work_pool(pool)
        except ObjectNotFound:  # artoo worker has not created its pool yet
            return [], {}, None
        workers = [w.name for w in await client.read_workers_for_work_pool(pool)]
        deployments = {}
        for name in ("artoo-task", "dreamer", "auditor"):
            with contextlib.suppress(ObjectNotFound):
                deployments[name] = (await client.read_deployment_by_name(f"{name}/{name}")).work_pool_name
        try:
            limit = (await client.read_global_concurrency_limit_by_name(DREAMER_LIMIT)).limit
        except ObjectNotFound:
            limit = None
        return workers, deployments, limit


def stop_worker(worker: subprocess.Popen, log: Path) -> None:
    """Stop a Prefect worker as Prefect documents it: the first SIGTERM lets its flow-run processes
    finish (they are sent SIGINT), a second one kills them; it must then exit."""
    import signal

    for _ in range(2):
        if worker.poll() is not None:
            return
        worker.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(timeout=30)
    if worker.poll() is None:
        stop(worker)  # kills its group, then fails naming it
    assert worker.returncode is not None, log.read_text()[-3000:]


async def _run_two_and_forget(pool: str) -> list:
    """Submit two requests to artoo-task/artoo-task, wait for both, delete the three deployments."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    runs = [await run_deployment("artoo-task/artoo-task", parameters={"request": request_text(i)}, timeout=0)
            for i in range(2)]
    async with get_client() as client:
        try:
            for _ in range(1200):
                final = [await client.read_flow_run(r.id) for r in runs]
                if all(r.state_type and r.state_type.value in TERMINAL for r in final):
                    return final
                await asyncio.sleep(0.5)
            raise AssertionError(f"runs did not finish: {[r.state_type for r in final]}")
        finally:
            for name in ("artoo-task", "dreamer", "auditor"):  # leave the session server as it was
                deployment = await client.read_deployment_by_name(f"{name}/{name}")
                if deployment.work_pool_name == pool:
                    await client.delete_deployment(deployment.id)


def test_artoo_worker_prepares_the_server_and_runs_one_task_at_a_time(prefect_api, memory_pg_url, tmp_path):
    pool, name = f"artoo-{uuid.uuid4().hex[:8]}", f"w-{uuid.uuid4().hex[:6]}"
    with ScriptedLLMServer(stories(2)) as llm:
        env = Cluster(tmp_path, prefect_api, memory_pg_url, llm.base_url).env(0)
        # no scheduled Dreamer run, and the Auditor's first tick years away: only our runs reach the worker
        env.update(ARTOO_MEMORY__DREAMER_PERIOD_S="0", ARTOO_AUDIT_PERIOD_S=str(10**8))
        log = tmp_path / "worker.log"
        worker = subprocess.Popen([ARTOO, "worker", "--pool", pool, "--name", name, "--limit", "1"], env=env,
                                  stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
                                  cwd=tmp_path)
        try:
            def online():
                assert worker.poll() is None, log.read_text()[-3000:]
                state = asyncio.run(_pool_state(pool))
                return state if name in state[0] else None

            _, deployments, limit = wait_for(online, 120, "artoo worker to come online")
            assert deployments == {"artoo-task": pool, "dreamer": pool, "auditor": pool}
            assert limit == 1
            banner = log.read_text()
            assert f"pool {pool!r}" in banner and "memory postgres" in banner, banner
            with psycopg.connect(memory_pg_url) as con:  # migrated before the first run
                assert con.execute("SELECT count(*) FROM megrams").fetchone() == (0,)
            first, second = sorted(asyncio.run(_run_two_and_forget(pool)), key=lambda r: r.start_time)
        finally:
            stop_worker(worker, log)
    assert [first.state_type.value, second.state_type.value] == ["COMPLETED", "COMPLETED"], log.read_text()[-3000:]
    assert second.start_time >= first.end_time  # --limit 1: never two runs at once on this worker
    with psycopg.connect(memory_pg_url) as con:  # and their experience went to the shared memory
        assert con.execute("SELECT count(*) FROM megrams").fetchone()[0] >= 2
