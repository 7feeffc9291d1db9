"""One profile per endpoint and model: learnt from the server, kept in the home, read as earlier releases wrote it.

The pure rules (reading a stored entry, a refusal of a sampling field) are tables; the stories go over real
HTTP to the scripted server through the real ``openai`` client: OpenAI's reasoning models refusing
``max_tokens`` and ``temperature`` (their bodies, byte for byte), llama-server's ``/props`` telling the
window and the slots, and a recorded llama-server answer carrying ``timings.cache_n``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import tarfile
from pathlib import Path

import pytest

from artoo.config.protocol import SCHEMAS
from artoo.config.settings import load_settings
from artoo.tasks.llm import OpenAICompatLLM
from artoo.tasks.llm.capability import CacheBehaviour, ContextWindow, EndpointProfile, describe
from artoo.tasks.llm.profile_store import ProfileStore, store_path
from artoo.tasks.llm.refusals import refused_feature
from artoo.tasks.llm.testing.scripted_server import Scenario, ScriptedLLMServer, route_name
from artoo.tasks.llm.testing.server_refusals import PROFILES
from artoo.tasks.llm.testing.transcript import entry_of, read_transcript
from artoo.tasks.llm.transport.requests import forget

SPEC = {"task_id": "count_lines", "intent": "count the lines", "constraints": {"scope": ".", "deadline": None}}
URL = "http://127.0.0.1:8080/v1"
R3_HOME = Path(__file__).parent / "data" / "home-r3-duckdb2.0.0.tar.gz"
TRANSCRIPT = Path(__file__).parent / "transcripts" / "llama-server-count-lines-1.jsonl"


@pytest.fixture(autouse=True)
def _fresh_servers():
    """What a server said about itself is learnt once per process: a reused port must not inherit it."""
    forget()
    yield
    forget()


# ---- a stored entry, as each release wrote it -------------------------------------------------------------

OLD_ENTRY = {"structured": "json_object_schema", "structured_because": "HTTP 500: Input should be 'text'",
             "tools": "content", "tools_because": "behaviour: 3 executor attempts",
             "updated": "2026-11-24T19:52:03+00:00"}


@pytest.mark.parametrize(("entry", "expected"), [
    (OLD_ENTRY, {"structured": "json_object_schema", "tools": "content", "turn": "json_schema",
                 "learnt": ["structured", "tools"]}),
    ({}, {"structured": "json_schema", "tools": "native", "turn": "json_schema", "learnt": []}),
    # a mode a later release added: that kind keeps its default, the rest of the entry still counts
    ({**OLD_ENTRY, "tools": "telepathy", "tools_because": "accepted"},
     {"structured": "json_object_schema", "tools": "native", "turn": "json_schema", "learnt": ["structured"]}),
    # a broken window or cache is dropped, the modes stay
    ({**OLD_ENTRY, "window": {"tokens": "many"}, "cache": "yes"},
     {"structured": "json_object_schema", "tools": "content", "turn": "json_schema",
      "learnt": ["structured", "tools"]}),
    ({"turn": "json_object", "turn_because": "HTTP 400", "unknown_field": 3},
     {"structured": "json_schema", "tools": "native", "turn": "json_object", "learnt": ["turn"]}),
], ids=["last release", "empty", "later mode", "broken facts", "turn only"])
def test_a_stored_entry_reads_as_a_profile(entry: dict, expected: dict) -> None:
    profile = EndpointProfile.from_stored(URL, "qwen", entry)
    assert {k: profile.mode(k) for k in ("structured", "tools", "turn")} == {
        k: v for k, v in expected.items() if k != "learnt"}
    assert [k for k in ("structured", "tools", "turn") if profile.learnt(k)] == expected["learnt"]
    assert (profile.base_url, profile.model) == (URL, "qwen")


def test_the_last_releases_home_opens_with_its_profile(tmp_path: Path) -> None:
    """The store an r3 home holds, as written, is the profile the next run starts from (nothing probed again)."""
    with tarfile.open(R3_HOME) as archive:
        archive.extractall(tmp_path, filter="data")
    store = ProfileStore(store_path(tmp_path / "home"))
    (profile,) = store.profiles()
    assert (profile.base_url, profile.model) == ("http://127.0.0.1:33737/v1", "scripted")
    assert (profile.structured, profile.structured_because, profile.tools, profile.tools_because) == (
        "json_schema", "accepted", "native", "accepted")
    assert profile.window is None and not profile.cache.known()


def test_describe_says_only_what_was_learnt() -> None:
    profile = EndpointProfile(base_url=URL, model="qwen", tools="content", tools_because="HTTP 400: no tools",
                              turn="json_object", turn_because="HTTP 400: anyOf",
                              window=ContextWindow(tokens=2048, source="server x/models max_model_len"),
                              cache=CacheBehaviour(reports_cache_n=False))
    assert describe(profile) == [
        "structured json_schema  (not used yet)",
        "tools      content  (HTTP 400: no tools)",
        "turn       json_object  (HTTP 400: anyOf)",
        "window     2048 tokens  (server x/models max_model_len)",
        "cache      answers carry no timings.cache_n"]


# ---- sampling fields a server refuses -----------------------------------------------------------------------

MAX_TOKENS_BODY = PROFILES["openai-reasoning-sampling"]({"max_tokens": 512})[1].decode()
TEMPERATURE_BODY = PROFILES["openai-reasoning-sampling"]({"temperature": 0.2})[1].decode()


@pytest.mark.parametrize(("status", "message", "sent", "expected"), [
    (400, f"Error code: 400 - {MAX_TOKENS_BODY}", {"max_tokens"}, "max_tokens"),
    (400, f"Error code: 400 - {TEMPERATURE_BODY}", {"temperature", "max_tokens"}, "temperature"),
    (400, f"Error code: 400 - {TEMPERATURE_BODY}", {"max_tokens"}, None),  # not sent: not what was refused
    (500, "Unsupported parameter: 'max_tokens'", {"max_tokens"}, None),  # a crash is no refusal
    (400, "max_tokens must be at least 1", {"max_tokens"}, None),  # a bad value names no unsupported field
])
def test_a_refused_sampling_field(status: int, message: str, sent: set[str], expected: str | None) -> None:
    assert refused_feature(status, message, False, False, frozenset(sent)) == expected


def _llm(srv: ScriptedLLMServer, home: Path, **llm: object) -> OpenAICompatLLM:
    settings = load_settings(home=home, brain_base_url=srv.base_url, brain_model="qwen", tool_base_url=srv.base_url,
                             tool_model="qwen", openai_base_url=None, openai_model=None, llm_timeout_s=10, llm=llm)
    return OpenAICompatLLM(settings, max_retries=0)


def _spec(llm: OpenAICompatLLM, words: str = "count the lines"):
    async def go():
        try:
            return await llm.structured("R1", "TaskSpec", [{"role": "user", "content": words}])
        finally:
            await llm.aclose()

    return asyncio.run(go())


def test_a_reasoning_model_refusing_sampling_fields_is_asked_without_them_and_the_home_remembers(tmp_path, caplog):
    scenario = {"refuse": "openai-reasoning-sampling", "answers": {"TaskSpec": [{"answer": SPEC, "repeat": True}]}}
    with ScriptedLLMServer(scenario) as srv, caplog.at_level(logging.WARNING, logger="artoo.llm"):
        answer = _spec(_llm(srv, tmp_path, temperature=0.2, max_tokens=512))
        again = _llm(srv, tmp_path, temperature=0.2, max_tokens=512)  # the next run on this home
        assert again.send_early("R1", "TaskSpec", [{"role": "user", "content": "again"}])
        _spec(again, "again")
        log = [(r["status"], sorted(k for k in ("temperature", "max_tokens") if k in r["body"])) for r in srv.requests]
    assert answer == SCHEMAS["TaskSpec"].model_validate(SPEC)
    assert log == [(400, ["max_tokens", "temperature"]), (400, ["temperature"]), (200, []), (200, [])]
    refused = ProfileStore(store_path(tmp_path)).profile(srv.base_url, "qwen").sampling_refused
    assert sorted(refused) == ["max_tokens", "temperature"] and "unsupported_value" not in refused["temperature"]
    assert "Unsupported value: 'temperature' does not support 0.2" in refused["temperature"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and all("is no longer sent there" in w for w in warned)


# ---- what the server says about itself ----------------------------------------------------------------------


def test_llama_servers_props_give_the_profile_its_window_grammar_and_slots(tmp_path) -> None:
    scenario = {"n_ctx": 8192, "answers": {"TaskSpec": [{"answer": SPEC, "repeat": True}]}}
    with ScriptedLLMServer(scenario) as srv:
        _spec(_llm(srv, tmp_path))
        path = store_path(tmp_path)
        profile = ProfileStore(path).profile(srv.base_url, "qwen")
        written = path.stat().st_ino  # every write lands as a new file (os.replace)
        forget()  # the next run, in a process of its own, asks the server again
        _spec(_llm(srv, tmp_path), "again")  # the same server says the same: nothing is written
        assert path.stat().st_ino == written
    assert profile.window == ContextWindow(tokens=8192, source=f"server {srv.base_url[:-3]}/props n_ctx")
    assert profile.grammar is True
    assert profile.cache == CacheBehaviour(prompt_cache=True, id_slot=True, slots=1, reports_cache_n=False)
    assert profile.structured_because == "accepted"


def test_a_window_the_person_set_asks_the_server_nothing(tmp_path) -> None:
    scenario = {"n_ctx": 8192, "answers": {"TaskSpec": [{"answer": SPEC}]}}
    with ScriptedLLMServer(scenario) as srv:
        _spec(_llm(srv, tmp_path, context_tokens=16384))
        profile = ProfileStore(store_path(tmp_path)).profile(srv.base_url, "qwen")
    assert profile.window is None and profile.grammar is None and profile.cache.prompt_cache is None


def test_a_recorded_llama_server_answer_shows_the_server_reports_its_cache(tmp_path) -> None:
    """The R1 answer Qwen2.5-Coder-1.5B gave on llama-server, replayed byte for byte: its ``timings`` carry
    ``cache_n``, which the profile keeps (a server that reports it can be measured for cache reuse)."""
    record = next(r for r in read_transcript(TRANSCRIPT) if str(r.get("path")).endswith("/chat/completions")
                  and r.get("status") == 200 and route_name(r["request"], {"TaskSpec"}) == "TaskSpec")
    assert "cache_n" in json.loads(record["response"])["timings"]  # the data holds what the test is about
    with ScriptedLLMServer(Scenario(answers={"TaskSpec": [entry_of(record)]})) as srv:
        _spec(_llm(srv, tmp_path, context_tokens=32768), "count")
        profile = ProfileStore(store_path(tmp_path)).profile(srv.base_url, "qwen")
    assert profile.cache.reports_cache_n is True
