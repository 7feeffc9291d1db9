"""Law 1's confirmation gate: nothing irreversible runs without an explicit approval.

Three ways to ask, chosen by ``law1_mode``: ``pause`` pauses the flow run with a resume
form in the Prefect UI that shows the exact command and its targets (approve runs it,
deny or timeout does not); ``console`` asks on the terminal of an interactive
``artoo run``; ``deny`` answers no at once (non-interactive with nobody to ask).
``auto`` picks pause for runs of a deployment, console on a TTY, deny otherwise.
``policy`` asks a callable named in ``law1_policy`` (``artoo eval`` answers by a stated rule:
nobody is at the keyboard, and its rule is part of what it measures).
Every decision is logged in the run's logs.

The question waits where the person looks: the pause happens on the nested subtask run,
but a person watches the top-level ``artoo · <request>`` run.  So while it waits, that run's
log gets a line with a link to the waiting form, and a markdown artifact on it says that it
waits and lists the exact change set (updated with the answer); the terminal shows the
same line through Prefect's console log.

A question is asked once per task: when the person (or the policy, or a timeout) did not approve
an action, the same question later in the task (the same tool, command and change set: a replan
or a retry that tries it again) is denied at once without asking again.  Asking someone twice
what they already refused wastes their time, and in ``pause`` mode each new question waits out
its own timeout.  An approval is never remembered: each irreversible action needs its own.
"""

from __future__ import annotations

import asyncio
import sys
import time
from uuid import UUID

from prefect.context import FlowRunContext
from prefect.input import RunInput
from prefect.logging import get_run_logger
from prefect.logging.loggers import flow_run_logger
from prefect.utilities.urls import url_for

from artoo.config.settings import Settings
from artoo.tasks.llm.transport.progress import INFLIGHT


class Law1Approval(RunInput):
    """The resume form: tick approve to run the action, leave it to deny."""

    approve: bool = False


def describe(action) -> str:
    """Markdown shown above the resume form."""
    targets = ", ".join(f"`{t}`" for t in action.targets) or "(see command)"
    if action.changes:
        listed = "\n".join(action.changes)
        return (f"### artoo asks for confirmation (Law 1)\n\nThe **{action.tool}** command\n\n```\n"
                f"{action.command}\n```\n\nran on a copy-on-write view of the workspace and made exactly these "
                f"changes:\n\n```\n{listed}\n```\n\n**Why it needs you:** {action.reason}\n\nTick *approve* to make "
                "exactly these changes real; leave it unticked (or let it time out) to discard them: then "
                "nothing happened.")
    return (f"### artoo asks for confirmation (Law 1)\n\nThe **{action.tool}** tool wants to run an "
            f"irreversible action:\n\n```\n{action.command}\n```\n\n**Targets:** {targets}\n\n"
            f"**Why it needs you:** {action.reason}\n\nTick *approve* to run it; leave it unticked "
            "(or let it time out) to deny.")


def waiting_markdown(action, url: str, answer: str | None = None) -> str:
    """The top-level run's artifact: it waits (or was answered), with the link and the change list."""
    head = (f"## ⏸ artoo is waiting for your answer (Law 1)\n\n**[Answer the question here]({url})**"
            if answer is None else f"## Law-1 question answered: **{answer}**\n\n[The question]({url})")
    listed = "\n".join(action.changes) or "(the command has not run: judged by its text)"
    return f"{head}\n\n```\n{action.command}\n```\n\nChanges:\n\n```\n{listed}\n```\n\n{action.reason}"


def resolve_mode(settings: Settings) -> str:
    """The effective mode for this run."""
    if settings.law1_mode != "auto":
        return settings.law1_mode
    ctx = FlowRunContext.get()
    if ctx and ctx.flow_run and ctx.flow_run.deployment_id:
        return "pause"
    return "console" if sys.stdin is not None and sys.stdin.isatty() else "deny"


def make_gate(settings: Settings, mode: str, decisions: list[str], waits: list[float] | None = None,
              top_run_id: str | None = None):
    """An async gate(PendingAction) -> bool that records every decision in ``decisions``.

    ``waits`` receives the seconds each question waited for the person's answer: that is
    the person's time, not the agent's, so the medium loop keeps it out of Ω.  Questions are
    asked one at a time, so the waits never overlap.  ``top_run_id`` is the run a person
    watches: a paused question is announced there.
    """
    lock = asyncio.Lock()
    refused: set[tuple] = set()  # the questions not approved in this task: never asked twice

    async def gate(action) -> bool:
        logger = get_run_logger()
        async with lock:  # one question at a time, even with parallel subtasks
            if question(action) in refused:
                decisions.append(f"denied: {action.command}")
                logger.warning("[LAW1] denied without asking again (not approved earlier in this task): %s",
                               action.command)
                return False
            asked = time.monotonic()
            approved = await _ask(mode, action, settings, top_run_id)
            waited = time.monotonic() - asked
            if not approved:
                refused.add(question(action))
        if waits is not None:
            waits.append(waited)
        verdict = "approved" if approved else "denied"
        decisions.append(f"{verdict}: {action.command}")
        who = "user" if approved and mode != "policy" else mode
        logger.warning("[LAW1] %s by %s after %.1f s: %s (targets: %s)", verdict, who,
                       waited, action.command, ", ".join(action.targets))
        return approved

    return gate


def question(action) -> tuple:
    """What makes two Law-1 questions the same: the tool, the command (spacing aside) and the exact change set."""
    return action.tool, " ".join(action.command.split()), tuple(action.changes)


async def _ask(mode: str, action, settings: Settings, top_run_id: str | None = None) -> bool:
    if mode == "pause":
        from prefect.flow_runs import apause_flow_run

        form = Law1Approval.with_initial_data(description=describe(action), approve=False)
        announced = await _announce(action, top_run_id)
        approved = False
        try:
            answer = await apause_flow_run(wait_for_input=form, timeout=settings.law1_timeout_s, poll_interval=1)
            approved = bool(getattr(answer, "approve", False))
        except Exception as exc:  # timeout or a pause the server refused: that is not an approval
            get_run_logger().warning("[LAW1] no approval (%s)", exc)
        await _answered(announced, action, "approved" if approved else "denied")
        return approved
    if mode == "policy":
        return await ask_policy(settings.law1_policy, action)
    if mode == "console":
        changes = "".join(f"\n    {line}" for line in action.changes)
        made = f"\n  it made exactly these changes on a copy-on-write view:{changes}" if changes else ""
        prompt = (f"\n[LAW1] artoo wants to run:\n  {action.command}{made}\n  ({action.reason})\n"
                  "Approve? [y/N] ")
        reply = await asyncio.to_thread(_console_input, prompt)
        return reply.strip().lower() in ("y", "yes")
    return False


async def ask_policy(name: str | None, action) -> bool:
    """The configured policy's answer (``module:callable``, sync or async); a policy that fails approves nothing."""
    import importlib
    import inspect

    try:
        module, _, attr = (name or "").partition(":")
        policy = getattr(importlib.import_module(module), attr)
        answer = policy(action)
        return (await answer if inspect.isawaitable(answer) else answer) is True
    except Exception as exc:  # a missing or broken policy is not an approval
        get_run_logger().warning("[LAW1] policy %r gave no answer (%s): denied", name, exc)
        return False


async def _announce(action, top_run_id: str | None) -> tuple[UUID, str] | None:
    """Log a link to the waiting form on the top-level run and put a 'waiting' artifact there."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return None
    url = url_for("flow-run", obj_id=ctx.flow_run.id) or f"flow run {ctx.flow_run.id}"
    top = UUID(str(top_run_id)) if top_run_id else ctx.flow_run.id
    flow_run_logger(flow_run_id=top).warning("[LAW1] waiting for your answer: `%s` (%d change(s)). Answer it "
                                             "here: %s", action.command, len(action.changes), url)
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import ArtifactCreate

        async with get_client() as client:
            artifact = await client.create_artifact(ArtifactCreate(
                type="markdown", data=waiting_markdown(action, url), flow_run_id=top,
                description="artoo waits for a Law-1 answer"))
        return artifact.id, url
    except Exception as exc:  # the log line above already points at the form
        get_run_logger().warning("[LAW1] could not put the waiting note on the top-level run: %s", exc)
        return None


async def _answered(announced: tuple[UUID, str] | None, action, answer: str) -> None:
    """Turn the top-level run's 'waiting' artifact into the answer."""
    if announced is None:
        return
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import ArtifactUpdate

        async with get_client() as client:
            await client.update_artifact(announced[0], ArtifactUpdate(
                data=waiting_markdown(action, announced[1], answer), description=f"Law-1 question {answer}"))
    except Exception as exc:
        get_run_logger().warning("[LAW1] could not update the waiting note: %s", exc)


def _console_input(prompt: str) -> str:
    with INFLIGHT.question():  # a slow call's waiting line (artoo.inflight) leaves the terminal to the question
        sys.stderr.write(prompt)
        sys.stderr.flush()
        try:
            return sys.stdin.readline()
        except (OSError, ValueError):
            return ""
