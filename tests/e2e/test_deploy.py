"""prefect.yaml and ``artoo serve`` declare the same deployments; ``prefect deploy --all`` and
``artoo server`` work for real.

The declaration checks are plain (no server): prefect.yaml is parsed and compared with
flows/deployments.py's specs and with the RunnerDeployments ``artoo serve`` builds.  The
``e2e`` tests deploy prefect.yaml to a real server with a process work pool and let a real
worker run the Dreamer, and start and stop ``artoo server`` itself.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest
import yaml

from artoo.config.errors import ConfigurationError
from artoo.flows.deployments import auditor_parameters, require_api_url, runner_deployments, specs
from tests.e2e.helpers import REPO, api, artifact, artoo, child_env, stop, wait_final, wait_for

PREFECT = str(Path(sys.executable).with_name("prefect"))


def yaml_deployments() -> dict[str, dict]:
    document = yaml.safe_load((REPO / "prefect.yaml").read_text())
    return {d["name"]: d for d in document["deployments"]}


def test_prefect_yaml_declares_exactly_what_artoo_serve_serves(artoo_env):
    from artoo.config.settings import load_settings

    declared = yaml_deployments()
    ours = {s.name: s for s in specs(load_settings())}
    assert set(declared) == set(ours) == {"artoo-task", "dreamer", "auditor"}
    for name, spec in ours.items():
        entry = declared[name]
        assert entry["entrypoint"] == spec.entrypoint and (REPO / spec.entrypoint.split(":")[0]).is_file()
        assert " ".join(entry["description"].split()) == spec.description
        assert [s["interval"] for s in entry.get("schedules") or []] == ([spec.interval_s] if spec.interval_s else [])
        limit = entry.get("concurrency_limit")
        assert (limit == {"limit": 1, "collision_strategy": "CANCEL_NEW"}) == spec.one_at_a_time
        assert (entry.get("parameters") or {}) == spec.parameters
        assert entry["work_pool"]["name"] == "artoo"


def test_the_served_deployments_carry_form_schedule_and_limit(artoo_env):
    from artoo.config.settings import load_settings

    settings = load_settings()
    served = {d.name: d for d in runner_deployments(settings)}
    for spec in specs(settings):
        deployment = served[spec.name]
        assert deployment.entrypoint == spec.module_entrypoint
        intervals = [s.schedule.interval.total_seconds() for s in deployment.schedules]
        assert intervals == ([spec.interval_s] if spec.interval_s else [])
        assert (deployment.concurrency_limit == 1) == spec.one_at_a_time
    form = served["artoo-task"]._parameter_openapi_schema.model_dump()
    assert form["required"] == ["request"] and list(form["properties"]) == ["request", "workspace"]
    assert served["dreamer"].schedules[0].schedule.interval.total_seconds() == settings.memory.dreamer_period_s


@pytest.mark.parametrize(("period", "run_for", "report_every"), [(300, 270.0, 265.0), (60, 30.0, 25.0),
                                                                (31, 1.0, 0.5), (10, 1.0, 0.5)])
def test_an_auditor_run_ends_before_the_next_tick_and_reports_before_it_ends(period, run_for, report_every):
    assert auditor_parameters(period) == {"run_for_s": run_for, "report_every_s": report_every}


@pytest.mark.parametrize("value", [None, "", "   "])
def test_no_api_url_points_at_artoo_server(value):
    with pytest.raises(ConfigurationError, match="artoo server"):
        require_api_url(value)


@pytest.mark.parametrize(("value", "ok"), [("http://127.0.0.1:4200/api", True), ("https://prefect.example/api", True),
                                           ("127.0.0.1:4200/api", False), ("ftp://host/api", False)])
def test_api_url_must_be_http(value, ok):
    if ok:
        assert require_api_url(value) == value
    else:
        with pytest.raises(ConfigurationError, match="http"):
            require_api_url(value)


def test_artoo_serve_without_a_server_exits_2_and_says_how_to_start_one(tmp_path: Path):
    env = child_env("", tmp_path / "home", PREFECT_HOME=str(tmp_path / "prefect"))
    env.pop("PREFECT_API_URL")
    result = subprocess.run([str(Path(sys.executable).with_name("artoo")), "serve"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "PREFECT_API_URL is not set" in result.stderr and "artoo server" in result.stderr
    assert "Traceback" not in result.stderr


def test_artoo_server_on_a_busy_port_exits_2_naming_the_port(tmp_path: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = child_env("", tmp_path / "home", PREFECT_HOME=str(tmp_path / "prefect"))
        result = subprocess.run([str(Path(sys.executable).with_name("artoo")), "server", "--port", str(port)],
                                env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"port {port}" in result.stderr and "--port" in result.stderr


@pytest.mark.e2e
def test_prefect_deploy_all_with_a_process_pool_and_a_worker_runs_the_dreamer(e2e_server, tmp_path: Path):
    env = child_env(e2e_server.api_url, tmp_path / "home", PREFECT_HOME=str(tmp_path / "prefect"))
    for argv in ([PREFECT, "work-pool", "create", "artoo", "--type", "process", "--overwrite"],
                 [PREFECT, "--no-prompt", "deploy", "--all"]):
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with api(e2e_server.api_url) as client:
        deployed = {name: client.read_deployment_by_name(f"{name}/{name}") for name in yaml_deployments()}
        for deployment in deployed.values():
            assert deployment.work_pool_name == "artoo"
            assert deployment.pull_steps == [
                {"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}]
        run = client.create_flow_run_from_deployment(deployed["dreamer"].id)
        worker = subprocess.run([PREFECT, "worker", "start", "--pool", "artoo", "--run-once"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
        final = wait_final(client, run.id, timeout_s=60)
        report = artifact(client, "dreamer-report")
    assert final.state.is_completed(), worker.stdout[-3000:]
    assert report.flow_run_id == run.id and "skipped (no LLM endpoint configured)" in report.data


@pytest.mark.e2e
def test_artoo_server_serves_api_and_ui_then_stops_prefect_and_postgres_on_sigterm(tmp_path: Path):
    from artoo.servers.local import Postgres
    from artoo.servers.process import free_port

    home = Path(tempfile.mkdtemp(prefix="artoo-server-home-"))
    home.chmod(0o755)  # as root, PostgreSQL runs as the postgres user, who must reach ARTOO_HOME
    port, log = free_port(), tmp_path / "server.log"
    process = artoo("server", "--port", str(port), env=child_env("", home), log=log)
    try:
        # the export line (stdout) comes first, the "running over" line (stderr) after the home is claimed
        wait_for(lambda: "artoo server: running over" in log.read_text() or process.poll() is not None, 120,
                 "artoo server to print the export line and what it runs over")
        output = log.read_text()
        assert f"export PREFECT_API_URL=http://127.0.0.1:{port}/api" in output, output
        assert re.search(rf"Prefect UI: http://127\.0\.0\.1:{port}\b", output)
        assert "running over PostgreSQL" in output  # not the SQLite fallback
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ui-settings", timeout=10) as response:
            assert f'"api_url":"http://127.0.0.1:{port}/api"' in response.read().decode()
        assert stop(process) == 0, log.read_text()
        assert not (home / "server" / "postgres" / "postmaster.pid").exists()
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, "the Prefect server still listens"
    finally:
        if process.poll() is None:
            stop(process)
        Postgres(home / "server" / "postgres").stop()  # only acts if a failure above left it running
        shutil.rmtree(home, ignore_errors=True)
