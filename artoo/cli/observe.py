"""``artoo log`` and ``artoo replay``: why a run went the way it did, read from its decision log.

Both read files under ARTOO_HOME/decisions only: no Prefect server and no LLM endpoint is
needed, so they work after a crash, offline, and on a machine where the run's server is gone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

err = Console(stderr=True, highlight=False)


def _fail(exc: ArtooError) -> None:
    err.print(f"[bold red]artoo:[/] {exc}")
    raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1)


def run_records(key: str | None) -> tuple[Path, list[dict]]:
    """The decision-log file and records of a task or run (the latest when ``key`` is None)."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    return load_run(load_settings().home_dir, key)


def log(
    key: Annotated[str | None, typer.Argument(metavar="[TASK|RUN]", help="A task id, or a run id (prefix); "
                                              "the latest run when omitted.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the records as one JSON object.")] = False,
    role: Annotated[str | None, typer.Option("--role", help="Only this role's LLM calls and verdicts "
                                             "(R1, R2, R3, R4a, R4b).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Show the complete prompts and answers.")] = False,
) -> None:
    """Show one run's timeline: R1, each round's plan, subtasks, tool calls, verdicts, GGS, result."""
    from artoo.timeline import filter_role, render

    try:
        path, records = run_records(key)
    except ArtooError as exc:
        _fail(exc)
    records = filter_role(records, role)
    if as_json:
        print(json.dumps({"file": str(path), "records": records}, default=str))
        return
    for line in render(records, full=full):
        print(line)


def replay(
    key: Annotated[str, typer.Argument(metavar="TASK", help="A task id, or a run id (prefix).")],
    sets: Annotated[list[str] | None, typer.Option("--set", help="A GGS parameter to change, e.g. "
                                                   "ggs.alpha=0.4 (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the replay as JSON.")] = False,
) -> None:
    """Recompute the GGS trajectory from the recorded verdicts under other hyperparameters (offline)."""
    from artoo.tasks.ggs.replay import ggs_steps, parse_overrides
    from artoo.tasks.ggs.replay import replay as run_replay
    from artoo.timeline import render_replay

    try:
        _, records = run_records(key)
        result = run_replay(ggs_steps(records), parse_overrides(sets or [])).as_dict()
    except ArtooError as exc:
        _fail(exc)
    if as_json:
        print(json.dumps(result, default=str))
        return
    for line in render_replay(result):
        print(line)
