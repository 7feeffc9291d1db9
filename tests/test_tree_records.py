"""tree's records: a path's mode is part of its state, and an archive is compared by its members, not its bytes.

Real folders in tmp_path: each run works on its own copy of one folder, as a reference run does, and its change
set is read back by ``tree.state`` and ``tree.changes``.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from artoo.tasks.checks import tree

Action = Callable[[Path], object]

LOGS = {"logs/a.log": b"ERROR disk full\n", "logs/b.log": b"ok\n", "logs/sub/c.log": b"WARN slow\n"}


def folder(root: Path, files: dict[str, bytes], modes: dict[str, int] | None = None) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel, mode in (modes or {}).items():
        os.chmod(root / rel, mode)
    return root


def run(base: Path, name: str, action: Action) -> list[tree.PathChange]:
    """``action`` on its own copy of ``base`` (modes kept, as a reference run's copy keeps them); what it changed."""
    copy = base.parent / name
    tree.copy_tree(base, copy, 1 << 30, 10_000)
    before = tree.state(copy)
    action(copy)
    return tree.changes(before, tree.state(copy))


def chmod(rel: str, mode: int) -> Action:
    return lambda root: os.chmod(root / rel, mode)


def write(rel: str, data: bytes, mode: int | None = None) -> Action:
    def act(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        if mode is not None:
            os.chmod(root / rel, mode)
    return act


def both(*actions: Action) -> Action:
    return lambda root: [a(root) for a in actions]


# --- archive makers: what two runs of "pack the logs folder" write, at different times --------------------------

def _tar_bytes(files: dict[str, bytes], mtime: int, arc: Callable[[str], str] = str, dirs: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        seen: set[str] = set()
        for rel, data in files.items():
            parts = rel.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if dirs and d not in seen:
                    seen.add(d)
                    info = tarfile.TarInfo(arc(d))
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
                    tar.addfile(info)
            info = tarfile.TarInfo(arc(rel))
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def tarball(target: str, names: list[str], mtime: int, *, squeeze: str = "gz", arc: Callable[[str], str] = str,
            dirs: bool = True) -> Action:
    """``tar c{squeeze}f target names`` at ``mtime``: members and compressor headers carry that time."""
    def act(root: Path) -> None:
        raw = _tar_bytes({rel: (root / rel).read_bytes() for rel in names}, mtime, arc, dirs)
        packed = {"": lambda b: b, "gz": lambda b: gzip.compress(b, mtime=mtime), "bz2": bz2.compress,
                  "xz": lzma.compress}[squeeze](raw)
        (root / target).write_bytes(packed)
    return act


def zipped(target: str, names: list[str], year: int) -> Action:
    def act(root: Path) -> None:
        with zipfile.ZipFile(root / target, "w", zipfile.ZIP_DEFLATED) as archive:
            for rel in names:
                archive.writestr(zipfile.ZipInfo(rel, (year, 1, 2, 3, 4, 6)), (root / rel).read_bytes(),
                                 zipfile.ZIP_DEFLATED)
    return act


def gzipped(target: str, source: str, mtime: int, filename: str = "") -> Action:
    """``gzip -c source > target``; ``filename`` goes in the header, as ``gzip -k`` writes it."""
    def act(root: Path) -> None:
        out = io.BytesIO()
        with gzip.GzipFile(filename=filename, mode="wb", fileobj=out, mtime=mtime) as stream:
            stream.write((root / source).read_bytes())
        (root / target).write_bytes(out.getvalue())
    return act


ALL = ["logs/a.log", "logs/b.log", "logs/sub/c.log"]


def strip_logs(name: str) -> str:
    return name.removeprefix("logs/").removeprefix("logs") or "."


# --- modes ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, action, lines, mode, was_mode", [
    (0o644, chmod("scripts/a.sh", 0o755), ["modified scripts/a.sh (10 bytes, mode 0644→0755)"], 0o755, 0o644),
    (0o600, chmod("scripts/a.sh", 0o644), ["modified scripts/a.sh (10 bytes, mode 0600→0644)"], 0o644, 0o600),
    (0o755, chmod("scripts/a.sh", 0o755), [], None, None),  # already executable: nothing changed
    (0o644, write("scripts/a.sh", b"echo bye\n"), ["modified scripts/a.sh (9 bytes)"], 0o644, None),  # text only
    (0o644, both(write("scripts/a.sh", b"echo bye\n"), chmod("scripts/a.sh", 0o755)),
     ["modified scripts/a.sh (9 bytes, mode 0644→0755)"], 0o755, 0o644),
    (0o644, chmod("scripts", 0o700), ["modified dir scripts (mode 0755→0700)"], 0o700, 0o755),
    (0o644, write("scripts/new.sh", b"echo\n", 0o755), ["created scripts/new.sh (5 bytes, mode 0755)"], 0o755, None),
    (0o644, write("scripts/new.txt", b"note\n", 0o644), ["created scripts/new.txt (5 bytes)"], 0o644, None),
])
def test_a_mode_is_part_of_a_paths_state(tmp_path, start, action, lines, mode, was_mode):
    base = folder(tmp_path / "base", {"scripts/a.sh": b"echo hi 1\n"}, {"scripts/a.sh": start, "scripts": 0o755})
    got = run(base, "run", action)
    assert [c.line() for c in got] == lines
    if got:
        assert (got[0].mode, got[0].was_mode) == (mode, was_mode)
        assert got[0].change in ("modified", "created")


@pytest.mark.parametrize("reference, executor, outcome", [
    (chmod("scripts/a.sh", 0o755), chmod("scripts/a.sh", 0o755), "agree"),
    (chmod("scripts/a.sh", 0o755), chmod("scripts/a.sh", 0o744), "values"),  # +x for the owner only
    (chmod("scripts/a.sh", 0o755), write("scripts/a.sh", b"echo hi 1\n"), "paths"),  # did nothing at all
    (chmod("scripts/a.sh", 0o755), write("scripts/a.sh", b"#!/bin/sh\necho hi 1\n"), "values"),  # edited, no +x
    (write("run.sh", b"echo\n", 0o755), write("run.sh", b"echo\n", 0o644), "values"),  # made, not executable
    (write("run.sh", b"echo\n", 0o755), write("run.sh", b"echo\n", 0o755), "agree"),
    (chmod("scripts", 0o700), chmod("scripts", 0o700), "agree"),
    (chmod("scripts", 0o700), chmod("scripts", 0o750), "values"),
])
def test_compare_sees_modes(tmp_path, reference, executor, outcome):
    base = folder(tmp_path / "base", {"scripts/a.sh": b"echo hi 1\n"}, {"scripts/a.sh": 0o644, "scripts": 0o755})
    got = tree.compare(run(base, "reference", reference), run(base, "executor", executor))
    assert got.outcome == outcome
    if outcome == "values":
        assert got.differing and got.values == [got.differing[0][0].path]


def test_a_mode_difference_reads_without_revealing_the_reference(tmp_path):
    base = folder(tmp_path / "base", {"scripts/a.sh": b"echo hi 1\n"}, {"scripts/a.sh": 0o644})
    got = tree.compare(run(base, "reference", chmod("scripts/a.sh", 0o755)),
                       run(base, "executor", chmod("scripts/a.sh", 0o700)))
    hidden, shown = tree.side_by_side(got, reveal=False), tree.side_by_side(got)
    assert "0700" in hidden and "0755" not in hidden and "permissions" in hidden
    assert "0755" in shown and "0700" in shown


# --- archives ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reference, executor, outcome", [
    (tarball("logs.tar.gz", ALL, 1_000), tarball("logs.tar.gz", ALL, 2_000_000), "agree"),  # other times
    (tarball("logs.tar.gz", ALL, 1_000), tarball("logs.tar.gz", ALL, 1_000, arc=lambda n: "./" + n), "agree"),
    (tarball("logs.tar.gz", ALL, 1_000), tarball("logs.tar.gz", ALL, 9, dirs=False), "agree"),  # logs/* not logs
    (tarball("logs.tgz", ALL, 1_000), tarball("logs.tgz", ALL, 5_000), "agree"),
    (tarball("logs.tar", ALL, 1_000, squeeze=""), tarball("logs.tar", ALL, 5_000, squeeze=""), "agree"),
    (tarball("logs.tar.bz2", ALL, 1_000, squeeze="bz2"), tarball("logs.tar.bz2", ALL, 5, squeeze="bz2"), "agree"),
    (tarball("logs.tar.xz", ALL, 1_000, squeeze="xz"), tarball("logs.tar.xz", ALL, 5, squeeze="xz"), "agree"),
    (tarball("logs.tar.gz", ALL, 1_000), tarball("logs.tar.gz", ALL[:2], 1_000), "values"),  # a member missing
    (tarball("logs.tar.gz", ALL, 1_000), both(write("logs/b.log", b"changed\n"),
                                              tarball("logs.tar.gz", ALL, 1_000)), "paths"),  # b.log edited too
    (tarball("logs.tar.gz", ALL, 1_000), tarball("logs.tar.gz", ALL, 1_000, arc=strip_logs), "layout"),  # -C logs
    (zipped("logs.zip", ALL, 2001), zipped("logs.zip", ALL, 2024), "agree"),
    (zipped("logs.zip", ALL, 2001), zipped("logs.zip", ALL[1:], 2001), "values"),
    (gzipped("logs/a.log.gz", "logs/a.log", 1, "a.log"), gzipped("logs/a.log.gz", "logs/a.log", 99), "agree"),
    (gzipped("logs/a.log.gz", "logs/a.log", 1), gzipped("logs/a.log.gz", "logs/b.log", 1), "values"),
    (gzipped("logs/a.log.gz", "logs/a.log", 1), write("logs/a.log.gz", LOGS["logs/a.log"]), "values"),  # not gzip
    (tarball("logs.gz", ALL, 1_000), tarball("logs.gz", ALL, 7_000), "agree"),  # tar | gzip > logs.gz
])
def test_archives_compare_by_members(tmp_path, reference, executor, outcome):
    base = folder(tmp_path / "base", LOGS)
    ref, exe = run(base, "reference", reference), run(base, "executor", executor)
    archive = [c for c in ref if c.path.endswith((".tar", ".gz", ".tgz", ".bz2", ".xz", ".zip"))]
    assert archive and archive[0].change == "created"
    assert tree.compare(ref, exe).outcome == outcome


def shell(command: str, mtime: int) -> Action:
    """``command`` in the folder after every file's time is set to ``mtime`` (runs at different moments)."""
    def act(root: Path) -> None:
        for path in root.rglob("*"):
            os.utime(path, (mtime, mtime))
        subprocess.run(["bash", "-c", command], cwd=root, check=True, env={**os.environ, "GZIP": ""})
    return act


@pytest.mark.skipif(shutil.which("tar") is None or shutil.which("gzip") is None, reason="needs tar and gzip")
@pytest.mark.parametrize("reference, executor, outcome", [
    (shell("tar czf logs.tar.gz logs", 1_000), shell("tar czf logs.tar.gz ./logs/*", 9_000_000), "agree"),
    (shell("tar czf logs.tar.gz logs", 1_000), shell("tar czf logs.tar.gz logs/a.log logs/b.log", 1_000), "values"),
    (shell("gzip -k logs/a.log", 1_000), shell("gzip -c logs/a.log > logs/a.log.gz", 5_000), "agree"),
])
def test_real_archivers_agree_by_members(tmp_path, reference, executor, outcome):
    base = folder(tmp_path / "base", LOGS)
    assert tree.compare(run(base, "reference", reference), run(base, "executor", executor)).outcome == outcome


@pytest.mark.parametrize("action, target, shown", [
    (tarball("logs.tar.gz", ALL, 1_000), "logs.tar.gz",
     ["archive of 3 member(s):", "logs/a.log (16 bytes)", "logs/b.log (3 bytes)", "logs/sub/c.log (10 bytes)"]),
    (tarball("logs.tar.gz", ALL, 1_000, arc=lambda n: "./" + n), "logs.tar.gz",
     ["archive of 3 member(s):", "logs/a.log (16 bytes)", "logs/b.log (3 bytes)", "logs/sub/c.log (10 bytes)"]),
    (zipped("logs.zip", ALL[:1], 2001), "logs.zip", ["archive of 1 member(s):", "logs/a.log (16 bytes)"]),
    (gzipped("logs/a.log.gz", "logs/a.log", 1), "logs/a.log.gz", ["ERROR disk full"]),  # the text a person reads
])
def test_an_archives_head_lists_its_members(tmp_path, action, target, shown):
    base = folder(tmp_path / "base", LOGS)
    (change,) = [c for c in run(base, "run", action) if c.path == target]
    assert change.head.splitlines() == shown
    assert change.size == (tmp_path / "run" / target).stat().st_size  # the size is still the file's own


@pytest.mark.parametrize("name, data", [
    ("x.tar.gz", b"not an archive at all\n"),
    ("x.tgz", gzip.compress(b"plain text, not a tar\n" * 40, mtime=0)),  # gzip, but no tar inside
    ("x.tar.gz", gzip.compress(_tar_bytes(LOGS, 1), mtime=0)[:60]),  # cut short
    ("x.zip", b"PK\x03\x04" + b"\x00" * 40),
    ("x.gz", b"\x1f\x8b\x08garbage"),
    ("x.tar", b"\x01" * 700),
])
def test_a_corrupt_archive_is_compared_by_its_bytes(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    entry = tree.state(tmp_path)[name]
    assert entry.digest == hashlib.sha256(data).hexdigest()
    assert not entry.head.startswith("archive of")


BIG = tree.HASH_LIMIT + 1


@pytest.mark.parametrize("name, make", [
    ("zeros.gz", lambda: gzip.compress(b"\x00" * BIG)),  # a few KB that inflate past the bound
    ("zeros.tar.gz", lambda: gzip.compress(_big_tar())),
    ("zeros.zip", lambda: _big_zip()),
])
def test_an_archive_past_the_bound_is_compared_by_its_bytes(tmp_path, name, make):
    data = make()
    assert len(data) < tree.HASH_LIMIT
    (tmp_path / name).write_bytes(data)
    assert tree.state(tmp_path)[name].digest == hashlib.sha256(data).hexdigest()


def test_a_file_past_the_bound_is_never_read(tmp_path):
    with open(tmp_path / "huge.tar.gz", "wb") as handle:
        handle.truncate(BIG)  # sparse: no 16 MB written
    entry = tree.state(tmp_path)["huge.tar.gz"]
    assert entry.digest.startswith(f"size:{BIG}:mtime:") and entry.size == BIG and entry.head == ""


def _big_tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = BIG
        tar.addfile(info, io.BytesIO(b"\x00" * BIG))
    return out.getvalue()


def _big_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a", b"\x00" * (BIG // 2))
        archive.writestr("b", b"\x00" * (BIG // 2 + 1))  # each under the bound, both past it
    return out.getvalue()


# --- records written before modes were kept ---------------------------------------------------------------------

OLD = {"path": "scripts/a.sh", "change": "modified", "node": "file", "size": 10, "digest": "d", "head": "echo hi 1\n",
       "loose": "l", "tokens": "t"}


@pytest.mark.parametrize("record, mode, line", [
    (OLD, None, "modified scripts/a.sh (10 bytes)"),
    ({"path": "x", "change": "deleted", "node": "dir"}, None, "deleted dir x"),
    ({**OLD, "mode": 0o755, "was_mode": 0o644}, 0o755, "modified scripts/a.sh (10 bytes, mode 0644→0755)"),
])
def test_an_old_record_validates(record, mode, line):
    change = tree.PathChange.model_validate_json(json.dumps(record))
    assert change.mode == mode and change.line() == line
    assert tree.PathChange.model_validate(change.model_dump()) == change


def test_an_old_record_agrees_with_any_mode():
    old = tree.PathChange.model_validate(OLD)
    new = old.model_copy(update={"mode": 0o755, "was_mode": 0o644})
    assert tree.compare([old], [new]).outcome == "agree"
    assert tree.compare([new], [old]).outcome == "agree"
    kept = tree.Comparison.model_validate_json(json.dumps({"outcome": "values", "differing": [[OLD, OLD]]}))
    assert kept.differing[0][0].mode is None
