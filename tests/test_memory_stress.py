"""Many real processes at once: writers (one SIGKILLed), ingesters, a Dreamer and readers.

Every Megram whose write() returned (its id is then appended to the writer's ack file)
must end up stored exactly once, whatever ran concurrently and whoever was killed.  A
Dreamer killed mid-pass must leave the store as before the pass or as after it.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from artoo.config.contracts import Megram
from artoo.memory.schema import tag_key
from artoo.memory.store import MemoryStore

ROOT = Path(__file__).resolve().parents[1]

WRITER = """
import os, sys, time
from datetime import UTC, datetime
from pathlib import Path
from artoo.config.contracts import Megram
from artoo.memory.store import MemoryStore
home, ack, n, w = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
store = MemoryStore(home, rotate_bytes=32 * 1024)
fd = os.open(ack, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for i in range(n):
    mid = f"w{w}-{i}"
    store.write(Megram(id=mid, created_at=datetime.now(UTC), space=f"intent:w{w}", entity="env:local",
                       content="x" * (i % 50), state="success", f=0.9, sigma=1.0, k=0.05))
    os.write(fd, (mid + "\\n").encode())
    if i % 5 == 0:
        time.sleep(0.002)
store.close()
"""

LOOPER = """
import sys, time
from pathlib import Path
from artoo.config.protocol import Consolidation
from artoo.memory.dreamer import dream
from artoo.memory.store import MemoryStore
home, stop, role = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
store = MemoryStore(home, reader_idle_s=0.05)
distil = lambda space, entity, kind, megrams: Consolidation(kind=kind, content=f"{kind} for {space}")
while not stop.exists():
    if role == "ingest":
        store.ingest()
    elif role == "dream":
        dream(store, distil=distil)
    else:
        for w in range(5):
            store.query_mk(f"intent:w{w}", "env:local")
        store.query_c("intent:w1", "env:local")
    time.sleep(0.02)
store.close()
"""


def _spawn(script: str, *args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], cwd=ROOT, env=env)


def _acked(path: Path) -> list[str]:
    if not path.exists():
        return []
    data = path.read_text()
    complete = data[: data.rfind("\n") + 1]  # a killed writer may leave half an ack line
    return complete.splitlines()


def test_every_acknowledged_megram_survives_exactly_once(tmp_path):
    home, stop = tmp_path / "home", tmp_path / "stop"
    MemoryStore(home).ingest()  # create the database before the crowd arrives
    writers = [_spawn(WRITER, home, tmp_path / f"ack-{w}", 2500, w) for w in range(5)]
    loopers = [_spawn(LOOPER, home, stop, role) for role in ("ingest", "ingest", "dream", "read", "read")]
    deadline = time.monotonic() + 30
    while len(_acked(tmp_path / "ack-0")) < random.randint(100, 1000) and time.monotonic() < deadline:
        time.sleep(0.005)
    writers[0].send_signal(signal.SIGKILL)
    try:
        codes = [w.wait(timeout=60) for w in writers]
    finally:
        stop.touch()
        looper_codes = [p.wait(timeout=60) for p in loopers]
    assert codes[0] == -signal.SIGKILL and codes[1:] == [0, 0, 0, 0]
    assert looper_codes == [0] * len(loopers)

    store = MemoryStore(home)
    store.ingest()
    assert list(store.spool_dir.glob("*.jsonl")) == []  # every writer is gone, so every spool is retired
    store.close()
    con = duckdb.connect(str(home / "memory" / "memory.duckdb"), read_only=True)
    counts = dict(con.execute("SELECT id, count(*) FROM megrams WHERE level = 'M' GROUP BY id").fetchall())
    promoted = con.execute("SELECT count(*) FROM megrams WHERE level = 'C'").fetchone()[0]
    con.close()
    acked = {w: _acked(tmp_path / f"ack-{w}") for w in range(5)}
    assert 0 < len(acked[0]) < 2500, "the killed writer should have died mid-run"
    assert all(len(acked[w]) == 2500 for w in range(1, 5))
    missing = [i for ids in acked.values() for i in ids if counts.get(i) != 1]
    assert missing == []
    assert max(counts.values()) == 1
    assert set(counts) <= {f"w{w}-{i}" for w in range(5) for i in range(2500)}
    assert promoted >= 1  # the concurrent Dreamer did consolidate


DREAMER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from artoo.memory.dreamer import dream
from artoo.memory.store import MemoryStore
dream(MemoryStore(Path(sys.argv[1])), datetime.fromisoformat(sys.argv[2]))
"""


def _template(tmp_path: Path, rows: int) -> Path:
    """A store with ``rows`` Megrams of which every other one is due for forgetting."""
    home = tmp_path / "template"
    store = MemoryStore(home)
    with store.exclusive() as con:
        con.execute(
            "CREATE TEMP TABLE pairs AS SELECT * FROM (VALUES "
            + ", ".join(f"({p}, 'intent:p{p}', {tag_key(f'intent:p{p}', 'env:local')})" for p in range(100))
            + ") t(p, space, tag)"
        )
        con.execute(f"""INSERT INTO megrams
            SELECT 'id-' || i, 'M', TIMESTAMP '2025-01-01' - to_days(CAST((i % 2) * 200 AS INTEGER)), NULL,
                   pairs.space, 'env:local', '', 'success', 0.5, 1.0, 0.05, []::VARCHAR[], pairs.tag
            FROM range({rows}) r(i) JOIN pairs ON pairs.p = i % 100 ORDER BY pairs.tag""")
    store.close()
    return home


def test_a_dreamer_killed_mid_pass_leaves_the_store_consistent(tmp_path):
    rows = 400_000
    template = _template(tmp_path, rows)
    outcomes = []
    for round_no in range(3):
        home = tmp_path / f"round-{round_no}"
        shutil.copytree(template, home)
        dreamer = _spawn(DREAMER, home, "2025-01-01T00:00:00+00:00")
        time.sleep(random.uniform(0.6, 2.0))
        dreamer.send_signal(signal.SIGKILL)
        dreamer.wait(timeout=30)
        store = MemoryStore(home)
        stats = store.stats()
        store.close()
        remaining, forgotten = stats["total"], stats["journal"].get("forget", 0)
        assert (remaining, forgotten) in ((rows, 0), (rows // 2, rows // 2)), (remaining, forgotten)
        outcomes.append("rolled back" if forgotten == 0 else "committed")
    print("killed Dreamer passes:", outcomes)


INGESTER = """
import sys, time
from pathlib import Path
from artoo.memory.store import MemoryStore
store = MemoryStore(Path(sys.argv[1]))
print("ready", flush=True)
started = time.monotonic()
store.ingest()
print(time.monotonic() - started, flush=True)
"""


def _ingester(home: Path) -> subprocess.Popen:
    """An ingesting process, returned once it is about to ingest."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", INGESTER, str(home)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _spooled(tmp_path: Path, count: int) -> Path:
    """A home whose spool holds ``count`` Megrams (on top of a few already ingested)."""
    home = tmp_path / "spooled"
    store = MemoryStore(home)
    store.write(Megram(id="old-0", created_at=datetime.now(UTC), space="intent:p0", entity="env:local",
                       content="", state="success", f=0.9, sigma=1.0, k=0.05))
    store.ingest()
    now = datetime.now(UTC)
    for i in range(count):
        store.write(Megram(id=f"new-{i}", created_at=now, space=f"intent:p{i % 100}", entity="env:local",
                           content="y" * (i % 30), state="success", f=0.9, sigma=1.0, k=0.05))
    store.close()
    return home


def test_an_ingester_killed_mid_ingest_commits_all_or_nothing_and_the_next_one_finishes(tmp_path):
    count = 150_000
    template = _spooled(tmp_path, count)
    shutil.copytree(template, tmp_path / "timed")
    timed = _ingester(tmp_path / "timed")
    whole = float(timed.stdout.readline())  # kills land from the parse to the commit's checkpoint
    assert timed.wait(timeout=30) == 0
    outcomes = []
    for round_no, fraction in enumerate((0.3, 0.6, 0.75, 0.85, 0.92, 1.0)):
        home = tmp_path / f"round-{round_no}"
        shutil.copytree(template, home)
        ingester = _ingester(home)
        time.sleep(whole * fraction)
        ingester.send_signal(signal.SIGKILL)
        ingester.wait(timeout=30)
        con = duckdb.connect(str(home / "memory" / "memory.duckdb"), read_only=True)
        after_kill = con.execute("SELECT count(*) FROM megrams").fetchone()[0]
        con.close()
        assert after_kill in (1, 1 + count), after_kill  # the batch and its offsets commit together
        outcomes.append("rolled back" if after_kill == 1 else "committed")
        store = MemoryStore(home)
        assert store.ingest() == (count if after_kill == 1 else 0)
        store.close()
        con = duckdb.connect(str(home / "memory" / "memory.duckdb"), read_only=True)
        total, distinct = con.execute("SELECT count(*), count(DISTINCT id) FROM megrams").fetchone()
        con.close()
        assert total == distinct == 1 + count
    print(f"ingest alone {whole:.2f} s; killed ingests:", outcomes)
