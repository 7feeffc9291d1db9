"""artoo, a self-correcting task agent on Prefect 3, installed as one namespace.

Each folder of the design card is a package of it (pyproject's ``package-dir``): ``config`` (what
every layer shares), ``memory`` (MKCT), ``tasks`` (the roles and the mechanisms they use),
``flows`` (the Prefect flows) and ``bench``; the app's own are ``servers``, ``cli`` and ``eval``,
beside the modules that run a request from a terminal (``runner``, ``chat``, ``demo``, ``timeline``,
``quiet``, ``inflight``, ``preload``).  Every package names its public surface in ``__all__``;
``exports`` lets a package load that surface when a name is first asked for, so importing a package
costs nothing (start-up time is benchmarked, and ``python -m`` runs a package before its module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["bench", "chat", "cli", "config", "demo", "eval", "exports", "flows", "inflight", "memory", "preload",
           "quiet", "runner", "servers", "tasks", "timeline"]


def exports(package: str, surface: dict[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and a module ``__getattr__`` (PEP 562) for ``package``: each name in ``surface[module]``
    is imported from ``package.module`` when first asked for, never when the package is imported."""
    home = {name: module for module, names in surface.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        return getattr(import_module(f"{package}.{home[name]}"), name)

    return sorted(home), __getattr__
