"""A task suite on disk, its fresh trees, and InterCode's score.

A suite is any folder with ``queries.json`` (``[{"query": …, "gold": …}]``) and ``setup.sh``
(the script that builds the tree the queries refer to).  The originals run in a container
where ``/system`` or ``/workspace`` is real; here every top-level directory that setup.sh
creates (``mkdir … /NAME``) is remapped under one temporary base, in the set-up script, the
gold command and the request alike, so nothing outside the base is ever touched.  The base
path is the same for every task of an eval (each task gets the tree rebuilt from scratch), so
the gold's run and the agent's run see byte-identical paths and no output needs rewriting.

Score (InterCode's two parts, both required): the file-system change set of the agent's run
equals the gold's on a fresh tree, and every line the gold printed appears in artoo's answer.
The tree is built once per task and each run gets an exact copy (``keep_pristine``), so the gold's
run and artoo's start from the same bytes and the same mtimes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from artoo.config.errors import ConfigurationError
from artoo.tasks.tools import sandbox

TOP_DIRS = re.compile(r"mkdir\s+(?:-\S+\s+|\"[^\"]*\"\s+)*(/[A-Za-z0-9_.-]+)")
"""Top-level directories the set-up script creates: the prefixes to remap."""
SETUP_TIMEOUT_S = 60


@dataclass(frozen=True)
class Task:
    """One suite entry, with its paths already remapped."""

    index: int
    query: str
    gold: str
    original_query: str
    original_gold: str


@dataclass
class Suite:
    """A suite folder: its tasks and set-up script, remapped under ``base``."""

    folder: Path
    base: Path
    prefixes: dict[str, str]
    setup: str
    tasks: list[Task] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The folder's name, e.g. intercode-nl2bash-fs3."""
        return self.folder.name


def remap(text: str, prefixes: dict[str, str]) -> str:
    """Every absolute use of an original prefix (``/system``, ``/system/x``) rewritten to its new place."""
    for old, new in prefixes.items():
        text = re.sub(rf"(?<![\w./~-]){re.escape(old)}(?![\w.-])", new.replace("\\", r"\\"), text)
    return text


def load_suite(folder: Path, base: Path) -> Suite:
    """Read and remap a suite; ConfigurationError when the folder is not one."""
    folder = Path(folder).expanduser()
    queries, setup = folder / "queries.json", folder / "setup.sh"
    if not queries.is_file() or not setup.is_file():
        raise ConfigurationError(f"{folder} is not a task suite: it needs queries.json and setup.sh")
    try:
        items = json.loads(queries.read_text(encoding="utf-8"))
        if not isinstance(items, list):
            raise TypeError("not a list")
        pairs = [(str(item["query"]), str(item["gold"])) for item in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"{queries}: expected a JSON list of {{query, gold}} objects ({exc})") from exc
    script = setup.read_text(encoding="utf-8")
    tops = sorted(set(TOP_DIRS.findall(script)), key=len, reverse=True)
    if not tops:
        raise ConfigurationError(f"{setup} creates no top-level directory (mkdir /NAME): nothing to remap")
    prefixes = {top: str(base / top.lstrip("/")) for top in tops}
    tasks = [Task(i, remap(q, prefixes), remap(g, prefixes), q, g) for i, (q, g) in enumerate(pairs)]
    return Suite(folder=folder, base=base, prefixes=prefixes, setup=remap(script, prefixes), tasks=tasks)


def confined(argv: list[str], base: Path) -> list[str]:
    """argv inside bubblewrap with only ``base`` writable (the eval refuses to run without it: we may be root)."""
    binary = sandbox.find_bwrap()
    if binary is None:
        raise ConfigurationError("artoo eval needs a working bubblewrap: suite scripts and gold commands "
                                 f"must not touch this machine ({sandbox.bwrap_problem()})")
    return sandbox.wrap(argv, sandbox.Sandbox(base, False, sandbox.Limits(), binary))


def build_tree(suite: Suite) -> None:
    """A fresh tree: the base emptied, then the remapped set-up script run inside it."""
    if suite.base.exists():
        shutil.rmtree(suite.base)
    suite.base.mkdir(parents=True)
    subprocess.run(confined(["bash", "-c", suite.setup], suite.base), cwd=suite.base, capture_output=True,
                   timeout=SETUP_TIMEOUT_S, env=sandbox.scrubbed_env(os.environ))


def keep_pristine(suite: Suite) -> Path:
    """A fresh tree, built once and kept beside the base: the gold and artoo each get an exact copy of it.

    Set-up scripts stamp the clock into the tree (every file's mtime, ``touch``, ``tar`` archives
    holding those mtimes), so two builds a second apart differ; copies of one build do not.
    """
    build_tree(suite)
    pristine = suite.base.with_name(suite.base.name + "-pristine")
    if pristine.exists():
        shutil.rmtree(pristine)
    shutil.copytree(suite.base, pristine, symlinks=True)
    return pristine


def restore_tree(suite: Suite, pristine: Path) -> None:
    """The base replaced by an exact copy of ``pristine`` (content, kinds, links, modes and mtimes)."""
    if suite.base.exists():
        shutil.rmtree(suite.base)
    shutil.copytree(pristine, suite.base, symlinks=True)


@dataclass(frozen=True)
class GoldRun:
    """What the gold command did on a fresh tree."""

    output: str
    exit_code: int | None
    changes: dict[str, str]


def run_confined(command: str, base: Path, timeout_s: float = 30.0) -> tuple[str, int | None]:
    """Run one command as the shell tool would (stdout+stderr merged, cwd = base), confined to ``base``."""
    try:
        done = subprocess.run(confined(["bash", "-c", command], base), cwd=base, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s,
                              env=sandbox.scrubbed_env(os.environ))
    except subprocess.TimeoutExpired as exc:
        return (exc.stdout or b"").decode("utf-8", "replace"), None
    return done.stdout.decode("utf-8", "replace"), done.returncode


def run_gold(suite: Suite, task: Task, pristine: Path) -> GoldRun:
    """Run the gold command on a copy of the task's tree, and record its output and change set."""
    restore_tree(suite, pristine)
    before = snapshot(suite.base)
    output, code = run_confined(task.gold, suite.base)
    return GoldRun(output=output, exit_code=code, changes=diff(before, snapshot(suite.base)))


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ``root``: (kind, content digest or link target, permission bits, mtime)."""
    state: dict[str, tuple] = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(here) / name
            rel = str(path.relative_to(root))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(path), 0, 0)
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir", "", stat.S_IMODE(info.st_mode), 0)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(info.st_mode) else ""
                state[rel] = ("file", digest, stat.S_IMODE(info.st_mode), info.st_mtime_ns)
    return state


def diff(before: dict[str, tuple], after: dict[str, tuple]) -> dict[str, str]:
    """The change set: path → ``deleted`` or its new state (kind, digest, mode; ``touched`` for mtime only)."""
    changes: dict[str, str] = {}
    for path in before.keys() - after.keys():
        changes[path] = "deleted"
    for path, now in after.items():
        old = before.get(path)
        if old == now:
            continue
        if old is not None and old[:3] == now[:3]:
            changes[path] = "touched"
        else:
            changes[path] = f"{now[0]}:{now[1]}:{now[2]:o}"
    return dict(sorted(changes.items()))


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def answer_text(output: object) -> str:
    """All text of artoo's answer (the FinalResult's merged output), strings found at any depth."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return "\n".join(answer_text(v) for v in output.values())
    if isinstance(output, list):
        return "\n".join(answer_text(v) for v in output)
    return "" if output is None else str(output)


def output_recall(gold: GoldRun, answer: str) -> float:
    """Share of the gold's printed lines found among the answer's lines (1.0 when the gold exited non-zero
    or printed nothing: then only the file system is compared)."""
    wanted = set(_lines(gold.output))
    if gold.exit_code != 0 or not wanted:
        return 1.0
    return len(wanted & set(_lines(answer))) / len(wanted)


def score(gold: GoldRun, changes: dict[str, str], answer: str) -> dict:
    """InterCode's rule: solved when the change sets are equal and every gold line was printed."""
    fs_match = changes == gold.changes
    recall = output_recall(gold, answer)
    return {"solved": fs_match and recall == 1.0, "fs_match": fs_match, "output_recall": round(recall, 3)}
