"""The single-writer protocol in one process and across fork: readers, writers, children."""

from __future__ import annotations

import multiprocessing
import sys
import threading
from datetime import UTC, datetime

import pytest

from config.contracts import Megram
from memory.store import MemoryStore

NOW = datetime.now(UTC)


def mk(i, space="intent:a_b_c") -> Megram:
    return Megram(
        id=f"m-{i}",
        created_at=NOW,
        space=space,
        entity="env:local",
        content="",
        state="success",
        f=0.5,
        sigma=1.0,
        k=0.05,
    )


def test_writer_waits_for_an_idle_reader_and_the_reader_then_sees_its_rows(tmp_path):
    reader = MemoryStore(tmp_path, reader_idle_s=0.2)
    writer = MemoryStore(tmp_path)
    assert reader.stats()["total"] == 0  # the reader now holds a read-only connection
    writer.write(mk(1))
    assert writer.ingest() == 1  # granted once the reader's idle connection is closed
    assert reader.stats()["total"] == 1
    reader.close()
    writer.close()


def test_busy_reader_steps_aside_for_a_waiting_writer(tmp_path):
    reader = MemoryStore(tmp_path, reader_idle_s=60.0)  # never idles out during the test
    writer = MemoryStore(tmp_path)
    errors: list[BaseException] = []
    stop = threading.Event()

    def query_loop():
        try:
            while not stop.is_set():
                reader.query_mk("intent:a_b_c", "env:local")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=query_loop)
    thread.start()
    try:
        for i in range(10):
            writer.write(mk(i))
            writer.ingest()
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert reader.stats()["total"] == 10
    assert reader.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(5.0)
    reader.close()
    writer.close()


def _child_writes(store: MemoryStore, start: int) -> None:
    for i in range(start, start + 5):
        store.write(mk(i))


def test_a_forked_child_writes_through_its_own_spool(tmp_path):
    store = MemoryStore(tmp_path)
    store.write(mk(0))
    child = multiprocessing.get_context("fork").Process(target=_child_writes, args=(store, 100))
    child.start()
    child.join()
    assert child.exitcode == 0
    assert len(list(store.spool_dir.glob("*.jsonl"))) == 2
    assert store.ingest() == 6
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(3.0)
    store.close()


def _child_with_inherited_connection(store: MemoryStore) -> None:
    store.write(mk(200))
    try:
        store.query_mk("intent:a_b_c", "env:local")
    except RuntimeError as exc:
        sys.exit(0 if "forked" in str(exc) else 4)
    sys.exit(3)


def test_a_child_refuses_duckdb_inherited_across_fork_but_still_writes(tmp_path):
    store = MemoryStore(tmp_path, reader_idle_s=30.0)
    store.query_mk("intent:a_b_c", "env:local")  # connection open at fork time
    child = multiprocessing.get_context("fork").Process(
        target=_child_with_inherited_connection, args=(store,)
    )
    child.start()
    child.join()
    assert child.exitcode == 0
    assert store.ingest() == 1
    store.close()


def test_closed_store_refuses_work(tmp_path):
    store = MemoryStore(tmp_path)
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.write(mk(1))
    with pytest.raises(RuntimeError, match="closed"):
        store.query_mk("intent:a_b_c", "env:local")
