"""artoo eval end to end: the real artoo-task flow per task on the session's Prefect server, the
simulated brain over real HTTP, and the score.  Two stories: the CI command of the issue, and
one correction channel switched off lowering the score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

FS3 = Path("/work/shared/eval/intercode-nl2bash-fs3")
TASK_FIELDS = {"solved", "rounds", "final_directive", "llm_calls", "prompt_tokens", "completion_tokens",
               "wall_seconds", "law1_questions", "fs_match", "output_recall", "mistakes"}
TOTAL_FIELDS = {"tasks", "solved", "solved_rate", "llm_calls", "llm_calls_per_solved", "wall_seconds",
                "law1_questions", "prompt_tokens", "completion_tokens"}


@pytest.mark.skipif(not FS3.is_dir(), reason="the shipped suites are not on this machine")
def test_the_ci_command_runs_both_strategies_and_reports_every_field(prefect_api, artoo_env: Path):
    save = artoo_env / "out" / "eval.json"
    code, stdout, _ = run_cli("eval", "intercode", "--suite", str(FS3), "--brain", "simulated", "--limit", "10",
                              "--json", "--save", str(save))
    assert code == 0
    document = json.loads(stdout.strip().splitlines()[-1])
    assert set(document["totals"]) == {"ggs", "retry"} and document["suite"] == FS3.name
    for strategy, rows in document["tasks"].items():
        assert len(rows) == 10 and all(set(row) >= TASK_FIELDS for row in rows)
        assert set(document["totals"][strategy]) >= TOTAL_FIELDS
        assert document["totals"][strategy]["solved"] == sum(r["solved"] for r in rows)
        assert all(r["llm_calls"] >= 4 and r["rounds"] >= 1 for r in rows)  # the real flow ran each task
    assert document["totals"]["ggs"]["solved"] >= 5
    assert json.loads(save.read_text())["totals"] == document["totals"]
    assert save.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _assert_artifacts()


def _assert_artifacts() -> None:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def keys() -> set[str]:
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["eval-totals", "eval-chart"])))
        return {a.key for a in found}

    assert asyncio.run(keys()) == {"eval-totals", "eval-chart"}


SETUP = "#!/bin/bash\nrm -rf /data\nmkdir -p /data/sub\necho keep me > /data/keep.txt\necho a > /data/sub/a.log\n"


def _wrong_path_suite(root: Path) -> Path:
    folder = root / "suite"
    folder.mkdir()
    (folder / "queries.json").write_text(json.dumps([
        {"query": "show the content of /data/keep.txt", "gold": "cat /data/keep.txt"}]))
    (folder / "setup.sh").write_text(SETUP)
    return folder


def _solved(suite: Path, strategies: tuple[str, ...]) -> dict[str, int]:
    from artoo.eval.harness import EvalOptions, run_eval

    document = run_eval(EvalOptions(suite=suite, brain="simulated", strategies=strategies, seed=7,
                                    rates={"wrong_path": 1.0}, recovery=0.0))
    return {s: t["solved"] for s, t in document["totals"].items()}


def test_hiding_blocked_targets_from_the_planner_lowers_the_simulated_score(prefect_api, artoo_env: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    suite = _wrong_path_suite(artoo_env)
    full = _solved(suite, ("ggs", "retry"))
    assert full == {"ggs": 1, "retry": 0}  # the directive's blocked target cures the wrong path; blind retry cannot
    monkeypatch.setenv("ARTOO_ABLATION__PLANNER_SEES_BLOCKED_TARGETS", "false")
    assert _solved(suite, ("ggs",)) == {"ggs": 0}  # nor memory lines naming them: nothing else cures it


def test_an_endpoint_eval_carries_what_the_server_accepts_across_strategies_and_back(scripted, prefect_api,
                                                                                    artoo_env: Path):
    """llama-cpp-python refuses json_schema once: each strategy's fresh home starts from what the person's home
    (and the strategy before) learnt, so the eval pays one refused request, and the person's home keeps it."""
    from artoo.eval.harness import EvalOptions, run_eval
    from artoo.tasks.llm.profile_store import ProfileStore, store_path
    from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

    c = "keep.txt is printed"
    once = dict(TaskSpec=[spec("show_keep", "show the content of keep.txt")],
                Plan=[plan([subtask("print keep.txt", [c])], ["the content was printed"])],
                tools=[call("shell", command="cat data/keep.txt"), done("keep me")],
                AgentVerdict=[agent(verdict(c, True, evidence="cat printed keep me"))],
                TaskVerdict=[task_verdict(verdict("the content was printed", True))])
    story = scenario(**{name: entries * 2 for name, entries in once.items()})
    server = scripted({**story, "refuse": "llama-cpp-python"})
    document = run_eval(EvalOptions(suite=_wrong_path_suite(artoo_env), brain="endpoint", strategies=("ggs", "retry")))
    assert {s: t["tasks"] for s, t in document["totals"].items()} == {"ggs": 1, "retry": 1}
    assert [r["status"] for r in server.requests].count(500) == 1
    stored = ProfileStore(store_path(artoo_env / "home")).get(server.base_url, "scripted")
    assert stored["structured"] == "json_object_schema" and "HTTP 500" in stored["structured_because"]
