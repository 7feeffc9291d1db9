"""The ``artoo`` console script's decisions (artoo.warm), table-driven: which home, which commands, which code.

The client imports only the standard library, so it resolves ARTOO_HOME itself; these tables hold it
to what artoo.config.settings resolves, and to "unsure: run in process" wherever a file could decide.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from artoo import warm
from artoo.config.settings import load_settings


@pytest.mark.parametrize(("env", "user_toml", "config_toml", "expected"), [
    ({"ARTOO_HOME": "{tmp}/a"}, None, None, "{tmp}/a"),
    ({"ARTOO_HOME": "{tmp}/a"}, 'home = "{tmp}/b"\n', None, "{tmp}/a"),  # the environment beats the files
    ({}, None, None, "{home}/.artoo"),
    ({}, "[ggs]\nepsilon = 0.2\n", None, "{home}/.artoo"),  # a user file that does not name a home
    ({}, 'home = "{tmp}/b"\n', None, None),                  # it does: unsure
    ({"ARTOO_CONFIG": "{tmp}/c.toml"}, None, 'home = "{tmp}/c"\n', None),
    ({"ARTOO_CONFIG": "{tmp}/c.toml"}, None, "[ggs]\nepsilon = 0.2\n", "{home}/.artoo"),
    ({"artoo_home": "{tmp}/a"}, None, None, None),  # pydantic-settings reads it too, case-insensitively
    ({"ARTOO_HOME": ""}, None, None, None),
])
def test_the_client_resolves_the_home_as_the_settings_do_or_is_unsure(tmp_path, monkeypatch, env, user_toml,
                                                                     config_toml, expected):
    fake_home = tmp_path / "user"
    (fake_home / ".artoo").mkdir(parents=True)
    for key in [k for k in list(__import__("os").environ) if k.lower().startswith("artoo_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(fake_home))

    def fill(text: str) -> str:
        return text.replace("{tmp}", str(tmp_path)).replace("{home}", str(fake_home))

    if user_toml is not None:
        (fake_home / ".artoo" / "artoo.toml").write_text(fill(user_toml))
    if config_toml is not None:
        (tmp_path / "c.toml").write_text(fill(config_toml))
    for key, value in env.items():
        monkeypatch.setenv(key, fill(value))
    import os

    resolved = warm.resolve_home(os.environ)
    assert resolved == (Path(fill(expected)) if expected else None)
    if resolved is not None:
        assert resolved == load_settings().home_dir


@pytest.mark.parametrize(("argv", "env", "served"), [
    (["artoo", "run", "x"], {}, True),
    (["artoo", "run", "--json", "x"], {}, True),
    (["artoo", "run", "--help"], {}, False),
    (["artoo", "chat"], {}, False),
    (["artoo", "demo"], {}, False),
    (["artoo"], {}, False),
    (["artoo", "run", "x"], {"ARTOO_SERVER__WARM_RUNNER": "false"}, False),
    (["artoo", "run", "x"], {"ARTOO_SERVER__WARM_RUNNER": "0"}, False),
    (["artoo", "run", "x"], {"ARTOO_SERVER__WARM_RUNNER": "true"}, True),
])
def test_only_run_is_handed_to_the_warm_runner_unless_turned_off(tmp_path, argv, env, served):
    assert (warm.eligible(argv, {"ARTOO_HOME": str(tmp_path), **env}) is not None) == served


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (1, 1), (2, 2), (130, 130), (256, 0), ("boom", 1)])
def test_exit_codes_are_the_interpreters(code, status):
    assert warm.exit_code(SystemExit(code)) == status


@pytest.mark.parametrize(("code", "status", "stderr"), [
    ("raise SystemExit(3)", 3, ""),
    ("import sys; sys.exit('bye')", 1, "bye"),
    ("raise ValueError('bug')", 1, "ValueError: bug"),
    ("import atexit; atexit.register(lambda: print('handler ran', flush=True))", 0, ""),
])
def test_the_in_process_path_leaves_with_the_interpreters_code_after_every_atexit_handler(tmp_path, code, status,
                                                                                      stderr):
    """``in_process``'s tail, with a stand-in ``artoo.cli`` module: status, message and atexit output kept."""
    fake = tmp_path / "fake"
    (fake / "artoo").mkdir(parents=True)
    (fake / "artoo" / "cli.py").write_text(f"def main():\n    {code}\n")
    driver = (f"import sys, atexit; import artoo.warm as w; sys.path.insert(0, {str(fake)!r}); "
              "import artoo; artoo.__path__.insert(0, " + repr(str(fake / "artoo")) + "); "
              "atexit.register(w._exit_now); atexit.register(lambda: print('late handler', flush=True)); "
              "D = type('D', (), {'__del__': lambda self: print('finalised', flush=True)}); d = D(); "
              "w.in_process()")
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    assert stderr in done.stderr
    assert "late handler" in done.stdout  # registered after the exit handler: it still ran
    assert "finalised" not in done.stdout  # but the interpreter's finalisation did not
    if "handler ran" in code:
        assert "handler ran" in done.stdout


def test_the_address_is_abstract_short_and_per_home(tmp_path):
    a, b = warm.address(tmp_path / "a"), warm.address(tmp_path / "b")
    assert a.startswith("\0") and len(a.encode()) < 108 and a != b
    assert warm.address(tmp_path / "a" / ".." / "a") == a  # the real path names it


def test_the_console_script_module_imports_only_the_standard_library():
    probe = ("import sys; before = set(sys.modules); import artoo.warm as w; w.fingerprint(); "
             "w.resolve_home({}); print('\\n'.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    assert loaded - set(sys.stdlib_module_names) == {"artoo"}


@pytest.mark.parametrize(("enabled", "running", "asked", "busy", "now", "starts"), [
    (True, False, 100.0, False, 101.0, True),    # asked, nothing runs: start
    (True, False, None, False, 101.0, False),    # nobody asked (a home only driven in process)
    (True, False, 50.0, False, 101.0, False),    # asked before the last start: already served
    (True, True, 100.0, False, 101.0, False),    # one runs
    (False, False, 100.0, False, 101.0, False),  # server.warm_runner = false
    (True, False, 100.0, True, 110.0, False),    # a command runs: wait for a quiet moment…
    (True, False, 100.0, True, 130.0, True),     # …but not for ever (a long chat holds the users lock)
])
def test_the_server_starts_a_warm_runner_when_asked_and_quiet(enabled, running, asked, busy, now, starts):
    from artoo.lingering import start_runner

    assert start_runner(enabled, running, asked, 60.0, busy, now) is starts
