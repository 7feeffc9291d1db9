"""``artoo memory …`` and ``artoo dream``: the operator's view of the MKCT memory.

Thin formatting over artoo.memory.cli_ops; every error becomes a one-line message and an exit
code.  ``artoo dream`` distils consolidations with the configured brain model when one
is configured, and says plainly when it skipped them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

memory_app = typer.Typer(help="Inspect and maintain the MKCT memory.", no_args_is_help=True)
err = Console(stderr=True, highlight=False)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
AtOpt = Annotated[str | None, typer.Option("--at", help="Evaluate decay at this ISO8601 time.")]


def _home() -> Path:
    from artoo.config.settings import load_settings

    return load_settings().home_dir


def _at(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigurationError(f"--at must be an ISO8601 time, got {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _guard(fn):
    try:
        return fn()
    except (ArtooError, ValueError, OSError) as exc:
        err.print(f"[bold red]artoo:[/] {exc}")
        raise typer.Exit(2 if isinstance(exc, (ConfigurationError, ValueError)) else 1) from None


def _emit(data, as_json: bool, title: str) -> None:
    if as_json:
        print(json.dumps(data, indent=2, default=str))
        return
    from artoo.timeline import rows_table

    Console().print(rows_table(title, data))


@memory_app.command("potentials")
def potentials(space: str, entity: str, at: AtOpt = None, as_json: JsonOpt = False) -> None:
    """Live attention, decision and action of one tag pair."""
    from artoo.memory import cli_ops

    _emit(_guard(lambda: cli_ops.potentials(_home(), space, entity, _at(at))), as_json, "potentials")


@memory_app.command("sops")
def sops(space: str, entity: str, as_json: JsonOpt = False) -> None:
    """The C-level rules (SOPs and constraints) of one tag pair."""
    from artoo.memory import cli_ops

    _emit(_guard(lambda: cli_ops.sops(_home(), space, entity)), as_json, f"SOPs of {space} / {entity}")


@memory_app.command("stats")
def stats(as_json: JsonOpt = False) -> None:
    """Counts per level, pending spool records, file sizes."""
    from artoo.memory import cli_ops

    data = _guard(lambda: cli_ops.stats(_home()))
    if as_json:
        print(json.dumps(data, indent=2, default=str))
    else:
        Console().print_json(json.dumps(data, default=str))


@memory_app.command("export")
def export(file: Path) -> None:
    """Write every Megram to a Parquet file (pending spools are ingested first)."""
    from artoo.memory import cli_ops

    data = _guard(lambda: cli_ops.export(_home(), file))
    Console().print(f"exported {data['rows']} Megrams to {data['file']}")


@memory_app.command("import")
def import_(file: Path) -> None:
    """Restore Megrams from a Parquet export: validated whole, all or nothing."""
    from artoo.memory import cli_ops

    data = _guard(lambda: cli_ops.import_(_home(), file))
    Console().print(f"imported {data['imported']} new Megrams from {data['file']}")


def dream(at: AtOpt = None, as_json: JsonOpt = False) -> None:
    """Run one Dreamer pass now and print what it did."""
    from artoo.memory import cli_ops

    data = _guard(lambda: cli_ops.dream(_home(), _at(at)))
    if as_json:
        print(json.dumps(data, indent=2, default=str))
        return
    Console().print_json(json.dumps(data, default=str))
