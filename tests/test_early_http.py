"""The early lane's HTTP (artoo.tasks.llm.transport.http) reads back what the openai client reads.

``artoo run`` sends R1 with plain httpx, before ``openai`` is imported; the task that takes the answer
must see exactly what the openai client would have returned or raised for the same exchange, or its
error handling (classification, retries, format fallback) would differ between an early answer and its
own.  Each case sends one request both ways to the scripted server over real HTTP (the same scripted
answer twice) and compares the results field by field; the refusals are real servers', byte for byte.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import openai
import pytest

from artoo.tasks.llm.base import Endpoint
from artoo.tasks.llm.output.modes import structured_request
from artoo.tasks.llm.testing.scripted_server import ScriptedLLMServer
from artoo.tasks.llm.transport.client import read_reply
from artoo.tasks.llm.transport.http import EarlyReply, answer_in, post_chat

SPEC = {"task_id": "t", "intent": "count", "success_criteria": ["c"]}
MESSAGES = [{"role": "user", "content": "count the lines"}]


def _both(base_url: str, fields: dict, timeout_s: float = 10.0) -> tuple[object, object]:
    """(what the openai client returns or raises, what read_reply of the early reply returns or raises)."""
    ep = Endpoint("brain", base_url, "brain-m", "k", timeout_s)

    async def go():
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", timeout=timeout_s, max_retries=0)
        try:
            try:
                theirs = await client.chat.completions.create(model=ep.model, **fields)
            except openai.APIError as exc:
                theirs = exc
        finally:
            await client.close()
        reply = await post_chat("R1", ep, fields)
        try:
            ours = read_reply(reply)
        except openai.APIError as exc:
            ours = exc
        return theirs, ours

    return asyncio.run(go())


def _seen(result: object) -> tuple:
    """What the task reads of a result: an answer's fields, or an error's class, status, message, body, cause."""
    if isinstance(result, openai.APIError):
        status = getattr(result, "status_code", None)
        retry = result.response.headers.get("retry-after") if isinstance(result, openai.APIStatusError) else None
        return (type(result).__name__, status, result.message, result.body, retry, type(result.__cause__).__name__)
    return ("answer", result.model_dump(mode="json", exclude_none=True, exclude={"id", "created"}))


@pytest.mark.parametrize("scenario", [
    {"answers": {"TaskSpec": [{"answer": SPEC, "repeat": True}]}},
    {"answers": {"TaskSpec": [{"status": 400, "error": "bad schema", "repeat": True}]}},
    {"answers": {"TaskSpec": [{"status": 401, "repeat": True}]}},
    {"answers": {"TaskSpec": [{"status": 404, "repeat": True}]}},
    {"answers": {"TaskSpec": [{"status": 429, "repeat": True}]}},
    {"answers": {"TaskSpec": [{"status": 503, "error": "Loading model", "repeat": True}]}},
    {"answers": {"TaskSpec": [{"body": {"detail": "not the OpenAI shape"}, "status": 422, "repeat": True}]}},
    {"refuse": "llama-cpp-python"},  # 0.3.36 refuses json_schema: its own status and body
    {"refuse": "llama-server-2024"},
], ids=["answer", "400", "401", "404", "429", "503", "422 FastAPI body", "llama-cpp-python", "llama-server-2024"])
def test_an_early_reply_reads_as_the_openai_clients_own(scenario):
    with ScriptedLLMServer(scenario) as srv:
        theirs, ours = _both(srv.base_url, structured_request("json_schema", "TaskSpec", MESSAGES))
    assert _seen(ours) == _seen(theirs)


def test_a_timeout_reads_as_the_openai_clients_timeout():
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC, "latency_s": 2.0, "repeat": True}]}}) as srv:
        theirs, ours = _both(srv.base_url, structured_request("json_schema", "TaskSpec", MESSAGES), timeout_s=0.5)
    assert isinstance(theirs, openai.APITimeoutError) and _seen(ours) == _seen(theirs)


def test_a_refused_connection_reads_as_the_openai_clients_connection_error():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    theirs, ours = _both(f"http://127.0.0.1:{port}/v1", structured_request("json_schema", "TaskSpec", MESSAGES))
    assert type(theirs) is openai.APIConnectionError and _seen(ours) == _seen(theirs)


SEND_R1 = """
import sys, time
from artoo.runner import send_perceive_early
sent = send_perceive_early("count the lines of notes.txt")
loaded = sorted(m for m in ("openai", "prefect", "duckdb") if m in sys.modules)
print(sent, loaded, flush=True)
time.sleep(1.0)  # the request is on the early lane's thread: let it reach the server
"""


def test_artoo_run_sends_r1_before_it_imports_openai_prefect_or_duckdb(tmp_path):
    """The point of the lane: R1 leaves a fresh process before any heavy import (bench: ``overhead.process``)."""
    with ScriptedLLMServer({"answers": {"TaskSpec": [{"answer": SPEC}]}}) as srv:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ARTOO_HOME": str(tmp_path / "home"),
               "OPENAI_BASE_URL": srv.base_url, "OPENAI_MODEL": "brain-m", "OPENAI_API_KEY": "k"}
        done = subprocess.run([sys.executable, "-c", SEND_R1], env=env, capture_output=True, text=True, timeout=60,
                              cwd=tmp_path)
        received = [r["schema"] for r in srv.requests]
    assert done.stdout.split("\n")[0] == "True []", done.stderr[-2000:]
    assert received == ["TaskSpec"]


@pytest.mark.parametrize("url, loads_store", [
    ("http://127.0.0.1:8080/v1", False),  # a local server: no certificate to check, nothing to load
    ("https://api.openai.com/v1", True),
    ("HTTPS://gateway.example/v1", True),
])
def test_the_certificate_store_is_loaded_for_https_only(url, loads_store):
    import ssl

    from artoo.tasks.llm.transport.http import tls_context, verify_for

    verify = verify_for(url)
    assert isinstance(verify, ssl.SSLContext) == loads_store
    assert verify is (tls_context() if loads_store else False)  # one store per process, shared


def _chat(content: str | None, refusal: str | None = None) -> bytes:
    import json

    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                                            "refusal": refusal}}]}).encode()


@pytest.mark.parametrize("reply, task_id", [
    (EarlyReply("u", 200, body=_chat('{"task_id": "count_lines", "intent": "count", "constraints": {}}')),
     "count_lines"),
    (EarlyReply("u", 200, body=_chat('Here it is:\n```json\n{"task_id": "t2", "intent": "x", "constraints": {}}\n```')),
     "t2"),
    (EarlyReply("u", 200, body=_chat("I cannot help with that.")), None),  # nothing code can repair: the task re-asks
    (EarlyReply("u", 200, body=_chat(None, refusal="no")), None),
    (EarlyReply("u", 200, body=b"<html>gateway</html>"), None),
    (EarlyReply("u", 503, body=b'{"error": {"message": "Loading model"}}'), None),
    (EarlyReply("u", error=TimeoutError("slow")), None),
], ids=["answer", "fenced (repaired)", "prose", "refusal", "not JSON", "503", "no answer"])
def test_what_reads_ahead_sees_in_an_early_reply(reply, task_id):
    """``artoo run`` reads R1's early answer before its flow does, as the R1 task's client reads it, or not at all."""
    answer = answer_in(reply, "TaskSpec")
    assert getattr(answer, "task_id", None) == task_id
