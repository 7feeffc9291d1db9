"""ToolBox: the executor's tools behind one ``call``, with the Law-1 gate in front.

Every call returns a ToolResult and never raises for tool trouble: an unknown or
blocked tool is a logical failure, a blocked target or an unreachable world is an
environmental one.  Before anything irreversible runs (a shell command the policy
flags, a write onto an existing file) the gate asks the user; a denial is recorded in
``law1_denials`` and returned as ``[LAW1] denied: …``, an approval in ``approvals``.
Output reaches the model as headTail(output, 4000), a committed change list cut before what the command
printed (text.with_note); evidence is ``name: input → firstN(output, 200)`` plus how a cut command ended.

Law 1 by effect (why: a judge of command text can never be complete): when overlayfs works
here, every shell command runs on a copy-on-write view of the workspace (overlay.py); its
change set (changeset.py) is committed quietly when it only creates files or changes files
this task created (``created``, shared by every subtask of the task), and is a Law-1
question listing the exact changes otherwise (artoo.tasks.law1.changes).  Approving commits
exactly that change set; denying discards it.  Where no overlay is possible, every command
that does not only read asks before it runs (the text judge), and the run's log says so.  With
the network on, the text judge still rules on what no overlay sees: data sent off the machine,
a daemon's changes.

Confinement (why: the arguments are written by a model that may have read hostile text):
read_file and glob stay inside the read roots (the workspace and the home directory unless
the Confinement's ``read_roots`` say otherwise), write_file creates files only inside the write roots
(the workspace), and every path is resolved through symlinks and ``..`` first.  Shell
commands run in the sandbox of artoo.tasks.tools.sandbox; network is off unless the subtask
needs the web (the ``network`` flag, or once it has called ``search``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from artoo.config.settings import Settings
from artoo.tasks.blame.access import blocked_by_target, call_accesses, pairs_by_access, refusal
from artoo.tasks.blame.failure import call_targets
from artoo.tasks.law1 import changes as law1_changes
from artoo.tasks.law1.judge import PolicyVerdict, judge_command, judge_unobservable, judge_write
from artoo.tasks.tools import blocks, changeset, doors, files, overlay, sandbox, shell
from artoo.tasks.tools.found import named_files_brief
from artoo.tasks.tools.locate import locate
from artoo.tasks.tools.models import Blocks, Confinement, Gate, PendingAction, ToolError, ToolResult
from artoo.tasks.tools.specs import PRIMARY, specs_for
from artoo.tasks.tools.text import evidence_of, head_tail, with_note
from artoo.tasks.tools.web import DDG_URL, web_search


class ToolBox:
    """The executor's tools for one subtask, with GGS blocks and the Law-1 gate applied."""

    def __init__(self, settings: Settings, workspace: Path, gate: Gate, blocks: Blocks | None = None,
                 confinement: Confinement | None = None, *, recorder: Callable[[dict], None] | None = None,
                 created: set[str] | None = None) -> None:
        blocks, confinement = blocks or Blocks(), confinement or Confinement()
        self.settings = settings
        self.workspace = Path(workspace).expanduser()
        self.gate = gate
        self.blocked_tools = set(blocks.tools)
        self.blocked_targets = blocked_by_target(blocks.targets, self.workspace)
        """Target → the accesses blocked (#26), normalised as call targets are: matched exactly, never by substring."""
        self.read_roots = [Path(r).expanduser() for r in confinement.read_roots or [self.workspace, Path.home()]]
        self.write_roots = [Path(r).expanduser() for r in confinement.write_roots or [self.workspace]]
        self.search_url = confinement.search_url or DDG_URL
        self.network = confinement.network
        """Shell commands may use the network (set when the subtask needs the web, or after a search)."""
        self.sandbox_mode = confinement.sandbox_mode or getattr(settings.tools, "sandbox", "auto")
        if self.sandbox_mode not in sandbox.MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(sandbox.MODES)}, got {self.sandbox_mode!r}")
        self.limits = confinement.limits or sandbox.Limits.from_params(settings.tools)
        self.created: set[str] = created if created is not None else set()
        """Real paths this task created: its own, which later steps may change without a question."""
        self.law1_denials: list[PendingAction] = []
        self.approvals: list[PendingAction] = []
        self._described = False
        self._law1_said: set[str] = set()
        self._view_choice: overlay.Choice | None = None
        self.blocked_pairs = pairs_by_access(blocks.pairs, self.workspace)
        """(tool, target, access) memory says failed: that tool may not use that target that way; others may."""
        self.recorder = recorder
        """Told every call with its arguments, output and exit status (the decision log)."""
        self._exit_code: int | None = None
        self.last_change_set: object | None = None
        """What the last call changed on disk, when a tool reports it (recorded as ``change_set``)."""

    def specs(self) -> list[dict]:
        """Function-tool specs of the tools not blocked this round."""
        return specs_for(self.blocked_tools)

    def files_now(self, names: list[str]) -> list[str]:
        """Whether each named file exists in the workspace now, one line each (artoo.tasks.tools.found)."""
        return named_files_brief(names, self.workspace)

    async def call(self, name: str, arguments: dict | str | None) -> ToolResult:
        """Run one tool call; every failure comes back as ok=False with a failure class."""
        self._exit_code, self.last_change_set = None, None
        result = await self._call(name, arguments)
        if self.recorder is not None:
            with contextlib.suppress(Exception):  # recording never breaks a tool call
                self.recorder({"name": name, "arguments": _arguments(arguments), "ok": result.ok,
                               "failure_class": result.failure_class, "exit_code": self._exit_code,
                               "output": result.output, "change_set": _plain(self.last_change_set)})
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
        """The refusal of a call that uses a blocked target or memory pair the way that failed (#26)."""
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
        verdict = judge_write(path, exists=os.path.lexists)  # a dangling symlink exists too
        if verdict.irreversible and law1_changes.under(str(path), self.created):
            verdict = PolicyVerdict(irreversible=False, reason=f"{path} was created by this task")
        elif not os.path.lexists(path):
            self.created.add(str(path))
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
            refusal = ToolError(f"[LAW1] denied: {action.command}\nThe user did not approve this irreversible "
                                f"action ({action.reason}). Nothing was changed.", "environmental")
            refusal.denied = True
            raise refusal
        self.approvals.append(action)

    async def _shell(self, command: str) -> str:
        effect = await self._by_effect()  # by effect, only what no overlay sees asks, and only with the network on
        verdict = judge_command(command) if effect is None else judge_unobservable(command) if self.network else None
        if verdict is not None and verdict.irreversible:
            await self._confirm(PendingAction(tool="shell", command=command, targets=verdict.targets,
                                              reason=verdict.reason))
            return await self._run(command, [])
        query = shell.find_on_personal_path(command)  # commands run as written: never edited, only redirected
        if query is not None:
            return await self._find_via_locate(query, [])
        return await self._run(command, [])

    async def _by_effect(self) -> str | None:
        """The view Law 1 judges this command on: "kernel", "fuse", or None for the text judge (logged once each)."""
        if self._view_choice is None:  # once per subtask (the owners' scan too): only our commits change files
            off = self.sandbox_mode == "off" or await asyncio.to_thread(sandbox.find_bwrap) is None
            self._view_choice = await asyncio.to_thread(
                overlay.decide, getattr(self.settings.tools, "overlay", "auto"),
                (sandbox.bwrap_problem() or "turned off") if off else None, self._writable())
        choice = self._view_choice
        if choice.line() not in self._law1_said:
            self._law1_said.add(choice.line())
            _log(logging.INFO if choice.kind == "kernel" else logging.WARNING, choice.line())
        return choice.kind

    def _writable(self) -> list[Path]:
        """The writable areas, each on an overlay: the workspace, plus your home when configured."""
        home = [Path.home()] if getattr(self.settings.tools, "overlay_home", False) else []
        return [self.workspace, *home]

    def _hidden(self) -> tuple[Path, ...]:
        """What tool commands must not see: artoo's home (memory, audit log, settings, history)."""
        return (Path(self.settings.home).expanduser(),)

    async def _sandbox(self) -> sandbox.Sandbox:
        """How this command is confined (also after a Law-1 approval: approval never widens it)."""
        binary = None
        if self.sandbox_mode != "off":
            binary = await asyncio.to_thread(sandbox.find_bwrap)
            if binary is None and self.sandbox_mode == "require":
                raise ToolError("shell refused: the sandbox is required but bubblewrap cannot run here: "
                                f"{sandbox.bwrap_problem()}", "environmental")
        box = sandbox.Sandbox(self.workspace, self.network, self.limits, binary, self._hidden())
        timeout = self.settings.tools.shell_timeout_s
        if not self._described:
            self._described = True
            _log(logging.INFO if binary else logging.WARNING, sandbox.describe(box, timeout))
        return box

    async def _run(self, command: str, notes: list[str]) -> str:
        self.workspace.mkdir(parents=True, exist_ok=True)
        timeout = self.settings.tools.shell_timeout_s
        prefix = "".join(n + "\n" for n in notes)
        limit = max(self.settings.tools.head_tail_limit - len(prefix) - 40, 200)
        box = await self._sandbox()
        kind = await self._by_effect() if box.bwrap is not None else None
        done, view = await self._execute(command, box, kind, limit)
        try:
            if view is not None and overlay.copy_up_failed(view.kind, done.output) and not self.network:
                self._view_choice = None  # a file of another owner or group came after the scan: look again
                if await self._by_effect() == "fuse":  # nothing of that run was kept: run it again, on fuse
                    view.close()
                    done, view = await self._execute(command, box, "fuse", limit)
                    prefix += overlay.RERUN_NOTE + "\n"
            settled = "" if view is None else await self._settle(command, view, done.output)
        finally:
            if view is not None:
                view.close()
        self._exit_code = None if done.timed_out else done.returncode
        blocked = blocks.judge(command, done.output, self._exit_code, box.network) if box.bwrap else blocks.Blocks()
        if done.timed_out:
            raise ToolError(f"{prefix}timed out after {timeout:g}s (the command and its children were killed)"
                            f"\n{done.output}{blocked.told}{settled}", "environmental")
        body = done.output.rstrip("\n")  # then what the sandbox stopped (blocks.py), then the change list
        text = with_note(f"{prefix}{body}{chr(10) if body else ''}[exit code {done.returncode}]{blocked.told}",
                         settled, self.settings.tools.head_tail_limit)  # which never crowds out what it printed
        if done.returncode == 0 and not blocked.failed:  # a pkill that reached nothing fails even on exit 0
            return text
        signum = sandbox.killed_by(done.returncode)
        if signum is not None:  # a limit or a signal ended it: the world stopped it, not the approach
            raise ToolError(f"{text}\n{sandbox.limit_note(signum, self.limits)}", "environmental")
        raise ToolError(text, "environmental" if blocked.notes or done.returncode in (126, 127) else "logical")

    async def _execute(self, command: str, box: sandbox.Sandbox, kind: str | None,
                       limit: int) -> tuple[shell.Completed, overlay.View | None]:
        """Run the command in the sandbox, on a ``kind`` view when given (the caller settles and closes it)."""
        fd = doors.filter_fd() if box.bwrap is not None else None
        view = overlay.open_view(self._writable(), kind=kind) if kind is not None else None
        extra = tuple(layer.root for layer in view.layers) if view is not None else ()
        try:
            argv = shell.build_shell_argv(command, dataclasses.replace(box, seccomp_fd=fd, writable=extra))
            argv = overlay.mount_argv(view, argv) if view is not None else argv
            done = await shell.run_capped(argv, self.workspace, self.settings.tools.shell_timeout_s, limit,
                                          env=sandbox.scrubbed_env(os.environ), pass_fds=() if fd is None else (fd,))
        except BaseException:
            if view is not None:
                view.close()
            raise
        finally:
            if fd is not None:
                os.close(fd)
        return done, view

    async def _settle(self, command: str, view: overlay.View, output: str) -> str:
        """Rule on the command's change set: commit it quietly, after an approval, or discard it."""
        fuse = view.kind == "fuse"
        found = [c for layer in view.layers
                 for c in await asyncio.to_thread(changeset.compute, layer.upper, layer.root, fuse)]
        if not found:  # at most new times (``touch`` of an existing file): applied, nothing to rule on
            await asyncio.to_thread(changeset.commit_times, view.layers, fuse)
            return ""
        self.last_change_set = [c.model_dump(mode="json") for c in found]
        refused = await asyncio.to_thread(changeset.unwritable, found)
        if refused:  # only a fuse view can let a command change what its user cannot: commit all or nothing
            raise ToolError(f"not committed: {command}\nIt changed what you may not change outside its view:\n"
                            + "\n".join(refused[:20]) + "\nNothing was changed.", "environmental")
        ruling = law1_changes.rule(found, self.created, os.path.realpath(self.workspace))
        if ruling.ask:
            action = PendingAction(tool="shell", command=command, targets=[c.path for c in ruling.ask],
                                   reason="; ".join(ruling.reasons), changes=[c.line() for c in found])
            try:
                await self._confirm(action)
            except ToolError as exc:
                printed = f"\nIt printed:\n{output.rstrip()}" if output.strip() else ""
                refusal = ToolError(f"{exc}\nIts changes were discarded:\n{law1_changes.summary(found)}{printed}",
                                    exc.failure_class)
                refusal.denied = True
                raise refusal from None
            now = [c for layer in view.layers
                   for c in await asyncio.to_thread(changeset.compute, layer.upper, layer.root, fuse)]
            if [c.line() for c in now] != action.changes:  # another step changed the files while it waited
                raise ToolError(f"[LAW1] not committed: {command}\nThe workspace changed while the question "
                                "waited, so the approved change set no longer describes what would happen. Nothing "
                                f"was changed; run the command again.\nApproved:\n{law1_changes.summary(found)}",
                                "environmental")
        for layer in view.layers:
            await asyncio.to_thread(changeset.commit, layer.upper, layer.root, fuse)
        self._own(found)
        return f"\n[changes committed]\n{law1_changes.summary(found)}"

    def _own(self, found: list[law1_changes.Change]) -> None:
        """Update the created set in place: the runtime shares the same set object across subtasks."""
        updated = law1_changes.after_commit(found, self.created)
        self.created.clear()
        self.created.update(updated)

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


def _plain(value: object) -> object:
    """A change set as JSON data (a pydantic model is dumped; None stays None)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


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
