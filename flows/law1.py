"""Law 1's confirmation gate: nothing irreversible runs without an explicit approval.

Three ways to ask, chosen by ``law1_mode``: ``pause`` pauses the flow run with a resume
form in the Prefect UI that shows the exact command and its targets (approve runs it,
deny or timeout does not); ``console`` asks on the terminal of an interactive
``artoo run``; ``deny`` answers no at once (non-interactive with nobody to ask).
``auto`` picks pause for runs of a deployment, console on a TTY, deny otherwise.
``policy`` asks a callable named in ``law1_policy`` (``artoo eval`` answers by a stated rule:
nobody is at the keyboard, and its rule is part of what it measures).
Every decision is logged in the run's logs.
"""

from __future__ import annotations

import asyncio
import sys

from prefect.context import FlowRunContext
from prefect.input import RunInput
from prefect.logging import get_run_logger

from artoo.config.settings import Settings


class Law1Approval(RunInput):
    """The resume form: tick approve to run the action, leave it to deny."""

    approve: bool = False


def describe(action) -> str:
    """Markdown shown above the resume form."""
    targets = ", ".join(f"`{t}`" for t in action.targets) or "(see command)"
    return (f"### artoo asks for confirmation (Law 1)\n\nThe **{action.tool}** tool wants to run an "
            f"irreversible action:\n\n```\n{action.command}\n```\n\n**Targets:** {targets}\n\n"
            f"**Why it needs you:** {action.reason}\n\nTick *approve* to run it; leave it unticked "
            "(or let it time out) to deny.")


def resolve_mode(settings: Settings) -> str:
    """The effective mode for this run."""
    if settings.law1_mode != "auto":
        return settings.law1_mode
    ctx = FlowRunContext.get()
    if ctx and ctx.flow_run and ctx.flow_run.deployment_id:
        return "pause"
    return "console" if sys.stdin is not None and sys.stdin.isatty() else "deny"


def make_gate(settings: Settings, mode: str, decisions: list[str]):
    """An async gate(PendingAction) -> bool that records every decision in ``decisions``."""
    lock = asyncio.Lock()

    async def gate(action) -> bool:
        logger = get_run_logger()
        async with lock:  # one question at a time, even with parallel subtasks
            approved = await _ask(mode, action, settings)
        verdict = "approved" if approved else "denied"
        decisions.append(f"{verdict}: {action.command}")
        logger.warning("[LAW1] %s by %s: %s (targets: %s)", verdict, "user" if approved and mode != "policy" else mode,
                       action.command, ", ".join(action.targets))
        return approved

    return gate


async def _ask(mode: str, action, settings: Settings) -> bool:
    if mode == "pause":
        from prefect.flow_runs import apause_flow_run

        form = Law1Approval.with_initial_data(description=describe(action), approve=False)
        try:
            answer = await apause_flow_run(wait_for_input=form, timeout=settings.law1_timeout_s, poll_interval=1)
        except Exception as exc:  # timeout or a pause the server refused: that is not an approval
            get_run_logger().warning("[LAW1] no approval (%s)", exc)
            return False
        return bool(getattr(answer, "approve", False))
    if mode == "policy":
        return await ask_policy(settings.law1_policy, action)
    if mode == "console":
        prompt = f"\n[LAW1] artoo wants to run:\n  {action.command}\n  ({action.reason})\nApprove? [y/N] "
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


def _console_input(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    try:
        return sys.stdin.readline()
    except (OSError, ValueError):
        return ""
