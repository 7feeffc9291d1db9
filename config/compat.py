"""Every use of a Prefect API that Prefect does not document, in one place.

artoo is pinned to one Prefect release (``PINNED_PREFECT``, the version in pyproject.toml).
The things it needs have no public equivalent in that release; each is wrapped here so a
Prefect upgrade is checked in one module, and tests/test_compat.py fails with a message that
names the wrapper when the pinned behaviour changes:

* :func:`process_wide_settings`: Prefect's event and log workers run in threads whose
  ``contextvars`` were copied before our settings applied; only replacing the process-global
  settings context reaches them (Prefect's own ``prefect_test_harness`` does exactly this).
* :func:`prefect_server_app`: the API app ``prefect server start`` serves (the uvicorn factory
  ``prefect.server.api.server:create_app``), built with the ``ephemeral``/``final`` arguments of
  Prefect's own one-shot server, so artoo can wrap it (Retry-After on 503, idle watch).
* :func:`stop_prefect_ephemeral_server`: stop the ephemeral server Prefect started by itself
  (``SubprocessASGIServer()`` returns that one instance; its ``stop`` is public).
* :func:`sqlite_immediate_writes`: make the server's SQLite write transactions ``BEGIN
  IMMEDIATE`` (Prefect's ``AioSqliteConfiguration.begin_transaction`` with ``with_for_update``,
  its own switch for that), so concurrent writers queue instead of deadlocking into 503s.
* :func:`repeat_sigterm_while_killing`: Prefect's runner stops a flow-run process with one SIGTERM
  and a SIGKILL 30 s later (``ProcessManager.kill``); the child's SIGTERM bridge raises
  ``TerminationSignal`` wherever its main thread is, and asyncio swallows a BaseException raised in a
  socket transport's callback or in a task other than the flow's (logged as "Fatal write error on
  socket transport"), so an async flow can miss that one signal and run on until the SIGKILL.  The
  wrapper repeats the SIGTERM while the process lives.
* :func:`drain_events`: wait until Prefect's events worker has shipped what was emitted
  (``EventsWorker.drain_all``, a classmethod of an internal module), so the Auditor reads a run's
  messages back complete.

Prefect is imported inside the functions: this module sits at the bottom layer and costs nothing
to import.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from importlib import metadata
from typing import Any

PINNED_PREFECT = "3.8.8"
"""The Prefect release this code was written and tested against (pyproject.toml pins it)."""

_NOTED: list[str] = []


def prefect_version() -> str:
    """The installed Prefect distribution's version."""
    return metadata.version("prefect")


def version_note(installed: str) -> str | None:
    """One plain line when ``installed`` is not the pinned Prefect, else None."""
    if installed == PINNED_PREFECT:
        return None
    return (f"artoo: Prefect {installed} is installed, but this artoo was written for Prefect {PINNED_PREFECT}; "
            f"if something fails, `pip install prefect=={PINNED_PREFECT}`.")


def note_prefect_version() -> str | None:
    """Say the version line on stderr once per process (only when it differs); returns it."""
    note = version_note(prefect_version())
    if note and not _NOTED:
        _NOTED.append(note)
        print(note, file=sys.stderr, flush=True)
    return note


@contextlib.contextmanager
def process_wide_settings() -> Iterator[None]:
    """Make the current Prefect settings context the process-wide default inside the block."""
    import prefect.context

    with prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
        yield


def prefect_server_app(ephemeral: bool = True) -> Any:
    """Prefect's API server app, built once per process; ``ephemeral`` as Prefect's one-shot server builds it
    (no UI, only the services Prefect runs there)."""
    from prefect.server.api.server import create_app

    return create_app(ephemeral=ephemeral, final=True)


def stop_prefect_ephemeral_server() -> None:
    """Stop the ephemeral server Prefect started in this process, if any."""
    from prefect.server.api.server import SubprocessASGIServer

    SubprocessASGIServer().stop()


def immediate_begin(begin_transaction: Any) -> Any:
    """Prefect's ``begin_transaction`` for SQLite, always with ``with_for_update`` (``BEGIN IMMEDIATE``)."""

    @contextlib.asynccontextmanager
    async def begin(self: Any, session: Any, with_for_update: bool = False) -> Any:
        async with begin_transaction(self, session, with_for_update=True) as transaction:
            yield transaction

    begin.artoo_immediate = True
    return begin


def sqlite_immediate_writes() -> None:
    """Make this process's Prefect server open every SQLite transaction IMMEDIATE (idempotent)."""
    from prefect.server.database.configurations import AioSqliteConfiguration

    if not getattr(AioSqliteConfiguration.begin_transaction, "artoo_immediate", False):
        AioSqliteConfiguration.begin_transaction = immediate_begin(AioSqliteConfiguration.begin_transaction)


SIGTERM_AGAIN_S = 5.0
"""How long a flow-run process has to end after a SIGTERM before ``artoo serve`` repeats it; a process that got
the signal exits within a second or two here, even on two busy cores."""


def repeat_sigterm_while_killing(every_s: float = SIGTERM_AGAIN_S) -> None:
    """Make this process's Prefect runner repeat SIGTERM every ``every_s`` to a flow-run process it is stopping,
    until the process ends or Prefect's own SIGKILL comes (idempotent; last ``every_s`` wins)."""
    from prefect.runner._process_manager import ProcessManager

    original = getattr(ProcessManager.kill, "artoo_original", ProcessManager.kill)
    ProcessManager.kill = _kill_repeating(original, every_s)


def _kill_repeating(original: Any, every_s: float) -> Any:
    """Prefect 3.8.8's ``ProcessManager.kill`` (SIGTERM, up to ``grace_seconds``, SIGKILL), SIGTERM repeated."""
    import anyio
    from prefect.logging import get_logger

    async def again(handle: Any) -> None:
        while True:
            await anyio.sleep(every_s)
            with contextlib.suppress(ProcessLookupError):
                if handle.is_alive():
                    get_logger("runner").warning("flow-run process %s still runs %.0f s after SIGTERM; sending "
                                                 "SIGTERM again", handle.pid, every_s)
                    handle.graceful_kill()

    async def kill(self: Any, flow_run_id: Any, grace_seconds: float = 30, *, force: bool = False) -> None:
        handle = self.get(flow_run_id)
        if force or handle is None:
            return await original(self, flow_run_id, grace_seconds, force=force)
        async with anyio.create_task_group() as group:
            group.start_soon(again, handle)
            try:
                await original(self, flow_run_id, grace_seconds)
            finally:
                group.cancel_scope.cancel()

    kill.artoo_original = original
    return kill


class FixedRunName:
    """A flow-run name known before the run exists: used verbatim (never ``str.format``-ed with the parameters).

    Prefect formats a string ``flow_run_name`` with the run's parameters, so a subtask whose intent
    contains ``{`` or ``}`` would fail before it ran; a callable is used as it returns.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"FixedRunName({self.name!r})"


def named(flow: Any, name: str) -> Any:
    """``flow`` whose next runs are named ``name`` (a shallow copy; ``flow`` is unchanged).

    Public API only, so a Prefect upgrade cannot break it: Prefect creates the run and renames it to
    ``name`` in a second write, as it does for any flow with a ``flow_run_name``; ``artoo bench --only
    flow_runs`` measures what that costs per subflow.  ``Flow.with_options(flow_run_name=…)`` would
    rebuild the flow, its parameter schema included (≈ 15 ms of CPU per call on this machine); a copy
    with the one public attribute changed costs microseconds.
    """
    import copy

    clone = copy.copy(flow)
    clone.flow_run_name = FixedRunName(name)
    return clone


def drain_events(timeout: float) -> None:
    """Block until Prefect's events worker has shipped every queued event, or ``timeout`` seconds pass."""
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=timeout)
