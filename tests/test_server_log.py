"""Reading the Prefect server's own log: each failed service becomes one line pointing at the log.

The parser and the watcher are plain code over log text in Prefect's standard format (the
excerpts below are the shapes real servers write: a docket service with a chained traceback,
a Prefect service logger, uvicorn's start-up failure).  The embedded server is then checked
for real: a retention setting that makes its event vacuum fail on every pass, said once on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from artoo.servers.log import ServerLogWatcher, ServiceError, error_line, service_errors

ROOT = Path(__file__).resolve().parents[1]

DOCKET = """\
14:52:28.589 | ERROR   | docket.dependencies - ↩ [   100ms] schedule_deployments(){schedule_deployments}
Traceback (most recent call last):
  File "/site-packages/prefect/server/models/deployments.py", line 1009, in _insert_scheduled_flow_runs
    await session.execute(
sqlalchemy.exc.InvalidRequestError: Can't evaluate bulk DML statement; please supply a bulk_dml decorated function
"""
CHAINED = """\
14:55:26.978 | ERROR   | uvicorn.error - Traceback (most recent call last):
  File "x.py", line 1, in f
sqlite3.DatabaseError: file is not a database

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "y.py", line 2, in g
sqlalchemy.exc.DatabaseError: (sqlite3.DatabaseError) file is not a database
14:55:27.015 | ERROR   | uvicorn.error - Application startup failed. Exiting.
"""
INFO = "14:52:30.000 | INFO    | prefect.server.services.scheduler - Scheduled 3 runs.\n"
SERVICE = "14:52:31.000 | CRITICAL | prefect.server.services.foreman - lost the database\n"
BULK = ("sqlalchemy.exc.InvalidRequestError: Can't evaluate bulk DML statement; "
        "please supply a bulk_dml decorated function")


@pytest.mark.parametrize(("text", "expected"), [
    (INFO, []),
    ("", []),
    (DOCKET, [ServiceError("docket.dependencies", "schedule_deployments", BULK)]),
    (INFO + DOCKET + INFO, [ServiceError("docket.dependencies", "schedule_deployments", BULK)]),
    (CHAINED, [ServiceError("uvicorn.error", None,
                            "sqlalchemy.exc.DatabaseError: (sqlite3.DatabaseError) file is not a database"),
               ServiceError("uvicorn.error", None, "Application startup failed. Exiting.")]),
    (SERVICE, [ServiceError("prefect.server.services.foreman", "foreman", "lost the database")]),
])
def test_each_failed_record_is_read_with_the_exception_it_ends_in(text, expected):
    assert service_errors(text.splitlines()) == expected


@pytest.mark.parametrize(("error", "line"), [
    (ServiceError("docket.worker", "schedule_deployments", "OverflowError: date value out of range"),
     "artoo server: the Prefect server's schedule_deployments service failed: OverflowError: date value out of "
     "range (full log: /h/server.log)"),
    (ServiceError("uvicorn.error", None, "Application startup failed. Exiting."),
     "artoo server: the Prefect server logged an error (uvicorn.error): Application startup failed. Exiting. "
     "(full log: /h/server.log)"),
    (ServiceError("x", "s", "E: " + "y" * 300),
     "artoo server: the Prefect server's s service failed: E: " + "y" * 196 + "… (full log: /h/server.log)"),
])
def test_the_notice_is_one_line_naming_the_service_and_the_log(error, line):
    assert error_line("artoo server", error, Path("/h/server.log")) == line


def test_the_watcher_says_each_failure_once_and_only_this_starts(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(DOCKET)  # an earlier start's failure: not said
    said: list[str] = []
    watcher = ServerLogWatcher(log, said.append)
    with log.open("a") as out:
        out.write(INFO + DOCKET.splitlines(keepends=True)[0] + "Traceback (most recent call last):\n")
    assert watcher.poll() == [] and said == []  # the log grows: the half-written traceback is held back
    with log.open("a") as out:
        out.write("".join(DOCKET.splitlines(keepends=True)[2:]) + INFO + DOCKET + SERVICE[:20])
    assert [e.service for e in watcher.poll()] == ["schedule_deployments"]
    watcher.poll()
    with log.open("a") as out:
        out.write(SERVICE[20:])
    watcher.stop()  # not started: its last look still reads what is left
    assert said == [f"artoo server: the Prefect server's schedule_deployments service failed: {BULK} (full log: {log})",
                    f"artoo server: the Prefect server's foreman service failed: lost the database (full log: {log})"]


WAIT_FOR_TWO_FAILURES = """
import sys, time
from pathlib import Path
log = Path(sys.argv[1])
deadline = time.monotonic() + 60
while time.monotonic() < deadline and (not log.exists() or log.read_text().count("OverflowError") < 2):
    time.sleep(0.5)
"""
ONE_SHOT = """
import runpy, sys
from artoo.servers.embedded import EmbeddedServer
server = EmbeddedServer().launch()
server.wait_ready(120)
runpy.run_path(sys.argv[2])
server.stop()
"""
LINGERING = """
import runpy, sys
from artoo.servers.embedded import prefect_api
with prefect_api():  # this home's lingering server, started for this command
    runpy.run_path(sys.argv[2])
"""
# the event vacuum (it runs in one-shot servers too) subtracts this from "now": it overflows on every pass
FAILING_VACUUM = {"PREFECT_SERVER_EVENTS_RETENTION_PERIOD": "P10000000D",
                  "PREFECT_SERVER_SERVICES_DB_VACUUM_LOOP_SECONDS": "1"}


@pytest.mark.parametrize(("script", "log"), [(ONE_SHOT, "prefect/embedded-server.log"),
                                             (LINGERING, "home/server/current/server.log")])
def test_the_embedded_server_says_a_failing_service_in_one_line_on_stderr(tmp_path, script, log):
    from artoo.servers import lingering

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), ARTOO_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120", **FAILING_VACUUM)  # 2 busy cores
    log = tmp_path / log
    wait = tmp_path / "wait.py"
    wait.write_text(WAIT_FOR_TWO_FAILURES)
    try:
        done = subprocess.run([sys.executable, "-c", script, str(log), str(wait)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=180)
    finally:
        lingering.stop(tmp_path / "home")  # only acts when the lingering one still runs
    assert done.returncode == 0, done.stderr[-3000:]
    assert log.read_text().count("OverflowError: date value out of range") >= 2
    assert done.stderr.splitlines() == [f"artoo: the Prefect server's vacuum_old_events service failed: "
                                        f"OverflowError: date value out of range (full log: {log})"]
