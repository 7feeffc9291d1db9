"""The single-writer protocol in one process and across fork: readers, writers, children."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime

import pytest

from artoo.config.contracts import Megram
from artoo.memory.store import MemoryStore

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


def _in_forked_child(body) -> int:
    """Run ``body()`` in a child made by a bare fork and return its exit code.

    os.fork rather than multiprocessing: the child must not run the interpreter's exit
    machinery, which other libraries' threads (Prefect's, in a full test run) may upset.
    """
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_forked_child_writes_through_its_own_spool(tmp_path):
    store = MemoryStore(tmp_path)
    store.write(mk(0))

    def child() -> int:
        for i in range(100, 105):
            store.write(mk(i))
        return 0

    assert _in_forked_child(child) == 0
    assert len(list(store.spool_dir.glob("*.jsonl"))) == 2
    assert store.ingest() == 6
    assert store.query_mk("intent:a_b_c", "env:local", NOW).attention == pytest.approx(3.0)
    store.close()


def test_a_child_refuses_duckdb_inherited_across_fork_but_still_writes(tmp_path):
    store = MemoryStore(tmp_path, reader_idle_s=30.0)
    store.query_mk("intent:a_b_c", "env:local")  # connection open at fork time

    def child() -> int:
        store.write(mk(200))
        try:
            store.query_mk("intent:a_b_c", "env:local")
        except RuntimeError as exc:
            return 0 if "forked" in str(exc) else 4
        return 3

    assert _in_forked_child(child) == 0
    assert store.ingest() == 1
    store.close()


def test_closed_store_refuses_work(tmp_path):
    store = MemoryStore(tmp_path)
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.write(mk(1))
    with pytest.raises(RuntimeError, match="closed"):
        store.query_mk("intent:a_b_c", "env:local")


def test_a_reader_kept_open_for_long_steps_aside_at_once_for_a_waiting_writer(tmp_path):
    """A task run keeps its reader across rounds (a long idle time); a writer still gets the database promptly."""
    reader = MemoryStore(tmp_path, reader_idle_s=600.0)
    writer = MemoryStore(tmp_path, lock_timeout_s=5.0)  # would fail after 5 s if the reader held on for its idle time
    assert reader.stats()["total"] == 0  # the reader now holds a read-only connection, then idles
    writer.write(mk(1))
    assert writer.ingest() == 1  # EnvironmentalFailure ("memory store busy") if the reader kept the database
    assert reader.stats()["total"] == 1  # reopened for the next query, with the writer's rows
    reader.close()
    writer.close()
