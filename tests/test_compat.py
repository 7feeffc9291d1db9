"""The undocumented Prefect behaviour artoo relies on (config/compat.py), checked against the installed Prefect.

Each test names the wrapper it guards: when a Prefect upgrade changes that behaviour, the failure
says which part of artoo.config.compat to rewrite.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import threading
import time
import tomllib
import uuid
from pathlib import Path

import pytest

from artoo.config import compat

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("installed", "says"), [("3.8.8", None), ("3.9.1", "Prefect 3.9.1 is installed"),
                                                  ("3.8.7", "written for Prefect 3.8.8")])
def test_version_note(installed: str, says: str | None):
    note = compat.version_note(installed)
    assert note is None if says is None else (says in note and "\n" not in note)


def test_the_pin_is_the_one_pyproject_installs():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [re.sub(r"\s", "", d) for d in deps if re.match(r"prefect\s*[=<>~!]", d)]
    assert pins == [f"prefect=={compat.PINNED_PREFECT}"], "config/compat.py PINNED_PREFECT must match pyproject"
    assert compat.prefect_version() == compat.PINNED_PREFECT, (
        f"Prefect {compat.prefect_version()} is installed, artoo is pinned to {compat.PINNED_PREFECT}: "
        "re-check every wrapper in config/compat.py against the new release")


def test_process_wide_settings_reach_threads_started_outside_the_settings_context():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    seen: list = []

    def read() -> None:  # a new thread starts with an empty contextvars context, like Prefect's workers
        seen.append(PREFECT_API_URL.value())

    url = "http://127.0.0.1:9/api"
    with temporary_settings(updates={PREFECT_API_URL: url}):
        thread = threading.Thread(target=read)
        thread.start(), thread.join()
        with compat.process_wide_settings():
            thread = threading.Thread(target=read)
            thread.start(), thread.join()
    thread = threading.Thread(target=read)
    thread.start(), thread.join()
    assert seen[1] == url, ("compat.process_wide_settings no longer reaches other threads: Prefect's "
                            "prefect.context._temporary_global_settings_context changed")
    assert seen[0] != url and seen[2] != url, "the process-wide settings must apply only inside the block"


def test_prefect_server_app_factory_takes_ephemeral_and_final():
    from prefect.server.api.server import create_app

    params = inspect.signature(create_app).parameters
    assert {"ephemeral", "final"} <= set(params), (
        "compat.prefect_server_app: prefect.server.api.server.create_app lost its ephemeral/final arguments")


def test_prefect_ephemeral_server_is_one_instance_per_process_and_stops():
    from prefect.server.api.server import SubprocessASGIServer

    first = SubprocessASGIServer()
    assert SubprocessASGIServer() is first, (
        "compat.stop_prefect_ephemeral_server: SubprocessASGIServer() no longer returns Prefect's one ephemeral "
        "server instance")
    compat.stop_prefect_ephemeral_server()
    assert SubprocessASGIServer() is not first, "stop() no longer forgets the stopped instance"
    compat.stop_prefect_ephemeral_server()


def test_a_named_subflow_gets_its_name_verbatim_through_prefects_public_path(prefect_api):
    """compat.named: braces and all, the name is used as given (never ``str.format``-ed with the parameters),
    through Prefect's own create-then-rename path (#27: no private engine names); the run stays in its
    parent's run graph, and the flow it copies is unchanged."""
    import asyncio

    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    @flow(name="compat-child", persist_result=False)
    async def child(x: int) -> tuple[str, str]:
        return flow_run.name, str(flow_run.id)

    @flow(name="compat-parent", flow_run_name="compat-parent-{x}", persist_result=False)
    async def parent(x: int) -> list[tuple[str, str]]:
        return [await compat.named(child, "subtask-1.1 · print {x} and {}")(x),
                await compat.named(child, "subtask-1.2 · second")(x)]

    runs = asyncio.run(parent(7))
    assert [name for name, _ in runs] == ["subtask-1.1 · print {x} and {}", "subtask-1.2 · second"]
    assert child.flow_run_name is None, "compat.named must not change the flow it copies"

    async def stored(run_id: str):
        async with get_client() as client:
            return await client.read_flow_run(run_id)

    for name, run_id in runs:
        record = asyncio.run(stored(run_id))
        assert (record.name, record.state.type.value) == (name, "COMPLETED")
        assert record.parent_task_run_id is not None, "a named subflow must stay in its parent's run graph"


def test_drain_events_reaches_prefects_events_worker():
    """compat.drain_events: the Auditor's only way to the events worker; fails here when Prefect moves it."""
    from prefect.events.worker import EventsWorker

    assert "timeout" in inspect.signature(EventsWorker.drain_all).parameters
    started = time.monotonic()
    compat.drain_events(timeout=2.0)  # nothing queued in this process: returns at once, never waits the timeout
    assert time.monotonic() - started < 2.0


ENGINE_PRIVATES = ("_flow_run_" + "suspension", "_is_subflow_" + "tracking_task", "_flow_run_" + "name_set")
"""Prefect engine internals the old subflow re-implementation used (spelt in parts, so that #27's
``git grep`` for them finds real uses only)."""


def test_no_module_reaches_a_private_prefect_engine_name():
    """#27: subflow creation is Prefect's own; no re-implementation of its engine is left to break."""
    root = Path(compat.__file__).resolve().parents[1]
    sources = [p for folder in ("artoo", "config", "flows", "tasks", "memory", "bench")
               for p in (root / folder).rglob("*.py")]
    assert len(sources) > 50
    found = [(p.name, name) for p in sources for name in ENGINE_PRIVATES if name in p.read_text()]
    assert found == []
    assert '"/flow_runs/"' not in Path(compat.__file__).read_text()


IGNORES_ONE_SIGTERM = """
import signal, sys, time
seen = []
def on_term(*_):
    seen.append(1)
    if len(seen) > 1:
        sys.exit(3)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(60)
"""
"""A process that misses its first SIGTERM (as an asyncio flow can) and exits 3 on the second."""


@pytest.fixture
def prefect_kill():
    """Prefect's ProcessManager.kill, put back after the test (repeat_sigterm_while_killing patches the class)."""
    from prefect.runner._process_manager import ProcessManager

    original = ProcessManager.kill
    yield original
    ProcessManager.kill = original


def stop_one_that_misses_a_sigterm(grace_s: float) -> int:
    """Track the process in a ProcessManager the way the runner does, stop it with ``kill``; its exit code."""
    import anyio
    from prefect.runner._process_manager import ProcessHandle, ProcessManager

    async def main() -> int:
        process = await anyio.open_process([sys.executable, "-c", IGNORES_ONE_SIGTERM], stdout=subprocess.PIPE)
        assert b"ready" in await process.stdout.receive()  # its handler is installed
        async with ProcessManager() as manager:
            run_id = uuid.uuid4()
            await manager.add(run_id, ProcessHandle(process))
            await manager.kill(run_id, grace_seconds=grace_s)
            await manager.remove(run_id)
        return await process.wait()

    return anyio.run(main)


def test_prefect_stops_a_flow_run_process_with_one_sigterm_then_sigkill(prefect_kill):
    """What repeat_sigterm_while_killing works around: the pinned runner never repeats its SIGTERM."""
    assert stop_one_that_misses_a_sigterm(grace_s=3.0) == -9


def test_repeat_sigterm_while_killing_lets_a_process_that_missed_one_end_on_its_own(prefect_kill):
    compat.repeat_sigterm_while_killing(every_s=0.3)
    compat.repeat_sigterm_while_killing(every_s=0.3)  # idempotent: wraps Prefect's kill once
    from prefect.runner._process_manager import ProcessManager

    assert ProcessManager.kill.artoo_original is prefect_kill
    assert stop_one_that_misses_a_sigterm(grace_s=30.0) == 3
