"""Putting a folder into the state one run left: the executor's changes undone, another run's changes laid on.

Why: when the votes agree on a change set that is not the executor's, that change set is what the task delivers,
copied from the copy the winning command ran on; and when they stay unsure, the folder goes back to how the person
left it.  Only the paths in the change sets are touched, each restored from the copy of the folder as it was.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from artoo.tasks.checks.tree import PathChange

__all__ = ["lay", "restore"]


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _copy(source: Path, target: Path) -> None:
    """``source`` (a file, link or folder) to ``target``, with its mode and times; what was at ``target`` goes."""
    if target.exists() or target.is_symlink():
        if source.is_dir() and target.is_dir() and not target.is_symlink():
            shutil.copystat(source, target)
            return
        _remove(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    elif source.is_dir():
        target.mkdir()
        shutil.copystat(source, target)
    else:
        shutil.copy2(source, target)


def _set_to(root: Path, origin: Path, paths: Iterable[str]) -> None:
    """Each of ``paths`` under ``root`` made as it is under ``origin`` (gone where ``origin`` has none): deepest
    last for creation, deepest first for removal, so folders exist before their files and go after them."""
    ordered = sorted(set(paths), key=lambda p: p.count("/"))
    for rel in reversed(ordered):
        if not (origin / rel).exists() and not (origin / rel).is_symlink():
            target = root / rel
            if target.exists() or target.is_symlink():
                _remove(target)
    for rel in ordered:
        if (origin / rel).exists() or (origin / rel).is_symlink():
            _copy(origin / rel, root / rel)


def restore(workspace: Path, before: Path, changes: Iterable[PathChange]) -> None:
    """Undo ``changes`` in ``workspace``: every path they name back as it is in ``before`` (gone if it was not)."""
    _set_to(workspace, before, [c.path for c in changes])


def lay(workspace: Path, before: Path, undo: Iterable[PathChange], result: Path, do: Iterable[PathChange]) -> None:
    """Undo ``undo`` (the executor's changes) from ``before``, then make every path of ``do`` as ``result`` holds it
    (the copy the winning command ran on)."""
    restore(workspace, before, undo)
    _set_to(workspace, result, [c.path for c in do])
