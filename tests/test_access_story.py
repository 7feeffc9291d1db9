"""Story (#26): a write refused on the user's read-only file blocks only the write.

Through ``artoo run --json`` on the scripted server, real tools and the real sandbox:
round 1 sorts ``data.csv`` in place and the read-only file refuses the write (an
environmental failure → change_path, the file blamed *for writing*); round 2 reads
``data.csv`` and writes ``data.sorted.csv``, and the task is accepted.  Before the blame
knew the access, round 2 could not even mention ``data.csv`` and the task was abandoned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")

SORTED = "the sorted lines of data.csv are in data.sorted.csv"


def _read_only_data(workspace: Path) -> Path:
    workspace.mkdir(parents=True, exist_ok=True)
    data = workspace / "data.csv"
    data.write_text("pear\napple\nfig\n")
    data.chmod(0o444)
    return data


def _bodies(server, schema: str) -> list[dict]:
    return [r["body"] for r in server.requests if r["schema"] == schema]


def test_a_refused_write_leaves_the_file_readable_and_a_new_file_is_written(scripted, artoo_env: Path):
    run_story(scripted, artoo_env)


def run_story(scripted, artoo_env: Path) -> None:
    """The whole story, asserted; also run on the last release's home (tests/test_home_upgrade.py)."""
    data = _read_only_data(artoo_env / "workspace")
    in_place = "data.csv is sorted"
    server = scripted(scenario(
        TaskSpec=[spec("sort_data", "sort the lines of data.csv")],
        Plan=[plan([subtask("sort data.csv in place", [in_place])], ["the lines of data.csv are sorted"]),
              plan([subtask("write a sorted copy of data.csv to data.sorted.csv", [SORTED])],
                   ["the lines of data.csv are sorted"])],
        tools=[call("shell", command="sort -o data.csv data.csv"), done("could not write", status="failed"),
               call("shell", command="sort data.csv > data.sorted.csv && cat data.sorted.csv"),
               done("apple fig pear")],
        AgentVerdict=[agent(verdict(in_place, False, "environmental", "Permission denied")),
                      agent(verdict(SORTED, True, evidence="cat printed apple fig pear"))],
        TaskVerdict=[task_verdict(verdict("the lines of data.csv are sorted", True))],
    ))
    code, out, err = run_cli("run", "--json", "sort the lines of data.csv")
    final = final_from(out)

    refused = json.dumps(_bodies(server, "tools")[1]["messages"][-1])
    assert "Permission denied" in refused or "Read-only" in refused  # the sandbox really refused the write
    assert (code, final["directive"], final["replans"], final["prev_directive"]) == (0, "accept", 1, "change_path")
    assert (artoo_env / "workspace" / "data.sorted.csv").read_text() == "apple\nfig\npear\n"
    assert data.read_text() == "pear\napple\nfig\n"  # the user's file untouched
    second_plan = json.dumps(_bodies(server, "Plan")[1]["messages"])
    assert "data.csv (write refused: other uses of it are fine)" in second_plan  # R2's MUST NOT set says which
    assert "Only the write failed for" in second_plan  # and the directive says so too
