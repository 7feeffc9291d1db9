"""``artoo config``: the effective settings, and what each LLM endpoint was found to accept.

The second part is read from ``$ARTOO_HOME/llm/negotiated.json`` (artoo.tasks.llm.negotiated): a user
whose model answers oddly sees at once which structured-output and tool mode artoo settled on, and
the refusal that made it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

err = Console(stderr=True, highlight=False)


def config(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Print the effective settings, secrets masked, and the formats negotiated with each LLM endpoint."""
    from artoo.config.settings import load_settings
    from artoo.tasks.llm.negotiated import NegotiationStore, negotiated_path

    try:
        settings = load_settings()
        data = settings.masked()
        store = NegotiationStore(negotiated_path(settings.home_dir))
    except ArtooError as exc:
        err.print(f"[bold red]artoo:[/] {exc}")
        raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1) from None
    negotiated = store.entries()
    if as_json:
        print(json.dumps({**data, "llm_negotiated": negotiated}, indent=2, default=str))
        return
    from rich.pretty import Pretty

    Console().print(Pretty(data, expand_all=True))
    Console().print(negotiated_section(store.path, negotiated), highlight=False, soft_wrap=True)


def negotiated_section(path: Path, entries: dict) -> str:
    """What each endpoint and model accepted, and why (the refusal that moved it, or "accepted")."""
    lines = [f"LLM formats negotiated ({path}; delete it to probe again):"]
    for base_url, models in sorted(entries.items()):
        for model, entry in sorted(models.items()):
            lines.append(f"  {base_url}  model {model!r}")
            for kind, default in (("structured", "json_schema"), ("tools", "native")):
                because = entry.get(f"{kind}_because", "not used yet")
                lines.append(f"    {kind:<10} {entry.get(kind, default)}  ({because})")
            if "turn" in entry:  # moved only by a refusal of the content-protocol turn's schema
                lines.append(f"    {'turn':<10} {entry['turn']}  ({entry.get('turn_because', '')})")
    if len(lines) == 1:
        lines.append("  none yet: the first request to an endpoint tries json_schema and native tools")
    return "\n".join(lines)
