"""The schedules really fire: Prefect's own scheduler creates the Dreamer's and the Auditor's runs.

Issue #19: with SQLAlchemy 2.1 Prefect 3.8.8's scheduler service failed on every loop, so no
scheduled run was ever created, and every other test triggers deployment runs by hand, so
none of them noticed.  Here a real ``prefect server start`` over PostgreSQL
(artoo.servers.local, as ``artoo server`` starts it) gets ``artoo serve`` with both periods at
20 s, and each test waits for a run *the scheduler* made (``auto_scheduled``, created by the
schedule, with the scheduler's idempotency key; prefect/server/models/deployments.py) to
complete within two periods.  The last test reads the server's own log: no background
service may have logged an error meanwhile.  Then the one-line failure notice is checked for
real: ``artoo server`` with a scheduler setting that makes the service fail on every loop.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from artoo.servers.local import postgres_bin
from artoo.servers.log import service_errors
from tests.e2e.helpers import api, artoo, child_env, stop, wait_for

PERIOD_S = 20
FAST_SCHEDULER = {  # a scheduler pass every 2 s instead of 60 (and 5) s: the runs exist soon after `artoo serve`
    "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "2",
    "PREFECT_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS": "2",
}
# min_scheduled_time is added to "now" in Python on every pass: ten million days overflow the calendar.
FAILING_SCHEDULER = {"PREFECT_SERVER_SERVICES_SCHEDULER_MIN_SCHEDULED_TIME": "P10000000D"}

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(postgres_bin() is None, reason="artoo server runs over PostgreSQL here")]


@pytest.fixture(scope="module")
def served() -> Iterator[dict]:
    """A server of its own (the Auditor reads every artoo.* event on it) and ``artoo serve`` with 20 s periods."""
    from artoo.servers.local import start_local

    root = Path(tempfile.mkdtemp(prefix="artoo-schedules-"))
    root.chmod(0o755)  # the postgres user must reach its data directory
    server, database = start_local(root, extra_env=FAST_SCHEDULER)
    env = child_env(server.api_url, root / "home", PREFECT_HOME=str(root / "client"),
                    ARTOO_MEMORY__DREAMER_PERIOD_S=str(PERIOD_S), ARTOO_AUDIT_PERIOD_S=str(PERIOD_S))
    process = artoo("serve", env=env, log=root / "serve.log")
    try:
        yield {"server": server, "serve": process, "serve_log": root / "serve.log"}
    finally:
        stop(process)
        server.stop()
        if database:
            database.stop()
        shutil.rmtree(root, ignore_errors=True)


def scheduled_runs(client, deployment_id) -> list:
    """The deployment's runs that Prefect's scheduler created (never one triggered by hand)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterDeploymentId

    runs = client.read_flow_runs(
        flow_run_filter=FlowRunFilter(deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id])), limit=200)
    return [r for r in runs if r.auto_scheduled and r.created_by is not None and r.created_by.type == "SCHEDULE"
            and (r.idempotency_key or "").startswith(f"scheduled {deployment_id} ")]


def deployment(client, name: str, served: dict):
    """The served deployment, once ``artoo serve`` has registered it."""
    from prefect.exceptions import ObjectNotFound

    def registered():
        assert served["serve"].poll() is None, served["serve_log"].read_text()[-3000:]
        try:
            return client.read_deployment_by_name(f"{name}/{name}")
        except ObjectNotFound:
            return None

    return wait_for(registered, 120, f"artoo serve to register {name}", every_s=0.5)


@pytest.mark.parametrize("name", ["dreamer", "auditor"])
def test_a_scheduled_run_completes_on_its_own_within_two_periods(served, name):
    with api(served["server"].api_url) as client:
        found = deployment(client, name, served)
        assert [s.schedule.interval.total_seconds() for s in found.schedules] == [PERIOD_S]
        deadline = found.created + timedelta(seconds=2 * PERIOD_S)  # both times are the server's

        def completed():
            return [r for r in scheduled_runs(client, found.id) if r.state and r.state.is_completed()]

        left = (deadline - datetime.now(UTC)).total_seconds()
        done = wait_for(completed, max(left, 0) + 2, f"a scheduled {name} run to complete", every_s=1.0)
    first = min(done, key=lambda r: r.end_time)
    assert first.end_time <= deadline, f"first scheduled {name} run ended {first.end_time - found.created} after"
    assert first.tags[0] == "auto-scheduled" and "artoo" in first.tags


def test_no_service_of_the_server_logged_an_error(served):
    server = served["server"]
    with api(server.api_url) as client:
        for name in ("dreamer", "auditor"):  # until the scheduler has inserted runs (its whole pass ran), or failed
            found = deployment(client, name, served)
            wait_for(lambda d=found: scheduled_runs(client, d.id) or logged(server), 2 * PERIOD_S,
                     f"scheduled {name} runs")
    assert logged(server) == [], f"see {server.log_path}"


def logged(server) -> list:
    """Every error the server's services logged so far."""
    return service_errors(server.log_path.read_text(errors="replace").splitlines())


def test_artoo_server_says_a_failing_service_in_one_line_pointing_at_the_full_log(tmp_path: Path):
    from artoo.servers.local import Postgres
    from artoo.servers.process import free_port

    home = Path(tempfile.mkdtemp(prefix="artoo-server-home-"))
    home.chmod(0o755)  # as root, PostgreSQL runs as the postgres user, who must reach ARTOO_HOME
    port, log = free_port(), tmp_path / "artoo-server.out"
    env = child_env("", home, **FAST_SCHEDULER, **FAILING_SCHEDULER)
    process = artoo("server", "--port", str(port), env=env, log=log)
    full_log = home / "server" / "prefect" / "server.log"
    try:
        wait_for(lambda: "service failed" in log.read_text() or process.poll() is not None, 120,
                 "artoo server to say the scheduler failed")
        wait_for(lambda: full_log.read_text().count("OverflowError: date value") >= 3, 60,
                 "the scheduler to fail again")  # on every pass: still said once
        assert stop(process) == 0
        said = [line for line in log.read_text().splitlines() if "service failed" in line]
        assert said == [f"artoo server: the Prefect server's schedule_deployments service failed: OverflowError: "
                        f"date value out of range (full log: {full_log})"], log.read_text()
        assert "Traceback" not in log.read_text()
        assert "OverflowError: date value out of range" in full_log.read_text()
    finally:
        if process.poll() is None:
            stop(process)
        Postgres(home / "server" / "postgres").stop()
        shutil.rmtree(home, ignore_errors=True)
