"""read_file, write_file and glob stay inside their roots, whatever path a model writes.

Every path is resolved to its real location first (symlinks, ``..``, ``~``, absolute
paths), then checked; only regular files are read or written.  The files are real,
under tmp_path, and each test checks what happened on disk as well as what the tool said.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.tools import Confinement, ToolBox
from tests.test_tools import Gate, run


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A workspace, a home around it, and a secret outside both."""
    home = tmp_path / "home"
    ws = home / "artoo_workspace"
    ws.mkdir(parents=True)
    (home / "notes.txt").write_text("home notes")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET")
    monkeypatch.setenv("HOME", str(home))
    (ws / "link_to_secret").symlink_to(secret)
    (ws / "link_to_outside").symlink_to(secret.parent, target_is_directory=True)
    (ws / "inner").mkdir()
    (ws / "inner" / "data.txt").write_text("inner data")
    (ws / "link_to_inner").symlink_to(ws / "inner" / "data.txt")
    os.mkfifo(ws / "pipe")
    return {"home": home, "ws": ws, "secret": secret, "tmp": tmp_path}


def toolbox(world: dict[str, Path], gate: Gate | None = None, **kwargs) -> ToolBox:
    settings = load_settings(home=str(world["tmp"] / "artoo_home"), workspace=str(world["ws"]))
    return ToolBox(settings, world["ws"], gate or Gate(False), **kwargs)


READ_REFUSED = [
    ("dotdot", "../../outside/secret.txt", "outside the allowed roots"),
    ("absolute", "{secret}", "outside the allowed roots"),
    ("symlinked file", "link_to_secret", "resolves to"),
    ("symlinked dir", "link_to_outside/secret.txt", "resolves to"),
    ("system file", "/etc/hostname", "outside the allowed roots"),
    ("device", "/dev/zero", "outside the allowed roots"),
    ("fifo", "pipe", "is a FIFO"),
]


@pytest.mark.parametrize(("case", "path", "says"), READ_REFUSED, ids=[c[0] for c in READ_REFUSED])
def test_read_file_refuses_to_leave_its_roots(world, case: str, path: str, says: str):
    result = run(toolbox(world).call("read_file", {"path": path.format(secret=world["secret"])}))
    assert not result.ok and says in result.output
    assert "TOP SECRET" not in result.output


READ_ALLOWED = [("relative", "inner/data.txt", "inner data"),
                ("dotdot inside", "inner/../inner/data.txt", "inner data"),
                ("symlink inside", "link_to_inner", "inner data"),
                ("home by tilde", "~/notes.txt", "home notes")]


@pytest.mark.parametrize(("case", "path", "text"), READ_ALLOWED, ids=[c[0] for c in READ_ALLOWED])
def test_read_file_inside_its_roots_works(world, case: str, path: str, text: str):
    result = run(toolbox(world).call("read_file", {"path": path}))
    assert result.ok and result.output == text


def test_a_device_inside_the_roots_is_refused_as_a_device(world):
    box = toolbox(world, confinement=Confinement(read_roots=(world["ws"], Path("/dev"))))
    result = run(box.call("read_file", {"path": "/dev/zero"}))
    assert not result.ok and "is a device" in result.output


def test_a_socket_is_refused(world):
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(world["ws"] / "sock"))
        result = run(toolbox(world).call("read_file", {"path": "sock"}))
    assert not result.ok and "is a socket" in result.output


WRITE_REFUSED = [
    ("dotdot", "../../outside/new.txt", "outside the allowed roots"),
    ("through a symlinked dir", "link_to_outside/new.txt", "resolves to"),
    ("new file in home", "~/new.txt", "new files are created only in"),
    ("fifo", "pipe", "is a FIFO"),
]


@pytest.mark.parametrize(("case", "path", "says"), WRITE_REFUSED, ids=[c[0] for c in WRITE_REFUSED])
def test_write_file_refuses_to_leave_its_roots(world, case: str, path: str, says: str):
    gate = Gate(True)  # even a gate that approves everything is not asked: the path is refused first
    result = run(toolbox(world, gate).call("write_file", {"path": path, "content": "planted"}))
    assert not result.ok and says in result.output and gate.asked == []
    assert not (world["secret"].parent / "new.txt").exists() and not (world["home"] / "new.txt").exists()


def test_overwriting_through_a_symlink_asks_about_the_real_file(world):
    gate = Gate(False)
    result = run(toolbox(world, gate).call("write_file", {"path": "link_to_inner", "content": "new"}))
    assert not result.ok and gate.asked[0].targets == [str(world["ws"] / "inner" / "data.txt")]
    assert (world["ws"] / "inner" / "data.txt").read_text() == "inner data"


@pytest.mark.parametrize("approve", [False, True])
def test_an_existing_home_file_changes_only_with_approval(world, approve: bool):
    result = run(toolbox(world, Gate(approve)).call("write_file", {"path": "~/notes.txt", "content": "rewritten"}))
    assert result.ok is approve
    assert (world["home"] / "notes.txt").read_text() == ("rewritten" if approve else "home notes")


def test_glob_refuses_a_root_outside_and_leaves_out_escaping_matches(world):
    box = toolbox(world)
    outside = run(box.call("glob", {"pattern": f"{world['secret'].parent}/*.txt"}))
    escaping = run(box.call("glob", {"pattern": "link_to_outside/*"}))
    walked = run(box.call("glob", {"pattern": "*.txt"}))
    assert not outside.ok and "outside the allowed roots" in outside.output
    assert escaping.ok and "secret.txt" not in escaping.output and "left out" in escaping.output
    assert walked.ok and "data.txt" in walked.output and "secret" not in walked.output
