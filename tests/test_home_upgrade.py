"""A user's home outlives our versions: the last release's home opens, verifies and keeps working.

``tests/data/home-r2-duckdb2.0.0.tar.gz`` is an ARTOO_HOME written by the previous release
(main at 5d952e7, duckdb 2.0.0): two ``artoo demo`` runs with an ``artoo dream`` between them,
then ``artoo audit``.  It holds 2 ingested Megrams, 2 more still in the spool, a 40-record
hash-chained audit log with its statistics and reports, and the session history.  A schema
change, a DuckDB pin that changes the file format, or a new audit field that breaks the old
chain fails here, not on a user's machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from artoo.memory.store import MemoryStore
from artoo.tasks.roles.session import load_history
from tests.conftest import run_cli

ARCHIVE = Path(__file__).parent / "data" / "home-r2-duckdb2.0.0.tar.gz"


def unpacked(archive_path: Path, artoo_env: Path) -> Path:
    """An old release's home, unpacked where ARTOO_HOME points."""
    with tarfile.open(archive_path) as archive:
        archive.extractall(artoo_env, filter="data")
    return artoo_env / "home"


@pytest.fixture
def old_home(artoo_env: Path) -> Path:
    """The r2 release's home."""
    return unpacked(ARCHIVE, artoo_env)


def test_the_old_memory_opens_and_ingests_its_pending_spool(old_home: Path):
    with MemoryStore(old_home) as store:
        before = store.stats()
        assert (before["total"], before["pending"]["megrams"]) == (2, 2)
        store.ingest()
        after = store.stats()
        potentials = store.query_mk("intent:count_the_lines", "env:local")
    assert (after["total"], after["pending"]["megrams"]) == (4, 0)
    assert potentials.attention > 0  # the old accepts still steer the planner


def test_the_old_audit_chain_and_history_still_read(old_home: Path):
    code, out, _ = run_cli("audit", "verify")
    assert code == 0 and "intact" in out
    history = load_history(old_home)
    assert len(history) == 2 and history[-1]["summary"].startswith("Accepted after 1 replan")


def test_a_run_on_the_old_home_extends_memory_and_the_chain(old_home: Path, prefect_api: str):
    env = {**os.environ, "ARTOO_HOME": str(old_home), "PREFECT_API_URL": prefect_api}
    artoo = Path(sys.executable).parent / "artoo"
    done = subprocess.run([str(artoo), "demo", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["directive"] in {"accept", "success"}
    verify = subprocess.run([str(artoo), "audit", "verify"], env=env, capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    records = (old_home / "audit" / "audit.jsonl").read_text().splitlines()
    assert len(records) > 40  # the old chain continued, not restarted
    with MemoryStore(old_home) as store:
        store.ingest()
        assert store.stats()["total"] > 4


ARCHIVE_R3 = Path(__file__).parent / "data" / "home-r3-duckdb2.0.0.tar.gz"
"""The home of main at 2f69dea, the last release before the access-aware blame (#26): one ``artoo run`` of
the read-only ``data.csv`` story (tests/test_access_story.py), which that release abandoned.  Its audit log
and decision log hold PlanDirectives whose ``blocked_targets`` are bare strings, and its spool a
``tool:shell`` Megram on ``path:…/data.csv``: a blame of every access."""
OLD_WORKSPACE = "/tmp/r3gen/test_a_refused_write_leaves_th0/workspace"


@pytest.fixture
def r3_home(artoo_env: Path) -> Path:
    """The last release's home (before #26)."""
    return unpacked(ARCHIVE_R3, artoo_env)


def test_old_blames_keep_every_access_after_the_contract_change(r3_home: Path):
    from artoo.config.contracts import BlockedTarget, PlanDirective
    from artoo.memory.tags import entity_target

    with MemoryStore(r3_home) as store:
        store.ingest()
        pairs = store.pairs_with_space_prefix("tool:")
    assert [(space, entity_target(entity)) for space, entity, _ in pairs] == [
        ("tool:shell", (f"{OLD_WORKSPACE}/data.csv", "all"))]  # not rewritten, not lost: every access, as it meant
    records = [json.loads(line) for line in (r3_home / "audit" / "audit.jsonl").read_text().splitlines()]
    directives = [PlanDirective.model_validate(r["payload"]) for r in records if r["message"] == "plan_directive"]
    assert len(directives) == 3  # the old bus messages still parse as the contract
    assert {b for d in directives for b in d.blocked_targets} == {BlockedTarget(target=f"{OLD_WORKSPACE}/data.csv")}
    assert all(b.access == "all" for d in directives for b in d.blocked_targets)


def test_the_old_audit_chain_decision_log_and_directives_still_read(r3_home: Path):
    code, out, _ = run_cli("audit", "verify")
    assert code == 0 and "intact" in out
    code, out, _ = run_cli("log")
    assert code == 0 and "change_path" in out


def test_a_run_on_the_old_home_keeps_the_old_blame_beside_the_new_one(r3_home: Path, scripted, artoo_env: Path,
                                                                      prefect_api: str):
    from tests.test_access_story import run_story

    run_story(scripted, artoo_env)
    code, out, _ = run_cli("audit", "verify")
    assert code == 0 and "intact" in out
    with MemoryStore(r3_home) as store:
        store.ingest()
        entities = sorted(entity for _, entity, _ in store.pairs_with_space_prefix("tool:"))
    assert entities[0] == f"path:{OLD_WORKSPACE}/data.csv"  # the old blame, every access
    assert entities[1].startswith("write:") and entities[1].endswith("/workspace/data.csv")  # the new: writing only


ARCHIVE_R4 = Path(__file__).parent / "data" / "home-r4-duckdb2.0.0.tar.gz"
"""The home of main at 5e54e4e, the last release before verified methods: one ``artoo run`` that copied the CSV
files into backup with every criterion met by a check (tests/test_memory_learning_story.py's first run), written
before a success could say so: its intent Megram, still in the spool, has no ``verified:`` line."""


@pytest.fixture
def r4_home(artoo_env: Path) -> Path:
    """The last release's home (before verified methods)."""
    return unpacked(ARCHIVE_R4, artoo_env)


def test_a_success_written_before_the_mark_keeps_a_models_standing(r4_home: Path):
    from artoo.memory.calibration import calibrate_from_store
    from artoo.memory.sops import method_of
    from artoo.memory.tags import ENV_LOCAL, episode_verified

    with MemoryStore(r4_home) as store:
        store.ingest()
        [episode] = store.episodes("intent:", ["accept", "success"])
        potentials = store.query_mk(episode.space, ENV_LOCAL)
        block = calibrate_from_store(store, "copy the txt files into archive", set(), []).prompt_block()
    assert episode.space == "intent:copy_the_csv" and episode.state == "accept"
    assert episode_verified(episode.content) is None  # not rewritten: a success a model could have judged
    assert method_of(episode.content) == ("shell `mkdir -p; cp`",)  # what it tried still reads
    assert potentials.attention > 0 and potentials.decision > 0  # and it still counts for its intent
    assert "passed every check" not in block


def test_a_run_on_the_old_home_writes_its_verified_success_beside_the_old_one(r4_home: Path, scripted,
                                                                             artoo_env: Path, prefect_api: str):
    from artoo.memory.tags import episode_verified
    from tests.test_memory_learning_story import SECOND, SECOND_CMD, run_copy

    server = run_copy(scripted, artoo_env / "w2", SECOND, SECOND_CMD, {"notes.txt": "n\n"},
                      "cmp notes.txt archive/notes.txt")
    (asked,) = [json.dumps(r["body"]["messages"]) for r in server.requests if r["schema"] == "Plan"]
    assert "passed every check" not in asked  # the old success is not passed off as verified
    with MemoryStore(r4_home) as store:
        new, old = store.episodes("intent:", ["accept", "success"])
    assert episode_verified(new.content) == ("cmp notes.txt archive/notes.txt",)
    assert episode_verified(old.content) is None
    code, out, _ = run_cli("audit", "verify")
    assert code == 0 and "intact" in out
