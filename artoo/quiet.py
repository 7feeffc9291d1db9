"""A quiet terminal: artoo's own progress on stderr, Prefect's log lines only with ``-v``.

Why a filter on the console handler and not a log level: the same records must still reach
the Prefect API (the run's logs in the UI keep everything), and Prefect sends them there from
its own ``api`` handler on ``prefect.flow_runs``/``prefect.task_runs``; only the copy the root
logger's console handler prints is dropped.  artoo's own warnings (a memory store that would
not open, a sandbox that is missing) are not lost in quiet mode: they are printed plainly as
``  ! message``, without Prefect's timestamp and run-name decoration.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
_PREFECT_SOURCE = f"{os.sep}prefect{os.sep}"


class DropAll(logging.Filter):
    """On the root console handler in quiet mode: nothing of Prefect's logging reaches the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep only records of other libraries at ERROR and above (a real problem, not chatter)."""
        return not record.name.startswith(("prefect", "artoo")) and record.levelno >= logging.ERROR


class OwnWarnings(logging.Handler):
    """Prints artoo's own warnings from inside a run plainly (Prefect's engine lines stay hidden)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        """``  ! message`` on stderr for a warning raised by artoo's code."""
        if _PREFECT_SOURCE in record.pathname:
            return
        try:
            sys.stderr.write(f"  ! {record.getMessage()}\n")
            sys.stderr.flush()
        except Exception:  # the terminal went away; the API handler still has it
            return


def _console_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]


@contextmanager
def quiet_prefect(verbose: bool = False) -> Iterator[None]:
    """Inside the block Prefect's console lines are hidden unless ``verbose``; its API logging is untouched."""
    if verbose:
        yield
        return
    import prefect  # noqa: F401 - importing Prefect sets up its handlers: they must exist before the filter

    drop, own = DropAll(), OwnWarnings()
    handlers = _console_handlers()
    for handler in handlers:
        handler.addFilter(drop)
    for name in RUN_LOGGERS:
        logging.getLogger(name).addHandler(own)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(drop)
        for name in RUN_LOGGERS:
            logging.getLogger(name).removeHandler(own)
