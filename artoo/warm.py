"""The ``artoo`` console script: hand ``artoo run`` to this home's warm runner, else run in process.

Why: a whole ``artoo run`` spends seconds importing Prefect, openai and DuckDB before its first
LLM request, and most of a second after its last in the interpreter's finalisation (bench/README.md).
A warm runner (artoo.zygote) has imported all of that once per ARTOO_HOME and forks one child per
command; this client imports only the standard library, hands the child its argv, environment,
cwd, umask and its own stdin/stdout/stderr (SCM_RIGHTS), forwards SIGINT/SIGTERM/SIGHUP, and
exits with the child's exit code.  Output, a Law-1 question on the terminal and exit codes are the
normal CLI's: the child runs ``artoo.cli.main`` itself.

Anything uncertain falls back, silently, to the normal in-process CLI: not Linux, another command
than ``run``, ``ARTOO_SERVER__WARM_RUNNER`` false, a home that a config file might choose, no runner
listening (none started yet, or it died: connect is refused), a runner of another user, or one whose
fingerprint (interpreter, install, code on disk, the environment the interpreter read at start)
differs.  The runner is started by the home's lingering server once a command asked for it
(``warm.wanted``) and no command is running (artoo.lingering), and dies with that server.

The socket lives in Linux's abstract namespace, named from the home's real path and the user id:
a filesystem path under ARTOO_HOME can pass AF_UNIX's 108-byte limit (pytest's tmp paths do), and
an abstract name leaves no file to go stale after a crash.  Abstract names have no permissions, so
both ends check the other's uid (SO_PEERCRED).

The in-process path ends with ``os._exit`` once every ``atexit`` handler ran and stdio is flushed
(the handler is registered before any other module could register one): the interpreter's
finalisation of ~1,800 modules costs 0.4-1.1 s and does nothing a command needs.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import signal
import site
import socket
import struct
import sys
from pathlib import Path

FALSY = {"0", "false", "no", "off", "n", "f"}
WARM_COMMANDS = {"run"}
READY_TIMEOUT_S = 30.0
"""How long a client waits for a child's answer: a runner still importing (just started) answers late."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
IO_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERMINAL_WIDTH", "FORCE_COLOR", "PY_COLORS")
"""Environment read once at interpreter or library start (stdio encoding, typer's widths): must match."""

_EXIT: list[int] = []


def main() -> None:
    """Console-script entry point."""
    atexit.register(_exit_now)  # first: it runs after every handler registered later
    argv = list(sys.argv)
    home = eligible(argv, os.environ)
    if home is not None:
        code = hand_over(home, argv)
        if code is not None:
            _EXIT.append(code)
            sys.exit(code)
        want(home)
    in_process()


def in_process() -> None:
    """The normal CLI in this process; its exit code is kept for ``_exit_now``."""
    from artoo.cli import main as cli_main

    try:
        cli_main()
    except SystemExit as exc:
        _EXIT.append(exit_code(exc))
        raise
    except KeyboardInterrupt:
        raise  # the interpreter re-raises it as a signal after finalising: leave that path alone
    except BaseException:
        _EXIT.append(1)
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


def eligible(argv: list[str], env: dict[str, str] | os._Environ) -> Path | None:
    """The home whose warm runner may serve this command, or None (run in process)."""
    if sys.platform != "linux" or not hasattr(socket, "send_fds") or len(argv) < 2 or argv[1] not in WARM_COMMANDS:
        return None
    if any(a == "--help" for a in argv[2:]):
        return None
    if env.get("ARTOO_SERVER__WARM_RUNNER", "").strip().lower() in FALSY - {""}:
        return None
    return resolve_home(env)


def resolve_home(env: dict[str, str] | os._Environ) -> Path | None:
    """ARTOO_HOME as artoo.config.settings resolves it; None when unsure.

    pydantic-settings matches ``ARTOO_HOME`` case-insensitively and the environment beats every
    TOML file; without it, the home is ``~/.artoo`` unless ARTOO_CONFIG or ``~/.artoo/artoo.toml``
    names another one (read here with tomllib; an unreadable file means unsure).
    """
    named = [k for k in env if k.lower() == "artoo_home"]
    if named:
        if named != ["ARTOO_HOME"] or not env["ARTOO_HOME"].strip():
            return None
        return Path(env["ARTOO_HOME"]).expanduser()
    files = [Path(env["ARTOO_CONFIG"]).expanduser()] if env.get("ARTOO_CONFIG") else []
    files += [Path("~/.artoo/artoo.toml").expanduser()]
    for file in files:
        if not file.is_file():
            continue
        try:
            import tomllib

            if "home" in tomllib.loads(file.read_text()):
                return None
        except (OSError, ValueError):
            return None
        break  # ARTOO_CONFIG, when set, is the only user file read
    return Path("~/.artoo").expanduser()


def address(home: Path) -> str:
    """The runner's abstract socket name for this home and user."""
    key = f"{os.path.realpath(home)}\0{os.getuid()}".encode()
    return "\0artoo-warm-" + hashlib.sha256(key).hexdigest()[:32]


def wanted_path(home: Path) -> Path:
    """Its presence asks the home's lingering server to start a warm runner (artoo.lingering)."""
    return Path(home) / "server" / "current" / "warm.wanted"


def want(home: Path) -> None:
    """Ask for a warm runner for the next commands (an unusable home is the CLI's to report)."""
    with contextlib.suppress(OSError):
        path = wanted_path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()  # a newer time asks again: a runner that died is started anew


def fingerprint(extra_path: list[str] | None = None) -> str:
    """What the runner and the client must share: interpreter, flags, install and code on disk."""
    import artoo

    parts = [os.path.realpath(sys.executable), sys.prefix, sys.version, repr(_flags()), repr(sys.warnoptions),
             repr(getattr(sys, "_xoptions", {})), repr([p for p in sys.path if p not in (extra_path or [])])]
    parts += [f"{k}={os.environ.get(k)}" for k in sorted(os.environ) if k.startswith("PYTHON")]
    parts += [f"{k}={os.environ.get(k)}" for k in IO_ENV]
    for root in sorted({*artoo.__path__, *_package_roots()}):
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith((".py", ".toml"))):
                stat = os.stat(os.path.join(folder, name))
                parts.append(f"{folder}/{name}:{stat.st_mtime_ns}:{stat.st_size}")
    for packages in site.getsitepackages():
        with contextlib.suppress(OSError):
            parts.append(f"{packages}:{os.stat(packages).st_mtime_ns}")  # pip changes it on (un)install
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _flags() -> dict[str, object]:
    """The interpreter's flags, but -P (the runner starts with it, so its cwd never shadows a module)."""
    names = [n for n in dir(sys.flags) if not n.startswith(("_", "n_")) and n not in ("count", "index", "safe_path")]
    return {name: getattr(sys.flags, name) for name in names}


def _package_roots() -> list[str]:
    """The folders of artoo's subpackages (an editable install maps config/, tasks/… beside artoo/)."""
    import importlib.util

    roots = []
    for name in ("config", "memory", "tasks", "flows", "bench"):
        spec = importlib.util.find_spec(f"artoo.{name}")
        if spec is not None and spec.submodule_search_locations:
            roots.extend(spec.submodule_search_locations)
    return roots


def client_path() -> list[str]:
    """sys.path entries of this script alone (its own folder), left out of the fingerprint."""
    return [sys.path[0]] if sys.path and sys.argv and os.path.dirname(os.path.abspath(sys.argv[0])) == sys.path[0] \
        else []


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end (SO_PEERCRED)."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return uid


def send(sock: socket.socket, message: dict) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


class Lines:
    """Newline-delimited JSON messages read from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""

    def next(self) -> dict | None:
        """The next message, or None at end of stream."""
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def hand_over(home: Path, argv: list[str]) -> int | None:
    """Run ``argv`` in the home's warm runner: its exit code, or None to run in process instead."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address(home))
        if peer_uid(sock) != os.getuid():
            return None
        request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "umask": _umask(),
                   "fingerprint": fingerprint(client_path()), "client": os.getpid()}
        body = json.dumps(request).encode()
        socket.send_fds(sock, [struct.pack("!I", len(body)) + body], [0, 1, 2])
        sock.settimeout(READY_TIMEOUT_S)
        lines = Lines(sock)
        answer = lines.next()
        if not answer or "ready" not in answer:
            return None  # declined (fingerprint, settings) or no fork possible: nothing was run
        sock.settimeout(None)
        return _serve(sock, lines)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def _serve(sock: socket.socket, lines: Lines) -> int:
    """Let the child run (forwarding signals) and return its exit code."""
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        with contextlib.suppress(OSError):
            send(sock, {"signal": signum})

    for signum in FORWARDED:
        signal.signal(signum, forward)
    send(sock, {"go": True})  # from here on the command is the child's: no fallback any more
    while True:
        try:
            message = lines.next()
        except (OSError, ValueError):
            message = None
        if message is None:
            break
        if "exit" in message:
            return int(message["exit"])
    for signum in reversed(forwarded):  # the child died of a forwarded signal: so do we, as in process
        if signum != signal.SIGINT:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
    print("artoo: the warm runner's command ended without an exit code (see ARTOO_HOME/server/current/warm.log)",
          file=sys.stderr)
    return 130 if forwarded else 1


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
