"""Parquet export and the all-or-nothing operator restore."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from artoo.config.contracts import Megram
from artoo.config.errors import ConfigurationError
from artoo.memory.schema import EXPORT_SCHEMA
from artoo.memory.store import MemoryStore
from artoo.memory.transfer import InvalidMegramFile

NOW = datetime(2025, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def sample_megrams() -> list[Megram]:
    out = []
    for i in range(6):
        out.append(
            Megram(
                id=f"m-{i}",
                level="MKMKMM"[i],
                created_at=NOW - timedelta(days=i),
                last_recalled_at=NOW if i == 2 else None,
                space=f"intent:s{i % 2}",
                entity="env:local",
                content=f"c{i}",
                state="success",
                f=0.1 * (i + 1),
                sigma=(-1.0) ** i,
                k=0.05,
            )
        )
    out.append(
        Megram(
            id="rule",
            level="C",
            created_at=NOW,
            space="intent:s0",
            entity="env:local",
            content="do it",
            state="best_practice",
            f=1.0,
            sigma=1.0,
            k=0.0,
            derived_from=["m-0", "m-2"],
        )
    )
    return out


@pytest.fixture
def exported(tmp_path):
    store = MemoryStore(tmp_path / "src")
    for i, m in enumerate(sample_megrams()):
        store.write(m)
        if i == 3:
            store.ingest()
    path = tmp_path / "export.parquet"
    assert store.export_parquet(path) == 7  # pending spool lines are ingested first
    store.close()
    return path


def test_export_has_the_documented_arrow_types(exported):
    table = pq.read_table(exported)
    assert [(f.name, f.type) for f in table.schema] == [(f.name, f.type) for f in EXPORT_SCHEMA]
    rows = {r["id"]: r for r in table.to_pylist()}
    assert rows["rule"]["derived_from"] == ["m-0", "m-2"]
    assert rows["m-2"]["last_recalled_at"] == NOW.replace(tzinfo=None)


def test_round_trip_and_reimport_is_a_no_op(tmp_path, exported):
    target = MemoryStore(tmp_path / "dst")
    assert target.import_parquet(exported) == 7
    assert target.import_parquet(exported) == 0
    again = tmp_path / "again.parquet"
    target.export_parquet(again)
    assert pq.read_table(again).equals(pq.read_table(exported))
    assert [s.id for s in target.query_c("intent:s0", "env:local", recall=False)] == ["rule"]
    target.close()


def _rewrite(path, name, values=None, array=None):
    table = pq.read_table(path)
    column = array if array is not None else pa.array(values, table.schema.field(name).type)
    pq.write_table(table.set_column(table.schema.get_field_index(name), name, column), path)


def _set(path, name, row, value):
    values = pq.read_table(path)[name].to_pylist()
    values[row] = value
    _rewrite(path, name, values)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: _set(p, "level", 2, "X"), r"row 2 \(id 'm-3'\): level is not one of"),  # oldest first
        (lambda p: _set(p, "f", 3, float("nan")), r"row 3 .*f is not a finite number"),
        (lambda p: _set(p, "sigma", 1, float("-inf")), r"row 1 .*sigma is not a finite number"),
        (lambda p: _set(p, "id", 1, None), r"row 1 .*missing id"),
        (lambda p: _set(p, "id", 4, "m-0"), r"row 4 \(id 'm-0'\): duplicate id — 2 bad row"),
        (lambda p: _set(p, "space", 5, ""), r"row 5 .*missing space"),
        (lambda p: _set(p, "created_at", 0, None), r"row 0 .*missing created_at"),
        (
            lambda p: _rewrite(p, "f", array=pa.array(["0.1", "0.2", "abc", "1", "1", "1", "1"])),
            r"row 2: column 'f' has type string",
        ),
        (
            lambda p: _rewrite(p, "created_at", array=pa.array(range(7), pa.int64())),
            r"column 'created_at' has type int64",
        ),
        (lambda p: pq.write_table(pq.read_table(p).drop_columns(["k"]), p), r"missing \['k'\]"),
        (
            lambda p: pq.write_table(pq.read_table(p).append_column("extra", pa.array(range(7))), p),
            r"unexpected \['extra'\]",
        ),
        (lambda p: p.write_bytes(b"not parquet at all"), "not a readable Parquet file"),
    ],
)
def test_a_bad_file_imports_nothing_and_names_the_row(tmp_path, exported, damage, message):
    damage(exported)
    target = MemoryStore(tmp_path / "dst")
    with pytest.raises(InvalidMegramFile, match=message) as caught:
        target.import_parquet(exported)
    assert isinstance(caught.value, ConfigurationError) and isinstance(caught.value, ValueError)
    assert "nothing was imported" in str(caught.value)
    assert target.stats()["total"] == 0
    target.close()


def test_compatible_types_are_accepted(tmp_path, exported):
    table = pq.read_table(exported)
    aware = pc.assume_timezone(table["created_at"], "UTC")
    table = table.set_column(table.schema.get_field_index("created_at"), "created_at", aware)
    table = table.set_column(
        table.schema.get_field_index("k"), "k", pa.array([0, 0, 0, 0, 0, 0, 0], pa.int64())
    )
    pq.write_table(table, exported)
    target = MemoryStore(tmp_path / "dst")
    assert target.import_parquet(exported) == 7
    out = tmp_path / "out.parquet"
    target.export_parquet(out)
    assert (
        pq.read_table(out)["created_at"].to_pylist()
        == pq.read_table(exported)["created_at"].cast(pa.timestamp("us")).to_pylist()
    )
    target.close()


SPEC_11 = ["id", "level", "created_at", "last_recalled_at", "space", "entity", "content", "state", "f", "sigma", "k"]


def _spec_shaped(path, exported, columns, rename=str):
    """The export cut down to ``columns`` (renamed by ``rename``), as another implementation would write it."""
    table = pq.read_table(exported).select(columns)
    pq.write_table(table.rename_columns([rename(c) for c in columns]), path)
    return path


@pytest.mark.parametrize(
    ("columns", "rename"),
    [
        (SPEC_11, str),  # exactly the spec's 11-tuple: no derived_from
        (SPEC_11, lambda c: {"id": "ID", "level": "Level"}.get(c, c)),  # the spec's spelling
        (["id", "created_at", "space", "entity", "f", "sigma", "k"], str),  # only what has no default
        ([*SPEC_11, "derived_from"], str),  # our export
    ],
)
def test_a_spec_shaped_file_imports_and_fills_the_optional_columns(tmp_path, exported, columns, rename):
    path = _spec_shaped(tmp_path / "spec.parquet", exported, columns, rename)
    target = MemoryStore(tmp_path / "dst")
    assert target.import_parquet(path) == 7
    out = tmp_path / "out.parquet"
    target.export_parquet(out)
    target.close()
    got = {r["id"]: r for r in pq.read_table(out).to_pylist()}
    want = {r["id"]: r for r in pq.read_table(exported).to_pylist()}
    for megram_id, row in want.items():
        kept = {c: row[c] for c in columns}
        filled = {"level": "M", "last_recalled_at": None, "content": "", "state": "", "derived_from": []}
        expected = {c: kept.get(c, filled.get(c)) for c in row}
        assert got[megram_id] == expected


@pytest.mark.parametrize("columns", [SPEC_11, [*SPEC_11, "derived_from"]])
def test_an_export_reimports_identically(tmp_path, exported, columns):
    """Import → export → import into a fresh store → export: the two exports are the same table."""
    path = _spec_shaped(tmp_path / "in.parquet", exported, columns)
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    for home, source, out in (("a", path, first), ("b", first, second)):
        store = MemoryStore(tmp_path / home)
        assert store.import_parquet(source) == 7
        store.export_parquet(out)
        store.close()
    assert pq.read_table(first).column_names == [*SPEC_11, "derived_from"]
    assert pq.read_table(second).equals(pq.read_table(first))


@pytest.mark.parametrize(
    ("columns", "rename", "message"),
    [
        ([c for c in SPEC_11 if c != "sigma"], str, r"missing \['sigma'\]"),
        (["id", "level", "space", "entity", "f", "sigma", "k"], str, r"missing \['created_at'\]"),
        (SPEC_11 + ["derived_from"], lambda c: "ID" if c == "derived_from" else c, r"given twice \['id'\]"),
    ],
)
def test_a_file_without_a_required_column_imports_nothing(tmp_path, exported, columns, rename, message):
    path = _spec_shaped(tmp_path / "bad.parquet", exported, columns, rename)
    target = MemoryStore(tmp_path / "dst")
    with pytest.raises(InvalidMegramFile, match=message):
        target.import_parquet(path)
    assert target.stats()["total"] == 0
    target.close()
