"""Every use of a Prefect API that Prefect does not document, in one place.

artoo is pinned to one Prefect release (``PINNED_PREFECT``, the version in pyproject.toml).
Three things it needs have no public equivalent in that release; each is wrapped here so a
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
* :func:`rebuild_prefect_from_environment`: the warm runner's child (artoo.zygote) takes another
  process's environment and cwd after Prefect was imported; Prefect built its root settings context
  (PREFECT_* variables, the profile, ``.env``/``prefect.toml``/``pyproject.toml`` in the cwd) and its
  logging handlers at import, so both are built again (``refresh_global_settings_context``, which
  Prefect calls after its plugins ran, and ``setup_logging`` non-incrementally).

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


def rebuild_prefect_from_environment() -> None:
    """Build Prefect's root settings context and logging config again from os.environ and the cwd, as
    ``import prefect`` did."""
    import prefect.context
    from prefect.logging.configuration import setup_logging

    prefect.context.refresh_global_settings_context()
    setup_logging(incremental=False)


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
