"""The decision log's pure parts: redaction, bounds, retention, reading after a crash, finding a run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from artoo.config.settings import DecisionLogParams, load_settings
from artoo.tasks.decisions.log import DecisionLog, find_run, in_scope, index_entries, prune, read_records
from artoo.tasks.decisions.redact import MASK, Redactor


@pytest.mark.parametrize(("text", "secret"), [
    ("Authorization: Bearer abcdef0123456789", "abcdef0123456789"),
    ("curl -H 'Authorization: token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123'", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"),
    ("use sk-proj-abcdefghijklmnop1234 please", "sk-proj-abcdefghijklmnop1234"),
    ("export OPENAI_API_KEY=whatever-it-is", "whatever-it-is"),
    ("password: hunter2hunter2", "hunter2hunter2"),
    ("aws AKIAABCDEFGHIJKLMNOP here", "AKIAABCDEFGHIJKLMNOP"),
    ("slack xoxb-1234567890-abcdef", "xoxb-1234567890-abcdef"),
    ("GITHUB_TOKEN='gho_secretvalue'", "gho_secretvalue"),
])
def test_credential_shapes_in_free_text_are_masked(text: str, secret: str):
    masked = Redactor().text(text)
    assert secret not in masked and MASK in masked


@pytest.mark.parametrize("text", ["prompt_tokens: 120", "the tokenizer splits words", "max_tokens=50",
                                  "wc -l < data/notes.txt", "Bearer in mind"])
def test_ordinary_text_is_left_alone(text: str):
    assert Redactor().text(text) == text


def test_secret_keys_and_configured_keys_are_masked_in_nested_data():
    redact = Redactor(known=["my-configured-key-value"])
    data = {"headers": {"Authorization": "Bearer x", "X-Other": "fine"}, "api_key": "abc",
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
            "messages": [{"role": "user", "content": "here: my-configured-key-value"}]}
    out = redact(data)
    assert out["headers"] == {"Authorization": MASK, "X-Other": "fine"}
    assert out["api_key"] == MASK and out["usage"] == {"prompt_tokens": 12, "completion_tokens": 3}
    assert out["messages"][0]["content"] == f"here: {MASK}"


def test_the_redactor_knows_the_configured_api_keys(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "zz-configured-123")
    assert Redactor.from_settings(load_settings()).text("k=zz-configured-123 x") == f"k={MASK} x"


def _log(home: Path, run_id: str = "run-1", **params) -> DecisionLog:
    settings = load_settings(home=home, decisions=DecisionLogParams(**params))
    return DecisionLog(home, run_id, settings, request="do it")


def test_records_carry_scope_and_survive_a_torn_last_line(tmp_path: Path):
    log = _log(tmp_path)
    with in_scope(round=2, subtask="s1"):
        log.tool_call({"name": "shell", "arguments": {"command": "ls"}, "output": "x", "exit_code": 0})
    with log.path.open("a") as fh:
        fh.write('{"seq": 99, "kind": "llm", "role": "R2", "requ')  # the process died mid-write
    records = read_records(log.path)
    assert [r["kind"] for r in records] == ["run", "tool"]
    assert records[1]["scope"] == {"round": 2, "subtask": "s1"}
    assert records[0]["settings"]["ggs"]["alpha"] == 0.6


def test_strings_are_bounded_and_a_full_run_keeps_only_decisions(tmp_path: Path):
    log = _log(tmp_path, max_field_chars=200, max_run_mb=0.001)  # about 1 KB
    log.tool_call({"name": "shell", "output": "y" * 5000})
    for _ in range(5):
        log.llm_call({"role": "R2", "request": {"messages": [{"content": "z" * 300}]}})
    log.write("ggs", round=1, state="refine")
    records = read_records(log.path)
    tool = next(r for r in records if r["kind"] == "tool")
    assert len(tool["output"]) < 300 and "characters cut" in tool["output"]
    kinds = [r["kind"] for r in records]
    assert kinds.count("truncated") == 1 and kinds[-1] == "ggs"
    assert kinds.count("llm") < 5


def test_retention_keeps_the_newest_runs_and_drops_old_ones(tmp_path: Path):
    root = tmp_path / "decisions"
    root.mkdir()
    for i in range(5):
        (root / f"2026010{i}T000000-run{i}.jsonl").write_text("{}\n")
        (root / "index.jsonl").open("a").write(json.dumps({"run_id": f"run{i}", "file":
                                                           f"2026010{i}T000000-run{i}.jsonl"}) + "\n")
    old = root / "20260100T000000-run0.jsonl"
    os.utime(old, (time.time() - 90 * 86400,) * 2)
    gone = prune(root, DecisionLogParams(keep_runs=3, keep_days=30))
    assert sorted(p.name for p in gone) == ["20260100T000000-run0.jsonl", "20260101T000000-run1.jsonl"]
    assert [e["run_id"] for e in index_entries(tmp_path)] == ["run2", "run3", "run4"]
    gone = prune(root, DecisionLogParams(keep_runs=10, keep_days=1), now=time.time() + 2 * 86400)
    assert len(gone) == 3 and index_entries(tmp_path) == []


def test_a_run_is_found_by_task_id_run_prefix_or_as_the_latest(tmp_path: Path):
    first = _log(tmp_path, "aaaa-1111")
    first.task("count_notes", "count")
    time.sleep(1.1)  # file names carry the start second
    second = _log(tmp_path, "bbbb-2222")
    assert find_run(tmp_path, None) == second.path
    assert find_run(tmp_path, "count_notes") == first.path
    assert find_run(tmp_path, "bbbb") == second.path
    assert find_run(tmp_path, "nothing") is None
    (tmp_path / "decisions" / "index.jsonl").unlink()  # the index lost in a crash: files still found
    assert find_run(tmp_path, "aaaa-1111") == first.path


def test_a_disabled_log_writes_nothing_and_a_broken_one_never_raises(tmp_path: Path):
    log = _log(tmp_path, enabled=False)
    assert not log.path.exists()
    log = _log(tmp_path / "other")
    log.path.unlink()
    log.path.mkdir()  # appends now fail
    log.write("ggs", round=1)
    assert log.errors == 1
