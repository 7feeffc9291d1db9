"""The transactional shell as an ordinary user, on files whose group that user is not in.

People do not run artoo as root.  As an ordinary user the kernel overlay lives in a user
namespace that maps only the user's own uid and gid, and copying up a file whose owner or
group is not mapped fails with EOVERFLOW ("Value too large for defined data type"): the
model would see a failure that has nothing to do with its command.  These stories run our
real ToolBox in a child process under ``setpriv`` as ``nobody`` (uid/gid 65534, no
supplementary groups) on a workspace holding a file of group 0 with mode 0666: nobody may
write it, nobody's namespace cannot map its group.  nobody imports a copy of this checkout's
code made where nobody can read it (the checkout may sit under a 0700 directory, and an editable
install points at the tree it was made from).  Skipped, with the reason, where the test is not
root (it cannot become another user), the sandbox cannot work, or nobody cannot run this
Python with its packages (a venv under a directory only root may enter).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from artoo.tasks.tools import overlay, sandbox

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[1]
DRIVER = r"""
import asyncio, json, logging, sys, time
from pathlib import Path
from artoo.config.settings import load_settings
from artoo.tasks.tools import ToolBox
from tests.test_tools import Gate
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="LOG %(message)s")
base, ws, answer, tools, calls = sys.argv[1:]
settings = load_settings(home=f"{base}/artoo_home", workspace=ws, tools={"shell_timeout_s": 10.0, **json.loads(tools)})
gate = Gate(answer == "yes")
box = ToolBox(settings, Path(ws), gate)
steps = []
for name, arguments in json.loads(calls):
    if name == "wait":  # a pause for the test to act between two calls: it creates the flag file when done
        flag = Path(arguments["flag"])
        Path(f"{flag}.waiting").touch()
        while not flag.exists():
            time.sleep(0.02)
        continue
    result = asyncio.run(box.call(name, arguments))
    steps.append({"ok": result.ok, "output": result.output, "asked": [a.changes for a in gate.asked]})
print(json.dumps(steps))
"""
"""Runs tool calls through our ToolBox, as the user it was started as, and prints each result as JSON."""


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root to become another user (setpriv); as an ordinary user the other tests cover it"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    if sandbox.find_bwrap() is None or overlay.overlay_problem() is not None:
        return f"no sandbox or overlay here: {sandbox.bwrap_problem()} {overlay.overlay_problem()}"
    probe = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                            "unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"an ordinary user cannot make a user namespace here: {probe.stderr.decode().strip()}"
    return None


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))


def _fuse_closed() -> str | None:
    """Why nobody cannot mount fuse-overlayfs here (a machine whose /dev/fuse only root may open), or None."""
    try:
        mode = os.stat("/dev/fuse").st_mode
    except OSError as exc:
        return f"no /dev/fuse here: {exc}"
    return None if mode & 0o006 == 0o006 else f"/dev/fuse is mode {mode & 0o777:o}: only root may open it here"


needs_fuse = pytest.mark.skipif(_fuse_closed() is not None, reason=str(_fuse_closed()))
"""The stories where nobody's view must be mounted by fuse-overlayfs (a foreign-group file)."""
TEST_MODULES = ("__init__.py", "test_tools.py")
"""What the driver imports from tests/ (its Gate)."""


def copy_checkout(tree: Path) -> None:
    """This checkout's packages laid out as the installed namespace (pyproject's package-dir: config/ as
    artoo/config, …) plus the test modules the driver imports, readable by everyone."""
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in sorted(package_dir, key=len):  # artoo before artoo.config
        shutil.copytree(ROOT / package_dir[name], tree.joinpath(*name.split(".")), ignore=skip)
    (tree / "tests").mkdir()
    for module in TEST_MODULES:
        shutil.copy(ROOT / "tests" / module, tree / "tests" / module)
    for path in (tree, *tree.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)


def nobody_cannot_run_python() -> str | None:
    """Why nobody cannot run this Python with its installed packages (pydantic stands for them all), or None.
    Only this may skip: our own code failing to import as nobody fails the stories."""
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c",
            "import pydantic"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/"}
    try:
        probe = subprocess.run(argv, cwd="/", env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nobody cannot run {sys.executable}: {exc}"
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["(no message)"])[-1]
        return f"nobody cannot run {sys.executable} with its packages (under a directory only root may enter?): {last}"
    return None


@pytest.fixture(scope="module")
def code() -> Iterator[Path]:
    """A copy of this checkout's code that nobody can read (skips when nobody cannot run this Python)."""
    tree = Path(tempfile.mkdtemp(prefix="artoo-unpriv-code-", dir="/var/tmp"))
    try:
        why = nobody_cannot_run_python()
        if why is not None:
            pytest.skip(why)
        copy_checkout(tree)
        yield tree
    finally:
        shutil.rmtree(tree, ignore_errors=True)


@pytest.fixture
def place(code: Path) -> Path:
    """A directory nobody can reach (pytest's tmp_path is private to root): base/ws is the workspace,
    base/code the checkout's code."""
    base = Path(tempfile.mkdtemp(prefix="artoo-unpriv-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "code").symlink_to(code)
    ws = base / "ws"
    ws.mkdir()
    (ws / "shared.txt").write_text("team notes\n")
    os.chown(ws / "shared.txt", NOBODY, 0)  # group root: nobody is not in it and cannot map it
    (ws / "shared.txt").chmod(0o666)
    (ws / "mine.txt").write_text("mine\n")
    for path in (base, ws, ws / "mine.txt"):
        os.chown(path, NOBODY, NOBODY)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def as_nobody(base: Path, answer: bool, *commands: str | tuple[str, dict], tools: dict | None = None,
              meanwhile: Callable[[], None] | None = None) -> tuple[list[dict], str]:
    """Run tool calls (a string: a shell command) through our ToolBox as nobody; the results and the log."""
    calls = [("shell", {"command": c}) if isinstance(c, str) else c for c in commands]
    (base / "tmp").mkdir(exist_ok=True)
    os.chown(base / "tmp", NOBODY, NOBODY)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "PYTHONPATH": str(base / "code"),
           "PREFECT_HOME": str(base / "prefect"), "TMPDIR": str(base / "tmp")}
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", DRIVER,
            str(base), str(base / "ws"), "yes" if answer else "no", json.dumps(tools or {}), json.dumps(calls)]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=base, env=env)
    try:
        if meanwhile is not None:  # the child waits at its "wait" step until this has run
            deadline = time.monotonic() + 60
            while not (base / "flag.waiting").exists() and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            meanwhile()
            (base / "flag").touch()
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 0, err[-3000:]
    return json.loads(out), err


def owner(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid, info.st_mode & 0o7777


@needs_fuse
def test_append_to_a_foreign_group_file_asks_and_approval_lands_it(place: Path) -> None:
    ws = place / "ws"
    steps, log = as_nobody(place, True, "echo more >> shared.txt")
    assert "Value too large" not in steps[0]["output"]
    assert steps[0]["ok"], steps[0]["output"]
    assert steps[0]["asked"] == [[f"modified {ws}/shared.txt (11 B → 16 B)"]]
    assert (ws / "shared.txt").read_text() == "team notes\nmore\n"
    assert owner(ws / "shared.txt") == (NOBODY, 0, 0o666)  # the real file keeps its owner, group and mode
    assert sorted(p.name for p in ws.iterdir()) == ["mine.txt", "shared.txt"]
    assert (ws / "mine.txt").read_text() == "mine\n"
    assert "fuse-overlayfs mounts the view" in log


@needs_fuse
def test_denied_append_to_a_foreign_group_file_leaves_it_untouched(place: Path) -> None:
    ws = place / "ws"
    steps, _log = as_nobody(place, False, "echo more >> shared.txt && echo new > other.txt")
    assert not steps[0]["ok"] and steps[0]["output"].startswith("[LAW1] denied"), steps[0]["output"]
    assert steps[0]["asked"][0] == [f"created {ws}/other.txt (4 B)", f"modified {ws}/shared.txt (11 B → 16 B)"]
    assert (ws / "shared.txt").read_text() == "team notes\n" and owner(ws / "shared.txt") == (NOBODY, 0, 0o666)
    assert sorted(p.name for p in ws.iterdir()) == ["mine.txt", "shared.txt"]


@needs_fuse
def test_the_task_appends_to_its_own_file_in_a_set_group_id_workspace_unasked(place: Path) -> None:
    """Files created in a set-group-ID directory take its group (here root's): still the task's own."""
    ws = place / "ws"
    os.chown(ws, NOBODY, 0)
    ws.chmod(0o2777)
    steps, log = as_nobody(place, False, ("write_file", {"path": "report.md", "content": "draft\n"}),
                           "echo more >> report.md && echo x > extra.txt")
    assert [s["ok"] for s in steps] == [True, True], steps
    assert steps[1]["asked"] == []  # the task's own file and a new one: no question
    assert (ws / "report.md").read_text() == "draft\nmore\n" and owner(ws / "report.md")[:2] == (NOBODY, 0)
    assert owner(ws / "extra.txt")[:2] == (NOBODY, 0)  # committed as if created there: the directory's group
    assert sorted(p.name for p in ws.iterdir()) == ["extra.txt", "mine.txt", "report.md", "shared.txt"]
    assert "fuse-overlayfs mounts the view" in log


def test_without_fuse_overlayfs_the_text_judge_decides_and_the_log_says_why(place: Path) -> None:
    ws = place / "ws"
    steps, log = as_nobody(place, False, "echo new > shared.txt", tools={"overlay": "kernel"})
    said = [line for line in log.splitlines() if "Law 1" in line]
    assert len(said) == 1 and said[0].startswith("LOG Law 1 falls back to the text judge for shell commands: ")
    assert f"{ws}/shared.txt belongs to uid {NOBODY}, group 0" in said[0]
    assert "fuse-overlayfs cannot stand in" in said[0]
    assert steps[0]["output"].startswith("[LAW1] denied"), steps[0]["output"]  # the text judge saw the overwrite
    assert (ws / "shared.txt").read_text() == "team notes\n"


@needs_fuse
def test_a_change_the_user_may_not_make_is_not_committed_at_all(place: Path) -> None:
    """The fuse view shows every file as the user's own; the commit checks the real permissions first."""
    ws = place / "ws"
    (ws / "locked.txt").write_text("root's\n")  # root:root 0644: nobody may not write it
    steps, _log = as_nobody(place, True, "echo more >> locked.txt && echo x > new.txt")
    assert not steps[0]["ok"] and steps[0]["output"].startswith("not committed"), steps[0]["output"]
    assert f"{ws}/locked.txt: cannot write it" in steps[0]["output"]
    assert (ws / "locked.txt").read_text() == "root's\n" and not (ws / "new.txt").exists()


@needs_fuse
def test_a_foreign_file_after_the_scan_reruns_the_command_on_fuse(place: Path) -> None:
    """The owners' scan runs once per subtask; a file of another group arriving later is caught by its error."""
    ws = place / "ws"
    (ws / "shared.txt").unlink()  # at the scan every file is nobody's own: the kernel overlay

    def another_user_shares_a_file() -> None:
        (ws / "shared.txt").write_text("team notes\n")
        os.chown(ws / "shared.txt", NOBODY, 0)
        (ws / "shared.txt").chmod(0o666)

    steps, log = as_nobody(place, True, "echo one > first.txt", ("wait", {"flag": str(place / "flag")}),
                           "echo second > second.txt; echo more >> shared.txt", meanwhile=another_user_shares_a_file)
    assert [s["ok"] for s in steps] == [True, True], steps
    assert "Law 1 judges shell commands by effect: each runs on a copy-on-write view of the workspace\n" in log
    assert steps[1]["output"].startswith("[ran again on fuse-overlayfs"), steps[1]["output"]
    assert steps[1]["asked"] == [[f"created {ws}/second.txt (7 B)", f"modified {ws}/shared.txt (11 B → 16 B)"]]
    assert (ws / "shared.txt").read_text() == "team notes\nmore\n" and (ws / "second.txt").read_text() == "second\n"


def test_a_workspace_not_made_yet_is_made_and_written(place: Path) -> None:
    shutil.rmtree(place / "ws")
    steps, log = as_nobody(place, False, "echo hi > a.txt")
    assert steps[0]["ok"] and steps[0]["asked"] == [], steps[0]["output"]
    assert (place / "ws" / "a.txt").read_text() == "hi\n" and "by effect" in log
    # the overlay probes and the view leave nothing in the user's temp dir (a mode-000 work/work did, per process)
    assert sorted(p.name for p in (place / "tmp").iterdir()) == []
