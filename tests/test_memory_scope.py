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
from artoo.memory.tags import ENV_LOCAL, episode_content, intent_space
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


def hello_story(scripted, task_id: str = "say_hello", intent: str = "say hello"):
    return scripted(scenario(
        TaskSpec=[spec(task_id, intent)],
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
    """The planner's messages as the model reads them (str() of the list would escape quotes by content)."""
    messages = [r for r in server.requests if r["schema"] == "Plan"][n]["body"]["messages"]
    return "\n".join(str(m.get("content") or "") for m in messages)


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


def test_the_planner_reads_the_failed_approach_and_the_tool_pair_sop(scripted, artoo_env: Path):
    """Two earlier tasks like this one were abandoned after grepping a log they could not read, and the
    Dreamer distilled a rule for shell on the rotated logs.  The fresh plan's prompt quotes the failed
    call and what happened, and carries the tool-pair SOP."""
    failed = episode_content("abandon", "count the errors in the app log",
                             ["r1 shell: grep -c ERROR /var/log/app.log → grep: /var/log/app.log: Permission denied"],
                             "Abandoned after 3 replan(s) because the replan budget is spent.")
    seed(artoo_env / "home",
         *(megram(intent_space("count the errors"), ENV_LOCAL, "abandon", 0.95, -1.0, content=failed)
           for _ in range(2)),
         megram("tool:shell", "path:/var/log/archive", "best_practice", 1.0, 1.0, level="C", k=0.0,
                content="the archived logs are gzip files: read them with zgrep, not grep"))
    server = scripted(scenario(
        TaskSpec=[spec("count_errors", "count the errors in the app log")],
        Plan=[plan([subtask("print the count", ["a number is printed"])], ["the count was printed"])],
        tools=[call("shell", command="echo 3"), done("3")],
        AgentVerdict=[agent(verdict("a number is printed", True, evidence="shell printed 3"))],
        TaskVerdict=[task_verdict(verdict("the count was printed", True))],
    ))
    code, final = run_json("count the errors in the app log")
    assert (code, final["directive"]) == (0, "accept")
    prompt = planner_prompt(server)
    assert "repeat the approach that failed before" in prompt
    assert "grep -c ERROR /var/log/app.log" in prompt and "Permission denied" in prompt
    assert "the replan budget is spent" in prompt
    assert "'shell' on '/var/log/archive': the archived logs are gzip files: read them with zgrep" in prompt


def test_a_rule_the_failed_round_went_against_gets_negative_feedback(scripted, artoo_env: Path):
    """Round 1 follows two SHOULD PREFER rules and fails logically (grep on a missing log → break_symmetry);
    round 2 reads the count and is accepted.  R7 appends one negative-σ Megram against each rule the round
    contradicted (the intent rule, and the shell rule whose call failed) and none against the untouched one."""
    workspace = artoo_env / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "count.txt").write_text("3\n")
    intent = intent_space("count the errors")
    rules = {
        "intent": megram(intent, ENV_LOCAL, "best_practice", 1.0, 1.0, "grep the live log", level="C", k=0.0),
        "shell": megram("tool:shell", f"path:{workspace}/app.log", "best_practice", 1.0, 1.0,
                        "grep app.log directly", level="C", k=0.0),
        "other": megram("tool:shell", "path:/srv/unrelated", "best_practice", 1.0, 1.0, "fine", level="C", k=0.0),
    }
    seed(artoo_env / "home", *rules.values())
    c = "the error count is printed"
    server = scripted(scenario(
        TaskSpec=[spec("count_errors", "count the errors in the app log")],
        Plan=[plan([subtask("grep the log", [c], tools=["shell"])], ["the count was printed"]),
              plan([subtask("read the saved count", [c], tools=["read_file"])], ["the count was printed"])],
        tools=[call("shell", command="grep -c ERROR app.log"), done("no log", status="failed"),
               call("read_file", path="count.txt"), done("3")],
        AgentVerdict=[agent(verdict(c, False, "logical")), agent(verdict(c, True, evidence="read 3"))],
        TaskVerdict=[task_verdict(verdict("the count was printed", True))],
    ))
    code, final = run_json("count the errors in the app log")
    assert (code, final["directive"], final["prev_directive"]) == (0, "accept", "break_symmetry")
    assert "grep the live log" in planner_prompt(server)
    with MemoryStore(artoo_env / "home") as store:
        feedback = {name: [m for m in store.recent(r.space, r.entity, limit=10) if m.state == "negative_feedback"]
                    for name, r in rules.items()}
    assert {name: len(found) for name, found in feedback.items()} == {"intent": 1, "shell": 1, "other": 0}
    assert all(m.sigma < 0 for found in feedback.values() for m in found)
    assert rules["intent"].id in feedback["intent"][0].content and "break_symmetry" in feedback["intent"][0].content
    assert "shell on" in feedback["shell"][0].content and "app.log failed" in feedback["shell"][0].content


def test_what_one_task_tried_is_quoted_to_the_next(scripted, artoo_env: Path, monkeypatch: pytest.MonkeyPatch):
    """Writer to reader: a task that greps a missing log is abandoned (no replans allowed); the GGS's intent
    Megram says what it tried, and the next task like it is told not to repeat exactly that call."""
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "0")
    c = "the error count is printed"
    scripted(scenario(
        TaskSpec=[spec("count_errors", "count the errors in the app log")],
        Plan=[plan([subtask("grep the log", [c], tools=["shell"])], ["the count was printed"])],
        tools=[call("shell", command="grep -c ERROR app.log"), done("no log", status="failed")],
        AgentVerdict=[agent(verdict(c, False, "logical"))],
    ))
    code, final = run_json("count the errors in the app log")
    assert (code, final["directive"]) == (1, "abandon")
    server = hello_story(scripted, "count_again", "count the errors again")  # same first three words
    code, final = run_json("count the errors again")
    assert (code, final["directive"]) == (0, "accept")
    prompt = planner_prompt(server)
    assert "repeat the approach that failed before for tasks like 'count the errors again'" in prompt
    assert "tried r1 shell: grep -c ERROR app.log" in prompt and "the replan budget is spent" in prompt
