"""One cached prefix and few calls, told through ``artoo run --json`` on the scripted server acting as llama-server's
one-slot prompt cache: every role's request begins with the same bytes (the laws, the working folder, what it held,
the request), the cache serves them on every call after the first, and a one-step task whose checks decide
everything costs R1, R2's plan, three short votes and one executor turn: no DONE turn, no validator."""

from __future__ import annotations

import json
import os

import pytest

from artoo.tasks.roles.prompting import LAWS
from tests.conftest import final_from, run_cli
from tests.scenario_kit import command, crit, plan, scenario, spec, subtask

pytestmark = pytest.mark.usefixtures("prefect_api")

REQUEST = "list the log files that contain ERROR into errors.txt"
RIGHT = "grep -l ERROR *.log > errors.txt"


def test_every_role_shares_one_prefix_and_a_checked_step_costs_three_role_calls_and_three_votes(
        scripted, artoo_env, monkeypatch):
    monkeypatch.setenv("ARTOO_LLM__TOOL_MODE", "bash")
    monkeypatch.setenv("ARTOO_CHECKS__REFERENCE_CALL", "true")
    folder = artoo_env / "workspace"
    folder.mkdir()
    for name, text in {"a.log": "ERROR disk\n", "b.log": "ok\n", "c.log": "ERROR net\n"}.items():
        (folder / name).write_text(text)
    checked = crit("errors.txt lists the logs that contain ERROR", check="test -s errors.txt")
    server = scripted({**scenario(
        TaskSpec=[spec("list_error_logs", REQUEST)],
        Plan=[plan([subtask("Write the names of the .log files with ERROR into errors.txt", [checked])], [checked])],
        Vote=[command(RIGHT), command(RIGHT), command("grep -l ERROR a.log c.log > errors.txt")],
        tools=[{"raw": f"I will search the logs.\n```bash\n{RIGHT}\n```"}],
    ), "prompt_cache": True})
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept"), err[-2000:]
    assert "every check of this step passes after: shell" in json.dumps(final["output"])  # code ended the attempt
    assert (folder / "errors.txt").read_text().split() == ["a.log", "c.log"]
    assert [r["schema"] for r in server.requests] == ["TaskSpec", "Plan", "Vote", "Vote", "Vote", "tools"]
    systems = [r["body"]["messages"][0]["content"] for r in server.requests]
    shared = os.path.commonprefix(systems)
    assert shared.startswith(LAWS) and str(folder) in shared and REQUEST in shared
    assert "a.log" in shared and "c.log" in shared  # what the folder held when the task began
    records = [json.loads(line) for path in (artoo_env / "home" / "decisions").rglob("*.jsonl")
               for line in path.read_text().splitlines()]
    calls = [r for r in records if r.get("kind") == "llm"]
    assert [r["role"] for r in calls] == ["R1", "R2", "vote", "vote", "vote", "R3"]  # request, plan, votes, one act
    assert calls[0]["cached_tokens"] == 0 and all(r["cached_tokens"] >= len(shared) // 4 - 1 for r in calls[1:])
    checks = [(r["label"], r["status"]) for r in records if r.get("kind") == "check"]
    assert ("attempt 1", "met") in checks and ("round 1", "met") in checks
    code, shown, _ = run_cli("log")
    assert code == 0 and "cached)" in shown
