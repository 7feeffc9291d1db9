"""What a Prefect server's own log says went wrong: each service failure once, in one terminal line.

Why: the server's log is where Prefect's background services (the scheduler, the late-runs marker, the
event persister…) report their failures, and nobody reads it: a scheduler that failed on every loop once
left every schedule dead and no one noticed.  ``ServerLogWatcher`` follows the log and says each distinct
failure in one line that points at the full log; ``artoo server``, the embedded server and the lingering
one all use it, and ``last_error`` names why a server that would not start failed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

RECORD = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| (?P<level>[A-Z]+)\s*\| (?P<logger>\S+) - (?P<message>.*)$")
"""One record in Prefect's standard log format: ``12:00:00.123 | ERROR   | docket.worker - message``."""
EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")
"""The line a traceback ends with: ``sqlalchemy.exc.InvalidRequestError: Can't evaluate…``."""
FAILED = ("ERROR", "CRITICAL")


@dataclass(frozen=True)
class ServiceError:
    """One failure the server logged: where, and the exception (or message) that says why."""

    logger: str
    """The logger that wrote the record (``docket.worker``, ``prefect.server.services.foreman``…)."""
    service: str | None
    """The background service that failed (``schedule_deployments``), when the record names one."""
    error: str
    """The last exception line of the record's traceback (``OverflowError: date value out of range``),
    else the record's message."""


def _service(logger: str, message: str) -> str | None:
    """Docket names the failed service function (``↩ [100ms] schedule_deployments(){…}``); Prefect's
    services log under ``prefect.server.services.<name>``."""
    if logger.startswith("docket"):
        found = re.search(r"(\w+)\(", message)
        return found.group(1) if found else None
    if logger.startswith("prefect.server.services."):
        return logger.removeprefix("prefect.server.services.")
    return None


def service_errors(lines: Iterable[str]) -> list[ServiceError]:
    """Every ERROR/CRITICAL record in these server log lines, each with the exception its traceback ends in."""
    found: list[ServiceError] = []
    record: re.Match | None = None  # the failed record being read
    error: str | None = None
    in_traceback = False
    for raw in [*lines, "00:00:00.000 | INFO    | end - of lines"]:
        line = raw.rstrip("\n")
        started = RECORD.match(line)
        if started:
            if record:
                found.append(ServiceError(record["logger"], _service(record["logger"], record["message"]),
                                          error or record["message"].strip()))
            record, error = (started if started["level"] in FAILED else None), None
            in_traceback = started["message"].startswith("Traceback (most recent call last)")  # uvicorn's way
        elif record and line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif record and in_traceback and EXCEPTION.match(line):
            error, in_traceback = line.strip(), False  # a chained traceback's last exception wins
    return found


def error_line(prefix: str, error: ServiceError, log: Path) -> str:
    """The one terminal line for a service failure: what failed, why, and where the whole story is."""
    what = f"'s {error.service} service failed" if error.service else f" logged an error ({error.logger})"
    why = error.error if len(error.error) <= 200 else error.error[:199] + "…"
    return f"{prefix}: the Prefect server{what}: {why} (full log: {log})"


class ServerLogWatcher:
    """Follows a server log from its current end and says each distinct service failure once.

    ``poll()`` reads the whole lines appended since the last call.  The last record read stays
    pending while the log still grows (its traceback may be half written) and is parsed once
    the next record starts or the log stops growing.  ``start()`` polls on a daemon thread.
    """

    def __init__(self, log: Path, say: Callable[[str], None], prefix: str = "artoo server",
                 every_s: float = 1.0, offset: int | None = None) -> None:
        self.log, self.say, self.prefix, self.every_s = log, say, prefix, every_s
        self.offset = offset if offset is not None else log.stat().st_size if log.exists() else 0
        self.pending: list[str] = []
        self.seen: set[ServiceError] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> list[ServiceError]:
        """Say the failures completed since the last poll; returns the ones said now."""
        try:
            with self.log.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        self.pending += complete.decode("utf-8", "replace").splitlines()
        cut = len(self.pending)
        if complete:  # still growing: keep the last record back until the next one starts
            cut = max((i for i, line in enumerate(self.pending) if RECORD.match(line)), default=0)
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        new = [e for e in dict.fromkeys(service_errors(ready)) if e not in self.seen]
        for failure in new:
            self.seen.add(failure)
            self.say(error_line(self.prefix, failure, self.log))
        return new

    def start(self) -> ServerLogWatcher:
        """Poll every ``every_s`` seconds on a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="artoo-server-log", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.poll()

    def stop(self) -> None:
        """Stop the thread after a last look (a failure that ended the server is still said)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poll()
        self.poll()  # the log no longer grows: what was held back is complete now


def last_error(log: Path, offset: int) -> str | None:
    """The last exception line (``SomeError: why``) the server wrote to ``log`` after ``offset``."""
    try:
        with log.open("rb") as file:
            file.seek(offset)
            text = file.read().decode(errors="replace")
    except OSError:
        return None
    found = re.findall(r"^(?:[\w.]+\.)?\w*(?:Error|Exception)\b.*$", text, re.MULTILINE)
    return found[-1].strip()[:300] if found else None
