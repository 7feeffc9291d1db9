"""bench.cpu: the cluster benchmark's CPU accounting reads /proc right.

A tree's total must include a child that already exited (reaped: its time moved into the
parent's cutime) and a child still running, and nothing of an unrelated process.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from artoo.bench.cpu import TICK, machine_busy_s, postmaster_pid, tree_cpu_s

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
LIVE = "print('burnt', flush=True)\ntime.sleep(30)\n"
PARENT = (f"LIVE = {LIVE!r}\n" +
          BURN.format(s=0.3) + "import subprocess, sys\n"
          f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.3)!r}])\n"  # reaped: lands in cutime
          f"child = subprocess.Popen([sys.executable, '-c', {BURN.format(s=0.3)!r} + LIVE], stdout=subprocess.PIPE)\n"
          "child.stdout.readline()\nprint(child.pid, flush=True)\nchild.wait()\n")  # once the child has burnt


def test_a_tree_counts_itself_its_reaped_and_its_live_children():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    live = None
    try:
        live = int(parent.stdout.readline())  # the live child has burnt its 0.3 s and sleeps
        cpu = tree_cpu_s({"tree": [parent.pid], "live child": [live], "gone": [2**22 + 7]})
    finally:
        parent.kill()
        parent.wait()
        if live:
            subprocess.run(["kill", str(live)], check=False)
    assert cpu["tree"] >= 0.85  # 3 × 0.3 s of burning, whatever the interpreters' start-up added
    assert 0.25 <= cpu["live child"] < cpu["tree"] - 0.5
    assert cpu["gone"] == 0.0


def test_the_machine_counter_is_bounded_by_its_cores_and_the_wall_clock():
    started = time.monotonic()
    busy0, total0 = machine_busy_s()
    time.sleep(0.2)
    busy1, total1 = machine_busy_s()
    elapsed = time.monotonic() - started
    cores = sum(line[3].isdigit() for line in Path("/proc/stat").read_text().splitlines() if line.startswith("cpu"))
    assert 0 <= busy1 - busy0 <= total1 - total0 + 1e-6  # a saturated machine: equal, up to float rounding
    assert 0 < total1 - total0 <= cores * (elapsed + 2 / TICK)  # every core's ticks, at most one more each end


@pytest.mark.parametrize(("content", "expected"), [("4242\n/var/lib/pg\n", 4242), ("", None), ("x\n", None)])
def test_postmaster_pid_reads_the_first_line(tmp_path, content, expected):
    (tmp_path / "postmaster.pid").write_text(content)
    assert postmaster_pid(tmp_path) == expected


def test_postmaster_pid_of_a_stopped_cluster_is_none(tmp_path):
    assert postmaster_pid(tmp_path) is None
