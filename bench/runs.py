"""Run scripted scenarios through the real ``artoo run`` code path and measure each run.

In process, a run is exactly what ``artoo run`` does after its imports: ``execute_flow``
(the ``artoo-task`` flow, then the embedded Auditor's pass).  The wall time runs from the
call to its return; the scripted endpoint's request log gives the LLM calls on the
critical path; a bus tap counts the subtasks dispatched.  Candidates run side by side:
every (scenario, mode) job gets its own scripted server, and the jobs take turns, one
run each, ``repeats`` times, so a noisy moment hurts all candidates alike.

``process_run`` measures the figure a user feels: a whole ``artoo run`` process, from
command start to exit, embedded Prefect, after one untimed process in the same home.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from artoo.bench.chain import Economy, economy
from artoo.bench.env import clean_environ, homes, llm_env, prefect_mode, stderr_to
from artoo.bench.scenarios import Scenario

STORY_SETTINGS = ("ARTOO_GGS__MAX_REPLANS",)
"""Settings a scenario may set; cleared before every run so one story's budget never leaks into the next."""


@dataclass(frozen=True)
class Measured:
    """One run: wall time, where the overhead went, and what the endpoint saw."""

    scenario: str
    mode: str
    latency_s: float
    wall_s: float
    head_s: float
    """Call start → first LLM request received (flow run creation, runtime, R1 task start)."""
    tail_s: float
    """Last LLM answer → return (GGS, artifacts, flow teardown, the embedded audit pass)."""
    economy: Economy
    tokens: dict[str, dict]
    """Per role, from the LLM client's CallRecords: calls, prompt_tokens, completion_tokens."""
    directive: str
    replans: int
    dispatched: int

    @property
    def critical_s(self) -> float:
        """The LLM critical path: sequential requests × the fixed latency."""
        return self.economy.sequential_requests * self.latency_s

    @property
    def between_s(self) -> float:
        """Orchestration between the first request and the last answer: wall − head − tail − critical path."""
        return self.wall_s - self.head_s - self.tail_s - self.critical_s

    @property
    def ratio(self) -> float:
        """Wall time ÷ the LLM critical path (1.0 is ideal)."""
        return self.wall_s / self.critical_s if self.critical_s else float("inf")


def median(values: list[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else float("nan")


class DispatchCount:
    """A bus tap counting subtasks dispatched (all rounds) — how many R3 first attempts to expect."""

    def __init__(self) -> None:
        self.subtasks = 0

    def __call__(self, record: dict) -> None:
        if record.get("event") == "artoo.dispatch_manifest":
            self.subtasks += len(record.get("payload", {}).get("subtask_ids", []))


@dataclass
class Job:
    """One candidate: a scenario in a Prefect mode, with its scripted server and its runs."""

    scenario: Scenario
    mode: str
    api_url: str | None
    server: object = None
    runs: list[Measured] = field(default_factory=list)


def run_once(job: Job, workspace: Path, log: Path) -> Measured:
    """One in-process run of a job's scenario; raises when the run ends unlike its story."""
    from artoo.runner import execute_flow
    from artoo.tasks.bus.events import add_tap, remove_tap

    server = job.server
    for key in STORY_SETTINGS:
        os.environ.pop(key, None)
    os.environ.update(llm_env(server.base_url), **job.scenario.settings)
    before = len(server.requests)
    count = DispatchCount()
    add_tap(count)
    try:
        with prefect_mode(job.api_url), stderr_to(log):
            started = time.time()
            document = execute_flow(job.scenario.request, workspace)
            ended = time.time()
    finally:
        remove_tap(count)
    requests = server.requests[before:]
    final = document["final"]
    if final["directive"] != job.scenario.directive or not requests:
        raise RuntimeError(f"bench scenario {job.scenario.name!r} ({job.mode}) ended {final['directive']!r} "
                           f"after {len(requests)} LLM request(s), expected {job.scenario.directive!r}: "
                           f"{final.get('summary')} (log: {log})")
    return Measured(job.scenario.name, job.mode, job.scenario.script["latency_s"], ended - started,
                    min(r["received"] for r in requests) - started, ended - max(r["answered"] for r in requests),
                    economy(requests, count.subtasks), document.get("cost", {}), final["directive"],
                    int(final.get("replans", 0)), count.subtasks)


def run_side_by_side(jobs: list[Job], repeats: int, root: Path, progress=None) -> None:
    """Each job ``repeats`` times, taking turns; results land in ``job.runs``."""
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    for job in jobs:  # each scenario was built with one copy of its answers per run
        job.server = ScriptedLLMServer(job.scenario.script).start()
    try:
        for turn in range(repeats):
            for job in jobs:
                if progress:
                    progress(f"run {turn + 1}/{repeats}: {job.scenario.name} [{job.mode}]")
                job.runs.append(run_once(job, root / "workspace", root / "runs.log"))
    finally:
        for job in jobs:
            job.server.stop()


def warm_up(mode: str, api_url: str | None, root: Path, scenario: Scenario) -> float:
    """One untimed-for-the-tables run per mode (starts the ephemeral server); returns its wall time."""
    job = Job(scenario, mode, api_url)
    run_side_by_side([job], 1, root)
    return job.runs[0].wall_s


@dataclass(frozen=True)
class ProcessRun:
    """Whole ``artoo run`` processes: the warm-up's wall time (if one ran) and the measured ones."""

    latency_s: float
    warmup_wall_s: float | None
    walls_s: list[float]
    sequential_requests: list[int]
    heads_s: list[float]
    """Command start → first LLM request (imports, the ephemeral server's start, flow-run creation)."""
    tails_s: list[float]
    """Last LLM answer → process exit (GGS, artifacts, the audit pass, server shutdown)."""
    home: str
    """How the home was warmed: "dedicated warm-up run" or "the in-process runs"."""
    cold: bool = False
    """Each timed process started the server itself (``artoo stop`` before it)."""

    @property
    def ratio(self) -> float:
        """Median of wall ÷ (sequential requests × latency) over the measured processes."""
        return median([w / (n * self.latency_s) for w, n in zip(self.walls_s, self.sequential_requests, strict=True)])


def artoo_command() -> list[str]:
    """The installed ``artoo`` console script next to this interpreter (or the module entry point)."""
    script = Path(sys.executable).with_name("artoo")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from artoo.cli import main; main()"]


def compile_bytecode() -> None:
    """Compile artoo's own modules to bytecode beside their sources, as an install has them.

    Why: pip compiles a package when it installs it, and Python writes the bytecode of an editable
    install on its first import, so a person's ``artoo run`` never compiles artoo.  A workplace that sets
    ``PYTHONDONTWRITEBYTECODE`` (this one does) would otherwise have every timed process compile artoo's
    ~130 modules from source, ≈ 0.15–0.3 s that no user pays.  Nothing else changes: the processes keep
    the caller's environment, and the standard library and the dependencies are as installed.
    """
    import compileall
    import importlib

    for package in ("artoo", "artoo.config", "artoo.tasks", "artoo.flows", "artoo.memory"):
        for folder in importlib.import_module(package).__path__:
            compileall.compile_dir(folder, quiet=2)


def process_run(scenario: Scenario, runs: int, root: Path, original_env: dict[str, str],
                home: str | None = None, cold: bool = False) -> ProcessRun:
    """``artoo run --json`` as subprocesses in embedded mode (no PREFECT_API_URL), ``runs`` of them timed.

    Warm (the default): the home's lingering server, started by the warm-up, serves each timed
    process, as it does for a person's second command.
    Cold: ``artoo stop`` before each timed
    process, so each starts the server itself, as a person's first command of the day does.
    Either way one untimed warm-up process runs first (in ``home``, a name under ``root`` already
    warmed by earlier runs, or in a fresh one).  ``scenario`` must be scripted for ``runs`` + 1
    processes.
    """
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    compile_bytecode()
    env = clean_environ(original_env)
    env.update(homes(root, home or "process"))
    latency = scenario.script["latency_s"]
    walls, sequential, heads, tails = [], [], [], []
    with ScriptedLLMServer(scenario.script) as server, (root / "process.log").open("ab") as log:
        env.update(llm_env(server.base_url), **scenario.settings)
        for index in range(runs + 1):
            if cold and index > 0:
                subprocess.run([*artoo_command(), "stop"], env=env, stdout=log, stderr=log, timeout=60)
            before = len(server.requests)
            started, clock = time.perf_counter(), time.time()
            done = subprocess.run([*artoo_command(), "run", "--json", scenario.request], env=env,
                                  stdout=subprocess.PIPE, stderr=log, timeout=600)
            wall = time.perf_counter() - started
            requests = server.requests[before:]
            lines = done.stdout.decode().strip().splitlines()
            final = json.loads(lines[-1]) if lines else {}
            if done.returncode != 0 or final.get("directive") != scenario.directive:
                raise RuntimeError(f"`artoo run` exited {done.returncode} ({final.get('directive')!r}); "
                                   f"see {root / 'process.log'}")
            walls.append(wall)
            sequential.append(economy(requests, scenario.subtasks).sequential_requests)
            heads.append(min(r["received"] for r in requests) - clock)
            tails.append(clock + wall - max(r["answered"] for r in requests))
        subprocess.run([*artoo_command(), "stop"], env=env, stdout=log, stderr=log, timeout=60)
    return ProcessRun(latency, walls[0], walls[1:], sequential[1:], heads[1:], tails[1:],
                      "the in-process runs" if home else "a dedicated warm-up run", cold)
