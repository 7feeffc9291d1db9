"""bench.cpu: the cluster benchmark's CPU accounting reads /proc right.

A tree's total must include a child that already exited (reaped: its time moved into the
parent's cutime) and a child still running, and nothing of an unrelated process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from artoo.bench.cpu import machine_busy_s, postmaster_pid, tree_cpu_s

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
PARENT = (BURN.format(s=0.3) + "import subprocess, sys\n"
          f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.3)!r}])\n"  # reaped: lands in cutime
          f"child = subprocess.Popen([sys.executable, '-c', {BURN.format(s=0.3)!r} + 'time.sleep(30)'])\n"
          "print(child.pid, flush=True)\nchild.wait()\n")


def test_a_tree_counts_itself_its_reaped_and_its_live_children():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        live = int(parent.stdout.readline())
        time.sleep(1.0)  # the live child burns its 0.3 s, then sleeps
        cpu = tree_cpu_s({"tree": [parent.pid], "live child": [live], "gone": [2**22 + 7]})
    finally:
        parent.kill()
        parent.wait()
        subprocess.run(["kill", str(live)], check=False)
    assert cpu["tree"] >= 0.85  # 3 × 0.3 s of burning, whatever the interpreters' start-up added
    assert 0.25 <= cpu["live child"] < cpu["tree"] - 0.5
    assert cpu["gone"] == 0.0


def test_the_machine_counter_moves_and_is_bounded_by_its_cores():
    busy0, total0 = machine_busy_s()
    time.sleep(0.2)
    busy1, total1 = machine_busy_s()
    assert 0 <= busy1 - busy0 <= total1 - total0
    assert total1 - total0 <= (os.cpu_count() or 1) * 0.2 * 3  # ticks in 0.2 s, all cores, with slack


@pytest.mark.parametrize(("content", "expected"), [("4242\n/var/lib/pg\n", 4242), ("", None), ("x\n", None)])
def test_postmaster_pid_reads_the_first_line(tmp_path, content, expected):
    (tmp_path / "postmaster.pid").write_text(content)
    assert postmaster_pid(tmp_path) == expected


def test_postmaster_pid_of_a_stopped_cluster_is_none(tmp_path):
    assert postmaster_pid(tmp_path) is None
