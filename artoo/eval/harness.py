"""``artoo eval``: a suite through the real ``artoo-task`` flow, task by task, strategy by strategy.

Per task: build a fresh tree once, run the gold command on a copy of it (its output and change set
are the reference), restore another copy, run the real ``artoo-task`` flow on the request with the
tree as the workspace (Law-1 questions answered by artoo.eval.answerer's rule), diff the tree,
and score.  The whole eval is one ``artoo-eval`` flow run whose subflows are the task runs, with
the totals and the chart as artifacts.  Each strategy gets its own fresh ARTOO_HOME, so memory
learnt in one never helps the other (within a strategy its tasks share that home); the simulated
brain draws the same mistakes for the same seed whichever strategy runs.

``sequence`` measures whether memory helps, so it runs each strategy twice on the same tasks and seed:
*cold*, every task in a fresh home of its own (nothing carries over), and as a *sequence* in one home,
with a real Dreamer pass (the ``dreamer`` flow) every ``dream_every`` tasks, so memory, SOPs and the
Dreamer carry over.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact

from artoo.config.errors import ArtooError, ConfigurationError
from artoo.eval import answerer, failures, report, sequence
from artoo.eval import suite as trees
from artoo.eval.brain import SimulatedBrain
from artoo.eval.suite import Suite, Task, answer_text, diff, load_suite, run_gold, score, snapshot

STRATEGIES = ("ggs", "retry")
_progress: Callable[[str, int, dict | None], None] | None = None
"""The progress callback of the eval running in this process (a flow parameter must be data)."""


@dataclass
class EvalOptions:
    """One eval's choices (the CLI's flags)."""

    suite: Path
    limit: int | None = None
    brain: str = "simulated"
    strategies: tuple[str, ...] = STRATEGIES
    seed: int = 0
    mistakes: bool = True
    save: Path | None = None
    rates: dict[str, float] | None = None
    """Simulated brain: chance per mistake kind (None: its defaults; --no-mistakes: none)."""
    recovery: float = 0.2
    """Simulated brain: chance a fresh sample avoids a carried mistake unprompted."""
    progress: Callable[[str, int, dict | None], None] | None = field(default=None, repr=False)
    """Called with (run label, task index, the task's row or None when it starts); index -1: a Dreamer pass."""
    sequence: bool = False
    """Run each strategy cold (a fresh home per task) and as a sequence (one home), side by side."""
    dream_every: int = 10
    """Sequence mode: a Dreamer pass after every this many tasks (0: never)."""


def run_eval(options: EvalOptions) -> dict:
    """Run the ``artoo-eval`` flow in this process (on PREFECT_API_URL or the embedded server)."""
    import asyncio

    from artoo.servers.embedded import prefect_api

    global _progress
    if options.brain not in ("simulated", "endpoint"):
        raise ConfigurationError(f"--brain must be simulated or endpoint, got {options.brain!r}")
    if options.dream_every < 0:
        raise ConfigurationError(f"--dream-every must be 0 (never) or a number of tasks, got {options.dream_every}")
    if options.brain == "endpoint":
        from artoo.config.settings import load_settings

        load_settings().require_tiers()
    load_suite(options.suite, Path(tempfile.gettempdir()) / "artoo-eval-check")  # a bad folder fails first
    _progress = options.progress
    try:
        with prefect_api():
            document = asyncio.run(artoo_eval(str(options.suite), options.limit, options.brain,
                                              list(options.strategies), options.seed, options.mistakes,
                                              str(options.save) if options.save else None,
                                              options.rates, options.recovery, options.sequence,
                                              options.dream_every))
    finally:
        _progress = None
    if options.save is not None:
        options.save.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return document


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the block (the flow reads its settings from them), then restore."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def endpoint_env(base_url: str) -> dict[str, str]:
    """Both tiers pointed at the simulated model's loopback server."""
    env = {}
    for tier in ("BRAIN", "TOOL", "OPENAI"):
        env.update({f"ARTOO_{tier}_BASE_URL": base_url, f"ARTOO_{tier}_MODEL": "simulated",
                    f"ARTOO_{tier}_API_KEY": "simulated"})
    return env


async def run_task(suite: Suite, task: Task, brain: SimulatedBrain | None) -> dict:
    """One task: gold on a copy of a fresh tree, then artoo on another copy of it; the scored row."""
    from artoo.flows.task_flow import artoo_task

    pristine = trees.keep_pristine(suite)  # one build: the gold and artoo start from copies of the same tree
    gold = run_gold(suite, task, pristine)
    trees.restore_tree(suite, pristine)
    oracle = answerer.Oracle(suite.base, gold.changes)
    answerer.activate(oracle)
    carried = brain.begin(task) if brain is not None else []
    before = snapshot(suite.base)
    started = time.monotonic()
    document, error = None, None
    try:
        document = await artoo_task(request=task.query, workspace=str(suite.base))
    except ArtooError as exc:  # an honest failure of the run (endpoint down, …) is an unsolved task
        error = str(exc)
    finally:
        answerer.activate(None)
    wall = time.monotonic() - started
    changes = diff(before, snapshot(suite.base))
    final = (document or {}).get("final") or {}
    cost = (document or {}).get("cost") or {}
    row = {"index": task.index, "query": task.original_query, "gold": task.original_gold,
           **score(gold, changes, answer_text(final.get("output"))),
           "rounds": final.get("replans", 0) + 1 if final else 0, "final_directive": final.get("directive"),
           "llm_calls": sum(r["calls"] for r in cost.values()),
           "prompt_tokens": sum(r["prompt_tokens"] for r in cost.values()),
           "completion_tokens": sum(r["completion_tokens"] for r in cost.values()),
           "wall_seconds": round(wall, 3), "law1_questions": len(oracle.questions), "law1": oracle.questions,
           "gold_changes": sorted(gold.changes), "changes": sorted(changes), "mistakes": carried}
    if error:
        row["error"] = error
    records = task_records()
    row.update(failures.llm_counts(records))
    row["failure"] = failures.failure_kind(row, records)
    row.update(sequence.task_memory(records))
    return row


def task_records() -> list[dict]:
    """The decision-log records of the run just finished (the newest in this strategy's ARTOO_HOME)."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import find_run, read_records

    path = find_run(load_settings().home_dir)
    return read_records(path) if path is not None else []


async def run_strategy(suite: Suite, tasks: list[Task], strategy: str, options: EvalOptions,
                       brain: SimulatedBrain | None, home: Path, user_home: Path | None = None,
                       label: str | None = None, after: Callable[[int], Awaitable[None]] | None = None) -> list[dict]:
    """Every task under one strategy, in one fresh ARTOO_HOME (``after(n)`` runs once n tasks ended, in it);
    what the endpoint accepts is carried both ways."""
    rows = []
    label = label or strategy
    if user_home is not None:
        carry_negotiated(user_home, home)
    with environment({"ARTOO_HOME": str(home), "ARTOO_ABLATION__STRATEGY": strategy}):
        for task in tasks:
            if options.progress:
                options.progress(label, task.index, None)
            rows.append(await run_task(suite, task, brain))
            if options.progress:
                options.progress(label, task.index, rows[-1])
            if after is not None:
                await after(len(rows))
    if user_home is not None:
        carry_negotiated(home, user_home)
    return rows


async def run_cold(suite: Suite, tasks: list[Task], strategy: str, options: EvalOptions,
                   brain: SimulatedBrain | None, scratch: Path, user_home: Path | None) -> list[dict]:
    """The sequence's baseline: each task in a fresh home of its own, so nothing learnt carries over."""
    rows = []
    for task in tasks:
        rows += await run_strategy(suite, [task], strategy, options, brain,
                                   scratch / f"home-{strategy}-cold-{task.index}", user_home, f"{strategy} cold")
    return rows


async def run_sequence(suite: Suite, tasks: list[Task], strategy: str, options: EvalOptions,
                       brain: SimulatedBrain | None, home: Path, user_home: Path | None) -> tuple[list[dict], list]:
    """The tasks in order in one home, a Dreamer pass after every ``dream_every`` tasks (none after the last:
    no later task could use it); the rows and what each pass did."""
    from artoo.flows.dreamer import dreamer

    label, dreams = f"{strategy} sequence", []

    async def dream(done: int) -> None:
        if options.dream_every and done % options.dream_every == 0 and done < len(tasks):
            if options.progress:
                options.progress(label, -1, None)
            dreams.append(sequence.dream_summary(await dreamer(), done))

    rows = await run_strategy(suite, tasks, strategy, options, brain, home, user_home, label, dream)
    return rows, dreams


def carry_negotiated(source: Path, target: Path) -> None:
    """Copy what one home learnt of each endpoint (its profile's request forms) into another
    (artoo.tasks.llm.profile_store).

    Why: a strategy's fresh home must not know what memory learnt, but what the *server* accepts is not
    memory: without this each strategy (and the person's next ``artoo run``) pays the refused requests
    and the silent executor attempts again, minutes each on a local CPU model."""
    from artoo.tasks.llm.capability import KINDS
    from artoo.tasks.llm.profile_store import ProfileStore, store_path

    into = ProfileStore(store_path(target))
    for base_url, models in ProfileStore(store_path(source)).entries().items():
        for model, entry in models.items():
            for kind in KINDS:
                if kind in entry and into.get(base_url, model).get(kind) != entry[kind]:
                    into.remember(base_url, model, kind, entry[kind], entry.get(f"{kind}_because", "carried"))
            refused = entry.get("sampling_refused")
            if isinstance(refused, dict) and refused and into.get(base_url, model).get("sampling_refused") != refused:
                into.update(base_url, model, {"sampling_refused": refused})


def person_home() -> Path | None:
    """The person's ARTOO_HOME (None when unusable: the eval then negotiates afresh, never fails on it)."""
    from artoo.config.settings import load_settings

    try:
        return load_settings().home_dir
    except ArtooError:
        return None


def eval_run_name() -> str:
    """``eval · intercode-nl2bash-fs3 · seed 0``."""
    from prefect.runtime import flow_run

    params = flow_run.parameters
    return f"eval · {Path(str(params.get('suite', ''))).name} · seed {params.get('seed', 0)}"


@flow(name="artoo-eval", flow_run_name=eval_run_name, validate_parameters=False, persist_result=False,
      log_prints=False)
async def artoo_eval(suite: str, limit: int | None, brain: str, strategies: list[str], seed: int,
                     mistakes: bool, save: str | None = None, rates: dict[str, float] | None = None,
                     recovery: float = 0.2, sequence_mode: bool = False, dream_every: int = 10) -> dict:
    """The eval as one flow run: every task of every strategy as subflows; totals and chart as artifacts."""
    options = EvalOptions(Path(suite), limit, brain, tuple(strategies), seed, mistakes,
                          Path(save) if save else None, rates, recovery, _progress, sequence_mode, dream_every)
    user_home = person_home() if brain == "endpoint" else None
    scratch = Path(tempfile.mkdtemp(prefix="artoo-eval-"))
    base = scratch / "root"
    loaded = load_suite(Path(suite), base)
    tasks = loaded.tasks[:limit] if limit else loaded.tasks
    sim = (SimulatedBrain(base, seed, rates=rates if mistakes else {}, recovery=recovery)
           if brain == "simulated" else None)
    env = {"ARTOO_WORKSPACE": str(base), "ARTOO_LAW1_MODE": "policy", "ARTOO_LAW1_POLICY": answerer.POLICY,
           "ARTOO_TOOLS__SANDBOX": "require"}
    server = None
    try:
        if sim is not None:
            from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer

            server = ScriptedLLMServer(Scenario(), responder=sim.respond).start()
            env.update(endpoint_env(server.base_url))
        results, blocks = {}, {}
        with environment(env):
            for strategy in strategies:
                if sequence_mode:
                    blocks[strategy] = await _cold_and_sequence(loaded, tasks, strategy, options, sim, scratch,
                                                                user_home, results)
                    continue
                rows = await run_strategy(loaded, tasks, strategy, options, sim, scratch / f"home-{strategy}",
                                          user_home)
                results[strategy] = {"tasks": rows, "totals": report.totals(rows)}
        document = report.document(loaded.name, brain, seed, mistakes, limit, results,
                                   {**sim.rates, "recovery": sim.recovery} if sim else None)
        if sequence_mode:
            document["sequence"] = blocks
        await _artifacts(document, options.save)
        return document
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


async def _cold_and_sequence(loaded: Suite, tasks: list[Task], strategy: str, options: EvalOptions,
                             sim: SimulatedBrain | None, scratch: Path, user_home: Path | None,
                             results: dict) -> dict:
    """One strategy cold, then as a sequence (same tasks, seed and brain); both runs' rows go into ``results``."""
    cold = await run_cold(loaded, tasks, strategy, options, sim, scratch, user_home)
    rows, dreams = await run_sequence(loaded, tasks, strategy, options, sim, scratch / f"home-{strategy}-sequence",
                                      user_home)
    for mode, mode_rows in (("cold", cold), ("sequence", rows)):
        results[f"{strategy} {mode}"] = {"tasks": mode_rows, "totals": report.totals(mode_rows)}
    tier = "the brain tier, " + ("the simulated model's server" if sim is not None else "the configured endpoint")
    distil = f"the dreamer flow as shipped: SOPs made by code (no model); LLM consolidation through {tier}"
    return sequence.comparison(cold, rows, dreams, options.dream_every, distil)


async def _artifacts(document: dict, save: Path | None) -> None:
    """The totals table, and the chart (PNG beside the JSON when saved, inline in the markdown)."""
    png = report.chart_png(document)
    curve = report.sequence_png(document)
    if save is not None:
        chart = save.with_suffix(".png")
        chart.parent.mkdir(parents=True, exist_ok=True)
        chart.write_bytes(png)
        document["chart"] = str(chart)
        if curve is not None:
            save.with_name(f"{save.stem}-sequence.png").write_bytes(curve)
            document["sequence_chart"] = str(save.with_name(f"{save.stem}-sequence.png"))
    rows = [{"strategy": s, **t} for s, t in document["totals"].items()]
    await acreate_table_artifact(key="eval-totals", table=rows, description="artoo eval: totals by strategy")
    await acreate_markdown_artifact(key="eval-chart", markdown=report.markdown(document, png),
                                    description="artoo eval: solved rate and LLM calls per solved task")
    if curve is not None:
        await acreate_markdown_artifact(key="eval-sequence", markdown=report.sequence_markdown(document, curve),
                                        description="artoo eval: memory over a task sequence, cold vs sequence")
