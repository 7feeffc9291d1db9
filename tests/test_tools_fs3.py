"""InterCode-Bash fs3's ``-maxdepth`` gold commands print through our shell tool what bash prints.

Why: a model that writes ``find /workspace -maxdepth 1 -type d`` means "not the
subdirectories"; a tool that edits the command answers a different question.  Each gold
command runs once through plain ``bash -c`` and once through ToolBox's shell on a tree
built by the data set's own setup.sh, with ``/workspace`` (and ``/backup``, and the ``/``
the move-to-root command targets) remapped under tmp_path.  Read-only commands share one
tree and must print the same lines in the same order; commands that move files run on
two identical trees, which must end up the same.  The Law-1 gate approves (a person said
yes), so what is compared is the tool's execution, not the confirmation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.test_tools import Gate, make_box, run

FS3 = next((p / "shared" / "eval" / "intercode-nl2bash-fs3" for p in Path(__file__).resolve().parents
            if (p / "shared" / "eval" / "intercode-nl2bash-fs3").is_dir()), Path("/nonexistent"))
"""The data set beside the checkout (a worktree sits one level deeper than the main checkout)."""


def _maxdepth_golds() -> list[str]:
    queries = FS3 / "queries.json"
    if not queries.is_file():
        return []
    return [q["gold"] for q in json.loads(queries.read_text()) if "-maxdepth" in q["gold"]]


GOLDS = _maxdepth_golds()


def _remap(text: str, root: Path) -> str:
    """The data set's absolute paths under ``root`` (``-t /`` is the move-to-root target)."""
    return (text.replace("/workspace", f"{root}/workspace").replace("/backup", f"{root}/backup")
            .replace(" -t / ", f" -t {root}/ "))


def _build(root: Path) -> Path:
    root.mkdir(parents=True)
    script = _remap((FS3 / "setup.sh").read_text(), root)
    subprocess.run(["bash", "-c", script], cwd=root, capture_output=True, timeout=60, check=False)
    assert (root / "workspace" / "dir1" / "hello.c").is_file(), "setup.sh did not build the fs3 tree"
    return root


def _tree(root: Path) -> list[str]:
    """Every path under root, relative, with its kind: what a command changed shows here."""
    found = []
    for base, dirs, files in os.walk(root):
        rel = Path(base).relative_to(root)
        found += [f"{rel / d}/" for d in dirs] + [str(rel / f) for f in files]
    return sorted(found)


def _bash(command: str, root: Path) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def _ours(command: str, root: Path) -> tuple[str, Gate]:
    gate = Gate(True)
    result = run(make_box(root.parent / "home", root, gate).call("shell", {"command": command}))
    assert result.ok, result.output
    *_, end = re.finditer(r"(?m)^\[exit code (-?\d+)\]$", result.output)  # notes may follow it
    assert end.group(1) == "0", result.output
    return result.output[: end.start()], gate


def test_fs3_has_the_maxdepth_commands() -> None:
    if not FS3.is_dir():
        pytest.skip(f"shared eval data not present at {FS3}")
    assert len(GOLDS) == 3 and all("find /workspace -maxdepth 1" in g for g in GOLDS)


@pytest.mark.parametrize("gold", GOLDS)
def test_fs3_maxdepth_gold_prints_what_bash_prints(gold: str, tmp_path: Path) -> None:
    plain, ours = _build(tmp_path / "plain" / "fs"), _build(tmp_path / "ours" / "fs")
    assert _tree(plain) == _tree(ours)
    if "-exec" not in gold:  # read-only: the same tree, the same lines in the same order
        expected = _bash(_remap(gold, ours), ours)
        printed, gate = _ours(_remap(gold, ours), ours)
        assert printed == expected and gate.asked == []
        assert f"{ours}/workspace/dir1\n" in printed and f"{ours}/workspace/test/dir1\n" not in printed
        return
    expected = _bash(_remap(gold, plain), plain).replace(str(plain), "<root>")
    printed, gate = _ours(_remap(gold, ours), ours)
    assert printed.replace(str(ours), "<root>") == expected
    assert gate.asked and gate.asked[0].command == _remap(gold, ours)  # approved exactly as written
    assert _tree(plain) == _tree(ours)
    changed = set(_tree(_build(tmp_path / "fresh" / "fs"))) ^ set(_tree(ours))
    assert changed and all(p.count("/") <= 1 for p in changed), sorted(changed)  # subfolders untouched
