"""``artoo chat``: the spec's REPL, artoo's primary interaction channel.

Each line is a request run through the full loop, with session context (R1 sees the last
``history_size`` requests and their outcomes, kept in ARTOO_HOME/session_history.jsonl by the
flow itself) and live progress (the same bus tap as ``artoo run``).  Lines starting with ``/``
are commands that answer from local files without running a task: ``/audit`` (the Auditor's
report from the audit log: no server, no LLM, so it answers well within the spec's 3 s),
``/memory [SPACE ENTITY]``, ``/log [TASK]``, ``/replay TASK [ggs.KEY=VALUE …]``, ``/help``,
``/exit``.

Why prompt_toolkit: line editing, a persistent history file (ARTOO_HOME/chat_history) and
Ctrl-C/Ctrl-D handling that a bare ``input()`` does not give.  While a task runs, the prompt is
not active, so a Law-1 question is asked inline on the same terminal (the console gate reads
the answer), and Ctrl-C interrupts the running task (its Prefect run ends cancelled) and returns
to the prompt instead of leaving the REPL.

Requests need an LLM endpoint like ``artoo run``; the slash commands (/audit, /memory, /log,
/replay) need none.  So without one the REPL still starts (``chat``, the command): it says, once,
what to set, and a request typed anyway gets that message instead of a run.  A broken settings
file still refuses to start.  Only what the command needs is imported at the top, so
``artoo --help`` pays nothing for the REPL.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

if TYPE_CHECKING:
    from artoo.config.settings import Settings

PROMPT = "artoo> "
HISTORY_FILE = "chat_history"
HELP = """Type a request in plain words to run it (the last 5 tasks are its context).
  /audit                    the Auditor's report (no server needed)
  /memory [SPACE ENTITY]    memory statistics, or the potentials and SOPs of one tag pair
  /log [TASK]               the timeline of a task (the latest by default)
  /replay TASK [ggs.K=V …]  the GGS trajectory replayed under other hyperparameters
  /help                     this help
  /exit                     leave (Ctrl-D too); Ctrl-C cancels a running task, not the REPL"""


class Chat:
    """One REPL session: reads lines, runs requests, answers slash commands."""

    def __init__(self, settings: Settings, workspace: Path | None = None, verbose: bool = False,
                 console: Console | None = None, no_endpoint: str | None = None) -> None:
        self.settings = settings
        self.no_endpoint = no_endpoint
        """Why requests cannot run (no LLM endpoint configured); None when they can."""
        self.workspace = workspace
        self.verbose = verbose
        self.console = console or Console(highlight=False)
        self.commands: dict[str, Callable[[list[str]], None]] = {
            "/audit": self.audit, "/memory": self.memory, "/log": self.log, "/replay": self.replay,
            "/help": lambda _args: self.console.print(HELP, markup=False),
        }

    def loop(self) -> int:
        """Read and handle lines until /exit or end of input; the exit code of the REPL."""
        read = _reader(self.settings.home_dir / HISTORY_FILE)
        self.console.print("artoo chat — type a request, or /help. Ctrl-D or /exit leaves.", markup=False)
        if self.no_endpoint:
            self.console.print(f"[yellow]requests need an LLM endpoint[/] ({self.no_endpoint})")
            self.console.print('  how: "Point artoo at a real model" in the README; '
                               "/audit, /memory, /log and /replay work without one", markup=False)
        while True:
            try:
                line = read(PROMPT)
            except KeyboardInterrupt:  # Ctrl-C at the prompt clears the line
                continue
            except EOFError:
                return 0
            if not self.handle(line.strip()):
                return 0

    def handle(self, line: str) -> bool:
        """Handle one line; False when the REPL should end."""
        if not line:
            return True
        if line.split()[0] in ("/exit", "/quit"):
            return False
        if line.startswith("/"):
            self.command(line)
            return True
        self.request(line)
        return True

    def command(self, line: str) -> None:
        """One slash command; its errors are printed, never raised."""
        try:
            name, *args = shlex.split(line)
        except ValueError as exc:
            self.console.print(f"artoo: cannot read that command: {exc}", markup=False)
            return
        handler = self.commands.get(name)
        if handler is None:
            self.console.print(f"artoo: unknown command {name}; /help lists them", markup=False)
            return
        try:
            handler(args)
        except ArtooError as exc:
            self.console.print(f"artoo: {exc}", markup=False)

    def request(self, text: str) -> None:
        """Run one request with live progress; Ctrl-C cancels it and comes back to the prompt."""
        if self.no_endpoint:
            self.console.print(f"[bold red]artoo:[/] not run: {self.no_endpoint}")
            return
        from artoo.config.contracts import FinalResult
        from artoo.runner import execute_flow, report

        try:
            document = execute_flow(text, self.workspace, self.verbose)
        except KeyboardInterrupt:
            self.console.print("\n[yellow]cancelled[/]: the task was interrupted (its run ends cancelled); "
                               "back at the prompt")
            return
        except ArtooError as exc:
            self.console.print(f"[bold red]artoo:[/] {exc}")
            return
        report(FinalResult.model_validate(document["final"]), document, self.console)

    def audit(self, _args: list[str]) -> None:
        """The Auditor's on-demand report, read from the local audit log, and how long it took."""
        started = time.perf_counter()
        text = audit_markdown(self.settings)
        from rich.markdown import Markdown

        self.console.print(Markdown(text))
        self.console.print(f"(audit report in {time.perf_counter() - started:.2f} s)", markup=False)

    def memory(self, args: list[str]) -> None:
        """Memory statistics, or one tag pair's potentials and SOPs."""
        from artoo.memory import cli_ops

        home = self.settings.home_dir
        if len(args) not in (0, 2):
            self.console.print("usage: /memory [SPACE ENTITY]", markup=False)
            return
        try:
            if not args:
                self._rows("memory", cli_ops.stats(home))
                return
            self._rows(f"potentials of {args[0]} / {args[1]}", cli_ops.potentials(home, args[0], args[1]))
            self._rows(f"SOPs of {args[0]} / {args[1]}", cli_ops.sops(home, args[0], args[1]))
        except (ValueError, OSError) as exc:
            self.console.print(f"artoo: {exc}", markup=False)

    def log(self, args: list[str]) -> None:
        """A task's timeline (the latest by default)."""
        from artoo.tasks.decisions.log import load_run
        from artoo.timeline import render

        _, records = load_run(self.settings.home_dir, args[0] if args else None)
        for line in render(records):
            self.console.print(line, markup=False)

    def replay(self, args: list[str]) -> None:
        """A task's GGS trajectory replayed under changed parameters."""
        from artoo.tasks.decisions.log import load_run
        from artoo.tasks.ggs.replay import ggs_steps, parse_overrides
        from artoo.tasks.ggs.replay import replay as run_replay
        from artoo.timeline import render_replay

        if not args:
            self.console.print("usage: /replay TASK [ggs.KEY=VALUE …]", markup=False)
            return
        _, records = load_run(self.settings.home_dir, args[0])
        result = run_replay(ggs_steps(records), parse_overrides([a.removeprefix("--set=") for a in args[1:]
                                                                 if a != "--set"]))
        for line in render_replay(result.as_dict()):
            self.console.print(line, markup=False)

    def _rows(self, title: str, data: dict | list) -> None:
        from artoo.timeline import rows_table

        self.console.print(rows_table(title, data))


def audit_markdown(settings: Settings) -> str:
    """The Auditor's report now, as markdown (the same as ``artoo audit``)."""
    from artoo.tasks.audit.anomalies import AuditParams
    from artoo.tasks.audit.log import AuditPaths
    from artoo.tasks.audit.persist import publish_report
    from artoo.tasks.audit.report import render_markdown

    paths = AuditPaths(settings.home_dir)
    report = publish_report(paths, "on-demand", AuditParams(epsilon=settings.ggs.epsilon))
    paths.request.touch()  # a running auditor flow also publishes it as the `audit-report` artifact
    return render_markdown(report)


def _reader(history: Path) -> Callable[[str], str]:
    """prompt_toolkit with a history file on a terminal; plain ``input`` when stdin is a pipe."""
    if not sys.stdin.isatty():
        return input
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    session: PromptSession[str] = PromptSession(history=FileHistory(str(history)))
    return session.prompt


err = Console(stderr=True, highlight=False)


def chat(
    workspace: Annotated[Path | None, typer.Option(help="Where new files go (default ~/artoo_workspace).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print Prefect's own log lines.")] = False,
) -> None:
    """The REPL: each line a request with session context; /audit, /memory, /log, /replay, /help, /exit."""
    from artoo.config.settings import load_settings

    try:
        settings = load_settings()
    except ArtooError as exc:
        err.print(f"[bold red]artoo:[/] {exc}")
        raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1) from None
    try:
        settings.require_tiers()
        no_endpoint = None
    except ConfigurationError as exc:
        no_endpoint = str(exc)
    from artoo.servers.embedded import start_early

    start_early()  # Prefect's server boots while the person types the first line
    raise typer.Exit(Chat(settings, workspace, verbose, no_endpoint=no_endpoint).loop())
