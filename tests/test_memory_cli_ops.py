"""The plain functions behind ``artoo memory …`` return JSON-ready data from a real store."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from artoo.config.contracts import Megram
from artoo.memory import cli_ops
from artoo.memory.store import MemoryStore

NOW = datetime.now(UTC)


@pytest.fixture
def home(tmp_path):
    store = MemoryStore(tmp_path)
    store.write(
        Megram(
            id="a",
            created_at=NOW,
            space="intent:x",
            entity="env:local",
            content="ok",
            state="success",
            f=0.8,
            sigma=1.0,
            k=0.05,
        )
    )
    store.write(
        Megram(
            id="rule",
            level="C",
            created_at=NOW,
            space="intent:x",
            entity="env:local",
            content="always lint",
            state="best_practice",
            f=1.0,
            sigma=1.0,
            k=0.0,
        )
    )
    store.close()
    return tmp_path


def test_potentials_and_sops(home):
    now = cli_ops.potentials(home, "intent:x", "env:local")
    later = cli_ops.potentials(home, "intent:x", "env:local", NOW + timedelta(days=14))
    assert now["action"] == "Exploit" and now["attention"] == pytest.approx(0.8, rel=1e-3)
    assert later["attention"] < now["attention"] and later["at"] is not None
    assert cli_ops.sops(home, "intent:x", "env:local") == [
        {"id": "rule", "space": "intent:x", "entity": "env:local", "content": "always lint", "sigma": 1.0}
    ]
    json.dumps([now, later])


def test_stats_ingest_dream_export_import(home, tmp_path):
    assert cli_ops.stats(home)["pending"]["megrams"] == 2
    assert cli_ops.ingest(home) == {"ingested": 2}
    report = cli_ops.dream(home)
    assert report["deleted"] == 0 and report["consolidation_skipped"] is True
    json.dumps(report)
    file = tmp_path / "backup.parquet"
    assert cli_ops.export(home, file) == {"file": str(file), "rows": 2}
    other = tmp_path / "other"
    assert cli_ops.import_(other, file) == {"file": str(file), "imported": 2}
    assert cli_ops.stats(other)["levels"] == {"M": 1, "K": 0, "C": 1, "T": 0}
