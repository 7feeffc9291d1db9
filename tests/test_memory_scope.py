"""Memory from other tasks through ``artoo run --json``: what it may restrict, and what the planner reads.

Each story pre-seeds the memory home the way earlier tasks' GGS would have left it, runs a
fresh task on the scripted server, and asserts on the requests the server received: the
planner's prompt and the executor's tool list.  Memory from other tasks is a realistic
source of bad replans, so the first story checks it cannot take a tool away everywhere.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from artoo.config.contracts import Megram
from artoo.memory.store import MemoryStore
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")


def seed(home: Path, *megrams: Megram) -> None:
    with MemoryStore(home) as store:
        for m in megrams:
            store.write(m)


def megram(space: str, entity: str, state: str, f: float, sigma: float, content: str = "",
           level: str = "M", k: float = 0.05) -> Megram:
    return Megram(id=uuid.uuid4().hex, level=level, created_at=datetime.now(UTC), space=space, entity=entity,
                  content=content or f"{state}: {space} on {entity}", state=state, f=f, sigma=sigma, k=k)


def hello_story(scripted):
    return scripted(scenario(
        TaskSpec=[spec("say_hello", "say hello")],
        Plan=[plan([subtask("print hello", ["the output contains hello"])], ["hello was printed"])],
        tools=[call("shell", command="echo hello"), done("hello")],
        AgentVerdict=[agent(verdict("the output contains hello", True, evidence="shell printed hello"))],
        TaskVerdict=[task_verdict(verdict("hello was printed", True))],
    ))


def run_json(request: str) -> tuple[int, dict]:
    code, out, _ = run_cli("run", "--json", request)
    return code, final_from(out)


def offered_tools(server) -> list[list[str]]:
    """The tool names of every executor request the scripted server received."""
    return [[t["function"]["name"] for t in r["body"].get("tools", [])]
            for r in server.requests if r["schema"] == "tools"]


def planner_prompt(server, n: int = 0) -> str:
    return str([r for r in server.requests if r["schema"] == "Plan"][n]["body"]["messages"])


def test_negative_shell_memory_on_other_paths_does_not_take_shell_away(scripted, artoo_env: Path):
    """Three other tasks' change_approach Megrams on two paths: each pair is Avoid, and the tool's sum
    (decision ≈ −2.55) would have banned shell everywhere.  A fresh task must still be offered shell,
    and the planner is told exactly which tool/target pairs failed."""
    seed(artoo_env / "home",
         *(megram("tool:shell", "path:/srv/x", "change_approach", 0.85, -1.0) for _ in range(2)),
         megram("tool:shell", "path:/srv/y/app.log", "change_approach", 0.85, -1.0))
    server = hello_story(scripted)
    code, final = run_json("say hello")
    assert (code, final["directive"]) == (0, "accept")
    tools = offered_tools(server)
    assert tools and all("shell" in names for names in tools), tools
    prompt = planner_prompt(server)
    assert "Tools that must not appear in any subtask" not in prompt
    assert "'shell' on '/srv/x'" in prompt and "'shell' on '/srv/y/app.log'" in prompt
