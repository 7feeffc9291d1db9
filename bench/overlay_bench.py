"""What Law 1 by effect costs per shell command: the overlay's set-up plus the change-set diff.

``python -m artoo.bench.overlay_bench [FILES] [COMMANDS]`` (and ``artoo bench --only
law1_overlay``) builds a workspace of FILES files (10,000 by default) and runs the same
commands through the real ToolBox twice, interleaved so both see the same machine load:
once in the plain bubblewrap sandbox (``tools.overlay = off``: the text judge asks before
the write, and the bench says yes at once) and once transactionally (``auto``: an overlay
is mounted, the command runs, its change set is computed and committed).  The difference
of the medians is what the transaction adds; the target is at most 50 ms.  Each command
writes one new file and reads one existing one, so every transactional run has a change set
to compute and commit.  Where fuse-overlayfs works too, a third column runs the same commands
on its view (``fuse``: what an ordinary user's workspace holding files of another group
costs), for the table only.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from artoo.bench.report import Figure, Section, at_most, fmt, table

TARGET_MS = 50.0


def build_workspace(root: Path, files: int) -> Path:
    """``files`` small files in 100-file directories under ``root/workspace``."""
    workspace = root / "workspace"
    for i in range(files):
        folder = workspace / f"d{i // 100:03d}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"line {i}\n")
    return workspace


def _box(root: Path, workspace: Path, overlay: str):
    from artoo.config.settings import load_settings
    from artoo.tasks.tools import ToolBox

    settings = load_settings(home=str(root / "home"), workspace=str(workspace),
                             tools={"overlay": overlay, "shell_timeout_s": 30.0})

    async def answer(_action) -> bool:  # only the text judge asks (each command writes a new file): yes
        return overlay == "off"

    return ToolBox(settings, workspace, answer)


async def _time(box, command: str) -> float:
    start = time.perf_counter()
    result = await box.call("shell", {"command": command})
    elapsed = (time.perf_counter() - start) * 1000
    if not result.ok:
        raise RuntimeError(f"benchmark command failed: {result.output[:300]}")
    return elapsed


def measure(files: int = 10_000, commands: int = 30, root: Path | None = None) -> dict:
    """Median ms per shell command, plain sandbox against transactional, side by side."""
    from artoo.tasks.tools import overlay, sandbox

    problem = (None if sandbox.find_bwrap() else f"no bubblewrap: {sandbox.bwrap_problem()}") or \
        overlay.overlay_problem()
    if problem:
        return {"files": files, "commands": 0, "skipped": problem}
    base = Path(tempfile.mkdtemp(prefix="artoo-bench-overlay-", dir=root))
    try:
        workspace = build_workspace(base, files)
        boxes = [("plain", _box(base, workspace, "off")), ("overlay", _box(base, workspace, "auto"))]
        if overlay.kind_problem("fuse") is None:
            boxes.append(("fuse", _box(base, workspace, "fuse")))
        samples: dict[str, list[float]] = {name: [] for name, _box_ in boxes}

        async def run_all() -> None:
            for i in range(-2, commands):  # two warm-up rounds, not counted
                for name, box in boxes:
                    ms = await _time(box, f"echo {i} > out-{name}-{i}.txt && cat d000/f00000.txt")
                    if i >= 0:
                        samples[name].append(ms)

        asyncio.run(run_all())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    plain_ms, overlay_ms = statistics.median(samples["plain"]), statistics.median(samples["overlay"])
    fuse = {"fuse_ms": round(statistics.median(samples["fuse"]), 2)} if samples.get("fuse") else {}
    return {"files": files, "commands": commands, "plain_ms": round(plain_ms, 2),
            "overlay_ms": round(overlay_ms, 2), "added_ms": round(overlay_ms - plain_ms, 2), **fuse}


def section(result: dict) -> Section:
    """The bench section: both medians and the added cost against its target."""
    out = Section("law1_overlay", "Law 1 by effect: overlay + change set per shell command", details=result)
    if "skipped" in result:
        out.notes.append(f"not measured: {result['skipped']}")
        out.figures.append(Figure("law1_overlay.added_ms", "overlay set-up + diff per command", None, "ms",
                                  f"≤ {TARGET_MS:g}", None, result["skipped"]))
        return out
    grid = table(f"One shell command on a {result['files']:,}-file workspace (median of {result['commands']})",
                 ["sandbox", "ms per command"])
    grid.add_row("bubblewrap (text judge)", fmt(result["plain_ms"]))
    grid.add_row("bubblewrap on an overlay + change set", fmt(result["overlay_ms"]))
    if "fuse_ms" in result:
        grid.add_row("bubblewrap on fuse-overlayfs + change set", fmt(result["fuse_ms"]))
    out.tables.append(grid)
    out.figures.append(Figure("law1_overlay.added_ms", "overlay set-up + diff + commit per command",
                              result["added_ms"], "ms", f"≤ {TARGET_MS:g}", at_most(result["added_ms"], TARGET_MS)))
    return out


def main(argv: list[str]) -> dict:
    """Print the figures (FILES and COMMANDS optional)."""
    files = int(argv[0]) if argv else 10_000
    commands = int(argv[1]) if len(argv) > 1 else 30
    result = measure(files, commands)
    print(result)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
