"""fuse-overlayfs as the transactional shell's view, and how the view is chosen.

The kernel overlay cannot copy up a file whose owner or group a user namespace does not
map (EOVERFLOW); fuse-overlayfs can, and marks deletions its own way where it cannot make
a device (``.wh.NAME`` files, ``.wh..wh..opq``).  Pure rows: how an upper directory with
those markers reads as a change set and commits; which view ``choose`` picks; what
``foreign`` finds.  Real rows (root or not): every kind of change through a fuse view,
with device whiteouts and with marker files (fuse-overlayfs' own switch forces those).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.tools import ToolBox, changeset, overlay, sandbox
from tests.test_tools import Gate, run
from tests.test_transactional_shell import snapshot

LOWER = {"keep.txt": "keep me", "data/a.csv": "1,2\n", "data/sub/r.txt": "r", "notes.md": "n"}


def build(root: Path, spec: dict[str, str | None]) -> None:
    """Files (text), directories (None for a name ending in /), opaque xattrs (name@opaque)."""
    for name, body in spec.items():
        path = root / name.split("@")[0].rstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/") or name.endswith("@opaque"):
            path.mkdir(exist_ok=True)
            if name.endswith("@opaque"):
                os.setxattr(path, "user.fuseoverlayfs.opaque", b"y")
        else:
            path.write_text(body or "")


EMPTIED = ["deleted {r}/data/a.csv (4 B)", "deleted {r}/data/sub/ (1 B in total)", "created {r}/data/c.txt (1 B)"]
ROWS = [  # (upper directory, fuse?, the change set it reads as, the real tree after commit)
    pytest.param({".wh.keep.txt": ""}, True, ["deleted {r}/keep.txt (7 B)"],
                 {"data/a.csv", "data/sub/r.txt", "notes.md"}, id="wh-file-deletes"),
    pytest.param({".wh.keep.txt": ""}, False, ["created {r}/.wh.keep.txt (0 B)"],
                 {".wh.keep.txt", "keep.txt", "data/a.csv", "data/sub/r.txt", "notes.md"},
                 id="kernel-view-has-no-markers"),
    pytest.param({"data/.wh..wh..opq": "", "data/c.txt": "c"}, True,
                 EMPTIED,
                 {"keep.txt", "data/c.txt", "notes.md"}, id="opq-file-empties-directory"),
    pytest.param({"data@opaque": None, "data/c.txt": "c"}, True,
                 EMPTIED,
                 {"keep.txt", "data/c.txt", "notes.md"}, id="opaque-xattr-empties-directory"),
    pytest.param({".wh.ghost": "", ".wh.": ""}, True, [],
                 {"keep.txt", "data/a.csv", "data/sub/r.txt", "notes.md"}, id="marker-of-nothing-is-no-change"),
    pytest.param({".wh.notes.md": "", "notes.md": "new"}, True, ["modified {r}/notes.md (1 B → 3 B)"],
                 {"keep.txt", "data/a.csv", "data/sub/r.txt", "notes.md"}, id="a-real-entry-beats-its-marker"),
    pytest.param({"data/sub/.wh.r.txt": "", "data/sub/.wh..wh..opq": "", "moved.txt": "r"}, True,
                 ["renamed {r}/data/sub/r.txt → {r}/moved.txt (1 B)"],
                 {"keep.txt", "data/a.csv", "data/sub", "moved.txt", "notes.md"}, id="rename-via-markers"),
]


@pytest.mark.parametrize(("upper_spec", "fuse", "lines", "after"), ROWS)
def test_a_fuse_upper_directory_reads_and_commits(tmp_path: Path, upper_spec: dict, fuse: bool, lines: list[str],
                                                  after: set[str]) -> None:
    real, upper = tmp_path / "real", tmp_path / "upper"
    build(real, LOWER)
    upper.mkdir()
    build(upper, upper_spec)
    found = changeset.compute(upper, real, fuse=fuse)
    assert [c.line() for c in found] == [line.format(r=real) for line in lines]
    changeset.commit(upper, real, fuse=fuse)
    tree = {str(p.relative_to(real)) for p in real.rglob("*") if p.is_file() or not any(p.iterdir())}
    assert tree == after


@pytest.mark.parametrize(("kernel", "fuse", "uid", "odd", "kind", "says"), [
    (None, None, 0, "never scanned", "kernel", None),
    (None, None, 1000, None, "kernel", None),
    (None, None, 1000, "f belongs to group 0", "fuse", "f belongs to group 0; fuse-overlayfs mounts the view"),
    (None, "not installed", 1000, "f belongs to group 0", None,
     "f belongs to group 0, and fuse-overlayfs cannot stand in: not installed"),
    (None, "not installed", 1000, f"ws holds more than 9 entries, {overlay.UNCHECKED}", "kernel",
     "fuse-overlayfs cannot stand in (not installed): a command changing a file of another owner"),
    ("no overlayfs", None, 0, None, "fuse", "fuse-overlayfs mounts the view; the kernel's overlayfs: no overlayfs"),
    ("no overlayfs", "no /dev/fuse", 0, None, None, "no overlayfs; fuse-overlayfs cannot stand in: no /dev/fuse"),
])
def test_choose_picks_the_view(kernel, fuse, uid, odd, kind, says) -> None:
    scanned = []

    def scan(roots, u, g):
        scanned.append(roots)
        return odd

    choice = overlay.choose([Path("/ws")], kernel, fuse, uid, 1000, scan)
    assert choice.kind == kind
    assert (choice.note is None) if says is None else says in choice.note
    assert scanned == ([] if uid == 0 or kernel else [[Path("/ws")]])  # root maps every id: no scan


@pytest.mark.parametrize(("setting", "sandbox_problem", "root", "line"), [
    ("off", None, "/ws", "Law 1 falls back to the text judge for shell commands: the overlay is turned off"),
    ("auto", "bwrap is not installed", "/ws",
     "Law 1 falls back to the text judge for shell commands: bubblewrap is not in use (bwrap is not installed)"),
    ("auto", None, "/w,s", "Law 1 falls back to the text judge for shell commands: the path /w,s contains ','"),
])
def test_decide_falls_back_to_the_text_judge_and_says_why(setting, sandbox_problem, root, line) -> None:
    choice = overlay.decide(setting, sandbox_problem, [Path(root)])
    assert choice.kind is None and choice.line().startswith(line)


def test_foreign_names_the_first_entry_of_another_group(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    uid, gid = os.geteuid(), os.getegid()
    assert overlay.foreign([tmp_path], uid, gid) is None
    said = overlay.foreign([tmp_path], uid, gid + 1)
    assert said is not None and f"group {gid}" in said and str(tmp_path / "d") in said
    assert overlay.foreign([tmp_path], uid, gid, limit=1).endswith(overlay.UNCHECKED)
    assert overlay.foreign([tmp_path / "not-made-yet"], uid, gid + 1) is None
    tmp_path.chmod(tmp_path.stat().st_mode | stat.S_ISGID)
    said = overlay.foreign([tmp_path], uid, gid + 1)
    assert said is not None and "set-group-ID" in said


needs_fuse = pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.kind_problem("fuse") is not None,
                                reason=f"no bubblewrap or fuse-overlayfs here: {sandbox.bwrap_problem()} "
                                       f"{overlay.kind_problem('fuse')}")


def fuse_box(tmp_path: Path, ws: Path, gate: Gate) -> ToolBox:
    settings = load_settings(home=str(tmp_path / "artoo_home"), workspace=str(ws),
                             tools={"overlay": "fuse", "shell_timeout_s": 10.0})
    return ToolBox(settings, ws, gate)


@needs_fuse
@pytest.mark.parametrize("markers", [False, True], ids=["device-whiteouts", "marker-files"])
def test_every_kind_of_change_through_a_fuse_view(tmp_path: Path, monkeypatch, caplog, markers: bool) -> None:
    if markers:  # fuse-overlayfs' own switch: deletions as .wh. files, as where it may not make a device
        monkeypatch.setenv("FUSE_OVERLAYFS_DISABLE_OVL_WHITEOUT", "1")
    ws = tmp_path / "ws"
    build(ws, LOWER)
    script = ("rm keep.txt; echo 3,4 >> data/a.csv; chmod 755 notes.md; mv data/a.csv data/b.csv; "
              "rm -r data && mkdir data && echo new > data/c.txt; mkdir -p x/y && echo z > x/y/z; find . | sort")
    gate = Gate(True)
    with caplog.at_level(logging.INFO, logger="artoo.tools"):
        result = run(fuse_box(tmp_path, ws, gate).call("shell", {"command": script}))
    assert result.ok, result.output
    inside = [line for line in result.output.splitlines() if line.startswith(".")]
    assert inside == sorted(["."] + ["./" + p for p in snapshot(ws)])
    assert not any(".wh." in p for p in snapshot(ws))
    assert (ws / "data" / "c.txt").read_text() == "new\n" and not (ws / "keep.txt").exists()
    assert (ws / "notes.md").stat().st_mode & 0o777 == 0o755 and (ws / "x" / "y" / "z").read_text() == "z\n"
    asked = gate.asked[0].changes
    assert f"deleted {ws}/keep.txt (7 B)" in asked and f"deleted {ws}/data/sub/ (1 B in total)" in asked
    assert any("fuse-overlayfs" in r.getMessage() for r in caplog.records)


@needs_fuse
def test_a_denied_fuse_change_set_changes_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    build(ws, LOWER)
    before = snapshot(ws)
    gate = Gate(False)
    result = run(fuse_box(tmp_path, ws, gate).call("shell", {"command": "rm -r data && echo x >> keep.txt"}))
    assert not result.ok and result.output.startswith("[LAW1] denied")
    assert snapshot(ws) == before
    assert gate.asked[0].changes == [f"deleted {ws}/data/ (5 B in total)", f"modified {ws}/keep.txt (7 B → 9 B)"]


@needs_fuse
def test_a_timed_out_fuse_view_leaves_no_daemon(tmp_path: Path) -> None:
    """The timeout kills the command's process group, fuse-overlayfs with it; what it did is still settled."""
    ws = tmp_path / "ws"
    build(ws, LOWER)
    settings = load_settings(home=str(tmp_path / "artoo_home"), workspace=str(ws),
                             tools={"overlay": "fuse", "shell_timeout_s": 1.0})
    result = run(ToolBox(settings, ws, Gate(True)).call("shell", {"command": "echo x > t.txt; sleep 30"}))
    assert not result.ok and "timed out" in result.output and (ws / "t.txt").read_text() == "x\n"
    daemons = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _runs_on(p, str(ws))]
    assert daemons == []


def _runs_on(proc: Path, ws: str) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(argv) and argv[0].endswith(b"fuse-overlayfs") and any(ws.encode() in a for a in argv)
