"""The wheel a user installs: one top-level package, its data, and it works with the source tree out of reach.

Built with ``pip wheel --no-deps .`` and installed non-editable into a fresh virtualenv.  The
dependencies are not downloaded again: a ``.pth`` file in the new venv adds this environment's
site-packages as a plain path.  Paths added that way are not scanned for ``.pth`` files, so this
checkout's editable finder (``__editable__*.pth``) stays inactive there; each test checks that
``artoo`` really comes from the new venv.  Everything runs from a directory outside the source tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.test_architecture import IMPORT_EACH_ALONE, MODULES

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def _run(argv: list, timeout: int, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, "."], 600, cwd=ROOT)
    [built] = out.glob("artoo-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (before the dependency path exists, so pip sees no other artoo)."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", root], 120)
    python = root / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel], 300)
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 60).stdout.strip()
    (Path(purelib) / "artoo-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return root


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A working directory off the source tree and an environment with private homes, no Prefect API."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "PREFECT_API_URL", "VIRTUAL_ENV"} and not k.startswith(("ARTOO_", "OPENAI_"))}
    env.update(ARTOO_HOME=str(cwd / "artoo-home"), PREFECT_HOME=str(cwd / "prefect-home"),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    return cwd, env


def test_the_wheel_has_one_top_level_package_and_ships_its_data(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [record] = [n for n in names if n.endswith(".dist-info/RECORD")]
        [top_level] = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        recorded = {line.split(",")[0] for line in archive.read(record).decode().splitlines() if line}
        assert archive.read(top_level).decode().split() == ["artoo"]
    assert {path.split("/")[0] for path in recorded if ".dist-info/" not in path} == {"artoo"}
    assert {"artoo/config/artoo.toml", "artoo/bench/README.md"} <= recorded
    expected = {str(path.relative_to(ROOT)) for path in MODULES.values()}
    shipped = {_source_path(name) for name in recorded if name.endswith(".py")}
    assert expected <= shipped, f"modules missing from the wheel: {sorted(expected - shipped)}"


def _source_path(wheel_path: str) -> str:
    """artoo/config/x.py → config/x.py (pyproject's package-dir, reversed)."""
    parts = wheel_path.split("/")
    if len(parts) > 2 and parts[1] in {"config", "memory", "tasks", "flows", "bench"}:
        return "/".join(parts[1:])
    return wheel_path


def test_artoo_comes_from_the_wheel_and_every_module_imports_alone(venv: Path, elsewhere):
    cwd, env = elsewhere
    python = venv / "bin" / "python"
    probe = ("import artoo, artoo.config.audit_contracts, json, sys; "
             "print(json.dumps([artoo.__file__, sys.path]))")
    where, path = json.loads(_run([python, "-c", probe], 120, cwd=cwd, env=env).stdout)
    assert Path(where).is_relative_to(venv), f"artoo was imported from {where}, not the wheel"
    assert not any(Path(cwd, p).resolve() == ROOT for p in path), "the source tree is on sys.path"
    names = [n for n in MODULES if not n.endswith(".__main__")]
    done = _run([python, "-c", IMPORT_EACH_ALONE, json.dumps(names)], 600, cwd=cwd, env=env)
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert not failures, json.dumps(failures, indent=1)[:4000]


def test_artoo_demo_and_the_economy_benchmark_run_from_the_wheel(venv: Path, elsewhere):
    cwd, env = elsewhere
    artoo = venv / "bin" / "artoo"
    try:
        demo = subprocess.run([artoo, "demo"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert demo.returncode == 0, (f"artoo demo exited {demo.returncode}:\n"
                                      f"{demo.stdout[-3000:]}\n{demo.stderr[-2000:]}")
        bench = _run([artoo, "bench", "--quick", "--only", "economy"], 900, cwd=cwd, env=env)
        assert "LLM-call economy" in bench.stdout and "sequential role calls" in bench.stdout
    finally:
        subprocess.run([artoo, "stop"], cwd=cwd, env=env, capture_output=True, timeout=60)
        _end_servers_of(venv)


def _end_servers_of(venv: Path) -> None:
    """The bench's isolated homes keep their lingering servers: end those this venv's python started."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].decode(errors="replace").startswith(str(venv)) and b"artoo.servers.lingering" in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGTERM)
