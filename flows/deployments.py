"""The three deployments that make the Prefect UI artoo's control room, and ``artoo serve``.

* ``artoo-task`` — the request form (``request``, ``workspace``): the UI's Run button starts
  the full loop; Law-1 questions arrive as resume forms on the run's page.
* ``dreamer`` — one Dreamer pass every ``memory.dreamer_period_s`` (spec: a 5-minute timer),
  never two at once.
* ``auditor`` — every ``audit_period_s``; periodic rather than immortal: each run follows the event stream for a
  little less than the period, publishes its report just before it ends, and the next
  scheduled run catches up from the audit log's checkpoint.  So the spec's 5-minute report
  timer *is* the schedule, a crashed auditor is replaced at the next tick, and never two
  run at once (concurrency limit 1; an overlapping run is cancelled, not queued).

``prefect.yaml`` declares the same deployments for ``prefect deploy --all`` with a process
work pool; tests/e2e checks the two never drift apart.  ``artoo serve`` serves these from
this checkout (module entrypoints, so any working directory works) with the Runner behind
Prefect's ``serve``, polling every 2 s.  SIGTERM or Ctrl-C runs the runner's own ``astop``:
runs in flight end Cancelled, their processes stop, and the schedules pause until the next
``artoo serve`` un-pauses them.  A run's process that misses the runner's one SIGTERM (its
asyncio loop can swallow it, see artoo.config.compat) gets it again every few seconds, so serve
stops in seconds rather than at Prefect's SIGKILL 30 s later.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

from artoo.config.errors import ConfigurationError
from artoo.config.settings import Settings

AUDIT_PERIOD_S = 300
"""The Auditor's report timer (spec R6: every 5 minutes): the default of the ``audit_period_s`` setting."""
AUDIT_MARGIN_S = 30
"""An auditor run ends this long before the next tick, so runs never overlap."""
TAGS = ["artoo"]
POLL_S = 2.0
"""How often ``artoo serve`` looks for runs to start (Prefect's default, 10 s, feels dead after a click
on Run); PREFECT_RUNNER_POLL_FREQUENCY overrides it, PREFECT_RUNNER_PROCESS_LIMIT caps concurrent runs."""

NO_API_URL = (
    "artoo serve needs a Prefect server to serve the deployments to, and PREFECT_API_URL is not set. "
    "Start one with `artoo server` (a local server on loopback; it prints the line to copy), then run "
    "`export PREFECT_API_URL=http://127.0.0.1:4200/api` and `artoo serve` again."
)


@dataclass(frozen=True)
class DeploymentSpec:
    """One deployment, as both ``artoo serve`` and ``prefect.yaml`` declare it."""

    name: str
    entrypoint: str
    """``path/to/file.py:function``, relative to the checkout (prefect.yaml's form)."""
    description: str
    interval_s: int | None = None
    one_at_a_time: bool = False
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def module_entrypoint(self) -> str:
        """``package.module.function``: what ``artoo serve`` registers (independent of cwd)."""
        path, function = self.entrypoint.split(":")
        return "artoo." + path.removesuffix(".py").replace("/", ".") + "." + function


def auditor_parameters(period_s: int = AUDIT_PERIOD_S) -> dict[str, float]:
    """One auditor run per period: follow the stream, report once just before the run ends."""
    run_for = float(max(period_s - AUDIT_MARGIN_S, 1))
    return {"run_for_s": run_for, "report_every_s": max(run_for - 5.0, 0.5)}


def specs(settings: Settings) -> list[DeploymentSpec]:
    """The deployments artoo ships, with their schedules taken from the settings."""
    return [
        DeploymentSpec("artoo-task", "flows/task_flow.py:artoo_task",
                       "Run one request through artoo's full loop. Fill in the request (and optionally the "
                       "workspace where new files go); open the run to follow its rounds and replans."),
        DeploymentSpec("dreamer", "flows/dreamer.py:dreamer",
                       "One Dreamer pass over the MKCT memory: forget, demote, consolidate. "
                       "See the `dreamer-report` artifact.",
                       interval_s=settings.memory.dreamer_period_s, one_at_a_time=True),
        DeploymentSpec("auditor", "flows/auditor.py:auditor",
                       "The Auditor: reads every artoo.* event into the hash-chained audit log and publishes "
                       "the `audit-report` artifact once per run.",
                       interval_s=settings.audit_period_s, one_at_a_time=True,
                       parameters=auditor_parameters(settings.audit_period_s)),
    ]


def concurrency(spec: DeploymentSpec) -> ConcurrencyLimitConfig | None:
    """Limit 1, cancelling a run that would overlap, for deployments that must never run twice."""
    if not spec.one_at_a_time:
        return None
    return ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW)


def runner_deployments(settings: Settings) -> list:
    """The RunnerDeployments ``artoo serve`` serves (flows imported here, not at module import)."""
    from prefect.deployments.runner import EntrypointType

    from artoo.flows.auditor import auditor
    from artoo.flows.dreamer import dreamer
    from artoo.flows.task_flow import artoo_task

    flows = {"artoo-task": artoo_task, "dreamer": dreamer, "auditor": auditor}
    return [
        titled(flows[spec.name].to_deployment(
            name=spec.name, description=spec.description, tags=TAGS, parameters=spec.parameters or None,
            interval=timedelta(seconds=spec.interval_s) if spec.interval_s else None,
            concurrency_limit=concurrency(spec), entrypoint_type=EntrypointType.MODULE_PATH))
        for spec in specs(settings)
    ]


def titled(deployment):
    """The run form's fields titled for people (``Request``, not ``request``).

    Prefect titles every parameter with its Python name and takes the help text from the flow's
    docstring ``Args:``; the title is set on the deployment's parameter schema (the form reads it).
    """
    schema = getattr(deployment, "_parameter_openapi_schema", None)
    for name, prop in (getattr(schema, "properties", None) or {}).items():
        if prop.get("title") == name:
            prop["title"] = name.replace("_", " ").capitalize()
    return deployment


def require_api_url(value: str | None) -> str:
    """The configured Prefect API URL; ConfigurationError (pointing at ``artoo server``) when unset."""
    if not value or not value.strip():
        raise ConfigurationError(NO_API_URL)
    if not value.startswith(("http://", "https://")):
        raise ConfigurationError(f"PREFECT_API_URL must be an http(s) URL ending in /api, got {value!r}")
    return value.strip()


def serve_all(settings: Settings) -> None:
    """Serve every deployment until SIGTERM or Ctrl-C; the runner pauses the schedules on the way out."""
    from prefect.runner import Runner

    poll = None if os.environ.get("PREFECT_RUNNER_POLL_FREQUENCY") else POLL_S
    runner = Runner(name="artoo", pause_on_shutdown=True, query_seconds=poll)
    for deployment in runner_deployments(settings):
        runner.add_deployment(deployment)
    serve_until_stopped(runner)


def serve_until_stopped(runner) -> None:
    """Run ``runner`` until SIGTERM or Ctrl-C, stopping what runs the way ``_stop_on_loop`` says."""
    import asyncio
    import contextlib
    import signal

    from artoo.config.compat import repeat_sigterm_while_killing

    repeat_sigterm_while_killing()  # a run that missed the runner's SIGTERM gets another, not a SIGKILL at 30 s
    runner.handle_sigterm = partial(_stop_on_loop, runner)  # Runner.start installs it for SIGTERM
    signal.signal(signal.SIGINT, runner.handle_sigterm)  # and Ctrl-C does the same
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(runner.start())


def _stop_on_loop(runner, _signum: int, _frame: object = None) -> None:
    """SIGTERM or Ctrl-C: run the runner's own ``astop`` on its loop; a second signal stops at once.

    ``astop`` marks in-flight runs Cancelled and ends their processes, then the runner's exit
    pauses the schedules.  (Prefect's own handler calls the async ``stop`` without awaiting it
    and exits at once, leaving in-flight runs shown as Running, holding their concurrency slot.)
    """
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise KeyboardInterrupt from None  # not serving yet: nothing to cancel
    if not runner.started:
        raise KeyboardInterrupt  # already stopping: stop now
    loop.call_soon_threadsafe(lambda: loop.create_task(runner.astop()))
