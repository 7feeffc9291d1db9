"""The Auditor against a real Prefect API: catch-up, live stream, restarts, the embedded default.

Events are real Prefect events on the session's test server (published by the real bus
during real task runs, or injected with ``emit_event`` to script a broken sequence); the
audit log is a real file under the test's ARTOO_HOME.  Task ids carry a random suffix
because the session's server is shared by every test.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from artoo.flows.auditor import FLUSH_ENV, PublishedTap, artoo_filter, read_pages
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

# The session's server must persist events quickly for these tests to read them back soon;
# this takes effect when the module is collected before the server starts (see the report).
os.environ.setdefault(FLUSH_ENV, "0.5")

pytestmark = pytest.mark.usefixtures("prefect_api")


def emit(task_id: str, seq: int, kind: str = "plan_directive", at: datetime | None = None, name: str = "") -> None:
    from prefect.events import emit_event

    emit_event(event=name or f"artoo.{kind}", occurred=at,
               resource={"prefect.resource.id": f"artoo.task.{task_id}", "prefect.resource.name": task_id,
                         "artoo.from": "R7", "artoo.to": "R2", "artoo.seq": str(seq)},
               payload={"kind": kind})


def flush() -> None:
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=15)


def server_events(since: datetime, task_id: str | None = None, name: str | None = None) -> list[dict]:
    """Every artoo.* event the server holds since ``since`` (or, with ``name``, events of that name)."""
    from prefect.events.filters import EventNameFilter

    async def read() -> list[dict]:
        flt = artoo_filter(since, task_id)
        if name:
            flt.event = EventNameFilter(name=[name])
        return [e async for batch in read_pages(flt) for e in batch]

    return asyncio.run(read())


def wait_for_server(since: datetime, count: int, task_id: str | None = None, name: str | None = None) -> list[dict]:
    """Poll until the server has persisted at least ``count`` matching events (bounded)."""
    deadline = datetime.now(UTC) + timedelta(seconds=30)
    while True:
        events = server_events(since, task_id, name)
        if len(events) >= count or datetime.now(UTC) > deadline:
            return events
        asyncio.run(asyncio.sleep(0.3))


def run_auditor(**params) -> dict:
    from artoo.flows.auditor import auditor

    return asyncio.run(auditor(**params))


def audit_records(home: Path, task_id: str) -> list[dict]:
    path = home / "audit" / "audit.jsonl"
    return [r for r in map(json.loads, path.read_bytes().splitlines()) if r["task_id"] == task_id]


def report() -> dict:
    code, out, _ = run_cli("audit", "--json")
    assert code == 0
    return json.loads(out)


def test_injected_missing_and_out_of_order_sequences_are_bus_gaps(artoo_env: Path):
    start = datetime.now(UTC) - timedelta(seconds=1)
    missing, disordered = f"gap_{uuid.uuid4().hex[:8]}", f"order_{uuid.uuid4().hex[:8]}"
    for seq in (1, 2, 4):
        emit(missing, seq)
    for seq, later in ((1, 0), (3, 1), (2, 5)):  # sequence 2 published 4 s after sequence 3
        emit(disordered, seq, at=start + timedelta(seconds=later))
    flush()
    wait_for_server(start, 6)
    run_auditor(run_for_s=0, since=start)
    anomalies = report()["anomalies"]
    assert f"bus_gap: task {missing}: missing sequence number(s): 3" in anomalies
    assert any(a.startswith(f"bus_gap: task {disordered}: sequence 2") and "out of order" in a for a in anomalies)
    assert run_cli("audit", "verify")[0] == 0


def test_events_published_while_the_auditor_runs_arrive_through_the_live_stream(artoo_env: Path):
    from artoo.flows.auditor import auditor

    task_id = f"live_{uuid.uuid4().hex[:8]}"

    async def live() -> dict:
        running = asyncio.create_task(auditor(run_for_s=4.0, report_every_s=300, since=datetime.now(UTC)))
        await asyncio.sleep(2.0)  # connected and caught up by now; the next sweep is 30 s away
        for seq in (1, 2, 3):
            emit(task_id, seq)
        return await running

    asyncio.run(live())
    assert [r["task_seq"] for r in audit_records(artoo_env / "home", task_id)] == [1, 2, 3]


def snapshot(home: Path) -> dict[str, str]:
    """Every file under ARTOO_HOME outside the audit directory, with a digest of its bytes."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and "audit" not in p.relative_to(home).parts}


def test_the_auditor_publishes_nothing_and_never_touches_memory(artoo_env: Path, prefect_api: str):
    from artoo.config.contracts import Megram
    from artoo.config.settings import load_settings
    from artoo.memory.store import MemoryStore
    from artoo.tasks.bus.events import add_tap, remove_tap

    home = artoo_env / "home"
    settings = load_settings()
    with MemoryStore(settings.home_dir, settings.memory) as store:  # a real memory store on disk
        store.write(Megram(id=uuid.uuid4().hex, created_at=datetime.now(UTC), space="tool:shell",
                           entity="env:local", content="ran", state="accept", f=1.0, sigma=1.0, k=0.1))
        store.ingest()
    start = datetime.now(UTC) - timedelta(seconds=1)
    task_id = f"quiet_{uuid.uuid4().hex[:8]}"
    for seq in (1, 2):
        emit(task_id, seq)
    flush()
    before = wait_for_server(start, 2)
    files = snapshot(home)
    assert files, "the memory store should have written files to compare"
    seen: list[dict] = []
    add_tap(seen.append)
    observing = datetime.now(UTC)
    try:
        result = asyncio.run(observe_and_ask(start))
    finally:
        remove_tap(seen.append)
    sentinel = f"test.audit.sentinel.{uuid.uuid4().hex[:8]}"
    emit(task_id, 0, name=sentinel)
    flush()
    assert wait_for_server(start, 1, name=sentinel), "the sentinel event never reached the server"
    earlier = {e["id"] for e in before}  # an earlier test's late event may still arrive: it occurred before
    added = [e for e in server_events(start) if e["id"] not in earlier and e["occurred"] >= observing.isoformat()]
    assert added == []  # the auditor added no artoo.* event while it observed
    assert seen == []  # nothing went through the bus
    assert snapshot(home) == files  # the memory store's files are untouched
    assert result["reports"] >= 3 and len(audit_records(home, task_id)) == 2
    triggers = [r["report"]["trigger"] for r in map(json.loads, (home / "audit" / "reports.jsonl").open())]
    assert triggers.count("on-demand") == 2  # the CLI's own, and the running auditor's answer to it
    texts = artifact_texts(prefect_api, "audit-report")
    assert any("Audit report (on-demand)" in t for t in texts) and any("Audit report (periodic)" in t for t in texts)


async def observe_and_ask(start: datetime) -> dict:
    """Run the auditor (periodic reports every 0.5 s) and ask for an on-demand report while it runs."""
    from artoo.flows.auditor import auditor

    running = asyncio.create_task(auditor(run_for_s=3.0, report_every_s=0.5, since=start))
    await asyncio.sleep(1.5)
    assert run_cli("audit", "--json")[0] == 0
    return await running


def artifact_texts(api_url: str, key: str) -> list[str]:
    """Every version of the artifact ``key`` (raw HTTP: Prefect 3.8.8's read_artifacts sends nulls its server
    rejects)."""
    import httpx

    body = {"artifacts": {"key": {"any_": [key]}}, "sort": "CREATED_DESC", "limit": 200}
    found = httpx.post(f"{api_url}/artifacts/filter", json=body, timeout=10).raise_for_status().json()
    return [str(a["data"]) for a in found]


SLOW = 1.5  # seconds per executor turn, so the task outlives the first auditor pass


def slow_scenario(task_id: str) -> dict:
    count = "the line count of notes.txt is reported"
    return scenario(
        TaskSpec=[spec(task_id, "count the lines in notes.txt")],
        Plan=[plan([subtask("count notes lines", [count])], ["the count is reported"]),
              plan([subtask("find notes.txt and count its lines", [count])], ["the count is reported"])],
        tools=[call("shell", command="wc -l missing/notes.txt", latency_s=SLOW),
               done("no such file", status="failed", latency_s=SLOW),
               call("shell", command="wc -l < data/notes.txt", latency_s=SLOW), done("3", latency_s=SLOW)],
        AgentVerdict=[agent(verdict(count, False, "environmental", "No such file or directory")),
                      agent(verdict(count, True, evidence="wc printed 3"))],
        TaskVerdict=[task_verdict(verdict("the count is reported", True))],
    )


def test_an_auditor_stopped_mid_run_and_restarted_logs_every_message_exactly_once(scripted, artoo_env: Path):
    from artoo.flows.auditor import auditor
    from artoo.flows.task_flow import artoo_task
    from artoo.tasks.bus.events import add_tap, remove_tap

    task_id = f"restart_{uuid.uuid4().hex[:8]}"
    workspace = artoo_env / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text("a\nb\nc\n")
    scripted(slow_scenario(task_id))
    start = datetime.now(UTC) - timedelta(seconds=1)
    tap = PublishedTap()
    add_tap(tap)

    async def both() -> dict:
        task = asyncio.create_task(artoo_task(request="count the lines in notes.txt", workspace=str(workspace)))
        await auditor(run_for_s=3.0, report_every_s=300, since=start)  # stops while the task still runs
        assert not task.done(), "the task finished before the auditor stopped; slow the scenario down"
        return await task

    try:
        document = asyncio.run(both())
    finally:
        remove_tap(tap)
    home = artoo_env / "home"
    first_pass = audit_records(home, task_id)
    published = tap.published[task_id]
    assert document["final"]["directive"] == "accept"
    assert 0 < len(first_pass) < len(published)
    flush()
    wait_for_server(start, len(published), task_id)
    run_auditor(run_for_s=0)  # the restart: catch-up from the saved checkpoint
    records = audit_records(home, task_id)
    assert sorted(r["task_seq"] for r in records) == sorted(published)  # every message, exactly once
    assert len({r["event_id"] for r in records}) == len(records)
    (run_id,) = {r["run"] for r in records}  # one run label on every message: the top-level artoo-task run
    flow_name, parent, started = flow_run_facts(run_id)
    assert (flow_name, parent) == ("artoo-task", None) and started >= start
    assert run_cli("audit", "verify")[0] == 0


def flow_run_facts(run_id: str) -> tuple[str, object, datetime]:
    """(flow name, parent task run, start time) of a flow run, read back from the server."""
    from prefect.client.orchestration import get_client

    async def read() -> tuple[str, object, datetime]:
        async with get_client() as client:
            run = await client.read_flow_run(uuid.UUID(run_id))
            return (await client.read_flow(run.flow_id)).name, run.parent_task_run_id, run.start_time

    return asyncio.run(read())


def test_artoo_run_audits_its_own_messages_and_the_thrashing_is_reported(scripted, artoo_env: Path):
    """The plateau scenario of test_loops: break_symmetry x3 at D=1 → ggs_thrashing, audited before run returns."""
    from artoo.tasks.bus.events import add_tap, remove_tap

    task_id = f"thrash_{uuid.uuid4().hex[:8]}"
    crit = "the answer is 42"
    scripted(scenario(
        TaskSpec=[spec(task_id, "find the answer")],
        Plan=[plan([subtask(f"attempt {i}", [crit])], ["the answer is reported"]) for i in range(4)],
        tools=[done("I cannot", status="failed") for _ in range(4)],
        AgentVerdict=[agent(verdict(crit, False, "logical")) for _ in range(4)],
    ))
    tap = PublishedTap()
    add_tap(tap)
    try:
        code, out, _ = run_cli("run", "--json", "find the answer")
    finally:
        remove_tap(tap)
    assert (code, final_from(out)["directive"]) == (1, "abandon")
    records = audit_records(artoo_env / "home", task_id)
    assert sorted(r["task_seq"] for r in records) == sorted(tap.published[task_id])
    current = report()
    thrashing = f"ggs_thrashing: task {task_id}: 3 consecutive break_symmetry"
    assert any(a.startswith(thrashing) for a in current["anomalies"])
    assert [g["task_id"] for g in current["gap_trends"]] == [task_id]
    assert current["tool_health"]["execution_failures"] == 4
    assert run_cli("audit", "verify")[0] == 0
