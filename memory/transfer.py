"""Parquet export and the operator's restore, which validates the whole file first.

A restore accepts any file with the spec's columns: the Megram 11-tuple ⟨ID, Level,
created_at, last_recalled_at, space, entity, content, state, f, σ, k⟩, names matched
without regard to case.  Only the columns without a default in the Megram contract are
required (id, created_at, space, entity, f, sigma, k); a missing optional one is filled
with the contract's default (level M, no recall, empty content and state, no
``derived_from``), so a file written by another implementation of the spec imports.
Export always writes every column, so an export re-imports identically.

A restore is all-or-nothing: a file with one bad row (wrong level, non-finite f, missing
id, a column of the wrong type, a duplicated id) imports nothing and the error names the
first bad row and says how many there are, so the operator fixes the file and retries
without having half a backup in the store.  Rows whose id is already stored are skipped,
so importing the same export twice is harmless.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from artoo.config.errors import ConfigurationError
from artoo.memory.schema import EXPORT_SCHEMA, LEVELS, MEGRAM_COLUMNS, tag_array

OPTIONAL_DEFAULTS: dict[str, object] = {
    "level": "M",
    "last_recalled_at": None,
    "content": "",
    "state": "",
    "derived_from": [],
}
"""Columns an import file may omit, and the Megram contract's default each is filled with."""
REQUIRED_COLUMNS = tuple(c for c in MEGRAM_COLUMNS if c not in OPTIONAL_DEFAULTS)
"""Columns every import file must have (no default in the Megram contract)."""


class InvalidMegramFile(ConfigurationError, ValueError):
    """An import file the operator must fix; nothing was imported."""


def export_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Write every Megram (export columns, Arrow types) to ``path`` atomically; returns rows."""
    tmp = path.with_name(f".{path.name}.tmp")
    quoted = str(tmp).replace("'", "''")
    columns = ", ".join(MEGRAM_COLUMNS)
    con.execute(
        f"COPY (SELECT {columns} FROM megrams ORDER BY created_at, id) TO '{quoted}' (FORMAT parquet)"
    )
    os.replace(tmp, path)
    return con.execute("SELECT count(*) FROM megrams").fetchone()[0]


def _fail(message: str) -> InvalidMegramFile:
    return InvalidMegramFile(f"cannot import: {message}; nothing was imported")


def _first_uncastable(column: pa.ChunkedArray, target: pa.DataType) -> tuple[int, object]:
    values = column.to_pylist()
    for i, value in enumerate(values):
        try:
            pc.cast(pa.array([value]), target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return i, value
    return 0, values[0] if values else None


def _coerce(table: pa.Table, name: str, target: pa.DataType) -> pa.ChunkedArray:
    """One column in its export type, or an error naming the column and a row."""
    column = table[name]
    source = column.type
    allowed = {
        "string": pa.types.is_string(source) or pa.types.is_large_string(source) or pa.types.is_null(source),
        "timestamp": pa.types.is_timestamp(source) or pa.types.is_null(source),
        "double": pa.types.is_floating(source) or pa.types.is_integer(source) or pa.types.is_null(source),
        "list": (pa.types.is_list(source) or pa.types.is_large_list(source))
        and (
            pa.types.is_string(source.value_type)
            or pa.types.is_large_string(source.value_type)
            or pa.types.is_null(source.value_type)
        )
        or pa.types.is_null(source),
    }
    family = (
        "timestamp"
        if pa.types.is_timestamp(target)
        else (
            "list" if pa.types.is_list(target) else ("double" if pa.types.is_floating(target) else "string")
        )
    )
    if not allowed[family]:
        row, value = _first_uncastable(column, target)
        raise _fail(f"row {row}: column {name!r} has type {source}, expected {target} (value {value!r})")
    if pa.types.is_timestamp(source) and source.tz is not None:
        column = pc.cast(column, pa.timestamp(source.unit, tz="UTC"))
        column = pc.cast(column, pa.timestamp(source.unit))
    try:
        return pc.cast(column, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        row, value = _first_uncastable(column, target)
        raise _fail(f"row {row}: column {name!r} value {value!r} does not fit {target} ({exc})") from None


def _row_problems(t: pa.Table) -> list[tuple[pa.Array, str]]:
    """(bad-row mask, reason) per rule, in reporting order."""

    def missing(name: str) -> pa.Array:
        return pc.fill_null(pc.equal(pc.utf8_length(t[name]), 0), True)

    def not_finite(name: str) -> pa.Array:
        return pc.invert(pc.fill_null(pc.is_finite(t[name]), False))

    ids = t["id"]
    counts = pc.value_counts(ids.combine_chunks())
    dup_values = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
    duplicated = pc.fill_null(pc.is_in(ids, dup_values), False)
    rules = [
        (missing("id"), "missing id"),
        (duplicated, "duplicate id"),
        (
            pc.invert(pc.fill_null(pc.is_in(t["level"], pa.array(LEVELS)), False)),
            "level is not one of M, K, C, T",
        ),
        (pc.is_null(t["created_at"]), "missing created_at"),
        (missing("space"), "missing space"),
        (missing("entity"), "missing entity"),
        (pc.is_null(t["content"]), "missing content"),
        (pc.is_null(t["state"]), "missing state"),
    ]
    rules += [(not_finite(name), f"{name} is not a finite number") for name in ("f", "sigma", "k")]
    flat_nulls = pc.is_null(pc.list_flatten(t["derived_from"]))
    if pc.any(flat_nulls).as_py():
        rules.append(
            (
                pa.array([None in (v or []) for v in t["derived_from"].to_pylist()]),
                "derived_from holds a null id",
            )
        )
    return rules


def _spec_columns(raw: pa.Table, path: Path) -> pa.Table:
    """The file's columns under our names (case-insensitive), missing optional ones filled."""
    names = [n.lower() for n in raw.column_names]
    twice = sorted({n for n in names if names.count(n) > 1})
    missing = [n for n in REQUIRED_COLUMNS if n not in names]
    extra = [n for n, low in zip(raw.column_names, names, strict=True) if low not in MEGRAM_COLUMNS]
    if missing or extra or twice:
        raise _fail(f"{path} has columns {raw.column_names}; missing {missing}, unexpected {extra}"
                    + (f", given twice {twice}" if twice else ""))
    raw = raw.rename_columns(names)
    for name, default in OPTIONAL_DEFAULTS.items():
        if name not in names:
            raw = raw.append_column(name, pa.array([default] * raw.num_rows, EXPORT_SCHEMA.field(name).type))
    return raw


def read_and_validate(path: Path) -> pa.Table:
    """Read an export file and return it in export types, or raise InvalidMegramFile."""
    try:
        raw = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise _fail(f"{path} is not a readable Parquet file ({exc})") from None
    raw = _spec_columns(raw, path)
    table = pa.table({f.name: _coerce(raw, f.name, f.type) for f in EXPORT_SCHEMA}, schema=EXPORT_SCHEMA)
    first: tuple[int, str] | None = None
    bad_rows = pa.array([False] * table.num_rows)
    for mask, reason in _row_problems(table):
        mask = mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask
        bad_rows = pc.or_(bad_rows, mask)
        hits = pc.indices_nonzero(mask)
        if len(hits) and (first is None or hits[0].as_py() < first[0]):
            first = (hits[0].as_py(), reason)
    if first is not None:
        total = pc.sum(bad_rows).as_py()
        row_id = table["id"][first[0]].as_py()
        raise _fail(f"row {first[0]} (id {row_id!r}): {first[1]} — {total} bad row(s) in {path}")
    derived = pc.if_else(
        pc.is_null(table["derived_from"]), pa.scalar([], pa.list_(pa.string())), table["derived_from"]
    )
    return table.set_column(table.schema.get_field_index("derived_from"), "derived_from", derived)


def import_table(con: duckdb.DuckDBPyConnection, table: pa.Table) -> int:
    """Insert a validated table's new Megrams in one transaction; returns how many."""
    if table.num_rows == 0:
        return 0
    table = table.append_column("tag", tag_array(table["space"], table["entity"]))
    con.register("import_batch", table)
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            columns = ", ".join(f"b.{c}" for c in MEGRAM_COLUMNS)
            inserted = con.execute(
                f"INSERT INTO megrams SELECT {columns}, b.tag FROM import_batch b "
                "ANTI JOIN (SELECT id FROM megrams WHERE tag IN (SELECT DISTINCT tag FROM import_batch)) m "
                "ON m.id = b.id ORDER BY b.tag, b.created_at"
            ).fetchone()[0]
            con.execute("UPDATE meta SET value = value + ? WHERE key = 'unsorted_rows'", [inserted])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.unregister("import_batch")
    return inserted
