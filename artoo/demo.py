"""``artoo demo``: the full loop, for real, with a plainly scripted brain.

No LLM is reachable without the user's endpoint, so the demo starts the scripted
OpenAI-compatible server on loopback and points artoo at it.  Everything else is real:
the Prefect flow with its round and subtask subflows, the executor's tools running in a
temporary workspace, the GGS, the memory store under ARTOO_HOME, the bus.  The script
makes round 1 look for the notes in the wrong place (an environmental failure), so the
GGS issues ``change_path`` and round 2 finds them and succeeds.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from rich.console import Console

from artoo.config.contracts import FinalResult

REQUEST = "count the lines in my notes file and write the number to count.txt"
NOTES = "buy milk\ncall the plumber\nrenew the passport\n"


HOLDS_3 = "grep -qx 3 count.txt"
"""The check the scripted plan gives what must hold on disk: code, not the scripted validators, decides it, so the
demo is accepted the way a real run is."""


def demo_scenario() -> dict:
    """The scripted brain's answers, per schema NAME, in the order they are asked."""
    count_criteria = [{"criterion": "the number of lines of the notes file is reported", "mode": "plausible"}]
    write_criteria = [{"criterion": "count.txt exists in the workspace and holds the line count",
                       "mode": "verifiable", "check": HOLDS_3}]
    task_criteria = [{"criterion": "count.txt holds the line count of the notes file", "mode": "verifiable",
                      "check": HOLDS_3}]
    plan_1 = {"task_criteria": task_criteria,
              "subtasks": [{"sequence": 1, "intent": "count the lines of the notes file",
                            "context": "the notes are probably in notes_old/notes.txt",
                            "success_criteria": count_criteria}]}
    plan_2 = {"task_criteria": task_criteria,
              "subtasks": [{"sequence": 1, "intent": "find the notes file and count its lines",
                            "context": "the notes are not where round 1 looked; search the workspace for notes.txt",
                            "success_criteria": count_criteria},
                           {"sequence": 2, "intent": "write the line count to count.txt",
                            "context": "use the count found by the previous step",
                            "success_criteria": write_criteria}]}
    verdict = lambda text, ok, cls=None, ev="": {  # noqa: E731 - a table of literals reads best inline
        "criterion": text, "verdict": "pass" if ok else "fail", "failure_class": cls, "evidence": ev}
    return {
        "answers": {
            "TaskSpec": [{"answer": {"task_id": "count_note_lines", "intent": REQUEST,
                                     "constraints": {"scope": None, "deadline": None}}}],
            "Plan": [{"answer": plan_1}, {"answer": plan_2}],
            "tools": [
                {"tool_calls": [{"name": "shell", "arguments": {"command": "wc -l notes_old/notes.txt"}}]},
                {"answer": {"status": "failed", "output": "notes_old/notes.txt does not exist"}},
                {"tool_calls": [{"name": "glob", "arguments": {"pattern": "**/notes.txt"}}]},
                {"tool_calls": [{"name": "shell", "arguments": {"command": "wc -l < data/notes.txt"}}]},
                {"answer": {"status": "completed", "output": "data/notes.txt has 3 lines"}},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "count.txt", "content": "3\n"}}]},
                {"answer": {"status": "completed", "output": "wrote 3 to count.txt"}},
            ],
            "AgentVerdict": [
                {"answer": {"verdicts": [verdict(count_criteria[0]["criterion"], False, "environmental",
                                                 "wc: notes_old/notes.txt: No such file or directory")],
                            "what_was_wrong": "the file is not at notes_old/notes.txt",
                            "what_to_do": "search for notes.txt instead of guessing its path"}},
                {"answer": {"verdicts": [verdict(count_criteria[0]["criterion"], True, None, "wc printed 3")],
                            "what_was_wrong": None, "what_to_do": None}},
                {"answer": {"verdicts": [verdict(write_criteria[0]["criterion"], True, None,
                                                 "write_file created count.txt")],
                            "what_was_wrong": None, "what_to_do": None}},
            ],
            "TaskVerdict": [{"answer": {"verdicts": [verdict("count.txt holds the line count of the notes file",
                                                             True, None, "count.txt contains 3")],
                                        "summary": "Counted 3 lines in data/notes.txt and wrote 3 to count.txt."}}],
        }
    }


def run_demo(as_json: bool = False, verbose: bool = False) -> FinalResult:
    """Run the demo request through the real flow against the scripted brain."""
    from artoo.config.settings import load_settings
    from artoo.runner import report
    from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer

    err = Console(stderr=True, highlight=False)
    err.print("[bold]artoo demo[/]: the brain is SCRIPTED (a local fake LLM replaying fixed answers); "
              "the flow, tools, GGS, memory and bus are real.")
    with tempfile.TemporaryDirectory(prefix="artoo-demo-") as tmp, ScriptedLLMServer(demo_scenario()) as server:
        workspace = Path(tmp)
        (workspace / "data").mkdir()
        (workspace / "data" / "notes.txt").write_text(NOTES, encoding="utf-8")
        saved = {k: os.environ.get(k) for k in _DEMO_ENV}
        os.environ.update({"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted-demo",
                           "OPENAI_API_KEY": "demo", "ARTOO_LAW1_MODE": "deny",
                           "ARTOO_CHECKS__REFERENCE_CALL": "false"})  # the scripted brain has no votes to draw
        for key in ("BRAIN_BASE_URL", "BRAIN_MODEL", "TOOL_BASE_URL", "TOOL_MODEL"):
            os.environ.pop(key, None)
        try:
            load_settings().require_tiers()
            from artoo.runner import execute_flow

            err.print(f"request: {REQUEST}\nworkspace: {workspace}")
            document = execute_flow(REQUEST, workspace, verbose)
            written = (workspace / "count.txt").read_text(encoding="utf-8").strip() if (
                workspace / "count.txt").exists() else None
        finally:
            _restore(saved)
    final = FinalResult.model_validate(document["final"])
    if as_json:
        print(final.model_dump_json())
    else:
        report(final, document)
        err.print(f"count.txt in the demo workspace held: {written!r} (the workspace was temporary)")
    return final


_DEMO_ENV = ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY", "ARTOO_LAW1_MODE", "BRAIN_BASE_URL",
             "BRAIN_MODEL", "TOOL_BASE_URL", "TOOL_MODEL", "ARTOO_CHECKS__REFERENCE_CALL")


def _restore(saved: dict) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
