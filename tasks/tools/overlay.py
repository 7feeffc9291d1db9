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

In a user namespace only the user's own uid and gid are mapped, and the kernel cannot copy
up a file whose owner or group is not (EOVERFLOW, "Value too large for defined data
type"): a command appending to a file of a group the user is not in would fail for a
reason that has nothing to do with it.  So an ordinary user's writable areas are scanned
for such owners (``foreign``), and where one is found the view is mounted by
``fuse-overlayfs`` instead, in the same namespaces, with ``squash_to_root`` (every file
looks like the user's own in the view, so copy-up never needs an unmapped id; the real
permissions are checked again before a commit, changeset.unwritable).  ``choose`` picks
the kind of view for a command; where neither works it says why and the caller falls back
to the text judge and logs it.  ``overlay_problem`` says why no overlay at all works here.
"""


from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("kernel", "fuse")
"""kernel: overlayfs mounted by the kernel; fuse: fuse-overlayfs (copy-up never needs an unmapped id)."""
MOUNT_SCRIPT = ('set -e; while [ "$1" != "--" ]; do '
                'mount -t overlay artoo-overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,userxattr" "$1"; '
                'shift 3; done; shift; exec "$@"')
"""Mount one overlay per (root, upper, work) triple, then exec the command (bubblewrap)."""
FUSE_SCRIPT = """set -e
mounts() { while [ "$1" != "--" ]; do
  before=$(stat -c %d "$1")
  fuse-overlayfs -f -o "lowerdir=$1,upperdir=$2,workdir=$3,squash_to_root" "$1" 2>>"$3.log" &
  while [ "$(stat -c %d "$1")" = "$before" ]; do
    kill -0 $! 2>/dev/null || { cat "$3.log" >&2; exit 125; }; sleep 0.002; done
  shift 3; done; }
unmounts() { while [ "$1" != "--" ]; do umount "$1" || return 1; shift 3; done; }
run_it() { while [ "$1" != "--" ]; do shift; done; shift; "$@"; }
mounts "$@"
set +e
run_it "$@"; rc=$?
unmounts "$@" || kill $(jobs -p) 2>/dev/null
wait
exit $rc"""
"""Start one fuse-overlayfs per triple in the foreground of this process group (so a timeout's
kill of the group ends it too), wait until each is mounted, run the command, then unmount
(which flushes everything into the upper directories) and wait for the daemons to end."""
RERUN_NOTE = ("[ran again on fuse-overlayfs: the kernel overlay could not copy up a file of another owner or group "
              "(EOVERFLOW); nothing of the first run was kept]")
UNSAFE = (",", ":", "\\", "\n")
"""Characters overlayfs' mount options cannot carry in a path."""
SCAN_LIMIT = 50_000
"""Entries ``foreign`` looks at before it gives up telling (then the fuse view is the safe one)."""
UNCHECKED = "too many to check their owners"
"""How ``foreign`` ends its answer when it gave up: the kernel overlay stays usable, just not certain."""


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
    kind: str = "kernel"
    """Who mounts it: the kernel, or fuse-overlayfs (whose upper directory marks deletions its own way too)."""

    def close(self) -> None:
        """Remove the scratch directory (overlayfs leaves a mode-000 ``work/work`` behind)."""
        remove_tree(self.scratch)


def remove_tree(path: Path) -> None:
    """Remove a tree that holds overlayfs's mode-000 ``work/work``: its owner may not list it until it
    chmods it (root may, so only an ordinary user ever saw a tree left behind)."""
    for folder, dirs, _files in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(folder, name), 0o700)  # walk descends after this: it can list them
    shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class Choice:
    """The view a command runs on, or None (the text judge decides), with what the log should say."""

    kind: str | None
    note: str | None = None
    """Why not the kernel overlay (when fuse-overlayfs stands in), or why no overlay at all."""

    def line(self) -> str:
        """What the run's log says about it."""
        if self.kind is None:
            return f"Law 1 falls back to the text judge for shell commands: {self.note}"
        return ("Law 1 judges shell commands by effect: each runs on a copy-on-write view of the workspace"
                + (f" ({self.note})" if self.note else ""))


def outermost(roots: list[Path]) -> list[Path]:
    """The resolved roots without those nested in another (the outer overlay already covers them)."""
    real = sorted({Path(os.path.realpath(r)) for r in roots}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for root in real:
        if not any(root == k or k in root.parents for k in kept):
            kept.append(root)
    return kept


def open_view(roots: list[Path], base: Path | None = None, kind: str = "kernel") -> View:
    """Fresh upper and work directories for each writable area (nothing is mounted yet)."""
    scratch = Path(tempfile.mkdtemp(prefix="artoo-overlay-", dir=base))
    view = View(scratch, kind=kind)
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
    script = FUSE_SCRIPT if view.kind == "fuse" else MOUNT_SCRIPT
    return [*namespace_argv(), "sh", "-c", script, "artoo-overlay", *triples, "--", *argv]


def copy_up_failed(kind: str, output: str) -> bool:
    """Whether a command on a kernel view may have met a file the namespace cannot map (its error in the output)."""
    return kind == "kernel" and os.geteuid() != 0 and os.strerror(errno.EOVERFLOW) in output


def unsafe_root(roots: list[Path]) -> str | None:
    """Why a root cannot be an overlay's lower directory (None when all can)."""
    for root in roots:
        bad = [c for c in UNSAFE if c in str(root)]
        if bad:
            return f"the path {root} contains {bad[0]!r}, which overlayfs mount options cannot carry"
    return None


def foreign(roots: list[Path], uid: int, gid: int, limit: int = SCAN_LIMIT) -> str | None:
    """The first entry under ``roots`` not owned by ``uid`` and group ``gid``, in words (None when all are).

    The kernel overlay in a user namespace cannot copy such an entry up.  Past ``limit``
    entries the answer is a sentence saying the scan could not tell (treated as foreign).
    """
    seen, stack = 0, [str(r) for r in outermost(roots)]
    for root in stack:  # what the user creates in a set-group-ID root takes its group
        info = os.stat(root) if os.path.isdir(root) else None  # a workspace not made yet holds nothing
        if info is not None and info.st_mode & stat.S_ISGID and info.st_gid != gid:
            return (f"{root} is set-group-ID with group {info.st_gid}, which a user namespace cannot map "
                    "(the kernel overlay would fail to copy up the files created there)")
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return f"{roots[0]} holds more than {limit} entries, {UNCHECKED}"
                    info = entry.stat(follow_symlinks=False)
                    if info.st_uid != uid or info.st_gid != gid:
                        return (f"{entry.path} belongs to uid {info.st_uid}, group {info.st_gid}, "
                                "which a user namespace cannot map (the kernel overlay would fail to copy it up)")
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue  # unreadable to us: no command of ours can change it either
    return None


def choose(roots: list[Path], kernel: str | None, fuse: str | None, uid: int, gid: int,
           scan: object = foreign) -> Choice:
    """The view for a command on ``roots``, given why the kernel and the fuse overlays cannot work (None: they can).

    As root no id is unmapped, so the kernel overlay always can copy up; otherwise a
    writable area holding a foreign owner or group needs fuse-overlayfs.
    """
    if kernel is None:
        odd = None if uid == 0 else scan(roots, uid, gid)
        if odd is None:
            return Choice("kernel")
        if fuse is None:
            return Choice("fuse", f"{odd}; fuse-overlayfs mounts the view instead")
        if odd.endswith(UNCHECKED):  # most likely all the user's own: the kernel overlay, said so
            return Choice("kernel", f"{odd}, and fuse-overlayfs cannot stand in ({fuse}): a command changing "
                          "a file of another owner or group will fail in the view")
        return Choice(None, f"{odd}, and fuse-overlayfs cannot stand in: {fuse}")
    if fuse is None:
        return Choice("fuse", f"fuse-overlayfs mounts the view; the kernel's overlayfs: {kernel}")
    return Choice(None, f"{kernel}; fuse-overlayfs cannot stand in: {fuse}")


@functools.cache
def kind_problem(kind: str) -> str | None:
    """None when a command can run on a ``kind`` view here, else why not (probed once per process)."""
    tool = "unshare" if kind == "kernel" else "fuse-overlayfs"
    if shutil.which(tool) is None or shutil.which("unshare") is None:
        return f"{tool} is not installed ({'util-linux' if tool == 'unshare' else 'apt-get install fuse-overlayfs'})"
    if kind == "fuse" and not os.path.exists("/dev/fuse"):
        return "there is no /dev/fuse"
    base = Path(tempfile.mkdtemp(prefix="artoo-overlay-probe-"))
    try:
        lower = base / "lower"
        lower.mkdir()
        (lower / "f").write_text("x")
        view = open_view([lower], base, kind)
        script = f"rm {lower}/f && echo y > {lower}/g"
        try:
            done = subprocess.run(mount_argv(view, ["sh", "-c", script]), capture_output=True, timeout=10,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot start unshare: {exc}"
        name = "overlayfs" if kind == "kernel" else "fuse-overlayfs"
        if done.returncode != 0:
            detail = " ".join(done.stderr.decode("utf-8", "replace").split())[:200]
            return f"{name} cannot be mounted here: {detail or f'exit {done.returncode}'}"
        if not (lower / "f").exists() or (lower / "g").exists():
            return f"the {name} probe changed its lower directory: it does not isolate here"
        return None
    finally:  # the probe's view has a work/work too: an ordinary user left one /tmp tree per process
        remove_tree(base)


def overlay_problem() -> str | None:
    """None when some overlay (the kernel's or fuse-overlayfs) works here, else why neither does."""
    kernel, fuse = kind_problem("kernel"), kind_problem("fuse")
    return None if kernel is None or fuse is None else f"{kernel}; fuse-overlayfs: {fuse}"


def choose_here(roots: list[Path], only: str | None = None) -> Choice:
    """``choose`` on this machine, as this user; ``only`` names the one kind allowed (tools.overlay)."""
    kernel = kind_problem("kernel") if only in (None, "kernel") else "turned off (tools.overlay = \"fuse\")"
    fuse = kind_problem("fuse") if only in (None, "fuse") else "turned off (tools.overlay = \"kernel\")"
    return choose(roots, kernel, fuse, os.geteuid(), os.getegid())


def decide(setting: str, sandbox_problem: str | None, roots: list[Path]) -> Choice:
    """The view for commands on ``roots``, given ``tools.overlay`` and why bubblewrap is not in use (None: it is)."""
    if setting == "off":
        return Choice(None, "the overlay is turned off (tools.overlay)")
    if sandbox_problem is not None:
        return Choice(None, f"bubblewrap is not in use ({sandbox_problem})")
    unsafe = unsafe_root(roots)
    if unsafe is not None:
        return Choice(None, unsafe)
    return choose_here(roots, None if setting == "auto" else setting)
