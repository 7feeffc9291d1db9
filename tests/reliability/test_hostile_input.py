"""Hostile and broken input: an empty, a 240 KB or a 1 MB request; non-UTF-8, binary and FIFO
files; a 50 MB tool output and a 50 MB file.

Each ends with a clear outcome and keeps every prompt bounded: what the endpoint received
is checked for size and content, and the run's audit log and memory for what was kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from artoo.tasks.audit.chain import verify
from artoo.tasks.audit.log import AuditPaths, iter_records
from tests.conftest import final_from, run_cli
from tests.reliability.helpers import Case, clear_outcome, run_cases
from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

pytestmark = pytest.mark.usefixtures("prefect_api")

SEEN = "every file was looked at"
MB = 1 << 20


def one_round(task_id: str, calls: list[dict], answer: str = "looked at everything") -> dict:
    return scenario(TaskSpec=[spec(task_id, "look at the files")],
                    Plan=[plan([subtask("look at every file", [SEEN])], ["the files were looked at"])],
                    tools=[*calls, done(answer)],
                    AgentVerdict=[agent(verdict(SEEN, True))],
                    TaskVerdict=[task_verdict(verdict("the files were looked at", True))])


@pytest.mark.parametrize("request_text", ["", "   \n\t "], ids=["empty", "blank"])
def test_an_empty_request_is_refused_before_any_model_call(tmp_path: Path, request_text: str):
    ran = run_cases([Case("empty", one_round("empty", []), request=request_text)], tmp_path)["empty"]
    error = clear_outcome(ran.code, ran.stdout, ran.stderr)
    assert ran.code == 2 and "empty request" in error
    assert ran.requests == []


def test_a_1_mb_request_is_refused_clearly_before_anything_starts(scripted, artoo_env: Path):
    server = scripted(one_round("too_long", []))
    code, out, err = run_cli("run", "--json", "summarise this: " + "x" * MB)
    assert (code, out) == (2, "") and "too long to carry whole" in err and "Traceback" not in err
    assert "\n\n" not in err.strip() and len(err) < 1000  # one paragraph, not an echo of the request
    assert server.requests == [] and not (artoo_env / "home" / "audit").exists()


def test_a_240_kb_request_is_carried_whole_and_the_run_stays_bounded(scripted, artoo_env: Path):
    request = "count the words in this text: " + ("lorem ipsum dolor sit amet " * 10_000)[:240_000]
    server = scripted(one_round("count_words", [call("shell", command="echo 42")], "42 words"))
    code, out, _ = run_cli("run", "--json", request)
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept")
    perceived = [r["body"] for r in server.requests if r["schema"] == "TaskSpec"]
    assert request in perceived[0]["messages"][-1]["content"]  # R1 receives the user's words verbatim
    home = artoo_env / "home"
    assert len((home / "session_history.jsonl").read_text()) < 10_000  # the next R1 prompt gets a capped copy
    records = [r for _, r, _ in iter_records(AuditPaths(home).log) if r]
    assert verify(AuditPaths(home).log).ok and records[0]["message"] == "task_spec"
    assert records[0]["payload"].get("truncated") is True  # the bus event is bounded, and says so
    assert records[-1]["message"] == "final_result"


def test_hostile_files_and_outputs_reach_the_model_bounded_and_readable(scripted, artoo_env: Path):
    ws = artoo_env / "workspace"
    ws.mkdir(parents=True)
    (ws / "latin1.txt").write_bytes("café crème, naïve façade".encode("latin-1"))
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(4096))
    with (ws / "huge.log").open("wb") as handle:
        handle.write(b"a log line\n" * (50 * MB // 11))
    os.mkfifo(ws / "pipe")
    calls = [call("read_file", path="latin1.txt"), call("read_file", path="image.png"),
             call("read_file", path="huge.log"), call("read_file", path="pipe"),
             call("shell", command="yes 'fifty megabytes of output' | head -c 52428800"),
             call("shell", command="printf 'bad bytes: \\377\\376\\000 end'")]
    server = scripted(one_round("hostile_files", calls))
    code, out, err = run_cli("run", "--json", "look at the files")
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept")
    assert "audit log is missing messages" not in err  # a NUL byte cannot cost the Auditor a message
    home = artoo_env / "home"
    logged = [r["message"] for _, r, _ in iter_records(AuditPaths(home).log) if r]
    assert verify(AuditPaths(home).log).ok and "execution_result" in logged and logged[-1] == "final_result"

    turns = [r["body"] for r in server.requests if r["schema"] == "tools"]
    results = [m["content"] for m in turns[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == len(calls)
    latin1, image, huge, pipe, yes, bad = results
    assert "caf\ufffd cr\ufffdme" in latin1
    assert "binary file" in image and "PNG image" in image
    assert "characters omitted" in huge and "a log line" in huge
    assert "is a FIFO" in pipe
    assert "characters omitted" in yes and "[exit code 0]" in yes
    assert "bad bytes: \ufffd\ufffd\ufffd end" in bad  # invalid UTF-8 and the NUL byte, replaced
    assert all(len(text) < 4500 for text in results)  # headTail(4000) plus the fence
    assert max(len(json.dumps(r["body"])) for r in server.requests) < 60_000  # no prompt grew with the data


def test_a_nul_in_a_model_answer_still_reaches_the_auditor(scripted, artoo_env: Path):
    """The bus replaces NUL (PostgreSQL cannot store it): otherwise the server drops the event."""
    scripted(one_round("nul_answer", [call("shell", command="echo hi")], "hi: looked \u0000 at everything"))
    code, out, err = run_cli("run", "--json", "look at the files")
    assert (code, final_from(out)["directive"]) == (0, "accept")
    assert "audit log is missing messages" not in err
    records = [r for _, r, _ in iter_records(AuditPaths(artoo_env / "home").log) if r]
    result = next(r for r in records if r["message"] == "execution_result")
    assert result["payload"]["output"] == "hi: looked \ufffd at everything"  # quotes what echo printed: kept as is
