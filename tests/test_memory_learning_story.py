"""A verified method reaches the next task of its kind, told through two ``artoo run --json`` in one home on the
scripted server: the first copies the CSV files into backup and its checks pass; the second asks to copy the txt
files into archive, its plan prompt quotes the first one's command and checks, and it runs the same method.  When
a model, not a check, passed the first task, the second plan sees no such line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artoo.eval.everyday_run import memory_seen
from artoo.memory.sops import method_of
from artoo.memory.store import MemoryStore
from artoo.memory.tags import episode_verified
from artoo.tasks.decisions.log import find_run, read_records
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, crit, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")

FIRST, FIRST_CMD = "copy the csv files into backup", "mkdir -p backup && cp *.csv backup/"
SECOND, SECOND_CMD = "copy the txt files into archive", "mkdir -p archive && cp *.txt archive/"
QUOTED = f"a command that passed every check for the similar request {FIRST!r}: `{FIRST_CMD}`"


def run_copy(scripted, folder: Path, request: str, command: str, files: dict[str, str], check: str | None) -> object:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    copied = f"every file is copied into {command.split()[2]}"
    criteria = [crit(copied, check=check)] if check else [copied]
    server = scripted(scenario(
        TaskSpec=[spec("copy_files", request)],
        Plan=[plan([subtask(request, criteria, tools=["shell"])], criteria)],
        tools=[call("shell", command=command), done("copied")],
        AgentVerdict=[agent(verdict(copied, True, evidence="copied"))],
        TaskVerdict=[task_verdict(verdict(copied, True, evidence="copied"))],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), request)
    assert (code, final_from(out)["directive"]) == (0, "accept"), err[-2000:]
    return server


@pytest.mark.parametrize("checked", [True, False])
def test_a_verified_method_is_quoted_to_the_next_task_of_its_kind_and_followed(scripted, artoo_env, checked):
    run_copy(scripted, artoo_env / "w1", FIRST, FIRST_CMD, {"a.csv": "x\n", "b.csv": "y\n"},
         "test -d backup && cmp a.csv backup/a.csv && cmp b.csv backup/b.csv" if checked else None)
    server = run_copy(scripted, artoo_env / "w2", SECOND, SECOND_CMD, {"notes.txt": "n\n"},
                  "cmp notes.txt archive/notes.txt" if checked else None)
    (asked,) = [json.dumps(r["body"]["messages"]) for r in server.requests if r["schema"] == "Plan"]
    seen = memory_seen(read_records(find_run(artoo_env / "home")))  # the second run's decision log
    assert seen["followed"] is (True if checked else None)
    with MemoryStore(artoo_env / "home") as store:
        first, second = sorted(store.episodes("intent:", ["accept", "success"]), key=lambda m: m.created_at)
    if not checked:  # a model's pass: a weaker standing, and no line
        assert "passed every check" not in asked
        assert episode_verified(first.content) is None
        return
    assert QUOTED in asked and "cmp a.csv backup/a.csv" in asked  # the command and the checks it passed
    assert episode_verified(first.content) == ("test -d backup && cmp a.csv backup/a.csv && cmp b.csv backup/b.csv",)
    assert method_of(second.content) == method_of(first.content) == ("shell `mkdir -p; cp`",)  # followed
    assert (artoo_env / "w2" / "archive" / "notes.txt").read_text() == "n\n"
