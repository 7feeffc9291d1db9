"""The ``artoo`` command line, the top of the import graph: one module per command group.

``commands`` builds the Typer ``app`` and ``main`` (the console script ``artoo = artoo.cli:main``);
``memory`` (``artoo memory``, ``artoo dream``), ``observe`` (``artoo log``, ``artoo replay``),
``config``, ``eval``, ``cluster`` (``artoo worker``, ``artoo audit verify --home``) hold the
command groups, and ``fast_exit`` leaves the process without finalising the interpreter.  Each
command imports what it runs (Prefect, DuckDB, openai) only when it runs, so ``artoo --help``
answers at once.
"""

from artoo.cli.commands import app, main

__all__ = ["app", "main"]
