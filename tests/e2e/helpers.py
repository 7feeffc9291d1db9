"""What the end-to-end tests need around a real Prefect server: processes, API reads, a browser.

Everything is read back through the Prefect API the way the UI reads it (flow runs by
parent, logs by flow run, artifacts by key, events by name and resource), with bounded
polling instead of sleeps.  The browser is Debian's Chromium driven by Playwright for
Python; nothing here downloads a browser.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output" / "e2e"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LLM_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "BRAIN_BASE_URL", "BRAIN_API_KEY", "BRAIN_MODEL",
           "TOOL_BASE_URL", "TOOL_API_KEY", "TOOL_MODEL", "ARTOO_CONFIG", "PREFECT_API_URL")

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str, every_s: float = 0.25) -> T:
    """Poll ``probe`` until it returns something truthy; AssertionError naming ``what`` on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(every_s)


@contextmanager
def api(url: str) -> Iterator[Any]:
    """A sync Prefect client for ``url`` (whatever server the rest of the session uses)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        yield client


def child_env(api_url: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of an ``artoo`` subprocess: this server, this home, no inherited LLM settings."""
    env = {k: v for k, v in os.environ.items() if k not in LLM_ENV}
    env.update(PREFECT_API_URL=api_url, ARTOO_HOME=str(home), PYTHONUNBUFFERED="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", **extra)
    return env


def artoo(*args: str, env: dict[str, str], log: Path, cwd: Path | None = None) -> subprocess.Popen:
    """Start the real ``artoo`` console script (its output goes to ``log``)."""
    exe = Path(sys.executable).with_name("artoo")
    return subprocess.Popen([str(exe), *args], env=env, cwd=str(cwd or REPO), stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen, timeout_s: float = 30.0) -> int:
    """SIGTERM a process we started and wait for it; kill its group if it does not stop in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise AssertionError(f"process {process.args} ignored SIGTERM for {timeout_s:.0f} s") from None


def wait_final(client, flow_run_id, timeout_s: float) -> Any:
    """The flow run once it reaches a final state."""
    def final():
        run = client.read_flow_run(flow_run_id)
        return run if run.state and run.state.is_final() else None

    return wait_for(final, timeout_s, f"flow run {flow_run_id} to finish", every_s=0.5)


def descendants(client, root_id) -> list:
    """Every subflow run below a flow run, level by level (what the run graph shows)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    found, frontier = [], [root_id]
    while frontier:
        children = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)), limit=200)
        found.extend(children)
        frontier = [c.id for c in children]
    return found


def log_lines(client, flow_run_ids: list) -> list[str]:
    """The messages of every log record of these flow runs (task-run logs included), oldest first."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import LogSort

    logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=flow_run_ids)), limit=200,
                            offset=0, sort=LogSort.TIMESTAMP_ASC)
    return [log.message for log in logs]


def artifact(client, key: str) -> Any:
    """The latest version of the artifact with this key, or None."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                  sort=ArtifactSort.CREATED_DESC, limit=1, offset=0)
    return found[0] if found else None


def events(client, names: list[str] | None = None, prefix: list[str] | None = None,
           resource_ids: list[str] | None = None) -> list:
    """Every event of the last hour matching the names/prefixes and resources, oldest first."""
    from datetime import UTC, datetime, timedelta

    from prefect.events.filters import (
        EventFilter,
        EventNameFilter,
        EventOccurredFilter,
        EventOrder,
        EventResourceFilter,
    )

    now = datetime.now(UTC)
    flt = EventFilter(occurred=EventOccurredFilter(since=now - timedelta(hours=1), until=now + timedelta(minutes=5)),
                      event=EventNameFilter(name=names, prefix=prefix), order=EventOrder.ASC,
                      resource=EventResourceFilter(id=resource_ids) if resource_ids else None)
    page = client.read_events(filter=flt, limit=50)
    found = list(page.events)
    while page.next_page:
        page = client.read_events_page(str(page.next_page))
        found.extend(page.events)
    return found


@contextmanager
def browser_page(width: int = 1600, height: int = 1000) -> Iterator[Any]:
    """A page in headless Debian Chromium with a fresh profile (Playwright drives it, never downloads one)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="artoo-chromium-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": width, "height": height})
        try:
            yield context.new_page()
        finally:
            context.close()
