"""What a command changed, read from an overlay's upper directory, and how to make it real.

WHY: the transactional shell (overlay.py) lets a command write only into an overlay's
upper directory; the real directory beneath stays untouched until Law 1 has ruled on the
exact change set.  Overlayfs records a deletion as a *whiteout* (a character device 0/0)
and a directory that was removed and recreated as *opaque* (xattr ``overlay.opaque=y``);
every other entry in the upper directory is a new or copied-up file.  ``compute`` turns
that into created / modified / deleted / renamed / mode changes with sizes, comparing
copied-up files with the real ones so a mere copy-up (``touch``, an unchanged rewrite)
is no change.  ``commit`` applies the upper directory onto the real one: whiteouts
delete, opaque directories lose what the command removed, files are copied over (an
existing file is rewritten in place, so it keeps its owner and group).

fuse-overlayfs (``fuse=True``, overlay.py) marks its deletions its own way where it cannot
make a device: a file ``.wh.NAME`` deletes NAME, a file ``.wh..wh..opq`` (or the xattr
``user.fuseoverlayfs.opaque``) makes its directory opaque; no ``.wh.`` entry is a change of
its own.  Its view shows every file as the user's own, so ``unwritable`` checks, before a
commit, that the real user may make each change at all: a change set is committed whole
or not at all.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from artoo.tasks.law1.changes import Change

OPAQUE = (b"user.overlay.opaque", b"trusted.overlay.opaque", b"user.fuseoverlayfs.opaque")
WH = ".wh."
"""fuse-overlayfs' prefix of deletion markers (files named ``.wh.NAME``)."""
OPQ = ".wh..wh..opq"
"""fuse-overlayfs' marker file of an opaque directory."""


def is_whiteout(info: os.stat_result) -> bool:
    """Overlayfs' deletion marker: a character device with device number 0/0."""
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


def is_opaque(path: str) -> bool:
    """Whether an upper directory hides everything beneath it in the lower one."""
    for name in OPAQUE:
        try:
            if os.getxattr(path, name.decode(), follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def listing(up_dir: str, fuse: bool = False) -> tuple[dict[str, os.stat_result | None], bool]:
    """An upper directory's entries by name, None for a deletion; and whether a marker file made it opaque."""
    with os.scandir(up_dir) as found:
        listed = [(e.name, os.lstat(e.path)) for e in found]
    entries: dict[str, os.stat_result | None] = {}
    for name, info in listed:
        if not (fuse and name.startswith(WH)):
            entries[name] = None if is_whiteout(info) else info
    for name, info in listed:  # a marker never hides what the upper directory holds under that name
        victim = name[len(WH):]
        if fuse and name != OPQ and name.startswith(WH) and stat.S_ISREG(info.st_mode) and victim:
            entries.setdefault(victim, None)
    return entries, fuse and any(name == OPQ for name, _info in listed)


def compute(upper: Path, real: Path, fuse: bool = False) -> list[Change]:
    """The change set the upper directory holds over the real directory ``real`` (``fuse``: fuse-overlayfs')."""
    changes: list[Change] = []
    _walk(str(upper), str(real), False, changes, fuse)
    return _pair_renames(changes, str(upper), str(real))


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _tree_size(path: str) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            info = _lstat(os.path.join(folder, name))
            total += info.st_size if info else 0
    return total


def _walk(up_dir: str, real_dir: str, opaque: bool, changes: list[Change], fuse: bool) -> None:
    names, marked = listing(up_dir, fuse)
    if opaque or marked:  # the directory was emptied: whatever the upper does not hold again is gone
        lower = _lstat(real_dir)
        if lower is not None and stat.S_ISDIR(lower.st_mode):
            for name in sorted(set(os.listdir(real_dir)) - set(names)):
                _deleted(os.path.join(real_dir, name), changes)
    for name in sorted(names):
        up, rp = os.path.join(up_dir, name), os.path.join(real_dir, name)
        info = names[name]
        lower = _lstat(rp)
        if info is None:
            if lower is not None:
                _deleted(rp, changes)
            continue
        if lower is not None and stat.S_ISDIR(lower.st_mode) != stat.S_ISDIR(info.st_mode):
            _deleted(rp, changes)  # a file became a directory or the reverse
            lower = None
        if stat.S_ISDIR(info.st_mode):
            if lower is None:
                changes.append(Change(kind="created", path=rp, is_dir=True, size=0))
                _walk(up, rp, True, changes, fuse)
                continue
            _mode_change(rp, lower, info, True, changes)
            _walk(up, rp, is_opaque(up), changes, fuse)
            continue
        if lower is None:
            changes.append(Change(kind="created", path=rp, size=info.st_size))
            continue
        _mode_change(rp, lower, info, False, changes)
        if not _same_content(up, rp, info, lower):
            changes.append(Change(kind="modified", path=rp, size=info.st_size, old_size=lower.st_size))


def _deleted(path: str, changes: list[Change]) -> None:
    info = _lstat(path)
    is_dir = info is not None and stat.S_ISDIR(info.st_mode)
    size = _tree_size(path) if is_dir else (info.st_size if info else 0)
    changes.append(Change(kind="deleted", path=path, is_dir=is_dir, old_size=size))


def _mode_change(path: str, lower: os.stat_result, info: os.stat_result, is_dir: bool,
                 changes: list[Change]) -> None:
    if stat.S_ISLNK(info.st_mode):
        return
    old, new = stat.S_IMODE(lower.st_mode), stat.S_IMODE(info.st_mode)
    if old != new:
        changes.append(Change(kind="mode", path=path, is_dir=is_dir, old_mode=old, new_mode=new))


def _same_content(up: str, rp: str, info: os.stat_result, lower: os.stat_result) -> bool:
    if stat.S_ISLNK(info.st_mode) or stat.S_ISLNK(lower.st_mode):
        return (stat.S_ISLNK(info.st_mode) and stat.S_ISLNK(lower.st_mode)
                and os.readlink(up) == os.readlink(rp))
    if not (stat.S_ISREG(info.st_mode) and stat.S_ISREG(lower.st_mode)):
        return stat.S_IFMT(info.st_mode) == stat.S_IFMT(lower.st_mode)
    if info.st_size != lower.st_size:
        return False
    try:
        return filecmp.cmp(up, rp, shallow=False)
    except OSError:
        return False


def _pair_renames(changes: list[Change], upper: str, real: str) -> list[Change]:
    """A deleted file and a created file with the same content is one rename (when unambiguous)."""
    deleted = [c for c in changes if c.kind == "deleted" and not c.is_dir]
    created = [c for c in changes if c.kind == "created" and not c.is_dir]
    if not deleted or not created:
        return changes
    by_size: dict[int | None, list[Change]] = {}
    for c in created:
        by_size.setdefault(c.size, []).append(c)
    merged: dict[int, Change] = {}
    dropped: set[int] = set()
    for gone in deleted:
        candidates = [c for c in by_size.get(gone.old_size, [])
                      if _same_file(os.path.join(upper, os.path.relpath(c.path, real)), gone.path)]
        if len(candidates) == 1 and id(candidates[0]) not in merged:
            new = candidates[0]
            merged[id(new)] = new.model_copy(update={"kind": "renamed", "source": gone.path,
                                                     "old_size": gone.old_size})
            dropped.add(id(gone))
    return [merged.get(id(c), c) for c in changes if id(c) not in dropped]


def _same_file(a: str, b: str) -> bool:
    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def commit(upper: Path, real: Path, fuse: bool = False) -> None:
    """Apply the upper directory onto the real one: exactly the change set ``compute`` reported."""
    _apply(str(upper), str(real), False, fuse)


def commit_times(layers: Iterable, fuse: bool = False) -> None:
    """Apply a change set ``compute`` found empty: at most new modification times (``touch`` of an existing
    file), best effort.  No question is due (an mtime destroys nothing), but the user asked for it."""
    for layer in layers:  # overlay.View's layers: .upper above .root
        with contextlib.suppress(OSError):
            commit(layer.upper, layer.root, fuse)


def _remove(path: str) -> None:
    info = _lstat(path)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _apply(up_dir: str, real_dir: str, opaque: bool, fuse: bool) -> None:
    entries, marked = listing(up_dir, fuse)
    names = sorted(entries)
    if (opaque or marked) and os.path.isdir(real_dir):
        for name in set(os.listdir(real_dir)) - set(names):
            _remove(os.path.join(real_dir, name))
    for name in names:  # deletions first, so a rename's new name never meets its old self
        if entries[name] is None:
            _remove(os.path.join(real_dir, name))
    for name in names:
        up, rp = os.path.join(up_dir, name), os.path.join(real_dir, name)
        info = entries[name]
        if info is None:
            continue
        lower = _lstat(rp)
        if lower is not None and (stat.S_ISDIR(lower.st_mode) != stat.S_ISDIR(info.st_mode)
                                  or stat.S_ISLNK(lower.st_mode) or stat.S_ISLNK(info.st_mode)):
            _remove(rp)
            lower = None
        if stat.S_ISDIR(info.st_mode):
            if lower is None:
                os.mkdir(rp)
            _chmod(rp, info, lower)
            _apply(up, rp, lower is None or is_opaque(up), fuse)
        elif stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(up), rp)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(up, rp, info, lower)
        elif stat.S_ISFIFO(info.st_mode):
            _remove(rp)
            os.mkfifo(rp, stat.S_IMODE(info.st_mode))


def _chmod(path: str, info: os.stat_result, lower: os.stat_result | None) -> None:
    """Set the upper entry's mode, only where it differs (only an owner may chmod: an unchanged mode needs none)."""
    if lower is None or stat.S_IMODE(lower.st_mode) != stat.S_IMODE(info.st_mode):
        os.chmod(path, stat.S_IMODE(info.st_mode))


def _copy_file(up: str, rp: str, info: os.stat_result, lower: os.stat_result | None) -> None:
    """A new file lands whole (temp name, then rename); an existing one is rewritten in place (keeps owner).

    An existing file whose content did not change (copied up by ``ln``, ``touch`` or ``chmod``) is not
    rewritten: only its mode and, when the command changed it, its modification time are applied.
    """
    if lower is not None and stat.S_ISREG(lower.st_mode) and _same_content(up, rp, info, lower):
        if info.st_mtime_ns != lower.st_mtime_ns:  # only an owner sets times; compute reported no change either
            with contextlib.suppress(PermissionError):
                os.utime(rp, ns=(info.st_atime_ns, info.st_mtime_ns))
        _chmod(rp, info, lower)
        return
    if lower is not None and stat.S_ISREG(lower.st_mode):
        shutil.copyfile(up, rp)
        _chmod(rp, info, lower)
        return
    temp = os.path.join(os.path.dirname(rp), f".artoo-commit-{os.getpid()}-{os.path.basename(rp)}")
    try:
        if os.stat(os.path.dirname(rp)).st_mode & stat.S_ISGID:
            raise OSError("a set-group-ID directory: create the file there, so it takes the directory's group")
        os.rename(up, temp)  # same filesystem: no copy
    except OSError:
        shutil.copy2(up, temp)
    os.replace(temp, rp)


def unwritable(changes: list[Change]) -> list[str]:
    """The changes the real user may not make outside the view, each as ``path: why`` (empty: all may land).

    A fuse-overlayfs view shows every file as the user's own, so a command may change in
    it what the user cannot change for real; committing such a set would stop half way.
    """
    refused: list[str] = []
    for change in changes:
        wants = {"modified": [(change.path, "cannot write it")],
                 "mode": [(change.path, "not its owner")],
                 "deleted": [(os.path.dirname(change.path), "cannot remove it from its directory")],
                 "created": [(_existing(change.path), "cannot create it in its directory")],
                 "renamed": [(os.path.dirname(change.source or change.path), "cannot move it out of its directory"),
                             (_existing(change.path), "cannot move it into its directory")]}[change.kind]
        for path, why in wants:
            if not _may(path, change.kind == "mode"):
                refused.append(f"{change.path}: {why}")
                break
    return refused


def _existing(path: str) -> str:
    """The nearest directory above ``path`` that exists now (a new file's new parents do not, yet)."""
    folder = os.path.dirname(path)
    while not os.path.isdir(folder) and folder != os.path.dirname(folder):
        folder = os.path.dirname(folder)
    return folder


def _may(path: str, own: bool) -> bool:
    if own:
        info = _lstat(path)
        return info is not None and (os.geteuid() == 0 or info.st_uid == os.geteuid())
    return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)
