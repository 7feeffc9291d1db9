"""Leave the ``artoo`` process without the interpreter's finalisation, once every ``atexit`` handler ran.

Why: a command that imported Prefect, openai and DuckDB has ~1,800 modules loaded, and finalising
them costs 0.4-1.1 s at exit (bench/README.md) while doing nothing a command needs.  Everything that
must happen at exit still happens: non-daemon threads are joined and every ``atexit`` handler runs
(Prefect's workers drain, an embedded server is stopped), because the handler registered here is
registered first and so runs last.  Only then are stdout and stderr flushed and the process leaves
with ``os._exit`` and the code it was about to exit with.  Standard library only.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections.abc import Callable

_EXIT: list[int] = []


def run(main: Callable[[], None]) -> None:
    """Run ``main`` (a console-script body) so that the process leaves fast with ``main``'s exit code."""
    atexit.register(_exit_now)  # first: it runs after every handler registered later
    try:
        main()
    except SystemExit as exc:
        _EXIT.append(exit_code(exc))
        raise
    except KeyboardInterrupt:
        raise  # the interpreter re-raises it as a signal after finalising: leave that path alone
    except BaseException:
        _EXIT.append(1)  # the interpreter prints the traceback before the atexit handlers run
        raise
    _EXIT.append(0)


def exit_code(exc: SystemExit) -> int:
    """The status the interpreter would exit with for this SystemExit."""
    if exc.code is None:
        return 0
    return exc.code & 0xFF if isinstance(exc.code, int) else 1


def _exit_now() -> None:
    """The last atexit handler: flush stdio and leave without the interpreter's finalisation."""
    if not _EXIT:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(_EXIT[-1])
