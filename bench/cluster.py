"""N artoo workers on one Prefect server and one PostgreSQL memory: the harness of the
three-worker test and of the throughput benchmark (``python -m artoo.bench.cluster_bench``).

Each worker is a real ``prefect worker start --pool … --type process`` process with its
own ARTOO_HOME, PREFECT_HOME, workspace and working directory; the only things the
workers share are the Prefect server and the memory database (and the LLM endpoint).
Requests go through ``run_deployment`` to a pool of this harness's own (so nothing else
on the server takes them), the LLM is the scripted OpenAI-compatible server on loopback
with a chosen latency per call, and every story is the minimal accepting one (TaskSpec,
Plan, two executor turns, AgentVerdict, TaskVerdict: six calls), with its own task id.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
CALLS_PER_TASK = 6
"""LLM calls of one accepted first-round task."""


def request_text(i: int) -> str:
    """The request of task ``i`` (its number is what the scripted TaskSpec matches)."""
    return f"job-{i:03d}: print a greeting"


def stories(count: int, latency_s: float = 0.0) -> dict:
    """The scripted server's scenario: ``count`` accepting tasks, answered in any interleaving."""
    criterion = "the output contains hello-artoo"
    specs = [{"answer": {"task_id": f"job_{i:03d}", "intent": "print a greeting",
                         "constraints": {"scope": None, "deadline": None}}, "match": f"job-{i:03d}:"}
             for i in range(count)]
    forever = {"repeat": True}
    return {"latency_s": latency_s, "answers": {
        "TaskSpec": specs,
        "Plan": [{"answer": {"task_criteria": [{"criterion": "a greeting was printed", "mode": "verifiable"}],
                             "subtasks": [{"sequence": 1, "intent": "print a greeting", "context": "",
                                           "success_criteria": [{"criterion": criterion, "mode": "verifiable"}]}]},
                  **forever}],
        # the executor's second turn sees the tool's output, the first does not
        "tools": [{"answer": {"status": "completed", "output": "hello-artoo"}, "match": "hello-artoo\n", **forever},
                  {"tool_calls": [{"name": "shell", "arguments": {"command": "echo hello-artoo"}}], **forever}],
        "AgentVerdict": [{"answer": {"verdicts": [{"criterion": criterion, "verdict": "pass", "failure_class": None,
                                                   "evidence": "shell printed hello-artoo"}],
                                     "what_was_wrong": None, "what_to_do": None}, **forever}],
        "TaskVerdict": [{"answer": {"verdicts": [{"criterion": "a greeting was printed", "verdict": "pass",
                                                  "failure_class": None, "evidence": "ok"}], "summary": "done"},
                         **forever}],
    }}


@dataclass
class Cluster:
    """Workers over one server and one memory database; ``start`` then ``run`` then ``stop``."""

    root: Path
    api_url: str
    memory_url: str
    llm_url: str
    workers: int = 3
    per_worker: int = 1
    """Runs one worker executes at once (``--limit``)."""
    pool: str = field(default_factory=lambda: f"artoo-{uuid.uuid4().hex[:8]}")
    processes: list[subprocess.Popen] = field(default_factory=list)

    def home(self, n: int) -> Path:
        """Worker ``n``'s ARTOO_HOME."""
        return self.root / f"worker-{n}" / "home"

    def env(self, n: int) -> dict[str, str]:
        """Worker ``n``'s environment: its own homes (artoo's and Prefect's) and workspace; the shared
        server and memory."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARTOO_", "OPENAI_", "BRAIN_", "TOOL_"))}
        env.update(PREFECT_API_URL=self.api_url, ARTOO_HOME=str(self.home(n)),
                   PREFECT_HOME=str(self.root / f"worker-{n}" / "prefect-home"),
                   ARTOO_WORKSPACE=str(self.root / f"worker-{n}" / "workspace"),
                   ARTOO_MEMORY__BACKEND="postgres", ARTOO_MEMORY__POSTGRES_URL=self.memory_url,
                   OPENAI_BASE_URL=self.llm_url, OPENAI_API_KEY="scripted", OPENAI_MODEL="scripted",
                   ARTOO_LAW1_MODE="deny", ARTOO_LLM_TIMEOUT_S="30", ARTOO_LLM_MAX_RETRIES="0",
                   PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_WORKER_PREFETCH_SECONDS="5",
                   PREFECT_SERVER_ANALYTICS_ENABLED="false")
        return env

    def start(self, timeout_s: float = 90.0) -> Cluster:
        """Create the pool, deploy artoo-task to it, start the workers and wait until all poll."""
        from artoo.config.settings import load_settings
        from artoo.servers.cluster import deploy_to_pool, ensure_pool, worker_argv

        async def prepare() -> None:
            await ensure_pool(self.pool)
            await deploy_to_pool(load_settings(), self.pool, names=("artoo-task",), suffix=f"-{self.pool}")

        with self._api():
            asyncio.run(prepare())
        for n in range(self.workers):
            self.home(n).mkdir(parents=True, exist_ok=True)
            log = (self.root / f"worker-{n}" / "worker.log").open("ab")
            self.processes.append(subprocess.Popen(
                worker_argv(self.pool, f"w{n}-{self.pool}", self.per_worker), env=self.env(n), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, cwd=self.root / f"worker-{n}"))
        deadline = time.monotonic() + timeout_s
        while len(self._call(self._online)) < self.workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                self.stop()
                raise RuntimeError(f"workers did not come online; see {self.root}/worker-*/worker.log")
            time.sleep(0.5)
        return self

    async def _online(self) -> list[str]:
        from prefect.client.orchestration import get_client

        async with get_client() as client:
            return [w.name for w in await client.read_workers_for_work_pool(self.pool)]

    def run(self, count: int, timeout_s: float = 600.0) -> dict:
        """Submit ``count`` requests at once and wait for all; states, workers used, wall seconds."""
        return self._call(lambda: self._run(count, timeout_s))

    def _api(self):
        from prefect.settings import PREFECT_API_URL, temporary_settings

        return temporary_settings(updates={PREFECT_API_URL: self.api_url})

    def _call(self, make):
        with self._api():
            return asyncio.run(make())

    async def _run(self, count: int, timeout_s: float) -> dict:
        from prefect.client.orchestration import get_client
        from prefect.deployments import run_deployment

        started = time.monotonic()
        name = f"artoo-task/artoo-task-{self.pool}"
        runs = [await run_deployment(name, parameters={"request": request_text(i)}, timeout=0) for i in range(count)]
        ids = [r.id for r in runs]
        async with get_client() as client:
            while True:
                states = {str(r.id): r for r in await asyncio.gather(*(client.read_flow_run(i) for i in ids))}
                done = [r for r in states.values() if r.state_type and r.state_type.value in TERMINAL]
                if len(done) == count or time.monotonic() - started > timeout_s:
                    break
                await asyncio.sleep(0.5)
        wall = time.monotonic() - started
        by_state: dict[str, int] = {}
        for r in states.values():
            key = r.state_type.value if r.state_type else "UNKNOWN"
            by_state[key] = by_state.get(key, 0) + 1
        return {"states": by_state, "wall_s": wall, "run_ids": [str(i) for i in ids],
                "tasks_per_min": 60.0 * by_state.get("COMPLETED", 0) / wall}

    def runs_per_worker(self) -> dict[int, int]:
        """How many artoo-task runs each worker finished (from its decision logs)."""
        return {n: len([p for p in (self.home(n) / "decisions").glob("*.jsonl") if p.name != "index.jsonl"])
                for n in range(self.workers)}

    def stop(self) -> None:
        """Stop the workers (SIGTERM to each process group, then SIGKILL)."""
        for p in self.processes:
            if p.poll() is None:
                os.killpg(p.pid, 15)
        for p in self.processes:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
        self.processes.clear()

