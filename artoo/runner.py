"""``artoo run``: drive one ``artoo-task`` flow from the terminal and report honestly.

The flow runs in this process: with ``PREFECT_API_URL`` set the run is recorded on that
server, otherwise on artoo's embedded one (artoo.servers.embedded).  Live progress
comes from a read-only tap on the bus (rounds, subtask outcomes, the GGS's D, ∇L, Ω),
printed to stderr with the logs, and a line for an LLM call that takes more than 2 s
(artoo.inflight); stdout carries only the result (exactly one
FinalResult JSON object with ``--json``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from artoo.config.contracts import FINAL_WORDS, FinalResult
from artoo.config.settings import Settings

err = Console(stderr=True, highlight=False)
log = logging.getLogger("artoo.runner")


class ProgressTap:
    """Turns bus messages into one short progress line each (stderr)."""

    def __init__(self, console: Console = err) -> None:
        self.console = console
        self.round = 0

    def __call__(self, record: dict) -> None:
        kind = record["event"].removeprefix("artoo.")
        p = record["payload"]
        if kind == "task_spec":
            self.console.print(f"[bold]task[/] {p.get('task_id')}: {p.get('intent')}")
        elif kind == "dispatch_manifest":
            self.round = p.get("round", self.round + 1)
            count = len(p.get("subtask_ids", []))
            self.console.print(f"[bold cyan]round {self.round}[/]: {count} subtask(s) dispatched")
        elif kind == "subtask":
            self.console.print(f"  → {p.get('intent') or p.get('subtask_id')}")
        elif kind == "correction_signal":
            hint = p.get("what_to_do") or p.get("what_was_wrong")
            self.console.print(f"  ↻ retry ({p.get('failure_class')}): {hint}")
        elif kind == "subtask_outcome":
            mark = "[green]✓[/]" if p.get("status") == "matched" else "[red]✗[/]"
            reason = "" if p.get("status") == "matched" else f" — {str(p.get('failure_reason'))[:120]}"
            self.console.print(f"  {mark} {p.get('intent') or p.get('subtask_id')}{reason}")
        elif kind == "plan_directive":
            loss = p.get("loss", {})
            self.console.print(
                f"[bold yellow]GGS[/] D={loss.get('D', 0):.2f} ∇L={p.get('grad_l', 0):+.2f} "
                f"Ω={loss.get('Omega', 0):.2f} → {p.get('directive')} (urgency {p.get('urgency')})")
        elif kind == "final_result":
            loss = p.get("loss", {})
            self.console.print(f"[bold]GGS[/] D={loss.get('D', 0):.2f} ∇L={p.get('grad_l', 0):+.2f} "
                               f"Ω={loss.get('Omega', 0):.2f} → [bold]{p.get('directive')}[/]")


def execute_flow(request: str, workspace: Path | None, verbose: bool = False) -> dict:
    """Run the artoo-task flow in this process and return its result document (Prefect's lines with verbose)."""
    from artoo.tasks.plan import ahead
    from artoo.tasks.roles.perceiver import check_request
    from artoo.tasks.roles.session import forget_run

    check_request(request)  # refused before any flow run exists: nothing to clean up, nothing half-recorded
    plan_ahead(request, workspace, _send_perceive(request, workspace))
    try:
        return _run_flow(request, workspace, verbose)
    finally:
        forget_run(request)
        ahead.forget(request)


def _run_flow(request: str, workspace: Path | None, verbose: bool) -> dict:
    from artoo.flows.auditor import PublishedTap
    from artoo.flows.task_flow import artoo_task
    from artoo.inflight import waiting_line
    from artoo.preload import preload
    from artoo.quiet import quiet_prefect
    from artoo.servers.embedded import prefect_api
    from artoo.tasks.bus.events import add_tap, remove_tap

    preload()  # what the flow's first call would import, while the server may still be starting
    tap, published = ProgressTap(), PublishedTap()
    with waiting_line(err), quiet_prefect(verbose), prefect_api():  # R1 may be in flight already (sent early)
        add_tap(tap)
        add_tap(published)
        started = datetime.now(UTC)
        try:
            return asyncio.run(artoo_task(request=request, workspace=str(workspace) if workspace else None))
        finally:
            remove_tap(tap)
            remove_tap(published)
            audit_run(published.runs, started)


def send_perceive_early(request: str) -> bool:
    """R1's request goes out now, while the flows import and the Prefect server is found or started.

    The flow's R1 task sends the same words (the request and the history as it is now), so it takes
    this answer instead of asking again (artoo.tasks.llm.transport.early).  Best effort: a settings or history
    problem is left for the flow to report.
    """
    return _send_perceive(request) is not None


def _send_perceive(request: str, workspace: Path | None = None) -> tuple[Any, Settings, Any] | None:
    """Send R1 early: (the request builder, the settings, R1's answer to come), or None when it was not sent.

    Only what fixes R1's words is imported first (``RequestBuilder``, not the client): ``openai``, Prefect and
    DuckDB import while R1 is answered (tests/test_early_http.py)."""
    from artoo.config.errors import ArtooError
    from artoo.config.settings import load_settings
    from artoo.tasks.llm.transport.requests import RequestBuilder
    from artoo.tasks.roles.perceiver import messages_for
    from artoo.tasks.roles.prompting import RUN, run_context
    from artoo.tasks.roles.session import keep_for_run, load_history

    try:
        settings = load_settings()
        history = load_history(settings.home_dir, settings.history_size)
        folder = Path(str(workspace)).expanduser() if workspace else settings.workspace_dir  # as artoo_task
        RUN.set(run_context(request, folder))  # R1 begins with the bytes every later role's request begins with
    except (ArtooError, OSError, ValueError):
        return None
    keep_for_run(request, history)  # the run's R1 reads this history, not one another command changed since
    builder = RequestBuilder(settings)
    r1 = builder.send_ahead("R1", "TaskSpec", messages_for(request, history))
    return (builder, settings, r1) if r1 is not None else None


def plan_ahead(request: str, workspace: Path | None, sent: tuple[Any, Settings, Any] | None
               ) -> threading.Thread | None:
    """Round 1's R2 request, sent as soon as R1's early answer is in: before the flow exists, Prefect imported
    or its server started.

    Why: R1's answer (1.5 s from a fast hosted model) comes before ``artoo run`` has imported Prefect and found
    its server (2–4 s on two cores, more for the day's first command), and R2's words follow from that answer by
    code alone: the TaskSpec as the R1 task reads it (``perceiver.spec_from``), memory's calibration, the plan
    prompt (``tasks.plan.inputs.plan_messages``).  So R2 thinks while the rest starts.  The flow still asks:
    its plan task takes this answer only when its own request is identical; an answer code cannot read, or
    memory written meanwhile, means the flow asks itself (artoo.tasks.llm.transport.early).  A thread, never an error.
    """
    if sent is None:
        return None
    builder, settings, r1 = sent
    from artoo.tasks.plan import ahead

    ahead.expect(request)  # the flow asks before working round 1 out itself (artoo.tasks.plan.ahead)
    context = contextvars.copy_context()  # the run's shared prompt text goes with it (prompting.RUN)
    thread = threading.Thread(target=context.run, args=(_plan_ahead, builder, settings, request, workspace, r1),
                              name="artoo-plan-ahead", daemon=True)
    thread.start()
    return thread


def _plan_ahead(builder: Any, settings: Settings, request: str, workspace: Path | None, r1: Any) -> None:
    """Import and open what R2's words need while R1 is answered, then send R2 once its answer is read."""
    from artoo.tasks.llm.base import tier_of
    from artoo.tasks.llm.transport.http import answer_in
    from artoo.tasks.plan import ahead
    from artoo.tasks.plan.inputs import plan_messages, round_inputs
    from artoo.tasks.roles.perceiver import spec_from

    store = _memory(settings)  # opened while R1 is out: it does not depend on the answer
    spec = inputs = None
    claimed = False
    try:
        reply, _ = r1.result(timeout=builder.endpoint(tier_of("R1")).timeout_s + 5)
        answer = answer_in(reply, "TaskSpec")
        if answer is None or not (claimed := ahead.claim(request)):
            return
        spec = spec_from(answer, request)
        inputs = round_inputs(settings, store, spec, [], [])
    except Exception as exc:  # reading ahead is an aid: the flow asks for itself
        log.debug("round 1's R2 was not sent ahead: %s", exc)
    finally:
        if store is not None:
            store.close()
        if claimed and ahead.settle(request, spec, inputs):  # the flow takes these inputs: one R2, same words
            folder = Path(str(workspace)).expanduser() if workspace else settings.workspace_dir  # as artoo_task
            try:
                builder.send_early("R2", "Plan", plan_messages(settings, inputs, spec, None, "", "", str(folder)))
            except Exception as exc:  # the flow's own send_plan_early sends the same words
                log.debug("round 1's R2 was not sent ahead: %s", exc)


def _memory(settings: Settings) -> Any:
    """This home's memory as the run opens it, or None as the run has it when it cannot be opened."""
    if settings.ablation.strategy == "retry":
        return None  # the retry ablation plans without memory
    from artoo.memory.backends import open_store

    try:
        return open_store(settings.home_dir, settings.memory)
    except Exception:
        return None


def audit_run(published: dict[tuple[str, str], set[int]], started: datetime) -> None:
    """The embedded Auditor: every message of the run reaches the audit log before ``artoo run`` returns.

    ``published`` is keyed by (task_id, run), so another run of the same task cannot stand in for this one.
    """
    from artoo.flows.auditor import describe_key, observe_run

    if not published:
        return
    result = observe_run(published, started)
    if not result.complete:
        missing = "; ".join(f"{describe_key(key)}: {len(seqs)} message(s)" for key, seqs in result.missing.items())
        err.print(f"artoo: the audit log is missing messages of this run ({missing})"
                  f"{f' — {result.error}' if result.error else ''}; the Prefect server did not deliver them "
                  "in time. `artoo audit verify` still holds; run the auditor flow to catch up.",
                  style="yellow", markup=False, highlight=False)


def run_request(request: str, settings: Settings, workspace: Path | None, as_json: bool,
                verbose: bool = False) -> FinalResult:
    """Run and print; returns the FinalResult so the CLI can choose the exit code."""
    document = execute_flow(request, workspace, verbose)
    final = FinalResult.model_validate(document["final"])
    if as_json:
        print(json.dumps(final.model_dump(mode="json")))
    else:
        report(final, document)
    return final


def report(final: FinalResult, document: dict, console: Console | None = None) -> None:
    """The human summary: directive, summary, next steps and the per-role cost report."""
    console = console or Console(highlight=False)
    colour = {"accept": "green", "success": "green", "unsure": "yellow", "unverified": "yellow"}.get(final.directive,
                                                                                                      "red")
    word = FINAL_WORDS.get(final.directive, final.directive)
    console.print(f"\n[bold {colour}]{word}[/] after {final.replans} replan(s): {final.summary}")
    for step in final.next_steps:
        console.print(f"  next: {step}")
    table = Table(title="cost by role", title_justify="left")
    for column in ("role", "LLM calls", "prompt tokens", "largest prompt", "completion tokens", "LLM seconds"):
        table.add_column(column, justify="left" if column == "role" else "right")
    for role, row in sorted(document.get("cost", {}).items()):
        table.add_row(role, str(row.get("calls", 0)), str(row.get("prompt_tokens", 0)),
                      str(row.get("largest_prompt_tokens", 0)), str(row.get("completion_tokens", 0)),
                      f"{row.get('llm_seconds', 0):.2f}")
    console.print(table)
    tool_s, wall_s = document.get("tool_seconds", 0), document.get("wall_seconds", 0)
    console.print(f"tool time {tool_s:.2f} s, wall time {wall_s:.2f} s")
