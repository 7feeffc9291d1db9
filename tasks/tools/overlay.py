"""The transactional shell's copy-on-write view: an overlay over each writable area.

WHY: Law 1 judged by effect needs a command's effects held back until the user has seen
them.  Each writable area (the workspace, and the home directory when configured) is
mounted as an overlayfs whose lower layer is the real directory and whose upper layer is
a private scratch directory; the command (inside bubblewrap, as before) sees a normal
writable directory, the real one is untouched, and changeset.py reads the effects from
the upper layer.  Debian 12's bubblewrap 0.8 has no ``--overlay``, so the mount happens
one step earlier, in a private mount namespace made by ``unshare`` (as root a mount
namespace is enough; otherwise a user namespace maps us to root in it, which the kernel
allows for overlayfs with the ``userxattr`` option), and bubblewrap runs inside it.
Where that cannot work, ``overlay_problem`` says why and the caller falls back to the
text judge.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

MOUNT_SCRIPT = ('set -e; while [ "$1" != "--" ]; do '
                'mount -t overlay artoo-overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,userxattr" "$1"; '
                'shift 3; done; shift; exec "$@"')
"""Mount one overlay per (root, upper, work) triple, then exec the command (bubblewrap)."""
UNSAFE = (",", ":", "\\", "\n")
"""Characters overlayfs' mount options cannot carry in a path."""


@dataclass(frozen=True)
class Layer:
    """One writable area: the real directory and where its changes collect."""

    root: Path
    """The real (resolved) directory the command sees as writable."""
    upper: Path
    work: Path


@dataclass
class View:
    """The overlays of one command: its scratch directory and one layer per writable area."""

    scratch: Path
    layers: list[Layer] = field(default_factory=list)

    def close(self) -> None:
        """Remove the scratch directory (overlayfs leaves a mode-000 ``work/work`` behind)."""
        for folder, dirs, _files in os.walk(self.scratch):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o700)  # walk descends after this: it can list them
        shutil.rmtree(self.scratch, ignore_errors=True)


def outermost(roots: list[Path]) -> list[Path]:
    """The resolved roots without those nested in another (the outer overlay already covers them)."""
    real = sorted({Path(os.path.realpath(r)) for r in roots}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for root in real:
        if not any(root == k or k in root.parents for k in kept):
            kept.append(root)
    return kept


def open_view(roots: list[Path], base: Path | None = None) -> View:
    """Fresh upper and work directories for each writable area (nothing is mounted yet)."""
    scratch = Path(tempfile.mkdtemp(prefix="artoo-overlay-", dir=base))
    view = View(scratch)
    for i, root in enumerate(outermost(roots)):
        upper, work = scratch / f"{i}.upper", scratch / f"{i}.work"
        upper.mkdir()
        work.mkdir()
        view.layers.append(Layer(root, upper, work))
    return view


def namespace_argv() -> list[str]:
    """``unshare`` into a private mount namespace (plus a user namespace unless we are root)."""
    argv = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        argv[1:1] = ["--user", "--map-root-user"]
    return argv


def mount_argv(view: View, argv: list[str]) -> list[str]:
    """``argv`` run where every layer's root is replaced by its overlay."""
    triples = [str(p) for layer in view.layers for p in (layer.root, layer.upper, layer.work)]
    return [*namespace_argv(), "sh", "-c", MOUNT_SCRIPT, "artoo-overlay", *triples, "--", *argv]


def unsafe_root(roots: list[Path]) -> str | None:
    """Why a root cannot be an overlay's lower directory (None when all can)."""
    for root in roots:
        bad = [c for c in UNSAFE if c in str(root)]
        if bad:
            return f"the path {root} contains {bad[0]!r}, which overlayfs mount options cannot carry"
    return None


@functools.cache
def overlay_problem() -> str | None:
    """None when a command can run on an overlay here, else why not (probed once per process)."""
    if shutil.which("unshare") is None:
        return "unshare is not installed (util-linux)"
    base = Path(tempfile.mkdtemp(prefix="artoo-overlay-probe-"))
    try:
        lower = base / "lower"
        lower.mkdir()
        (lower / "f").write_text("x")
        view = open_view([lower], base)
        script = f"rm {lower}/f && echo y > {lower}/g"
        try:
            done = subprocess.run(mount_argv(view, ["sh", "-c", script]), capture_output=True, timeout=10,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot start unshare: {exc}"
        if done.returncode != 0:
            detail = " ".join(done.stderr.decode("utf-8", "replace").split())[:200]
            return f"overlayfs cannot be mounted here: {detail or f'exit {done.returncode}'}"
        if not (lower / "f").exists() or (lower / "g").exists():
            return "the overlay probe changed its lower directory: overlayfs does not isolate here"
        return None
    finally:
        shutil.rmtree(base, ignore_errors=True)
