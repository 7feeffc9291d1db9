"""artoo eval everyday end to end: the real artoo-task flow per task on the session's Prefect server, the
models over real HTTP through the real openai client, our checks on the final folder.

Two stories: the simulated brain plays two tasks (one a Law-1 deletion) under both strategies from the CLI;
and on one scripted endpoint, in one run, artoo accepts a wrong result (a false accept the report names) and
a right one, while the two plain peers are right on one task and wrong on the other, calls, tokens and the
server's cached tokens counted.  The pure parts (peers' parsing, totals, markdown) get table tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artoo.eval import peers
from artoo.eval.everyday import Ran
from artoo.eval.everyday_report import totals
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer, route_name
from tests.conftest import run_cli
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

ROW_FIELDS = {"id", "kind", "steps", "right", "end_state", "untouched", "accepted", "false_accept", "llm_calls",
              "prompt_tokens", "completion_tokens", "cached_prompt_tokens", "wall_seconds"}


def test_the_simulated_brain_plays_two_tasks_under_both_strategies(prefect_api, artoo_env: Path):
    save = artoo_env / "out" / "everyday.json"
    code, stdout, _ = run_cli("eval", "everyday", "--brain", "simulated", "--only", "delete-tmp,backup-csv",
                              "--no-mistakes", "--json", "--save", str(save))
    assert code == 0
    document = json.loads(stdout.strip().splitlines()[-1])
    assert set(document["tasks"]) == {"artoo (ggs)", "artoo (retry)"}  # no peers without an endpoint
    for runner, rows in document["tasks"].items():
        assert [r["id"] for r in rows] == ["backup-csv", "delete-tmp"]
        assert all(set(r) >= ROW_FIELDS | {"exit_code", "final_directive", "law1_questions"} for r in rows)
        assert all(r["right"] and r["accepted"] and not r["false_accept"] and r["exit_code"] == 0 for r in rows), rows
        assert all(r["llm_calls"] >= 4 and r["prompt_tokens"] > 0 for r in rows)  # the real flow ran each task
        deletion = rows[1]
        assert deletion["law1_questions"] >= 1 and all(q["approved"] for q in deletion["law1"])  # deleting asks
        assert document["totals"][runner]["right"] == 2 and document["totals"][runner]["false_accepts"] == 0
    assert json.loads(save.read_text())["totals"] == document["totals"]
    code, stdout, _ = run_cli("eval", "everyday", "--brain", "simulated", "--peers", "--only", "delete-tmp")
    assert code == 2  # the peers need a model endpoint


class ChatServer(ScriptedLLMServer):
    """The scripted server, answering plain chat requests (no tools, no response_format: the peers') from the
    ``chat`` queue; the scripted server itself routes only the request shapes artoo sends."""

    def _answer(self, body: dict):
        if route_name(body, set(self._queues)) is None and not body.get("response_format"):
            body = {**body, "response_format": {"type": "json_schema", "json_schema": {"name": "chat"}}}
        return super()._answer(body)


def llama_body(text: str, prompt_tokens: int, cache_n: int) -> dict:
    """A whole chat completion as llama-server sends it, with ``timings.cache_n``."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 9, "total_tokens": prompt_tokens + 9},
            "timings": {"cache_n": cache_n, "prompt_n": prompt_tokens - cache_n}}


def said(text: str, match: str, prompt_tokens: int | None = None, cache_n: int = 0) -> dict:
    """A plain chat answer (with token counts: llama-server's whole body, cached tokens included)."""
    if prompt_tokens is None:
        return {"raw": text, "match": match}
    return {"match": match, "body": llama_body(text, prompt_tokens, cache_n)}


def _artoo_story() -> dict:
    """find-error-logs: the executor writes EVERY log's name and both validators pass (a false accept);
    count-lines: the executor counts right and is accepted."""
    listed, counted = "error_logs.txt lists the logs with ERROR", "line_count.txt holds the line count"
    first = {"body": llama_body(json.dumps(spec("error_logs", "list logs with ERROR")["answer"]), 300, 120)}
    return dict(
        TaskSpec=[first, spec("count_lines", "count lines of access.log")],
        Plan=[plan([subtask("list the logs containing ERROR", [listed])], [listed]),
              plan([subtask("count the lines of access.log", [counted])], [counted])],
        tools=[call("shell", command="ls logs/*.log > error_logs.txt", match="containing ERROR"),
               done("wrote error_logs.txt", match="containing ERROR"),
               call("shell", command="wc -l < access.log > line_count.txt", match="lines of access.log"),
               done("wrote line_count.txt", match="lines of access.log")],
        AgentVerdict=[agent(verdict(listed, True, evidence="ls wrote error_logs.txt")),
                      agent(verdict(counted, True, evidence="wc wrote line_count.txt"))],
        TaskVerdict=[task_verdict(verdict(listed, True)), task_verdict(verdict(counted, True))])


def _peer_story() -> list[dict]:
    """one-command: right on find-error-logs, wrong on count-lines (words, not lines); bash-loop: the reverse
    (every name listed; then a count in two commands)."""
    loop = "at a time"
    return [said("```bash\ngrep -l ERROR logs/*.log > error_logs.txt\n```", "Task: list the .log files", 60, 40),
            said("```bash\nls logs/*.log > error_logs.txt\n```", loop), said("DONE", loop),
            said("wc -w < access.log > line_count.txt", "Task: How many lines", 50, 20),
            said("First look:\n```bash\nwc -l access.log\n```", loop),
            said("```bash\necho 12 > line_count.txt\n```\nDONE", loop)]


def test_artoo_and_both_peers_on_one_scripted_endpoint(prefect_api, artoo_env: Path, monkeypatch: pytest.MonkeyPatch):
    from artoo.eval.everyday_run import EverydayOptions, run_everyday

    story = scenario(**_artoo_story(), chat=_peer_story())
    with ChatServer(story) as server:
        for key, value in (("OPENAI_BASE_URL", server.base_url), ("OPENAI_MODEL", "scripted"),
                           ("OPENAI_API_KEY", "test-key"), ("ARTOO_LLM__TEMPERATURE", "0.2")):
            monkeypatch.setenv(key, value)
        document = run_everyday(EverydayOptions(brain="endpoint", only=("find-error-logs", "count-lines"),
                                                strategies=("ggs",)))
        assert server.unused() == {}
        chats = [r["body"] for r in server.requests if r["schema"] == "chat"]
    assert all(body["temperature"] == 0.2 for body in chats)  # the sampling artoo sends to this endpoint
    rows = {name: {r["id"]: r for r in runner_rows} for name, runner_rows in document["tasks"].items()}
    assert list(rows) == ["artoo (ggs)", "one-command", "bash-loop"]
    artoo = rows["artoo (ggs)"]
    assert artoo["find-error-logs"]["false_accept"] and not artoo["find-error-logs"]["right"]
    assert "db.log" in artoo["find-error-logs"]["end_state"][0]
    assert artoo["count-lines"]["right"] and not artoo["count-lines"]["false_accept"]
    one, loop = rows["one-command"], rows["bash-loop"]
    assert one["find-error-logs"]["right"] and not one["count-lines"]["right"]
    assert one["count-lines"]["false_accept"]  # its command exited 0 on a wrong result
    assert not loop["find-error-logs"]["right"] and loop["count-lines"]["right"]
    assert loop["count-lines"]["commands"] == ["wc -l access.log", "echo 12 > line_count.txt"]
    assert [r["llm_calls"] for r in one.values()] == [1, 1] and [r["llm_calls"] for r in loop.values()] == [2, 2]
    assert [r["prompt_tokens"] for r in one.values()] == [60, 50]
    assert [r["cached_prompt_tokens"] for r in one.values()] == [40, 20]
    assert loop["count-lines"]["prompt_tokens"] > 0 and loop["count-lines"]["cached_prompt_tokens"] is None
    totals_ = document["totals"]
    assert totals_["one-command"]["cache_share"] == round(60 / 110, 3) and totals_["bash-loop"]["cache_share"] is None
    assert {name: t["false_accepts"] for name, t in totals_.items()} == {"artoo (ggs)": 1, "one-command": 1,
                                                                         "bash-loop": 1}
    assert all(artoo[t]["llm_calls"] >= 4 for t in artoo)
    # artoo's cached tokens come from its decision log: only R1's first answer said (llama-server's body)
    assert [artoo[t]["cached_prompt_tokens"] for t in artoo] == [120, None]


@pytest.mark.parametrize(("text", "command"), [
    ("```bash\nmkdir b && cp *.csv b/\n```", "mkdir b && cp *.csv b/"),
    ("Run this:\n```sh\nls\n```\nthen\n```bash\npwd\n```", "ls"),        # the first block
    ("`sort -u a.txt -o a.txt`", "sort -u a.txt -o a.txt"),               # no block: the first line
    ("\n\ngrep -c x f > n.txt\nThis counts.", "grep -c x f > n.txt"),
    ("```\nfind . -name '*.tmp' -delete", "find . -name '*.tmp' -delete"),  # an unclosed block
    ("", None),
])
def test_the_one_command_peer_takes_the_first_block_else_the_first_line(text: str, command: str | None):
    assert peers.one_command_of(text) == command


@pytest.mark.parametrize(("text", "done"), [
    ("DONE", True), ("All set.\n**DONE**", True), ("```bash\nls\n```\nDONE.", True),
    ("I am done with it", False), ("```bash\necho DONE\n```", False), ("DONE soon, first:", False),
])
def test_the_loop_ends_on_done_alone_on_a_line_outside_code(text: str, done: bool):
    assert peers.said_done(text) is done


@pytest.mark.parametrize(("response", "cached"), [
    ({"timings": {"cache_n": 7, "prompt_n": 3}}, 7),
    ({"usage": {"prompt_tokens_details": {"cached_tokens": 5}}}, 5),
    ({"usage": {"prompt_tokens": 9}}, None),
    (None, None),
])
def test_cached_tokens_are_read_where_the_server_puts_them(response, cached):
    assert peers.cached_tokens(response) == cached


def test_a_peer_accepts_on_exit_zero_or_done_and_never_after_an_error():
    assert peers.PeerRun(exit_codes=[0], stop="ran").accepted
    assert not peers.PeerRun(exit_codes=[1], stop="ran").accepted
    assert peers.PeerRun(exit_codes=[1], stop="done").accepted and not peers.PeerRun(stop="limit").accepted
    assert not peers.PeerRun(stop="error", error="APIConnectionError").accepted
    text = peers.observation(Ran("x" * 10 + "\n", 2, False), 30)
    assert text.startswith("exit code 2\n") and peers.observation(Ran("", None, True), 30).startswith("timed out")


def _row(right: bool, accepted: bool, steps: int, calls: int, prompt: int, cached: int | None, wall: float) -> dict:
    return {"right": right, "accepted": accepted, "false_accept": accepted and not right, "steps": steps,
            "llm_calls": calls, "prompt_tokens": prompt, "completion_tokens": 1, "cached_prompt_tokens": cached,
            "wall_seconds": wall}


def test_totals_count_false_accepts_medians_and_the_cache_share_of_reporting_calls_only():
    rows = [_row(True, True, 1, 4, 100, 80, 10.0), _row(False, True, 1, 8, 300, None, 30.0),
            _row(False, False, 2, 6, 100, 20, 20.0)]
    t = totals(rows)
    assert (t["right"], t["false_accepts"], t["right_one_step"], t["one_step"], t["multi_step"]) == (1, 1, 1, 2, 1)
    assert (t["median_wall_s"], t["median_calls"], t["median_calls_one_step"]) == (20.0, 6, 6)
    assert t["prompt_tokens"] == 500 and t["cached_prompt_tokens"] == 100 and t["cache_share"] == 0.5
    assert totals([_row(True, True, 1, 1, 10, None, 1.0)])["cache_share"] is None


def test_a_sequence_runs_each_kind_again_in_one_home_beside_cold_runs(prefect_api, artoo_env: Path):
    """Two copy tasks: in one home (sequence) and each in a fresh one (cold); the simulated brain writes no checks,
    so no success of it is verified and no plan is shown a verified method (the honest row it must say)."""
    code, stdout, _ = run_cli("eval", "everyday", "--brain", "simulated", "--only", "copy-confs,backup-csv",
                              "--strategies", "ggs", "--sequence", "--no-mistakes", "--json")
    assert code == 0
    document = json.loads(stdout.strip().splitlines()[-1])
    assert set(document["tasks"]) == {"artoo (ggs) sequence", "artoo (ggs) cold"}
    assert [(t["id"], t["occurrence"]) for t in document["task_list"]] == [("backup-csv", 1), ("copy-confs", 2)]
    for rows in document["tasks"].values():
        assert [r["right"] for r in rows] == [True, True]
        assert all(r["verified_lines"] == 0 and r["followed"] is None for r in rows)
    parts = document["by_occurrence"]["artoo (ggs) sequence"]
    assert (parts["first"]["tasks"], parts["later"]["tasks"], parts["second_right"]) == (1, 1, "1/1")
    from artoo.eval.everyday_report import markdown

    assert "second of its kind, right" in markdown(document)


@pytest.mark.parametrize(("kinds", "order", "occurrence"), [
    ("aab", "aba", [1, 1, 2]),
    ("aaabbc", "abcaba", [1, 1, 1, 2, 2, 3]),
    ("", "", []),
])
def test_a_sequence_brings_each_kind_back_after_the_others(kinds, order, occurrence):
    from dataclasses import replace

    from artoo.eval.everyday_run import occurrences, sequence_order
    from artoo.eval.everyday_suite import TASKS

    named = {"a": "copy", "b": "move", "c": "sort"}
    letter = {v: k for k, v in named.items()}
    tasks = [replace(TASKS[0], id=f"t{i}", kind=named[kind]) for i, kind in enumerate(kinds)]
    ordered = sequence_order(tasks)
    assert "".join(letter[t.kind] for t in ordered) == order
    assert sorted(t.id for t in ordered) == sorted(t.id for t in tasks)
    assert [occurrences(ordered)[t.id] for t in ordered] == occurrence


def test_a_run_followed_a_verified_line_when_it_ran_a_command_of_its_method():
    from artoo.eval.everyday_run import memory_seen
    from artoo.memory.calibration import VERIFIED_LINE

    line = (f"{VERIFIED_LINE}'copy the csv files into backup': `mkdir -p backup && cp *.csv backup/` "
            "(use this request's own names)")
    shell = {"kind": "tool", "name": "shell", "arguments": {"command": "mkdir -p archive && cp *.txt archive/"}}
    seen = [{"kind": "memory", "prefer": [line, "the tool 'glob' on 'x'"],
             "verified": ["mkdir -p backup && cp *.csv backup/"]}]
    assert memory_seen(seen + [shell]) == {"memory_lines": [line, "the tool 'glob' on 'x'"], "verified_lines": 1,
                                           "followed": True}
    other = {**shell, "arguments": {"command": "rsync -a *.txt archive/"}}
    assert memory_seen(seen + [other])["followed"] is False
    assert memory_seen([shell])["followed"] is None  # it saw no verified line
