"""ToolBox: the executor's tools behind one ``call``, with the Law-1 gate in front.

Every call returns a ToolResult and never raises for tool trouble: an unknown or blocked tool is a
logical failure, a blocked target or an unreachable world is an environmental one.  Before anything
irreversible happens the gate (gate.py) asks the person; shell commands run through the transactional
shell (runner.py).  Evidence is ``name: input → firstN(output, 200)``.

Confinement (why: the arguments are written by a model that may have read hostile text): read_file
and glob stay inside the read roots (the workspace and the home directory unless the Confinement's
``read_roots`` say otherwise), write_file creates files only inside the write roots (the workspace),
and every path is resolved through symlinks and ``..`` first.  Shell commands run in the sandbox of
artoo.tasks.tools.sandbox; network is off unless the subtask needs the web (the ``network`` flag, or
once it has called ``search``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from artoo.config.settings import Settings
from artoo.tasks.blame.access import blocked_by_target, call_accesses, pairs_by_access, refusal
from artoo.tasks.blame.failure import call_targets
from artoo.tasks.blame.methods import blocked_methods, refused_method
from artoo.tasks.tools import files, sandbox, shell
from artoo.tasks.tools.found import named_files_brief
from artoo.tasks.tools.gate import Law1Gate
from artoo.tasks.tools.locate import locate
from artoo.tasks.tools.models import Blocks, Confinement, Gate, PendingAction, ToolError, ToolResult
from artoo.tasks.tools.runner import ShellRunner
from artoo.tasks.tools.specs import PRIMARY, served
from artoo.tasks.tools.text import evidence_of, head_tail
from artoo.tasks.tools.web import DDG_URL, web_search


class ToolBox:
    """The executor's tools for one subtask, with GGS blocks and the Law-1 gate applied."""

    def __init__(self, settings: Settings, workspace: Path, gate: Gate, blocks: Blocks | None = None,
                 confinement: Confinement | None = None, *, recorder: Callable[[dict], None] | None = None,
                 created: set[str] | None = None) -> None:
        blocks, confinement = blocks or Blocks(), confinement or Confinement()
        self.settings = settings
        self.workspace = Path(workspace).expanduser()
        self.blocked_tools = set(blocks.tools)
        self.blocked_targets = blocked_by_target(blocks.targets, self.workspace)
        """Target → the accesses blocked, normalised as call targets are: matched exactly, never by substring."""
        self.read_roots = [Path(r).expanduser() for r in confinement.read_roots or [self.workspace, Path.home()]]
        self.write_roots = [Path(r).expanduser() for r in confinement.write_roots or [self.workspace]]
        self.search_url = confinement.search_url or DDG_URL
        self.network = confinement.network
        """Shell commands may use the network (set when the subtask needs the web, or after a search)."""
        sandbox_mode = confinement.sandbox_mode or getattr(settings.tools, "sandbox", "auto")
        if sandbox_mode not in sandbox.MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(sandbox.MODES)}, got {sandbox_mode!r}")
        self.law1 = Law1Gate(gate, self.workspace, created)
        self.runner = ShellRunner(settings, self.workspace, self.law1, sandbox_mode,
                                  confinement.limits or sandbox.Limits.from_params(settings.tools))
        self.blocked_pairs = pairs_by_access(blocks.pairs, self.workspace)
        """(tool, target, access) memory says failed: that tool may not use that target that way; others may."""
        self.recorder = recorder
        """Told every call with its arguments, output and exit status (the decision log)."""

    @property
    def law1_denials(self) -> list[PendingAction]:
        """The actions the person did not approve, in order."""
        return self.law1.law1_denials

    @property
    def approvals(self) -> list[PendingAction]:
        """The actions the person approved, in order."""
        return self.law1.approvals

    @property
    def created(self) -> set[str]:
        """Real paths this task created: its own, which later steps may change without a question."""
        return self.law1.created

    def specs(self) -> list[dict]:
        """Function-tool specs of the tools not blocked this round, and not ``search`` when the search service
        cannot be reached from here."""
        return served(self.blocked_tools, self.search_url)

    def files_now(self, names: list[str]) -> list[str]:
        """Whether each named file exists in the workspace now, one line each (artoo.tasks.tools.found)."""
        return named_files_brief(names, self.workspace)

    async def call(self, name: str, arguments: dict | str | None) -> ToolResult:
        """Run one tool call; every failure comes back as ok=False with a failure class."""
        self.runner.exit_code, self.runner.last_change_set = None, None
        result = await self._call(name, arguments)
        if self.recorder is not None:
            with contextlib.suppress(Exception):  # recording never breaks a tool call
                self.recorder({"name": name, "arguments": _arguments(arguments), "ok": result.ok,
                               "failure_class": result.failure_class, "exit_code": self.runner.exit_code,
                               "output": result.output, "change_set": self.runner.last_change_set})
        return result

    async def _call(self, name: str, arguments: dict | str | None) -> ToolResult:
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
        refusal = self._blocked(name, value)
        if refusal is not None:
            return self._result(name, value, refusal)
        method = refused_method(value, blocked_methods(self.blocked_tools)) if name == "shell" else None
        if method is not None:
            return self._result(name, value, ToolError(
                f"`{method}` is blocked by the GGS for this round (it failed before): use another program, or "
                "the same one another way; the shell itself stays open", "logical"))
        try:
            output = await self._dispatch(name, value, args)
        except ToolError as exc:
            return self._result(name, value, exc)
        except OSError as exc:
            return self._result(name, value, ToolError(f"{name} failed: {exc}", "environmental"))
        if name == "search":
            self.network = True  # the subtask needs the web: its shell commands may fetch what it found
        return self._result(name, value, output)

    def _blocked(self, name: str, value: str) -> ToolError | None:
        """The refusal of a call that uses a blocked target or memory pair the way that failed."""
        found = refusal(name, value, call_accesses(name, value, self.workspace), self.blocked_targets,
                        self.blocked_pairs)
        return None if found is None else ToolError(*found)

    def _result(self, name: str, shown: str, outcome: str | ToolError) -> ToolResult:
        result = self._shaped(name, shown, outcome)
        result.input = shown
        result.targets = call_targets(name, shown, self.workspace) if name in PRIMARY else []
        result.denied = bool(getattr(outcome, "denied", False))
        return result

    def _shaped(self, name: str, shown: str, outcome: str | ToolError) -> ToolResult:
        limit = self.settings.tools.head_tail_limit
        ok = not isinstance(outcome, ToolError)
        output = head_tail(str(outcome), limit).replace("\x00", "\ufffd")  # PostgreSQL cannot store NUL
        shown = shown.replace("\x00", "\ufffd")
        evidence = f"{name}: {shown} → {evidence_of(output, self.settings.tools.evidence_chars)}"
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
        await self.law1.check_write(path)
        return await asyncio.to_thread(files.write_text, path, content)

    async def _shell(self, command: str) -> str:
        by_effect = await self.runner.by_effect() is not None
        if not await self.law1.check_command(command, by_effect, self.network):
            query = shell.find_on_personal_path(command)  # commands run as written: never edited, only redirected
            if query is not None:
                return await self._find_via_locate(query)
        return await self.runner.run(command, self.network)

    async def _find_via_locate(self, query: shell.FindQuery) -> str:
        answer = await asyncio.to_thread(locate, query.pattern, Path.home(), query.roots)
        paths = [p for p in answer.paths if _kind_ok(p, query.kind)]
        answer.paths = paths
        where = "under " + ", ".join(str(r) for r in query.roots)
        header = "[find on a personal path was answered by locate]"
        return "\n".join([header, answer.render(query.pattern, where)])


def _kind_ok(path: str, kind: str | None) -> bool:
    target = Path(path)
    return kind is None or (kind == "f" and target.is_file()) or (kind == "d" and target.is_dir())


def _arguments(arguments: dict | str | None) -> dict:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, dict) else {}
