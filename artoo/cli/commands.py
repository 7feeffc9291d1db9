"""The ``artoo`` command line: the top of the import graph.

Heavy imports (Prefect, DuckDB, openai) happen inside each command so ``artoo --help``,
``artoo config`` and ``artoo policy check`` answer at once.  Every ArtooError becomes a
clear message and an exit code (2 for configuration, 1 for run failures); tracebacks
are for bugs only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.chat import chat as chat_command
from artoo.cli.cluster import verify_homes
from artoo.cli.cluster import worker as worker_command
from artoo.cli.config import config as config_command
from artoo.cli.eval import eval_app
from artoo.cli.memory import dream as dream_command
from artoo.cli.memory import memory_app
from artoo.cli.observe import log as log_command
from artoo.cli.observe import replay as replay_command
from artoo.config.contracts import EXIT_CODES
from artoo.config.errors import ArtooError, ConfigurationError, EnvironmentalFailure

app = typer.Typer(help="artoo: a self-correcting task agent for your machine, on Prefect.", no_args_is_help=True)
policy_app = typer.Typer(help="Law 1: judge whether an action asks for your yes first.", no_args_is_help=True)
audit_app = typer.Typer(help="The Auditor's report and its hash-chained log.", invoke_without_command=True)
app.add_typer(memory_app, name="memory")
app.add_typer(policy_app, name="policy")
app.add_typer(audit_app, name="audit")
app.command("worker")(worker_command)
app.command("config")(config_command)
app.add_typer(eval_app, name="eval")

err = Console(stderr=True)
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Also print Prefect's own log lines "
                                          "(they are always in the run's logs in the Prefect UI).")]

NO_ENDPOINT = (
    "artoo needs an OpenAI-compatible LLM endpoint to understand and plan a request, and none is "
    "configured. Set OPENAI_BASE_URL, OPENAI_MODEL and OPENAI_API_KEY (or BRAIN_* for the planner "
    "tier and TOOL_* for the executor tier), for example a local llama.cpp or vLLM server, then run "
    "the request again. To see the full loop work without an endpoint, run `artoo demo`: it drives a "
    "real run with a plainly scripted brain. `artoo config` shows the effective settings."
)

INTERRUPTED = ("artoo: interrupted (Ctrl-C): the run was stopped where it stood and an LLM request in flight was "
               "abandoned, not awaited. `artoo log` shows how far it got.")


def fail(exc: ArtooError) -> None:
    """Print an ArtooError plainly and exit with its code."""
    code = 2 if isinstance(exc, ConfigurationError) else 1
    err.print(f"[bold red]artoo:[/] {exc}", highlight=False)
    raise typer.Exit(code)


@app.command()
def run(
    request: Annotated[str, typer.Argument(help="What you want done, in plain words.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one FinalResult JSON object.")] = False,
    workspace: Annotated[Path | None, typer.Option(help="Where new files go (default ~/artoo_workspace).")] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run one request through the full loop and print its FinalResult."""
    from artoo.config.settings import load_settings

    try:
        settings = load_settings()
        settings.require_tiers()
    except ConfigurationError as exc:
        if "no LLM endpoint" in str(exc):
            err.print(NO_ENDPOINT, highlight=False)
            raise typer.Exit(2) from None
        fail(exc)
    from artoo.servers.embedded import start_early

    start_early()  # Prefect's server boots in its own process while the flows import
    from artoo.runner import run_request

    try:
        final = run_request(request, settings=settings, workspace=workspace, as_json=as_json, verbose=verbose)
    except ArtooError as exc:
        fail(exc)
    except KeyboardInterrupt:  # typer would turn it into a silent exit 130
        err.print(INTERRUPTED, highlight=False)
        raise typer.Exit(130) from None
    raise typer.Exit(EXIT_CODES.get(final.directive, 1))


@app.command()
def demo(
    as_json: Annotated[bool, typer.Option("--json", help="Print the FinalResult JSON.")] = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run a real artoo-task flow against a built-in scripted brain (no endpoint needed)."""
    from artoo.servers.embedded import start_early

    start_early()
    from artoo.demo import run_demo

    try:
        final = run_demo(as_json=as_json, verbose=verbose)
    except ArtooError as exc:
        fail(exc)
    raise typer.Exit(EXIT_CODES.get(final.directive, 1))


@app.command()
def serve() -> None:
    """Serve the artoo-task, dreamer and auditor deployments against PREFECT_API_URL (SIGTERM stops)."""
    from prefect.settings import PREFECT_API_URL

    from artoo.config.settings import load_settings
    from artoo.flows.deployments import require_api_url, serve_all

    try:
        api_url = require_api_url(PREFECT_API_URL.value())
        settings = load_settings()
    except ArtooError as exc:
        fail(exc)
    try:
        settings.require_tiers()
    except ConfigurationError as exc:  # the Dreamer and the Auditor still work; say what task runs will need
        err.print(f"artoo serve: warning: artoo-task runs will fail until an LLM endpoint is configured ({exc})",
                  highlight=False, soft_wrap=True)
    ui = api_url.removesuffix("/").removesuffix("/api")
    err.print(f"artoo serve: serving artoo-task, dreamer and auditor to {api_url}\n"
              f"  run a task from the UI: {ui}/deployments (artoo-task → Run → Custom run)\n"
              "  Ctrl-C or SIGTERM stops serving (the schedules are paused until the next `artoo serve`)",
              highlight=False, soft_wrap=True)
    serve_all(settings)


@app.command()
def server(
    port: Annotated[int, typer.Option(help="Loopback port of the Prefect API and UI.")] = 4200,
) -> None:
    """Start a local Prefect server (with its own PostgreSQL) on loopback until Ctrl-C or SIGTERM."""
    import signal
    import time

    from artoo.config.settings import load_settings

    signal.signal(signal.SIGTERM, _interrupt)  # from here on SIGTERM is Ctrl-C: whatever started is stopped
    try:
        prefect, database = _start_server(load_settings().home_dir / "server", port)
    except ArtooError as exc:
        fail(exc)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    print(f"Prefect UI: http://127.0.0.1:{prefect.port}\nexport PREFECT_API_URL={prefect.api_url}", flush=True)
    claim = _claim_home(prefect.api_url)  # held until exit: commands of this home use this server untold
    err.print(f"artoo server: running over {'PostgreSQL' if database else 'SQLite'}, home {prefect.home} "
              "(Ctrl-C or SIGTERM stops it)", highlight=False)
    from artoo.servers.log import ServerLogWatcher

    # each failure of a background service (scheduler, late runs…) in one line, pointing at the full log
    watcher = ServerLogWatcher(prefect.log_path, lambda line: err.print(line, highlight=False, soft_wrap=True),
                               offset=prefect.log_offset).start()
    died = False
    try:
        while not died:
            time.sleep(0.5)
            died = prefect.process.poll() is not None
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        if claim is not None:
            os.close(claim)
        prefect.stop()
        if database:
            database.stop()
    if died:
        err.print(f"artoo server: the Prefect server exited on its own; see {prefect.home / 'server.log'}")
    raise typer.Exit(1 if died else 0)


def _interrupt(_signum: int, _frame: object = None) -> None:
    raise KeyboardInterrupt


def _claim_home(api_url: str) -> int | None:
    """Make this server the one ARTOO_HOME's commands use (a lingering embedded one is stopped first)."""
    from artoo.config.settings import load_settings
    from artoo.servers import lingering

    home = load_settings().home_dir
    try:
        lingering.stop(home)
    except EnvironmentalFailure as exc:  # another `artoo server` already serves this home
        err.print(f"artoo server: {exc}; commands keep using that one", highlight=False)
        return None
    return lingering.claim(home, api_url, "server")


@app.command()
def stop(force: Annotated[bool, typer.Option("--force", help="Stop it even while a command uses it "
                                             "(that command fails).")] = False) -> None:
    """Stop this home's lingering embedded Prefect server (the next command starts a fresh one)."""
    from artoo.config.settings import load_settings
    from artoo.servers import lingering

    try:
        stopped = lingering.stop(load_settings().home_dir, force=force)
    except ArtooError as exc:
        fail(exc)
    print(f"stopped the server at {stopped['api_url']} (pid {stopped['pid']})" if stopped
          else "no artoo server is running for this home")


def _start_server(root: Path, port: int):
    """PostgreSQL (when it can run here; else SQLite, said plainly) and Prefect on 127.0.0.1:port.

    Interrupted or failed half-way, it stops what it had started before re-raising.
    """
    from artoo.servers.local import Postgres, PrefectServer, postgres_bin
    from artoo.servers.process import port_taken

    if port_taken(port):
        raise ConfigurationError(f"port {port} on 127.0.0.1 is already in use (another Prefect server?): "
                                 "stop it, or pick another port with --port")
    root.mkdir(parents=True, exist_ok=True)
    database = Postgres(root / "postgres") if postgres_bin() is not None else None
    prefect = None
    try:
        if database is not None:
            try:
                database.start()
            except ConfigurationError as exc:  # e.g. root, with ARTOO_HOME where the postgres user cannot reach
                database = None
                err.print(f"artoo server: PostgreSQL would not start, using SQLite (parallel subtasks start "
                          f"slower): {exc}", highlight=False)
        prefect = PrefectServer(root / "prefect", port=port, database_url=database.url if database else None)
        prefect.start()
    except BaseException:
        if prefect is not None:
            prefect.stop()
        if database is not None:
            database.stop()
        raise
    return prefect, database


app.command("dream")(dream_command)
app.command("log")(log_command)
app.command("chat")(chat_command)
app.command("replay")(replay_command)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def bench(ctx: typer.Context) -> None:
    """Run the benchmarks side by side and print their tables (artoo bench --help; bench/README.md)."""
    from artoo.bench.harness import main as bench_main  # one parser for the options: the harness's own

    raise typer.Exit(bench_main(list(ctx.args)))


@audit_app.callback()
def audit(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the Auditor's current report (read from the audit log; no server needed)."""
    if ctx.invoked_subcommand is not None:
        return
    from artoo.config.settings import load_settings
    from artoo.tasks.audit.anomalies import AuditParams
    from artoo.tasks.audit.log import AuditPaths
    from artoo.tasks.audit.persist import publish_report
    from artoo.tasks.audit.report import render_markdown

    try:
        settings = load_settings()
    except ArtooError as exc:
        fail(exc)
    paths = AuditPaths(settings.home_dir)
    report = publish_report(paths, "on-demand", AuditParams(epsilon=settings.ggs.epsilon))
    paths.request.touch()  # a running auditor flow also publishes it as the `audit-report` artifact
    if as_json:
        print(json.dumps(report.model_dump(mode="json")))
        return
    from rich.markdown import Markdown

    Console().print(Markdown(render_markdown(report)))


@audit_app.command("verify")
def audit_verify(
    homes: Annotated[list[Path] | None, typer.Option(
        "--home", help="Verify the chains of these ARTOO_HOMEs (one per worker) together instead.")] = None,
) -> None:
    """Recompute the audit log's hash chain and report the first broken record."""
    if homes:
        verify_homes(homes)
        return
    from artoo.config.settings import load_settings
    from artoo.tasks.audit.chain import verify
    from artoo.tasks.audit.log import AuditPaths

    try:
        paths = AuditPaths(load_settings().home_dir)
    except ArtooError as exc:
        fail(exc)
    result = verify(paths.log, paths.head)
    if result.ok:
        Console().print(f"audit log intact: {result.records} record(s) in {paths.log}", highlight=False)
        return
    where = f"record {result.first_broken} (line {result.first_broken})" if result.first_broken else "the log"
    err.print(f"artoo audit verify: {where} of {paths.log} is broken: {result.reason}. "
              f"The {result.records} record(s) before it verify.", highlight=False)
    raise typer.Exit(1)


@audit_app.command("tail")
def audit_tail(
    lines: Annotated[int, typer.Option("--lines", "-n", help="Show this many records first.")] = 10,
    once: Annotated[bool, typer.Option("--once", help="Print the last records and exit (no follow).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON records.")] = False,
) -> None:
    """Follow the audit log live, like tail -f (Ctrl-C to stop)."""
    from artoo.config.settings import load_settings
    from artoo.tasks.audit.log import AuditPaths, follow
    from artoo.tasks.audit.report import describe

    try:
        paths = AuditPaths(load_settings().home_dir)
    except ArtooError as exc:
        fail(exc)
    try:
        for line in follow(paths.log, lines, once):
            print(line.decode("utf-8", "replace") if as_json else describe(line), flush=True)
    except KeyboardInterrupt:
        return


@policy_app.command("check")
def policy_check(
    command: Annotated[str, typer.Argument(help="A shell command, judged as text; nothing is run.")],
    as_json: Annotated[bool, typer.Option(
        "--json", help='Print {"irreversible": …, "reason": …, "categories": …}.')] = False,
) -> None:
    """Whether Law 1 asks before a shell command where no overlay can show its effect (it is never run)."""
    from artoo.tasks.law1.judge import judge_command

    verdict = judge_command(command, Path.cwd())  # a new file here is created, not overwritten
    if as_json:
        print(json.dumps(verdict.model_dump(include={"irreversible", "reason", "categories"})))
        return
    label = "[bold red]asks first[/]" if verdict.irreversible else "[green]runs unasked[/]"
    Console().print(f"{label}: {verdict.reason}", highlight=False)


def main() -> None:
    """Console-script entry point: every command runs in this process, with the caller's limits
    (cgroup, nice level, ulimits, job control); it leaves without finalising the interpreter (artoo.cli.fast_exit)."""
    from artoo.cli.fast_exit import run as run_fast

    run_fast(_main)


def _main() -> None:
    # A local agent does not phone home; the ephemeral Prefect server inherits this.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    try:
        app()
    except KeyboardInterrupt:
        err.print("artoo: interrupted")
        sys.exit(130)
