"""Replay a real server's recorded answers through the scripted server.

Why: a test of robustness to real model output must use real output.  ``bench/record_proxy.py``
writes every exchange between artoo and a real OpenAI-compatible server (llama.cpp's llama-server,
llama-cpp-python's server, …) to a JSONL transcript, HTTP bodies as sent.  ``scenario_from_transcript``
turns one into a ``Scenario``: each recorded answer is queued, verbatim, under the schema NAME its
request asked for, so CI checks artoo against what a real model wrote without running one.

A refusal (status ≥ 400) answers only a request of the same ``response_format`` type as the refused
one, as the real server would: a client that already knows the working format never meets it.  A
recorded answer that the client later re-asks for is answered by the next recording in its queue;
what the replay cannot answer gets the scripted server's clear HTTP 500.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptEntry, route_name

__all__ = ["CHAT_PATH", "entry_of", "read_transcript", "scenario_from_transcript"]

CHAT_PATH = "/chat/completions"


def read_transcript(path: Path) -> list[dict[str, Any]]:
    """The recorded exchanges of a JSONL transcript, in order; ValueError naming the bad line."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: not a JSON line: {exc}") from None
    return records


def entry_of(record: dict[str, Any]) -> ScriptEntry:
    """One recorded chat exchange as a scripted entry sending the same status and body."""
    request = record.get("request") or {}
    status = int(record.get("status") or 200)
    try:
        body = json.loads(record.get("response") or "")
    except ValueError:  # a server answering an error as plain text: kept as the error's message
        body = {"error": {"message": record.get("response") or "", "type": "recorded_text"}}
    if not isinstance(body, dict):
        body = {"error": {"message": json.dumps(body), "type": "recorded_non_object"}}
    refused = status >= 400
    fmt = ((request.get("response_format") or {}).get("type") or "none") if refused else None
    return ScriptEntry(status=status, body=body, when_format=fmt)


def scenario_from_transcript(path: Path, known: set[str] | None = None) -> Scenario:
    """A Scenario replaying every chat exchange of a transcript under the schema NAME it asked for."""
    from artoo.config.protocol import SCHEMAS

    names = set(SCHEMAS) | {"tools"} | (known or set())
    answers: dict[str, list[ScriptEntry]] = {}
    for record in read_transcript(path):
        if not str(record.get("path", "")).endswith(CHAT_PATH) or not isinstance(record.get("request"), dict):
            continue
        name = route_name(record["request"], names)
        if name is None:
            raise ValueError(f"{path}: a recorded request names no schema artoo routes by: "
                             f"{json.dumps(record['request'])[:200]}")
        answers.setdefault(name, []).append(entry_of(record))
    return Scenario(answers=answers)
