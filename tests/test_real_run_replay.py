"""A whole real run replayed: run t10 of #25, the first that Qwen2.5-Coder-1.5B (llama-server) carried to
the end, served again answer by answer to a real ``artoo run`` with real tools in a fresh folder.

What it pins: every real answer reaches its role in order (R1, R2, four executor turns under the
``ExecutorTurn`` schema, two R4a verdicts, R4b), the tools run for real, and the run ends as it did.
It ended **accepted with a wrong totals.md** ("18": the plan's awk summed ``wc -l``'s own "total" line
too; the right total is 9), and R4a passed each step quoting the executor's own claim.  bench/README
records this false accept; a change that makes artoo catch it must change this test, on purpose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.tasks.llm.negotiated import NegotiationStore, negotiated_path
from artoo.tasks.llm.transcript import scenario_from_transcript
from tests.conftest import final_from, run_cli

T10 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-6.jsonl"
REQUEST = "count the lines of every .txt file in this folder and write the totals to totals.md"


@pytest.mark.usefixtures("prefect_api")
def test_run_t10_replayed_ends_as_it_did_with_every_tool_run_for_real(scripted, artoo_env):
    from artoo.config.settings import load_settings
    from artoo.tasks.decision_log import load_run

    folder = artoo_env / "workspace"
    folder.mkdir()
    for name, text in {"a.txt": "alpha\nbeta\ngamma\n", "b.txt": "1\n2\n3\n4\n5\n", "c.txt": "one\n"}.items():
        (folder / name).write_text(text)
    server = scripted(scenario_from_transcript(T10).model_dump())
    NegotiationStore(negotiated_path(load_settings().home_dir)).remember(
        server.base_url, "scripted", "tools", "content", "t10's home remembered the content protocol")
    code, out, _ = run_cli("run", "--json", REQUEST)
    final = final_from(out)
    assert (code, final["directive"]) == (0, "accept")
    assert (folder / "line_counts.txt").read_text().split() == ["3", "a.txt", "5", "b.txt", "1", "c.txt", "9", "total"]
    assert (folder / "totals.md").read_text() == "18\n"  # the false accept, as it happened
    assert [e["schema"] for e in server.requests] == [
        "TaskSpec", "Plan", "tools", "tools", "AgentVerdict", "tools", "tools", "AgentVerdict", "TaskVerdict"]
    turns = [e["body"]["response_format"]["json_schema"]["name"] for e in server.requests if e["schema"] == "tools"]
    assert turns == ["ExecutorTurn"] * 4
    _, records = load_run(load_settings().home_dir)
    calls = [r for r in records if r["kind"] == "llm"]
    assert all(r["ok"] and not r.get("repairs") for r in calls)  # real answers under the schemas: no repair
    executor = [c for c in calls if c["role"] == "R3"]
    assert len(executor) == 4 and all(c["negotiated"]["tools"] == "content" for c in executor)
