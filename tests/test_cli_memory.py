"""``artoo memory …`` and ``artoo dream`` end to end: real store under ARTOO_HOME, real CLI."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq

from artoo.config.contracts import Megram
from artoo.memory.store import MemoryStore
from tests.conftest import run_cli

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def megram(space: str, sigma: float, f: float = 0.9, k: float = 0.05, days_ago: float = 0.0) -> Megram:
    return Megram(id=uuid.uuid4().hex, created_at=NOW - timedelta(days=days_ago), space=space, entity="env:local",
                  content="seen", state="accept" if sigma > 0 else "abandon", f=f, sigma=sigma, k=k)


def test_potentials_reflect_what_the_ggs_wrote(artoo_env):
    with MemoryStore(artoo_env / "home") as store:
        for _ in range(3):
            store.write(megram("intent:count_the_lines", -1.0))
    code, out, _ = run_cli("memory", "potentials", "intent:count_the_lines", "env:local", "--at", NOW.isoformat(),
                           "--json")
    data = json.loads(out)
    assert code == 0 and data["action"] == "Avoid"
    assert abs(data["attention"] - 2.7) < 1e-9 and abs(data["decision"] + 2.7) < 1e-9


def test_export_then_import_restores_and_a_bad_file_imports_nothing(artoo_env, tmp_path):
    with MemoryStore(artoo_env / "home") as store:
        store.write(megram("intent:a", 1.0))
        store.write(megram("intent:b", -1.0))
    exported = tmp_path / "backup.parquet"
    assert run_cli("memory", "export", str(exported))[0] == 0
    assert pq.read_table(exported).num_rows == 2

    table = pq.read_table(exported).to_pylist()
    table[1]["level"] = "X"  # not a level of the pyramid
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(exported)), bad)
    code, _, err = run_cli("memory", "import", str(bad))
    assert code == 2 and "level" in err.lower()
    stats = json.loads(run_cli("memory", "stats", "--json")[1])
    assert stats["total"] + stats["pending"]["megrams"] == 2


def test_memory_import_accepts_the_specs_eleven_columns(artoo_env, tmp_path):
    """A file with exactly ⟨ID, Level, created_at, last_recalled_at, space, entity, content, state, f, σ, k⟩."""
    rows = [{"ID": f"ext-{i}", "Level": "M", "created_at": NOW.replace(tzinfo=None), "last_recalled_at": None,
             "space": "intent:a", "entity": "env:local", "content": f"seen {i}", "state": "accept",
             "f": 0.9, "sigma": 1.0, "k": 0.05} for i in range(3)]
    spec_file = tmp_path / "spec.parquet"
    pq.write_table(pa.Table.from_pylist(rows), spec_file)
    code, _, err = run_cli("memory", "import", str(spec_file))
    assert code == 0, err
    exported = tmp_path / "back.parquet"
    assert run_cli("memory", "export", str(exported))[0] == 0
    back = pq.read_table(exported).to_pylist()
    assert sorted(r["id"] for r in back) == ["ext-0", "ext-1", "ext-2"]
    assert all(r["derived_from"] == [] and r["content"].startswith("seen") for r in back)


def test_dream_forgets_decayed_megrams_and_reports_it(artoo_env):
    with MemoryStore(artoo_env / "home") as store:
        store.write(megram("tool:shell", 0.5, f=0.1, k=0.5, days_ago=30))  # attention 0.1·e^-15 ≪ 0.1
        store.write(megram("intent:fresh", 1.0))
    code, out, _ = run_cli("dream", "--json", "--at", NOW.isoformat())
    report = json.loads(out)
    assert code == 0 and report["deleted"] == 1 and report["consolidation_skipped"] is True
    assert json.loads(run_cli("memory", "stats", "--json")[1])["total"] == 1


def test_a_malformed_time_is_a_clear_error(artoo_env):
    code, _, err = run_cli("memory", "potentials", "intent:x", "env:local", "--at", "yesterday")
    assert code == 2 and "ISO8601" in err
