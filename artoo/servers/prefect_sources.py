"""Whether Prefect is surely left unconfigured, decided without importing Prefect.

Why: a cold ``artoo run`` waits for its embedded server, and importing ``prefect.settings`` only
to learn that no API is configured costs 0.5–0.8 s before the server process can even be spawned
(bench/README.md, ``overhead.process_cold``).  Nearly always nothing is configured, and that can
be read from the places Prefect reads its settings from: the environment, ``.env``,
``prefect.toml`` and ``pyproject.toml`` in the working directory, and the profiles file.

The answer is conservative: True only when none of those could set ``api.url`` or turn the
ephemeral server off.  Anything unsure (a ``.env`` file at all, a profile naming the API or the
ephemeral server, a profiles file of one's own) answers False, and the caller asks Prefect itself as before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DECIDING_ENV = ("PREFECT_API_URL", "PREFECT_SERVER_EPHEMERAL_ENABLED", "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE",
                "PREFECT_PROFILE")
"""Environment variables that can configure an API, the ephemeral server, or pick another profile."""
STARTUP_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
DEFAULT_STARTUP_TIMEOUT_S = 20.0
"""Prefect's own default for the ephemeral server's start-up timeout."""


def profiles_path(environ: Mapping[str, str]) -> Path:
    """Where Prefect reads its profiles: PREFECT_PROFILES_PATH, else PREFECT_HOME/profiles.toml."""
    if environ.get("PREFECT_PROFILES_PATH"):
        return Path(environ["PREFECT_PROFILES_PATH"]).expanduser()
    return Path(environ.get("PREFECT_HOME") or "~/.prefect").expanduser() / "profiles.toml"


def surely_unconfigured(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> bool:
    """True when no Prefect setting source could point at an API or disable the ephemeral server."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    if any(environ.get(name) for name in DECIDING_ENV):
        return False
    if any((cwd / name).exists() for name in (".env", "prefect.toml")):
        return False
    if "tool.prefect" in _text(cwd / "pyproject.toml"):
        return False
    # a profiles file of one's own replaces Prefect's built-in active profile, the one that allows the
    # ephemeral server, whatever else it says
    return not profiles_path(environ).exists()


def startup_timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """The ephemeral server's start-up timeout as the environment sets it (Prefect's default otherwise)."""
    environ = os.environ if environ is None else environ
    try:
        return float(environ.get(STARTUP_TIMEOUT_ENV) or DEFAULT_STARTUP_TIMEOUT_S)
    except ValueError:
        return DEFAULT_STARTUP_TIMEOUT_S


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # missing or unreadable: it sets nothing (Prefect would fail on an unreadable one itself)
        return ""
