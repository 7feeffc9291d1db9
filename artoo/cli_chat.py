"""``artoo chat``: the REPL command (artoo.chat holds the session; this is only its entry point).

Requests need an LLM endpoint like ``artoo run``; the slash commands (/audit, /memory, /log,
/replay) need none.  So without one the REPL still starts: it says, once, what to set, and a request
typed anyway gets that message instead of a run.  A broken settings file still refuses to start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

err = Console(stderr=True, highlight=False)


def chat(
    workspace: Annotated[Path | None, typer.Option(help="Where new files go (default ~/artoo_workspace).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print Prefect's own log lines.")] = False,
) -> None:
    """The REPL: each line a request with session context; /audit, /memory, /log, /replay, /help, /exit."""
    from artoo.config.settings import load_settings

    try:
        settings = load_settings()
    except ArtooError as exc:
        err.print(f"[bold red]artoo:[/] {exc}")
        raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1) from None
    try:
        settings.require_tiers()
        no_endpoint = None
    except ConfigurationError as exc:
        no_endpoint = str(exc)
    from artoo.embedded_server import start_early

    start_early()  # Prefect's server boots while the person types the first line
    from artoo.chat import Chat

    raise typer.Exit(Chat(settings, workspace, verbose, no_endpoint=no_endpoint).loop())
