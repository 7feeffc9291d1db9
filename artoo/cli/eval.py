"""``artoo eval intercode`` and ``artoo eval everyday``: task suites through the whole loop, with an honest score.

Thin over artoo.eval.harness: flags in, a progress bar on stderr while it runs, the totals
table (or the JSON document with ``--json``) on stdout, the JSON and a PNG chart saved with
``--save``.  Exit code 0 when the eval ran (whatever it scored), 2 for a bad suite or setting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from artoo.config.errors import ArtooError, ConfigurationError

eval_app = typer.Typer(help="Measure artoo on task suites (solved rate, cost, GGS vs retry).",
                       no_args_is_help=True)
err = Console(stderr=True, highlight=False)


@eval_app.command("intercode")
def intercode(
    suite: Annotated[Path, typer.Option("--suite", help="A folder with queries.json and setup.sh.")],
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N tasks.")] = None,
    brain: Annotated[str, typer.Option("--brain", help="endpoint (the configured model) or simulated.")]
    = "endpoint",
    strategy: Annotated[str | None, typer.Option("--strategy", help="ggs or retry; both when omitted.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated brain's mistakes.")] = 0,
    mistakes: Annotated[bool, typer.Option("--mistakes/--no-mistakes",
                                           help="Simulated brain: make real models' mistakes (off: the "
                                                "control, which must score >= 95%).")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole JSON document.")] = False,
    save: Annotated[Path | None, typer.Option("--save", help="Write the JSON here and the chart beside it "
                                                             "(same name, .png).")] = None,
    sequence: Annotated[bool, typer.Option("--sequence", help="Also run the tasks in order in ONE home (memory, "
                                                              "SOPs and the Dreamer carry over), beside the same "
                                                              "tasks run cold (a fresh home each).")] = False,
    dream_every: Annotated[int | None, typer.Option("--dream-every", help="With --sequence: a Dreamer pass after "
                                                                          "every N tasks (0: never; default 10).")]
    = None,
) -> None:
    """Run an InterCode-style suite: a fresh tree per task, the real flow, InterCode's score."""
    from artoo.eval.harness import STRATEGIES, EvalOptions, run_eval

    try:
        if strategy is not None and strategy not in STRATEGIES:
            raise ConfigurationError(f"--strategy must be ggs or retry, got {strategy!r}")
        if dream_every is not None and (dream_every < 0 or not sequence):
            raise ConfigurationError(f"--dream-every takes 0 (never) or a number of tasks, and only with --sequence "
                                     f"(got {dream_every}{'' if sequence else ' without --sequence'})")
        with _Progress(_count(suite, limit)) as progress:
            options = EvalOptions(suite=suite, limit=limit, brain=brain, seed=seed, mistakes=mistakes,
                                  strategies=(strategy,) if strategy else STRATEGIES, save=save,
                                  progress=progress.update, sequence=sequence,
                                  **({} if dream_every is None else {"dream_every": dream_every}))
            document = run_eval(options)
    except ArtooError as exc:
        code = 2 if isinstance(exc, ConfigurationError) else 1
        err.print(f"[bold red]artoo eval:[/] {exc}")
        raise typer.Exit(code) from None
    if as_json:
        print(json.dumps(document))
        return
    from artoo.eval.report import markdown

    Console(highlight=False).print(markdown(document))
    if save is not None:
        extra = f" and {document['sequence_chart']}" if document.get("sequence_chart") else ""
        err.print(f"saved {save} and {save.with_suffix('.png')}{extra}")


@eval_app.command("everyday")
def everyday(
    brain: Annotated[str, typer.Option("--brain", help="endpoint (the configured model) or simulated.")]
    = "endpoint",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N tasks.")] = None,
    only: Annotated[str | None, typer.Option("--only", help="Only these task ids, comma-separated.")] = None,
    strategies: Annotated[str, typer.Option("--strategies", help="artoo's strategies, comma-separated: ggs, "
                                                                 "retry, or none (the peers alone).")]
    = "ggs,retry",
    peers: Annotated[bool | None, typer.Option("--peers/--no-peers", help="Also run the two plain peers "
                                                                          "(one-command, bash-loop) on the same "
                                                                          "endpoint; default: with --brain "
                                                                          "endpoint.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated brain's mistakes.")] = 0,
    mistakes: Annotated[bool, typer.Option("--mistakes/--no-mistakes",
                                           help="Simulated brain: make real models' mistakes.")] = True,
    sequence: Annotated[bool, typer.Option("--sequence", help="Run artoo's tasks in one home, ordered so each kind "
                                                              "comes back, beside the same tasks each in a fresh "
                                                              "home: does memory help the next task of a kind?")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole JSON document.")] = False,
    save: Annotated[Path | None, typer.Option("--save", help="Write the JSON document here.")] = None,
) -> None:
    """Run the everyday suite: artoo (ggs, retry) and two plain peers, right, false accepts, calls, tokens, wall."""
    from artoo.eval.everyday_run import EverydayOptions, run_everyday
    from artoo.eval.everyday_suite import select

    names = tuple(s.strip() for s in strategies.split(",") if s.strip())
    chosen = () if names == ("none",) else names
    ids = tuple(i.strip() for i in (only or "").split(",") if i.strip())
    try:
        count = len(select(ids, limit))
        with _Progress(count, "right") as progress:
            document = run_everyday(EverydayOptions(brain=brain, limit=limit, only=ids, strategies=chosen,
                                                    peers=peers, save=save, seed=seed, mistakes=mistakes,
                                                    sequence=sequence, progress=progress.update))
    except ArtooError as exc:
        err.print(f"[bold red]artoo eval:[/] {exc}")
        raise typer.Exit(2 if isinstance(exc, ConfigurationError) else 1) from None
    if as_json:
        print(json.dumps(document))
        return
    from artoo.eval.everyday_report import markdown

    typer.echo(markdown(document))  # plain: a markdown table must not be wrapped or read as rich markup
    if save is not None:
        err.print(f"saved {save}")


def _count(suite: Path, limit: int | None) -> int | None:
    """How many tasks will run (None when the suite cannot be read: the harness then says why)."""
    try:
        count = len(json.loads((suite / "queries.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    return min(count, limit) if limit else count


class _Progress:
    """A rich progress bar per run (a strategy; with --sequence its cold and sequence runs) on stderr, advanced
    as each task ends; a Dreamer pass between tasks shows on its run's bar."""

    def __init__(self, total: int | None, word: str = "solved") -> None:
        self.total, self.word = total, word

    def __enter__(self) -> _Progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn(f"{self.word} {{task.fields[solved]}}"), TimeElapsedColumn(), console=err)
        self.bar.__enter__()
        self.ids: dict[str, int] = {}
        return self

    def update(self, strategy: str, index: int | str, row: dict | None) -> None:
        """Called by the harness when a task (its index, or its id) starts (row None) or ends."""
        if strategy not in self.ids:
            self.ids[strategy] = self.bar.add_task(strategy, total=self.total, solved=0)
        task = self.ids[strategy]
        if row is None:
            shown = "Dreamer pass" if isinstance(index, int) and index < 0 else f"task {index}"
            self.bar.update(task, description=f"{strategy} · {shown}")
        else:
            solved = self.bar.tasks[task].fields["solved"] + (1 if row.get("solved", row.get("right")) else 0)
            self.bar.update(task, advance=1, solved=solved)

    def __exit__(self, *exc_info: object) -> None:
        self.bar.__exit__(*exc_info)
