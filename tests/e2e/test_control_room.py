"""The Prefect UI as artoo's control room, end to end: serve, run from the deployment, read it back.

One story, set up once for the module (``control_room``): a real ``prefect server start``
with its own PREFECT_HOME (tests/e2e/conftest.py), ``artoo serve`` as a subprocess against
it, the scripted LLM server as the endpoint, and a run of ``artoo-task`` created from the
deployment exactly as the UI's Run button does (``create_flow_run_from_deployment`` with
the form's parameters).  The scenario is tests/test_loops.py's replanned one: round 1 looks
for notes.txt in the wrong place (an environmental failure, so change_path), round 2 finds
it and the task is accepted.  The memory is seeded so the Dreamer has one Megram to forget,
one rule to demote and one pair to consolidate through the LLM.  Each test then checks one
thing a person relies on, through the API (or the browser); the last one stops ``artoo
serve`` with SIGTERM.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.helpers import (
    OUTPUT,
    api,
    artifact,
    artoo,
    browser_page,
    child_env,
    descendants,
    events,
    log_lines,
    stop,
    wait_final,
    wait_for,
)
from tests.scenario_kit import change_path_scenario

pytestmark = pytest.mark.e2e

REQUEST = "count the lines in notes.txt"
RULE = "Archive reports with tar into ~/archive; it worked every time."
ROUNDS = {"round-1 · init", "round-2 · change_path"}
SUBTASKS = {"subtask-1.1 · count notes lines", "subtask-2.1 · find notes.txt and count its lines"}


@dataclass
class Room:
    """What the module's story left behind for the tests to read."""

    api_url: str
    home: Path
    run: object
    serve: object
    serve_log: Path
    llm: object
    seeded: dict[str, str]


def the_scenario() -> dict:
    return change_path_scenario(
        Consolidation=[{"answer": {"kind": "best_practice", "content": RULE}, "match": "archive_reports"}])


def seed_memory(home: Path) -> dict[str, str]:
    """One Megram to forget, one C rule its pair's experience contradicts, one pair ripe for a rule."""
    from artoo.config.contracts import Megram
    from artoo.config.settings import MemoryParams
    from artoo.memory.store import MemoryStore

    now = datetime.now(UTC)

    def megram(space: str, level: str = "M", age=timedelta(hours=1), **fields) -> Megram:
        return Megram(id=str(uuid.uuid4()), level=level, created_at=now - age, space=space, entity="env:local",
                      **fields)

    stale = megram("tool:shell", age=timedelta(days=90), content="an old dead end", state="change_path",
                   f=0.3, sigma=0.0, k=0.2)
    rule = megram("intent:rotate_logs", level="C", content="rotate logs with logrotate -f", state="best_practice",
                  f=1.0, sigma=1.0, k=0.0)
    contradiction = megram("intent:rotate_logs", content="logrotate -f lost a log", state="abandon",
                           f=0.95, sigma=-1.0, k=0.05)
    golden = [megram("intent:archive_reports", content=f"archived reports, run {i}", state="accept",
                     f=0.9, sigma=1.0, k=0.05) for i in range(7)]
    store = MemoryStore(home, MemoryParams())
    try:
        for m in (stale, rule, contradiction, *golden):
            store.write(m)
    finally:
        store.close()
    return {"stale": stale.id, "rule": rule.id}


@pytest.fixture(scope="module")
def control_room(e2e_server, tmp_path_factory) -> Room:
    """Serve the deployments, run artoo-task from its deployment, wait for it; stop serving at the end."""
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    base = tmp_path_factory.mktemp("control-room")
    home, workspace = base / "home", base / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text("a\nb\nc\n")
    seeded = seed_memory(home)
    llm = ScriptedLLMServer(the_scenario()).start()
    env = child_env(e2e_server.api_url, home, OPENAI_BASE_URL=llm.base_url, OPENAI_MODEL="scripted",
                    OPENAI_API_KEY="test-key", ARTOO_WORKSPACE=str(base / "default-workspace"),
                    ARTOO_LLM_TIMEOUT_S="20", ARTOO_LLM_MAX_RETRIES="0", PREFECT_HOME=str(base / "prefect-client"))
    serve_log = base / "serve.log"
    serve = artoo("serve", env=env, log=serve_log, cwd=base)
    try:
        with api(e2e_server.api_url) as client:
            deployment = wait_for(lambda: _deployment(client, "artoo-task", serve, serve_log), 60,
                                  "artoo serve to register artoo-task")
            for name in ("dreamer", "auditor"):
                wait_for(lambda n=name: _deployment(client, n, serve, serve_log), 30, f"deployment {name}")
            created = client.create_flow_run_from_deployment(
                deployment.id, parameters={"request": REQUEST, "workspace": str(workspace)})
            run = wait_final(client, created.id, timeout_s=120)
        yield Room(e2e_server.api_url, home, run, serve, serve_log, llm, seeded)
    finally:
        stop(serve)
        llm.stop()


def _deployment(client, name: str, serve, serve_log: Path):
    from prefect.exceptions import ObjectNotFound

    assert serve.poll() is None, f"artoo serve exited early:\n{serve_log.read_text()[-3000:]}"
    try:
        return client.read_deployment_by_name(f"{name}/{name}")
    except ObjectNotFound:
        return None


@pytest.fixture(scope="module")
def background_runs(control_room: Room) -> dict:
    """The Dreamer's and the Auditor's deployment runs, triggered through the API (their schedules
    fire every 5 minutes, later than this test) once the task's events are on the server."""
    with api(control_room.api_url) as client:
        wait_for(lambda: any(e.event == "artoo.final_result" for e in events(client, prefix=["artoo."])), 30,
                 "the task's final_result event on the server")
        dreamer = client.read_deployment_by_name("dreamer/dreamer")
        auditor = client.read_deployment_by_name("auditor/auditor")
        runs = {"dreamer": client.create_flow_run_from_deployment(dreamer.id),
                "auditor": client.create_flow_run_from_deployment(
                    auditor.id, parameters={"run_for_s": 4.0, "report_every_s": 2.0})}
        return {name: wait_final(client, run.id, timeout_s=90) for name, run in runs.items()}


def test_the_run_from_the_deployment_completes_with_named_rounds_and_subtasks(control_room: Room):
    assert control_room.run.state.is_completed(), control_room.serve_log.read_text()[-3000:]
    assert control_room.run.name == f"artoo · {REQUEST}"
    with api(control_room.api_url) as client:
        names = {r.name for r in descendants(client, control_room.run.id)}
    assert names == ROUNDS | SUBTASKS


def test_each_round_logs_its_ggs_line(control_room: Room):
    with api(control_room.api_url) as client:
        ids = [control_room.run.id, *(r.id for r in descendants(client, control_room.run.id))]
        lines = [m for m in log_lines(client, ids) if m.startswith("ggs ")]
    assert len(lines) == 2, lines
    assert re.match(r"ggs task=count_notes round=1 D=1\.000 P=0\.000 .* directive=change_path ", lines[0])
    assert re.search(r"blocked_targets=\[/\S*/missing/notes\.txt \(read\)\]", lines[0])  # the path (#13), read (#26)
    assert re.match(r"ggs task=count_notes round=2 D=0\.000 .* directive=accept ", lines[1])


def test_the_loss_table_and_the_final_result_are_artifacts_of_the_run(control_room: Room):
    with api(control_room.api_url) as client:
        table, final = artifact(client, "ggs-count-notes"), artifact(client, "final-count-notes")
    assert table is not None and final is not None
    assert {table.flow_run_id, final.flow_run_id} == {control_room.run.id}
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert table.type == "table" and [(row["round"], row["state"]) for row in rows] == [
        (1, "change_path"), (2, "accept")]
    assert "accepted" in final.data and "count_notes" in final.data


def test_every_role_message_is_an_artoo_event_and_only_the_top_run_sends_heartbeats(control_room: Room):
    with api(control_room.api_url) as client:
        def task_events() -> list[str] | None:  # the server persists events in batches, after the run ends
            kinds = [e.event for e in events(client, prefix=["artoo."], resource_ids=["artoo.task.count_notes"])]
            return kinds if "artoo.final_result" in kinds else None

        kinds = wait_for(task_events, 30, "the run's final_result event to be stored")
        subflows = [f"prefect.flow-run.{r.id}" for r in descendants(client, control_room.run.id)]
        beats = {str(e.resource.id) for e in events(client, names=["prefect.flow-run.heartbeat"])}
    assert {"artoo.task_spec", "artoo.dispatch_manifest", "artoo.subtask", "artoo.subtask_outcome",
            "artoo.replan_request", "artoo.plan_directive", "artoo.outcome_summary", "artoo.megram",
            "artoo.final_result"} <= set(kinds), kinds
    assert kinds.count("artoo.dispatch_manifest") == 2 and kinds.count("artoo.final_result") == 1
    assert f"prefect.flow-run.{control_room.run.id}" in beats  # crash detection for the deployment run
    assert not beats & set(subflows)  # the decision in flows/task_flow.py: subflows send none


def test_the_dreamer_run_forgets_demotes_and_distils_and_reports_it(control_room: Room, background_runs: dict):
    from artoo.config.settings import MemoryParams
    from artoo.memory.store import MemoryStore

    assert background_runs["dreamer"].state.is_completed()
    with api(control_room.api_url) as client:
        report = artifact(client, "dreamer-report")
    assert report is not None and report.flow_run_id == background_runs["dreamer"].id
    assert re.search(r"^\| 1 \| 1 \| 1 \| \d+ \|", report.data, re.M), report.data  # deleted, demoted, promoted
    assert control_room.seeded["stale"] in report.data and control_room.seeded["rule"] in report.data
    asked = [r for r in control_room.llm.requests if r["schema"] == "Consolidation"]
    assert len(asked) == 1 and "archived reports, run 3" in str(asked[0]["body"]["messages"])
    store = MemoryStore(control_room.home, MemoryParams())
    try:
        rules = store.query_c("intent:archive_reports", "env:local", recall=False)
    finally:
        store.close()
    assert [(r.content, r.sigma) for r in rules] == [(RULE, 1.0)]


def test_the_auditor_run_logs_every_message_and_publishes_its_report(control_room: Room, background_runs: dict):
    from artoo.tasks.audit.chain import verify
    from artoo.tasks.audit.log import AuditPaths

    assert background_runs["auditor"].state.is_completed()
    with api(control_room.api_url) as client:
        report = artifact(client, "audit-report")
        published = events(client, prefix=["artoo."], resource_ids=["artoo.task.count_notes"])
    assert report is not None and report.flow_run_id == background_runs["auditor"].id
    assert "Audit report (periodic)" in report.data and "count_notes" in report.data
    paths = AuditPaths(control_room.home)
    assert verify(paths.log, paths.head).ok
    logged = [line for line in paths.log.read_text().splitlines() if '"count_notes"' in line]
    assert len(logged) == len(published) > 0


def test_the_run_page_shows_the_graph_and_the_round_names(control_room: Room):
    """Opens the run's page (Prefect's default UI, v2) in headless Chromium and saves screenshots.

    The run graph is drawn on a canvas, so its labels are not in the DOM: the names are
    asserted on the run's "Subflow Runs" tab, which lists them as text under the graph
    (the screenshot shows both), and on round-2's own page, which lists its subtask.
    """
    ui = control_room.api_url.removesuffix("/api")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with browser_page() as page:
        page.goto(f"{ui}/v2/runs/flow-run/{control_room.run.id}", wait_until="networkidle")
        page.locator("canvas").first.wait_for(state="visible", timeout=20_000)
        page.get_by_role("tab", name="Subflow Runs").click()
        for name in sorted(ROUNDS):
            page.get_by_text(name, exact=True).first.wait_for(state="visible", timeout=20_000)
        graph = OUTPUT / "run-graph.png"
        page.screenshot(path=str(graph))
        page.get_by_text("round-2 · change_path", exact=True).first.click()
        page.get_by_role("tab", name="Subflow Runs").click()
        page.get_by_text("subtask-2.1 · find notes.txt and count its lines", exact=True).first.wait_for(
            state="visible", timeout=20_000)
        round_page = OUTPUT / "round-2.png"
        page.screenshot(path=str(round_page))
    print(f"\nscreenshots: {graph} {round_page}")
    assert graph.stat().st_size > 10_000 and round_page.stat().st_size > 10_000


def test_artoo_serve_stops_on_sigterm_cancelling_what_runs_and_pausing_the_schedules(control_room: Room):
    """SIGTERM while an auditor run is in flight: the run ends Cancelled (not Running forever, which
    would also hold the deployment's only concurrency slot), serve exits 0, the schedules pause."""
    with api(control_room.api_url) as client:
        auditor = client.read_deployment_by_name("auditor/auditor")
        long_run = client.create_flow_run_from_deployment(auditor.id, parameters={"run_for_s": 120.0})
        wait_for(lambda: client.read_flow_run(long_run.id).state.is_running(), 60, "the long auditor run to start")
        code = stop(control_room.serve)
        assert code == 0, control_room.serve_log.read_text()[-3000:]
        assert client.read_flow_run(long_run.id).state.is_cancelled()
        dreamer = client.read_deployment_by_name("dreamer/dreamer")
    assert dreamer.paused  # `artoo serve` un-pauses it when it starts again
    assert "RuntimeWarning" not in control_room.serve_log.read_text()
