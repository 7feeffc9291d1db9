"""The warm runner of one ARTOO_HOME: everything ``artoo run`` imports, loaded once, one fork per command.

Why: a whole ``artoo run`` process spends most of its fixed cost importing Prefect, openai and DuckDB
and finalising them at exit (bench/README.md).  This process (``python -P -m artoo.zygote HOME PID``,
started by the home's lingering server, artoo.lingering) imports them once, listens on the home's
abstract unix socket (artoo.warm explains the name) and forks a child per client.  The child takes
the client's argv, environment, cwd, umask and stdin/stdout/stderr (SCM_RIGHTS), rebuilds what was
read from the environment at import (Prefect's root settings context and logging, ``tempfile``'s
directory, the time zone, the random seed), and runs ``artoo.cli.main`` as the process would.  It
sends its exit code once every ``atexit`` handler ran and leaves with ``os._exit``.

* fork is safe only in a single-threaded process: the runner starts no thread, and checks
  ``threading.active_count() == 1`` before each fork (else the client runs in process).
* The CLI modules (``artoo.cli*``, ``artoo.runner``) are imported in the child, not here: they
  build rich Consoles at import, whose terminal detection must see the client's terminal.
* A child whose client goes away (its socket closes) is interrupted as Ctrl-C would; the client
  forwards SIGINT/SIGTERM/SIGHUP.  A child lives on if the runner dies; the runner dies with the
  lingering server (PR_SET_PDEATHSIG, and it watches its parent pid), so ``artoo stop`` and the
  server's idle exit end it.  A runner whose code on disk changed since it started exits at its
  next request (the client runs in process and asks for a fresh one).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from artoo import warm
from artoo.preload import preload

CLI_MODULES = ("artoo.cli", "artoo.runner")
REQUEST_TIMEOUT_S = 10.0
GO_TIMEOUT_S = 30.0

_CHILD: dict = {}
_LOG_FD: list[int] = []


def main(argv: list[str]) -> int:
    """``python -P -m artoo.zygote HOME PARENT_PID``: serve until the parent (the lingering server) is gone."""
    atexit.register(_child_exit)  # first: in a child it runs after every other handler
    home, parent = Path(argv[0]), int(argv[1])
    _LOG_FD.append(os.dup(2))
    _die_with(parent)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(warm.address(home))
    except OSError as exc:
        log(f"not serving: {exc} (another warm runner serves {home})")
        return 0
    listener.listen(64)  # clients queue here while the imports below run
    started = time.monotonic()
    fingerprint = warm.fingerprint()  # before the imports: a file changed meanwhile makes it stale
    preload(lambda name, exc: log(f"preload skipped {name}: {exc}"))
    loaded = [m for m in CLI_MODULES if m in sys.modules]
    if loaded:
        log(f"not serving: {loaded} were imported before fork (their consoles would miss the client's terminal)")
        return 1
    log(f"pid {os.getpid()} ready for {home} after {time.monotonic() - started:.2f} s "
        f"({len(sys.modules)} modules)")
    return serve(listener, parent, fingerprint)


def serve(listener: socket.socket, parent: int, fingerprint: str) -> int:
    """Accept clients, one forked child each; return when the parent is gone or the code changed."""
    while True:
        ready, _, _ = select.select([listener], [], [], 1.0)
        _reap()
        if os.getppid() != parent:
            log("the lingering server is gone: exiting")
            return 0
        if not ready:
            continue
        conn, _ = listener.accept()
        if warm.fingerprint() != fingerprint:
            log("artoo's code or install changed since start: exiting (the client runs in process and asks "
                "for a fresh runner)")
            conn.close()
            return 0
        if threading.active_count() != 1:
            log(f"{threading.active_count()} threads: fork is unsafe, the client runs in process")
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            child(conn, fingerprint)  # never returns: raises SystemExit or leaves with os._exit
        conn.close()


def child(conn: socket.socket, fingerprint: str) -> None:
    """One client's command, in a forked child of the runner."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    try:
        request, fds = receive(conn)
        why = adopt(conn, request, fds, fingerprint)
        if why:
            log(f"declined client {request.get('client')}: {why}")
            warm.send(conn, {"decline": why})
            os._exit(0)
        lines = warm.Lines(conn)
        warm.send(conn, {"ready": os.getpid()})
        conn.settimeout(GO_TIMEOUT_S)
        if (lines.next() or {}).get("go") is not True:
            os._exit(0)  # the client gave up and runs in process: nothing of ours was seen
        conn.settimeout(None)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"request failed before it ran: {exc!r}")
        os._exit(1)
    take_terminal(fds)
    _CHILD.update(conn=conn, code=1, done=False)
    threading.Thread(target=_watch, args=(lines,), name="artoo-warm-client", daemon=True).start()
    log(f"child {os.getpid()} runs `artoo {' '.join(request['argv'][1:2])}` for client {request.get('client')}")
    run_cli()
    sys.exit(0)


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The client's request and its three fds (stdin, stdout, stderr)."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < 4 or len(data) < 4 + struct.unpack("!I", data[:4])[0]:
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ValueError("the client closed before its request was complete")
        data += chunk
    size = struct.unpack("!I", data[:4])[0]
    return json.loads(data[4:4 + size]), fds


def adopt(conn: socket.socket, request: dict, fds: list[int], fingerprint: str) -> str | None:
    """Take the client's environment, cwd and umask; why this child cannot serve it, or None."""
    if warm.peer_uid(conn) != os.getuid():
        return "another user's client"
    if len(fds) != 3:
        return f"{len(fds)} file descriptors instead of 3"
    if request.get("fingerprint") != fingerprint:
        return "fingerprint differs (interpreter, install, code or start-up environment)"
    os.environ.clear()
    os.environ.update(request["env"])
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        return f"cannot enter {request['cwd']}: {exc}"
    os.umask(int(request["umask"]))
    sys.argv = list(request["argv"])
    return None if _warm_runner_enabled() else "server.warm_runner is false"


def _warm_runner_enabled() -> bool:
    from artoo.config.errors import ConfigurationError
    from artoo.config.settings import load_settings

    try:
        return load_settings().server.warm_runner
    except ConfigurationError:
        return True  # the CLI reports the mistake exactly as in process


def take_terminal(fds: list[int]) -> None:
    """The client's stdio become ours; what was read from the environment at import is read again."""
    import random
    import tempfile

    from artoo.config.compat import rebuild_prefect_from_environment

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    time.tzset()
    tempfile.tempdir = None  # TMPDIR is read again
    random.seed()  # children must not share the runner's random sequence
    rebuild_prefect_from_environment()


def run_cli() -> None:
    """``artoo.cli.main`` with the client's argv, its exit code kept for ``_child_exit``."""
    from artoo.cli import main as cli_main

    try:
        cli_main()
    except SystemExit as exc:  # re-raised as is: a message in it is printed by the interpreter, as in process
        _CHILD["code"] = warm.exit_code(exc)
        raise
    except KeyboardInterrupt:
        _CHILD["code"] = 130
        raise
    _CHILD["code"] = 0


def _watch(lines: warm.Lines) -> None:
    """Forward the client's signals to this child; a client gone is a Ctrl-C."""
    while True:
        try:
            message = lines.next()
        except (OSError, ValueError):
            message = None
        if _CHILD.get("done"):
            return
        if message is None:
            log(f"child {os.getpid()}: the client went away, interrupting its command")
            os.kill(os.getpid(), signal.SIGINT)
            return
        if message.get("signal") in warm.FORWARDED:
            os.kill(os.getpid(), int(message["signal"]))


def _child_exit() -> None:
    """In a child, the last atexit handler: flush, tell the client the exit code, leave at once."""
    if not _CHILD:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    _CHILD["done"] = True
    with contextlib.suppress(OSError):
        warm.send(_CHILD["conn"], {"exit": _CHILD["code"]})
    os._exit(_CHILD["code"])


def _reap() -> None:
    """Collect finished children (they are ours until they exit)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _die_with(parent: int) -> None:
    """SIGTERM when the parent (the lingering server) ends; gone already means exit now."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # the parent pid is also checked every second
    if os.getppid() != parent:
        sys.exit(0)


def log(line: str) -> None:
    """One line in warm.log (the runner's stderr, kept apart from a child's borrowed stderr)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    os.write(_LOG_FD[0] if _LOG_FD else 2, f"{stamp} artoo-warm: {line}\n".encode())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
