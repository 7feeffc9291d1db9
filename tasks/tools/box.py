"""ToolBox: the executor's tools behind one ``call``, with the Law-1 gate in front.

Every call returns a ToolResult and never raises for tool trouble: an unknown or
blocked tool is a logical failure, a blocked target or an unreachable world is an
environmental one.  Before anything irreversible runs (a shell command the policy
flags, a write onto an existing file) the gate asks the user; a denial is recorded in
``law1_denials`` and returned as ``[LAW1] denied: …``, an approval in ``approvals``.
Output reaches the model as headTail(output, 4000); evidence is recorded by code as
``name: input → firstN(output, 200)``.

Confinement (why: the arguments are written by a model that may have read hostile text):
read_file and glob stay inside the read roots (the workspace and the home directory unless
``allowed_roots`` says otherwise), write_file creates files only inside the write roots
(the workspace), and every path is resolved through symlinks and ``..`` first.  Shell
commands run in the sandbox of tasks.tools.sandbox; network is off unless the subtask
needs the web (the ``network`` flag, or once it has called ``search``).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
from pathlib import Path

from artoo.config.settings import Settings
from artoo.tasks.law1.judge import judge_command, judge_write, real_exists
from artoo.tasks.tools import files, sandbox, shell
from artoo.tasks.tools.locate import locate
from artoo.tasks.tools.models import Gate, PendingAction, ToolError, ToolResult
from artoo.tasks.tools.specs import PRIMARY, SPECS
from artoo.tasks.tools.text import first_n, head_tail
from artoo.tasks.tools.web import DDG_URL, web_search


class ToolBox:
    """The executor's tools for one subtask, with GGS blocks and the Law-1 gate applied."""

    def __init__(self, settings: Settings, workspace: Path, gate: Gate, blocked_tools: set[str] = frozenset(),
                 blocked_targets: set[str] = frozenset(), allowed_roots: list[Path] | None = None, *,
                 search_url: str = DDG_URL, network: bool = False, write_roots: list[Path] | None = None,
                 sandbox_mode: str | None = None, limits: sandbox.Limits | None = None) -> None:
        self.settings = settings
        self.workspace = Path(workspace).expanduser()
        self.gate = gate
        self.blocked_tools = set(blocked_tools)
        self.blocked_targets = {t for t in blocked_targets if t}
        self.allowed_roots = allowed_roots
        self.read_roots = [Path(r).expanduser() for r in allowed_roots or [self.workspace, Path.home()]]
        self.write_roots = [Path(r).expanduser() for r in write_roots or [self.workspace]]
        self.search_url = search_url
        self.network = network
        """Shell commands may use the network (set when the subtask needs the web, or after a search)."""
        self.sandbox_mode = sandbox_mode or getattr(settings.tools, "sandbox", "auto")
        if self.sandbox_mode not in sandbox.MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(sandbox.MODES)}, got {self.sandbox_mode!r}")
        self.limits = limits or sandbox.Limits.from_params(settings.tools)
        self.law1_denials: list[PendingAction] = []
        self.approvals: list[PendingAction] = []
        self._described = False

    def specs(self) -> list[dict]:
        """Function-tool specs of the tools not blocked this round."""
        return [copy.deepcopy(s) for s in SPECS if s["function"]["name"] not in self.blocked_tools]

    async def call(self, name: str, arguments: dict | str | None) -> ToolResult:
        """Run one tool call; every failure comes back as ok=False with a failure class."""
        args = _arguments(arguments)
        key = PRIMARY.get(name)
        value = args.get(key) if key else None
        shown = value if isinstance(value, str) else json.dumps(args, default=str)[:200]
        if key is None:
            return self._result(name, shown, ToolError(f"unknown tool {name!r}; the tools are "
                                                       f"{', '.join(PRIMARY)}", "logical"))
        if name in self.blocked_tools:
            return self._result(name, shown, ToolError(f"tool {name} is blocked by the GGS for this round",
                                                       "logical"))
        if not isinstance(value, str) or not value.strip():
            return self._result(name, shown, ToolError(f"tool {name} needs a non-empty string argument "
                                                       f"{key!r}", "logical"))
        target = next((t for t in sorted(self.blocked_targets) if value == t or t in value), None)
        if target is not None:
            return self._result(name, value, ToolError(
                f"{name} refused: {value!r} involves {target!r}, a target the GGS blocked for this round "
                "(it failed before); use a different target", "environmental"))
        try:
            output = await self._dispatch(name, value, args)
        except ToolError as exc:
            return self._result(name, value, exc)
        except OSError as exc:
            return self._result(name, value, ToolError(f"{name} failed: {exc}", "environmental"))
        if name == "search":
            self.network = True  # the subtask needs the web: its shell commands may fetch what it found
        return self._result(name, value, output)

    def _result(self, name: str, shown: str, outcome: str | ToolError) -> ToolResult:
        limit = self.settings.tools.head_tail_limit
        ok = not isinstance(outcome, ToolError)
        output = head_tail(str(outcome), limit).replace("\x00", "\ufffd")  # PostgreSQL cannot store NUL
        shown = shown.replace("\x00", "\ufffd")
        evidence = f"{name}: {shown} → {first_n(output, self.settings.tools.evidence_chars)}"
        failure = None if ok else outcome.failure_class
        return ToolResult(ok=ok, output=output, failure_class=failure, evidence=evidence)

    async def _dispatch(self, name: str, value: str, args: dict) -> str:
        if name == "locate":
            answer = await asyncio.to_thread(locate, value, Path.home())
            return answer.render(value, f"under {Path.home()}")
        if name == "glob":
            return await asyncio.to_thread(files.glob_files, value, self.workspace, roots=self.read_roots)
        if name == "read_file":
            path = files.confine(files.resolve_path(value, self.workspace), self.read_roots, "read_file")
            return await asyncio.to_thread(files.read_text, path)
        if name == "write_file":
            return await self._write(value, args.get("content"))
        if name == "shell":
            return await self._shell(value)
        return await web_search(value, self.search_url)

    async def _write(self, raw: str, content: object) -> str:
        if not isinstance(content, str):
            raise ToolError("write_file needs a string argument 'content'", "logical")
        path = files.confine(files.resolve_path(raw, self.workspace), self.read_roots, "write_file")
        if not os.path.lexists(path) and not files.within(str(path), self.write_roots):
            names = ", ".join(str(r) for r in self.write_roots)
            raise ToolError(f"write_file refused: new files are created only in {names}; {path} is outside. "
                            "Write the file there instead.", "environmental")
        files.refuse_special(path, "write_file")
        verdict = judge_write(path, exists=real_exists)
        if verdict.irreversible:
            action = PendingAction(tool="write_file", command=f"write_file {path}", targets=[str(path)],
                                   reason=verdict.reason)
            await self._confirm(action)
        return await asyncio.to_thread(files.write_text, path, content)

    async def _confirm(self, action: PendingAction) -> None:
        """Ask the gate; raise the [LAW1] denial unless the user explicitly approves."""
        try:
            approved = await self.gate(action) is True
        except Exception as exc:  # a gate that fails has not approved anything
            approved = False
            action = action.model_copy(update={"reason": f"{action.reason} (gate failed: {exc})"})
        if not approved:
            self.law1_denials.append(action)
            raise ToolError(f"[LAW1] denied: {action.command}\nThe user did not approve this irreversible "
                            f"action ({action.reason}). Nothing was changed.", "environmental")
        self.approvals.append(action)

    async def _shell(self, command: str) -> str:
        verdict = judge_command(command, self.workspace, exists=real_exists)
        if verdict.irreversible:  # run exactly what the user approves: no rewrite widens a destructive find
            await self._confirm(PendingAction(tool="shell", command=command, targets=verdict.targets,
                                              reason=verdict.reason))
            return await self._run(command, [], approved=True)
        command, removed = shell.strip_maxdepth(command)
        notes = [f"[note: removed {', '.join(removed)} from find]"] if removed else []
        query = shell.find_on_personal_path(command)
        if query is not None:
            return await self._find_via_locate(query, notes)
        return await self._run(command, notes)

    async def _sandbox(self, approved: bool) -> sandbox.Sandbox:
        """How this command is confined; an approved Law-1 action runs outside bubblewrap, under the limits."""
        binary = None
        confine = not approved or self.settings.tools.approved_in_sandbox
        if self.sandbox_mode != "off" and confine:
            binary = await asyncio.to_thread(sandbox.find_bwrap)
            if binary is None and self.sandbox_mode == "require":
                raise ToolError("shell refused: the sandbox is required but bubblewrap cannot run here: "
                                f"{sandbox.bwrap_problem()}", "environmental")
        box = sandbox.Sandbox(self.workspace, self.network, self.limits, binary)
        timeout = self.settings.tools.shell_timeout_s
        if approved and not confine:
            _log(logging.WARNING, "shell: the user approved this Law-1 action, so it runs outside the sandbox; "
                                  "the limits and the timeout still apply")
        elif not self._described:
            self._described = True
            _log(logging.INFO if binary else logging.WARNING, sandbox.describe(box, timeout))
        return box

    async def _run(self, command: str, notes: list[str], approved: bool = False) -> str:
        self.workspace.mkdir(parents=True, exist_ok=True)
        timeout = self.settings.tools.shell_timeout_s
        prefix = "".join(n + "\n" for n in notes)
        limit = max(self.settings.tools.head_tail_limit - len(prefix) - 40, 200)
        argv = shell.build_shell_argv(command, await self._sandbox(approved))
        env = sandbox.scrubbed_env(os.environ)
        done = await shell.run_capped(argv, self.workspace, timeout, limit, env=env)
        if done.timed_out:
            raise ToolError(f"{prefix}timed out after {timeout:g}s (the command and its children were killed)"
                            f"\n{done.output}", "environmental")
        body = done.output.rstrip("\n")
        text = f"{prefix}{body}{chr(10) if body else ''}[exit code {done.returncode}]"
        if done.returncode == 0:
            return text
        signum = sandbox.killed_by(done.returncode)
        if signum is not None:  # a limit or a signal ended it: the world stopped it, not the approach
            raise ToolError(f"{text}\n{sandbox.limit_note(signum, self.limits)}", "environmental")
        raise ToolError(text, "environmental" if done.returncode in (126, 127) else "logical")

    async def _find_via_locate(self, query: shell.FindQuery, notes: list[str]) -> str:
        answer = await asyncio.to_thread(locate, query.pattern, Path.home(), query.roots)
        paths = [p for p in answer.paths if _kind_ok(p, query.kind)]
        answer.paths = paths
        where = "under " + ", ".join(str(r) for r in query.roots)
        header = "[find on a personal path was answered by locate]"
        return "\n".join([*notes, header, answer.render(query.pattern, where)])


def _log(level: int, message: str) -> None:
    """Into the Prefect run's log when inside a run, else the ``artoo.tools`` logger."""
    try:
        from prefect.logging import get_run_logger

        logger = get_run_logger()
    except Exception:  # outside a flow or task run
        logger = logging.getLogger("artoo.tools")
    logger.log(level, message)


def _kind_ok(path: str, kind: str | None) -> bool:
    target = Path(path)
    return kind is None or (kind == "f" and target.is_file()) or (kind == "d" and target.is_dir())


def _arguments(arguments: dict | str | None) -> dict:
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}
