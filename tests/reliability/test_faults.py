"""Faults: an ``artoo run`` SIGKILLed in the middle of a round, and a Dreamer killed mid-pass.

Acknowledged means: a Megram whose ``write()`` returned (its line is in the spool), an audit
record that was appended.  After the kill nothing acknowledged is lost, the audit chain
verifies, and a restarted run in the same ARTOO_HOME starts cleanly.  A Dreamer pass is one
transaction: killed anywhere, the store is as before or as after it, and the next pass ends
exactly where an uninterrupted pass ends.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

from artoo.memory.store import MemoryStore
from artoo.tasks.audit.chain import verify
from artoo.tasks.audit.log import AuditPaths, iter_records
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from tests.reliability.helpers import ARTOO, ROOT, case_env, clear_outcome
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict
from tests.test_memory_stress import DREAMER, _spawn, _template

pytestmark = pytest.mark.usefixtures("prefect_api")

HELLO = "the output contains hello"
NOTES = "the notes are counted"


def hello(task_id: str) -> dict:
    return scenario(TaskSpec=[spec(task_id, "say hello")],
                    Plan=[plan([subtask("print hello", [HELLO])], ["hello was printed"])],
                    tools=[call("shell", command="echo hello"), done("hello")],
                    AgentVerdict=[agent(verdict(HELLO, True))],
                    TaskVerdict=[task_verdict(verdict("hello was printed", True))])


def stalls_in_round_two(task_id: str) -> dict:
    """Round 1 fails on a missing file (change_path writes a Megram); round 2's executor never answers."""
    return scenario(TaskSpec=[spec(task_id, "count the notes")],
                    Plan=[plan([subtask("count notes", [NOTES])], ["the count is reported"]),
                          plan([subtask("count the notes found elsewhere", [NOTES])], ["the count is reported"])],
                    tools=[call("read_file", path="missing/notes.txt"), done("no such file", status="failed"),
                           {**done("never sent"), "latency_s": 120}],
                    AgentVerdict=[agent(verdict(NOTES, False, "environmental", "No such file"))])


def start(root: Path, server: ScriptedLLMServer, request: str) -> subprocess.Popen:
    return subprocess.Popen([str(ARTOO), "run", "--json", request], cwd=ROOT, env=case_env(root, server.base_url, {}),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=180)
    final = clear_outcome(proc.returncode, out, err)
    assert isinstance(final, dict), final
    return final


def spooled_ids(home: Path) -> list[str]:
    """Ids of every Megram whose write() returned: the complete lines of every spool file."""
    ids = []
    for path in (home / "memory" / "spool").glob("*.jsonl"):
        data = path.read_bytes()
        for line in data[: data.rfind(b"\n") + 1].splitlines():
            record = json.loads(line)
            if record.get("op") == "m":
                ids.append(record["id"])
    return ids


def stored_counts(home: Path) -> dict[str, int]:
    store = MemoryStore(home)
    store.ingest()
    store.close()
    con = duckdb.connect(str(home / "memory" / "memory.duckdb"), read_only=True)
    try:
        return dict(con.execute("SELECT id, count(*) FROM megrams GROUP BY id").fetchall())
    finally:
        con.close()


def audit_records(home: Path) -> list[dict]:
    paths = AuditPaths(home)
    result = verify(paths.log, paths.head)
    assert result.ok, f"the audit log does not verify after the kill: {result.reason}"
    return [record for _, record, _ in iter_records(paths.log) if record]


@pytest.mark.slow
def test_sigkill_mid_round_loses_nothing_acknowledged_and_a_restart_is_clean(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    monkeypatch.setenv("ARTOO_HOME", str(home))  # the in-process Auditor below reads this home
    with ScriptedLLMServer(hello("before_the_kill")) as server:
        assert finish(start(tmp_path, server, "say hello"))["directive"] == "accept"
    before = audit_records(home)

    with ScriptedLLMServer(stalls_in_round_two("killed_mid_round")) as server:
        victim = start(tmp_path, server, "count the notes")
        deadline = time.monotonic() + 120
        while sum(r["schema"] == "tools" for r in server.requests) < 2 or len(
                [r for r in server.requests if r["schema"] == "Plan"]) < 2:
            assert victim.poll() is None and time.monotonic() < deadline, "the run ended before round 2"
            time.sleep(0.1)
        time.sleep(0.5)  # round 2's executor request is in flight; the process is mid-round
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=30) == -signal.SIGKILL

    assert audit_records(home)[: len(before)] == before  # what was acknowledged is untouched, and verifies
    acknowledged = spooled_ids(home)
    counts = stored_counts(home)
    assert acknowledged and all(counts.get(i) == 1 for i in acknowledged) and max(counts.values()) == 1
    store = MemoryStore(home)
    try:
        with store.exclusive() as con:
            contents = [c for (c,) in con.execute("SELECT content FROM megrams").fetchall()]
    finally:
        store.close()
    assert any("missing/notes.txt" in c and "killed_mid_round" in c for c in contents)  # round 1's lesson

    with ScriptedLLMServer(hello("after_the_kill")) as server:
        assert finish(start(tmp_path, server, "say hello again"))["directive"] == "accept"
    after = audit_records(home)
    assert after[: len(before)] == before and after[-1]["message"] == "final_result"
    assert {r["task_id"] for r in after} >= {"before_the_kill", "after_the_kill"}

    from artoo.flows.auditor import auditor  # the standing Auditor catches up on what the killed run published

    asyncio.run(auditor(run_for_s=0))
    caught = [r for r in audit_records(home) if r["task_id"] == "killed_mid_round"]
    assert caught and caught[0]["message"] == "task_spec"
    assert len({r["event_id"] for r in caught}) == len(caught)  # each message once


def _forgotten(home: Path) -> tuple[int, int]:
    store = MemoryStore(home)
    try:
        stats = store.stats()
    finally:
        store.close()
    return stats["total"], stats["journal"].get("forget", 0)


def _ids(home: Path) -> list[str]:
    con = duckdb.connect(str(home / "memory" / "memory.duckdb"), read_only=True)
    try:
        return [i for (i,) in con.execute("SELECT id FROM megrams ORDER BY id").fetchall()]
    finally:
        con.close()


@pytest.mark.slow
def test_a_dreamer_killed_mid_pass_then_rerun_ends_where_an_uninterrupted_pass_ends(tmp_path: Path):
    rows, at = 200_000, "2025-01-01T00:00:00+00:00"
    template = _template(tmp_path, rows)
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    shutil.copytree(template, whole)
    shutil.copytree(template, broken)

    started = time.monotonic()
    assert _spawn(DREAMER, whole, at).wait(timeout=120) == 0
    duration = time.monotonic() - started

    dreamer = _spawn(DREAMER, broken, at)
    time.sleep(random.uniform(0.3, 0.9) * duration)
    dreamer.send_signal(signal.SIGKILL)
    dreamer.wait(timeout=30)
    assert _forgotten(broken) in ((rows, 0), (rows // 2, rows // 2))  # before the pass, or after it

    assert _spawn(DREAMER, broken, at).wait(timeout=120) == 0
    assert _forgotten(broken) == _forgotten(whole) == (rows // 2, rows // 2)
    assert _ids(broken) == _ids(whole)
