"""artoo.servers.prefect_sources: a cold command starts its server before importing Prefect only when surely allowed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from artoo.servers.prefect_sources import profiles_path, startup_timeout_s, surely_unconfigured


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PREFECT_HOME": str(tmp_path / "prefect-home"), **extra}


@pytest.mark.parametrize("env, files, expected", [
    ({}, {}, True),
    ({"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"}, {}, True),  # a timeout configures no API
    ({"PREFECT_API_URL": "http://127.0.0.1:4200/api"}, {}, False),
    ({"PREFECT_SERVER_EPHEMERAL_ENABLED": "false"}, {}, False),
    ({"PREFECT_SERVER_ALLOW_EPHEMERAL_MODE": "0"}, {}, False),
    ({"PREFECT_PROFILE": "work"}, {}, False),
    ({}, {"cwd/.env": "PREFECT_LOGGING_LEVEL=INFO\n"}, False),  # any .env: unsure
    ({}, {"cwd/prefect.toml": "[logging]\nlevel = 'INFO'\n"}, False),
    ({}, {"cwd/pyproject.toml": "[tool.prefect.api]\nurl = 'http://x/api'\n"}, False),
    ({}, {"cwd/pyproject.toml": "[project]\nname = 'mine'\n"}, True),
    ({}, {"home/profiles.toml": "active = 'default'\n[profiles.default]\nPREFECT_LOGGING_LEVEL = 'INFO'\n"}, False),
    ({}, {"home/profiles.toml": "[profiles.default]\nPREFECT_API_URL = 'http://x/api'\n"}, False),
    ({}, {"home/profiles.toml": "[profiles.default]\nPREFECT_SERVER_EPHEMERAL_ENABLED = 'false'\n"}, False),
])
def test_surely_unconfigured(tmp_path: Path, env: dict, files: dict, expected: bool):
    cwd, home = tmp_path / "cwd", tmp_path / "prefect-home"
    cwd.mkdir()
    home.mkdir()
    for name, text in files.items():
        where, file = name.split("/")
        ((cwd if where == "cwd" else home) / file).write_text(text)
    assert surely_unconfigured(_env(tmp_path, **env), cwd) is expected


def test_the_profiles_path_follows_prefect(tmp_path: Path):
    assert profiles_path({"PREFECT_PROFILES_PATH": str(tmp_path / "p.toml")}) == tmp_path / "p.toml"
    assert profiles_path({"PREFECT_HOME": str(tmp_path)}) == tmp_path / "profiles.toml"
    assert profiles_path({}) == Path("~/.prefect/profiles.toml").expanduser()


@pytest.mark.parametrize("value, expected", [(None, 20.0), ("120", 120.0), ("soon", 20.0)])
def test_startup_timeout(value, expected):
    assert startup_timeout_s({} if value is None else {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": value}) \
        == expected


PREFECT_SAYS = """
from prefect.settings import get_current_settings
s = get_current_settings()
print(bool(s.api.url) or not s.server.ephemeral.enabled)
"""


@pytest.mark.parametrize("env, profiles", [
    ({}, None),
    ({"PREFECT_API_URL": "http://127.0.0.1:4200/api"}, None),
    ({}, "active = 'default'\n[profiles.default]\nPREFECT_LOGGING_LEVEL = 'INFO'\n"),
])
def test_the_shortcut_agrees_with_prefect_itself(tmp_path: Path, env: dict, profiles: str | None):
    """Where the shortcut says "surely unconfigured", Prefect (imported fresh, same sources) has no API and
    an ephemeral server; where Prefect is configured, the shortcut never says it is not.  The third case is
    why any profiles file counts: it replaces the built-in profile that allows the ephemeral server."""
    home = tmp_path / "prefect-home"
    home.mkdir()
    if profiles is not None:
        (home / "profiles.toml").write_text(profiles)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    environ.update(PREFECT_HOME=str(home), **env)
    said = subprocess.run([sys.executable, "-c", PREFECT_SAYS], env=environ, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    configured = said.stdout.strip().splitlines()[-1] == "True"
    shortcut = surely_unconfigured(environ, tmp_path)
    assert (shortcut, configured) == ((True, False) if not env and profiles is None else (False, True))
