"""``artoo eval everyday``: the everyday suite through the real ``artoo-task`` flow, and two plain peers beside it.

Per artoo strategy (ggs, retry; each in a fresh ARTOO_HOME, what the endpoint accepts carried over as the
InterCode eval does), per task: the folder laid out fresh, our gold run on it once to learn its change set
(the Law-1 answerer, artoo.eval.answerer, approves exactly those changes), the folder laid out again, the
real ``artoo-task`` flow on the request with the folder as the workspace, then our checks.  The peers
(artoo.eval.peers) run on the same endpoint in the same run, each on a fresh copy of the folder, their
commands confined as artoo's shell is.  With the simulated brain (artoo.eval.brain, given each task's gold
command) the suite runs with no model; the peers need a real endpoint (or the scripted server in tests).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact

from artoo.config.contracts import EXIT_CODES
from artoo.config.errors import ArtooError, ConfigurationError
from artoo.eval import answerer, failures
from artoo.eval import everyday_report as report
from artoo.eval.brain import SimulatedBrain
from artoo.eval.everyday import EverydayTask, judge, lay_out, require_bubblewrap, run_confined
from artoo.eval.everyday_suite import select
from artoo.eval.harness import (
    STRATEGIES,
    carry_negotiated,
    endpoint_env,
    environment,
    person_home,
    task_records,
)
from artoo.eval.peers import BASH_LOOP, ONE_COMMAND, PEERS, Chat, bash_loop, cached_tokens, one_command
from artoo.eval.suite import Task, diff, snapshot

_progress: Callable[[str, str, dict | None], None] | None = None
"""The progress callback of the eval running in this process (a flow parameter must be data)."""


@dataclass
class EverydayOptions:
    """One everyday eval's choices (the CLI's flags)."""

    brain: str = "endpoint"
    limit: int | None = None
    only: tuple[str, ...] = ()
    strategies: tuple[str, ...] = STRATEGIES
    peers: bool | None = None
    """Run the two plain peers too (None: when the brain is a real endpoint)."""
    save: Path | None = None
    seed: int = 0
    mistakes: bool = True
    """Simulated brain: make real models' mistakes (its default rates), or none."""
    sequence: bool = False
    """Run each strategy's tasks in one home, ordered so that each kind comes back (``sequence_order``), beside the
    same tasks each in a fresh home (cold): does memory make the later task of a kind better."""
    progress: Callable[[str, str, dict | None], None] | None = field(default=None, repr=False)
    """Called with (runner, task id, the row or None when the task starts)."""


def checked(options: EverydayOptions) -> tuple[list[EverydayTask], bool]:
    """The tasks to run and whether the peers run; ConfigurationError for a choice that cannot run."""
    if options.brain not in ("simulated", "endpoint"):
        raise ConfigurationError(f"--brain must be simulated or endpoint, got {options.brain!r}")
    unknown = [s for s in options.strategies if s not in STRATEGIES]
    if unknown:
        raise ConfigurationError(f"--strategies takes ggs, retry or none, got {', '.join(unknown)}")
    peers = options.brain == "endpoint" if options.peers is None else options.peers
    if peers and options.brain == "simulated":
        raise ConfigurationError("--peers needs a model endpoint: the simulated brain plays artoo's roles only")
    if not peers and not options.strategies:
        raise ConfigurationError("nothing to run: no artoo strategy and no peers")
    tasks = select(options.only, options.limit)
    require_bubblewrap()
    if options.brain == "endpoint":
        from artoo.config.settings import load_settings

        load_settings().require_tiers()
    return tasks, peers


def run_everyday(options: EverydayOptions) -> dict:
    """Run the ``artoo-eval-everyday`` flow in this process (on PREFECT_API_URL or the embedded server)."""
    import asyncio

    from artoo.servers.embedded import prefect_api

    global _progress
    tasks, peers = checked(options)
    _progress = options.progress
    try:
        with prefect_api():
            document = asyncio.run(artoo_eval_everyday([t.id for t in tasks], options.brain,
                                                       list(options.strategies), peers, options.seed,
                                                       options.mistakes, str(options.save) if options.save else None,
                                                       options.sequence))
    finally:
        _progress = None
    if options.save is not None:
        options.save.parent.mkdir(parents=True, exist_ok=True)
        options.save.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return document


def _tell(runner: str, task: EverydayTask, row: dict | None) -> None:
    if _progress is not None:
        _progress(runner, task.id, row)


def as_suite_task(task: EverydayTask) -> Task:
    """The task as the simulated brain knows tasks (its request and our gold)."""
    return Task(task.index, task.request, task.gold, task.request, task.gold)


async def gold_changes(task: EverydayTask, base: Path) -> dict[str, str]:
    """The change set our gold makes on a fresh folder (what the Law-1 answerer approves); the folder is laid
    out fresh again after."""
    lay_out(task, base)
    before = snapshot(base)
    await run_confined(task.gold, base)
    changes = diff(before, snapshot(base))
    lay_out(task, base)
    return changes


async def artoo_row(task: EverydayTask, base: Path, brain: SimulatedBrain | None) -> dict[str, Any]:
    """One task through the real artoo-task flow, judged by our checks."""
    from artoo.flows.task_flow import artoo_task

    oracle = answerer.Oracle(base, await gold_changes(task, base))
    answerer.activate(oracle)
    carried = brain.begin(as_suite_task(task)) if brain is not None else []
    started = time.monotonic()
    document, error = None, None
    try:
        document = await artoo_task(request=task.request, workspace=str(base))
    except ArtooError as exc:  # an honest failure of the run (endpoint down, ...) is a wrong result
        error = str(exc)
    finally:
        answerer.activate(None)
    wall = time.monotonic() - started
    final = (document or {}).get("final") or {}
    cost = (document or {}).get("cost") or {}
    accepted = final.get("directive") in ("accept", "success")
    records = task_records()
    calls = [r for r in records if r.get("kind") == "llm"]
    cached = [c for c in (cached_tokens(r.get("response")) for r in calls) if c is not None]
    roles = {role: row for role, row in cost.items() if role != "vote"}  # short votes are counted on their own
    votes = cost.get("vote") or {}
    judgement = judge(task, base)
    out = report.row(task, judgement, accepted, sum(r["calls"] for r in roles.values()),
                     sum(r["prompt_tokens"] for r in cost.values()),
                     sum(r["completion_tokens"] for r in cost.values()), sum(cached) if cached else None, wall,
                     exit_code=EXIT_CODES.get(final.get("directive"), 1), final_directive=final.get("directive"),
                     rounds=final.get("replans", 0) + 1 if final else 0, law1_questions=len(oracle.questions),
                     law1=oracle.questions, mistakes=carried, unsure=final.get("directive") == "unsure",
                     unverified=final.get("directive") == "unverified",
                     votes=votes.get("calls", 0),
                     vote_tokens=votes.get("prompt_tokens", 0) + votes.get("completion_tokens", 0))
    if out["unsure"]:
        out["top_group_right"] = await top_group_right(task, base, final.get("output") or {})
    if error:
        out["error"] = error
    out["failure"] = failures.failure_kind({**out, "solved": out["right"]}, records)
    out.update(memory_seen(records))
    return out


async def top_group_right(task: EverydayTask, base: Path, output: dict) -> bool | None:
    """Whether the largest group of an unsure task was right: its first drawn command run on a fresh copy of the
    folder and judged by the same checks (None when the group holds only the executor's work)."""
    from artoo.config.settings import load_settings

    alternatives = sorted(output.get("alternatives") or [], key=lambda a: -a.get("votes", 0))
    commands = [c for c in (alternatives[0].get("by") or []) if c != "the executor's work"] if alternatives else []
    if not commands:
        return None
    settings = load_settings()
    lay_out(task, base)
    await run_confined(commands[0], base, settings.tools.shell_timeout_s, settings.tools.head_tail_limit,
                       (Path(settings.home).expanduser(),))
    return judge(task, base).right


def memory_seen(records: list[dict]) -> dict[str, Any]:
    """The SHOULD PREFER lines the run's plans saw, the verified methods among them, and whether the run followed
    one: its last round ran a command of the same method (artoo.memory.sops.command_heads), None when it saw none.
    """
    from artoo.memory.sops import command_heads

    memory = [r for r in records if r.get("kind") == "memory"]
    prefer = list(dict.fromkeys(line for r in memory for line in r.get("prefer", [])))
    quoted = list(dict.fromkeys(c for r in memory for c in r.get("verified", [])))
    ran = {command_heads(c) for c in executed(records)}
    followed = any(command_heads(c) in ran for c in quoted) if quoted else None
    return {"memory_lines": prefer, "verified_lines": len(quoted), "followed": followed}


def executed(records: list[dict]) -> list[str]:
    """The shell commands the run executed, from its decision log's tool calls."""
    return [str(r["arguments"]["command"]) for r in records
            if r.get("kind") == "tool" and r.get("name") == "shell" and isinstance(r.get("arguments"), dict)
            and r["arguments"].get("command")]


def sequence_order(tasks: list[EverydayTask]) -> list[EverydayTask]:
    """The tasks round-robin over their kinds (every kind's first, then every kind's second, ...): each kind comes
    back with other names and folders after other kinds' tasks, as a person's week would bring it."""
    kinds: dict[str, list[EverydayTask]] = {}
    for task in tasks:
        kinds.setdefault(task.kind, []).append(task)
    ordered, depth = [], max((len(v) for v in kinds.values()), default=0)
    for i in range(depth):
        ordered += [group[i] for group in kinds.values() if i < len(group)]
    return ordered


def occurrences(tasks: list[EverydayTask]) -> dict[str, int]:
    """Each task's occurrence of its kind in ``tasks``' order (1 for a kind's first)."""
    seen: dict[str, int] = {}
    found = {}
    for task in tasks:
        seen[task.kind] = seen.get(task.kind, 0) + 1
        found[task.id] = seen[task.kind]
    return found


async def artoo_strategy(tasks: list[EverydayTask], strategy: str, base: Path, home: Path,
                         brain: SimulatedBrain | None, user_home: Path | None) -> list[dict]:
    """Every task under one strategy, in one fresh ARTOO_HOME (what the server accepts carried both ways)."""
    runner, rows = report.artoo_runner(strategy), []
    if user_home is not None:
        carry_negotiated(user_home, home)
    with environment({"ARTOO_HOME": str(home), "ARTOO_ABLATION__STRATEGY": strategy}):
        for task in tasks:
            _tell(runner, task, None)
            rows.append(await artoo_row(task, base, brain))
            _tell(runner, task, rows[-1])
    if user_home is not None:
        carry_negotiated(home, user_home)
    return rows


async def cold_strategy(tasks: list[EverydayTask], strategy: str, base: Path, scratch: Path,
                        brain: SimulatedBrain | None, user_home: Path | None) -> list[dict]:
    """Every task under one strategy, each in a fresh ARTOO_HOME: what it does with no memory of the others."""
    rows = []
    for i, task in enumerate(tasks):
        rows += await artoo_strategy([task], strategy, base, scratch / f"cold-{strategy}-{i}", brain, user_home)
    return rows


async def peer_row(task: EverydayTask, peer: str, base: Path, chat: Chat, settings: Any) -> dict[str, Any]:
    """One peer on a fresh copy of the task's folder, judged by the same checks."""
    lay_out(task, base)
    timeout = settings.tools.shell_timeout_s
    hidden = (Path(settings.home).expanduser(),)

    async def run(command: str):
        return await run_confined(command, base, timeout, settings.tools.head_tail_limit, hidden)

    started = time.monotonic()
    if peer == ONE_COMMAND:
        done = await one_command(chat, task.request, base, run)
    else:
        done = await bash_loop(chat, task.request, base, run, timeout)
    wall = time.monotonic() - started
    cached = [c.cached_tokens for c in done.calls if c.cached_tokens is not None]
    out = report.row(task, judge(task, base), done.accepted, len(done.calls),
                     sum(c.prompt_tokens for c in done.calls), sum(c.completion_tokens for c in done.calls),
                     sum(cached) if cached else None, wall, commands=done.commands, exit_codes=done.exit_codes,
                     stop=done.stop)
    if done.error:
        out["error"] = done.error
    return out


async def peer_runs(tasks: list[EverydayTask], base: Path) -> dict[str, list[dict]]:
    """Both peers over every task, on the configured endpoint."""
    from artoo.config.settings import load_settings

    settings = load_settings()
    chat = Chat.from_settings(settings)
    runs: dict[str, list[dict]] = {peer: [] for peer in PEERS}
    try:
        for task in tasks:
            for peer in (ONE_COMMAND, BASH_LOOP):
                _tell(peer, task, None)
                runs[peer].append(await peer_row(task, peer, base, chat, settings))
                _tell(peer, task, runs[peer][-1])
    finally:
        await chat.aclose()
    return runs


def brain_info(brain: str, seed: int, mistakes: bool) -> dict[str, Any]:
    """What answered: the simulated brain and its draws, or the endpoint, model and sampling artoo sends."""
    if brain == "simulated":
        return {"kind": "simulated", "seed": seed, "mistakes": mistakes}
    from artoo.config.settings import load_settings
    from artoo.tasks.llm.transport.requests import sampling

    settings = load_settings()
    tier = settings.tier("tool")
    return {"kind": "endpoint", "base_url": tier.base_url, "model": tier.model,
            "brain_model": settings.tier("brain").model, "sampling": sampling(settings.llm)}


def machine() -> dict[str, Any]:
    """The machine's load when the eval started (a measured table says it)."""
    return {"load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}


@flow(name="artoo-eval-everyday", flow_run_name="eval · everyday", validate_parameters=False,
      persist_result=False, log_prints=False)
async def artoo_eval_everyday(ids: list[str], brain: str, strategies: list[str], peers: bool, seed: int = 0,
                              mistakes: bool = True, save: str | None = None, sequence: bool = False) -> dict:
    """The everyday eval as one flow run: artoo's task runs as subflows, the peers beside them; totals and the
    report as artifacts.  With ``sequence``, each strategy runs the tasks in one home in ``sequence_order`` and
    again each in a fresh home."""
    tasks = select(tuple(ids))
    if sequence:
        tasks = sequence_order(tasks)
    start = machine()
    scratch = Path(tempfile.mkdtemp(prefix="artoo-everyday-"))
    base = scratch / "folder"
    sim = SimulatedBrain(base, seed, rates=None if mistakes else {}) if brain == "simulated" else None
    user_home = person_home() if brain == "endpoint" else None
    env = {"ARTOO_WORKSPACE": str(base), "ARTOO_LAW1_MODE": "policy", "ARTOO_LAW1_POLICY": answerer.POLICY,
           "ARTOO_TOOLS__SANDBOX": "require"}
    server = None
    try:
        if sim is not None:
            from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer

            server = ScriptedLLMServer(Scenario(), responder=sim.respond).start()
            env.update(endpoint_env(server.base_url))
        runners: dict[str, list[dict]] = {}
        with environment(env):
            info = brain_info(brain, seed, mistakes)
            for strategy in strategies:
                name = report.artoo_runner(strategy)
                runners[f"{name} sequence" if sequence else name] = await artoo_strategy(
                    tasks, strategy, base, scratch / f"home-{strategy}", sim, user_home)
                if sequence:
                    runners[f"{name} cold"] = await cold_strategy(tasks, strategy, base, scratch, sim, user_home)
        if peers:
            runners.update(await peer_runs(tasks, base))
        document = report.document(info, tasks, runners, start, occurrences(tasks) if sequence else None)
        await _artifacts(document)
        return document
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


async def _artifacts(document: dict) -> None:
    """The totals table and the markdown report."""
    rows = [{"runner": name, **t} for name, t in document["totals"].items()]
    await acreate_table_artifact(key="everyday-totals", table=rows, description="artoo eval everyday: totals")
    await acreate_markdown_artifact(key="everyday-report", markdown=report.markdown(document),
                                    description="artoo eval everyday: runner x task")
