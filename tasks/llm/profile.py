"""What one endpoint and model can do: the request forms it takes, its context window and its prompt cache.

Why one module: OpenAI-compatible servers differ in which request forms they accept (a kind of
``response_format``, native ``tools``, a sampling field), in how their model answers them (one that
accepts ``tools`` and never calls any), in the window a request may fill and in the prompt cache they
keep.  All of it is learnt from the server itself, and all of it is one typed ``EndpointProfile`` per
base URL and model:

* **discovered**: a refusal names the request field it refuses (``refused_feature``, read from the
  bodies real servers send), the model's behaviour moves its tool mode (``SilentToolWatch``), and the
  server's ``GET /props`` or ``/models`` (``facts_from_props``, ``from_models``) and its answers'
  ``timings`` tell its window and cache;
* **negotiated**: ``Negotiator`` holds this process's profiles behind one lock, each kind's modes best
  first and never moving backwards, each move logged once;
* **kept**: ``ProfileStore`` writes them to ``$ARTOO_HOME/llm/negotiated.json`` (where earlier releases
  kept their negotiated forms, still read as they wrote it), so a refused form costs one request, once;
* **shown**: ``describe`` is what ``artoo config`` prints for each endpoint.

The transport sends and reads (artoo.tasks.llm.transport); the output package builds each mode's
request and reads its answer (artoo.tasks.llm.output).  Nothing here imports ``openai``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from artoo.config.errors import ConfigurationError
from artoo.tasks.llm.base import Endpoint

__all__ = [
    "FEATURE_KIND", "KINDS", "SAMPLING_FIELDS", "STRUCTURED_MODES", "TOOL_MODES", "CacheBehaviour", "ContextWindow",
    "EndpointProfile", "Feature", "FeatureRefused", "Kind", "Negotiator", "ProfileStore", "ServerFacts",
    "SilentToolWatch", "StructuredMode", "ToolMode", "describe", "facts_from_props", "from_models", "from_props",
    "is_format_rejection", "is_tools_rejection", "probe_reason", "refused_feature", "server_root", "silent_reason",
    "store_path",
]

_log = logging.getLogger("artoo.llm")

# ---- the forms a request may take -------------------------------------------------------------------------

StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "text"]
"""How a structured answer is asked for, best first: OpenAI's strict ``json_schema``; llama.cpp's ``json_object``
with a ``schema`` key (the schema's title set to its NAME); plain JSON mode with the schema described in the
system message; no ``response_format`` at all (the schema in the system message, the JSON read from the text)."""
ToolMode = Literal["native", "content", "bash"]
"""How the executor calls tools, best first: the ``tools`` request field, then the JSON-in-content protocol
(artoo.tasks.llm.output.modes).  A further mode is one more name here and its request and reading in output."""
Kind = Literal["structured", "tools", "turn"]
"""What is negotiated per endpoint and model.  ``turn``: the schema a content-protocol tool turn is held to,
apart from ``structured`` because a server may take one schema and refuse the other (the turn's is an anyOf)."""

STRUCTURED_MODES: tuple[StructuredMode, ...] = get_args(StructuredMode)
TOOL_MODES: tuple[ToolMode, ...] = get_args(ToolMode)
KINDS: dict[str, tuple[str, ...]] = {"structured": STRUCTURED_MODES, "tools": TOOL_MODES, "turn": STRUCTURED_MODES}
"""Each kind's modes, best first; an endpoint only ever moves down its list."""
SAMPLING_FIELDS = ("temperature", "max_tokens")
"""The sampling fields artoo sends, each only when the person set it (``llm.temperature``, ``llm.max_tokens``)."""
Feature = Literal["response_format", "tools", "temperature", "max_tokens"]
"""A request field a server may refuse."""
FEATURE_KIND: dict[str, str] = {"response_format": "structured", "tools": "tools"}
"""The request field a refusal names → the kind it moves (a refused sampling field is no longer sent instead)."""


class FeatureRefused(Exception):
    """The endpoint refused a request field it does not support; the next request goes without it."""

    def __init__(self, feature: Feature, detail: str):
        super().__init__(detail)
        self.feature = feature


# ---- refusals, read from what real servers send ------------------------------------------------------------
#
# Servers refuse ``response_format`` and ``tools`` in different words and with different statuses, and a wrong
# reading costs either a run (a refusal taken for an outage) or a silent downgrade (an outage taken for a
# refusal).  Every rule is checked table-driven against real bodies (tests/test_negotiation.py):
#
# * llama-cpp-python 0.3.x answers ``json_schema`` with HTTP 500: its ``RouteErrorHandler`` turns FastAPI's
#   validation error into ``internal_server_error`` whose message says ``'loc': ('body', 'response_format',
#   'type')`` … ``Input should be 'text' or 'json_object'``;
# * ``llama-server`` before its json_schema support (and forks such as ik_llama.cpp) answers 500
#   ``response_format type must be one of "text" or "json_object", but got: json_schema``; started with
#   ``--no-jinja`` it answers ``tools`` with 500 ``tools param requires --jinja flag``;
# * Ollama answers ``tools`` for a model whose template has none with 400 ``… does not support tools``;
# * vLLM without a tool parser answers 400 ``"auto" tool choice requires --enable-auto-tool-choice …``;
# * OpenAI's reasoning models answer 400 ``Unsupported parameter: 'max_tokens' is not supported with this
#   model`` (``code: unsupported_parameter``) and ``Unsupported value: 'temperature' does not support 0 with
#   this model`` (``code: unsupported_value``).
#
# A 400 or 422 that names the format is a refusal (the request itself is wrong for this server); a 500 counts
# only when it names ``response_format``, ``json_schema`` or ``json_object`` (a crash that merely mentions a
# "schema" stays an environmental failure), and the same for tools.

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")
_FORMAT_WORDS_500 = ("response_format", "json_schema", "json_object")
_REFUSING_STATUS = (400, 422, 500, 501)
_TOOLS_REFUSED = re.compile(
    r"(does not support|doesn't support|not supported|unsupported|requires?)\W+(\w+\W+){0,3}?"
    r"(tools|tool[ _]choice|tool calling|function calling)\b"
    r"|\b(tools|tool[ _]choice)\b( param)?\W+(\w+\W+){0,2}?(requires|is not supported|are not supported|unsupported)",
    re.IGNORECASE)
_SAMPLING_REFUSED = re.compile(r"unsupported (?:parameter|value):\s*'(?P<field>" + "|".join(SAMPLING_FIELDS) + ")'",
                               re.IGNORECASE)


def is_format_rejection(status: int, message: str) -> bool:
    """Whether an HTTP error means the endpoint does not support the response_format sent."""
    text = message.lower()
    if status in (400, 422):
        return any(word in text for word in _FORMAT_WORDS)
    return status in _REFUSING_STATUS and any(word in text for word in _FORMAT_WORDS_500)


def is_tools_rejection(status: int, message: str) -> bool:
    """Whether an HTTP error means the endpoint (or this model on it) cannot take ``tools``."""
    return status in _REFUSING_STATUS and _TOOLS_REFUSED.search(message) is not None


def refused_feature(status: int, message: str, sent_format: bool, sent_tools: bool,
                    sent_sampling: frozenset[str] = frozenset()) -> Feature | None:
    """The request field an HTTP error refuses (only one that was sent), or None when it refuses none."""
    named = _SAMPLING_REFUSED.search(message) if status in (400, 422) else None
    if named is not None and named["field"].lower() in sent_sampling:
        return named["field"].lower()  # one of SAMPLING_FIELDS, by the pattern
    if sent_tools and is_tools_rejection(status, message):
        return "tools"
    if sent_format and is_format_rejection(status, message):
        return "response_format"
    return None


# ---- what the server says about itself ---------------------------------------------------------------------


class ContextWindow(BaseModel):
    """A context window in tokens and where the number came from (shown in the decision log)."""

    model_config = ConfigDict(frozen=True)

    tokens: int
    source: str
    known: bool = True
    """False for the assumed default: the server did not say and no setting does, so the real window may be larger."""


class CacheBehaviour(BaseModel):
    """The server's prompt cache, as far as it has shown it; None where it has not said."""

    model_config = ConfigDict(frozen=True)

    prompt_cache: bool | None = None
    """It reuses the cached prefix of a prompt (llama.cpp's ``cache_prompt``, on by default there)."""
    id_slot: bool | None = None
    """A request may name the slot it runs on (llama.cpp's ``id_slot``), so one run's requests share a cache."""
    slots: int | None = None
    """How many slots it runs (``total_slots``)."""
    reports_cache_n: bool | None = None
    """Its answers carry ``timings.cache_n``: how many prompt tokens came from the cache."""

    def known(self) -> bool:
        """Whether anything about the cache has been learnt."""
        return any(value is not None for value in self.model_dump().values())


class ServerFacts(BaseModel):
    """What one ``GET /props`` or ``/models`` said about the server serving a model."""

    model_config = ConfigDict(frozen=True)

    window: ContextWindow
    grammar: bool = False
    """Its JSON-schema grammar takes ``maxLength`` (llama.cpp), so free-text fields may be bounded."""
    cache: CacheBehaviour = Field(default_factory=CacheBehaviour)


def server_root(base_url: str) -> str:
    """The server root of an OpenAI base URL: llama.cpp serves /props beside /v1, not under it."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def from_props(body: object) -> int | None:
    """llama.cpp's served window from a ``GET /props`` body: ``default_generation_settings.n_ctx`` (its
    ``meta.n_ctx_train`` elsewhere is the training context, not the served one)."""
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def facts_from_props(body: object, root: str) -> ServerFacts | None:
    """What a llama.cpp ``GET /props`` body says: the window, a grammar that takes ``maxLength``, and a prompt
    cache per slot that a request may name (``cache_prompt``, ``id_slot``); None when it is no such body."""
    tokens = from_props(body)
    if tokens is None or not isinstance(body, dict):
        return None
    cache = CacheBehaviour(prompt_cache=True, id_slot=True, slots=_positive(body.get("total_slots")))
    return ServerFacts(window=ContextWindow(tokens=tokens, source=f"server {root}/props n_ctx"), grammar=True,
                       cache=cache)


def from_models(body: object, model: str) -> int | None:
    """vLLM's ``max_model_len`` of ``model`` (or of the only model listed) from a ``GET /models`` body."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    return _positive(named[0].get("max_model_len")) if named else None


# ---- the profile --------------------------------------------------------------------------------------------


class EndpointProfile(BaseModel):
    """What one endpoint and model was found to do; what was never learnt keeps its default (the best form).

    The flat ``<kind>`` / ``<kind>_because`` fields are the store's entry as earlier releases wrote it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    base_url: str
    model: str
    structured: StructuredMode = "json_schema"
    structured_because: str | None = None
    """Why the structured mode is what it is: "accepted", or the refusal that moved it; None: not used yet."""
    tools: ToolMode = "native"
    tools_because: str | None = None
    turn: StructuredMode = "json_schema"
    turn_because: str | None = None
    sampling_refused: dict[str, str] = Field(default_factory=dict)
    """Sampling fields the endpoint refused, no longer sent, each with the refusal."""
    grammar: bool | None = None
    """Its JSON-schema grammar takes ``maxLength`` (as the server last said)."""
    window: ContextWindow | None = None
    """The window as the server last reported it; each process asks again (a server restarted with another -c)."""
    cache: CacheBehaviour = Field(default_factory=CacheBehaviour)
    updated: str | None = None

    def mode(self, kind: str) -> str:
        """The mode of one kind (Kind)."""
        return getattr(self, kind)

    def learnt(self, kind: str) -> bool:
        """Whether the kind's mode was settled by a request (accepted or refused), not assumed."""
        return getattr(self, f"{kind}_because") is not None

    @classmethod
    def from_stored(cls, base_url: str, model: str, entry: dict[str, Any]) -> EndpointProfile:
        """The profile of a stored entry; a field it cannot take (a mode a later release added, a broken value)
        keeps its default, and the rest of the entry still counts."""
        data = {key: value for key, value in entry.items() if key in cls.model_fields}
        data.update(base_url=base_url, model=model)
        for kind in KINDS:  # a mode without its reason (or the reverse) is not a learnt mode
            if f"{kind}_because" in data and data.get(kind) not in KINDS[kind]:
                data.pop(f"{kind}_because")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            bad = {error["loc"][0] for error in exc.errors() if error["loc"]} - {"base_url", "model"}
            kept = {key: value for key, value in data.items()
                    if key not in bad and key.removesuffix("_because") not in bad}
            return cls.model_validate(kept)


def describe(profile: EndpointProfile) -> list[str]:
    """The profile as ``artoo config`` prints it: one line per thing learnt (each request kind always)."""
    lines = []
    for kind in ("structured", "tools", "turn"):
        if kind == "turn" and not profile.learnt(kind):
            continue  # moved only by a refusal of the content-protocol turn's schema
        lines.append(f"{kind:<10} {profile.mode(kind)}  ({getattr(profile, f'{kind}_because') or 'not used yet'})")
    for field, because in sorted(profile.sampling_refused.items()):
        lines.append(f"{'sampling':<10} {field} not sent  ({because})")
    if profile.window is not None:
        bounded = "; its grammar takes maxLength" if profile.grammar else ""
        lines.append(f"{'window':<10} {profile.window.tokens} tokens  ({profile.window.source}{bounded})")
    cache = profile.cache
    if cache.known():
        said = [("prompt cache reused" if cache.prompt_cache else "no prompt cache")
                if cache.prompt_cache is not None else "",
                (f"id_slot over {cache.slots or '?'} slot(s)" if cache.id_slot else "no id_slot")
                if cache.id_slot is not None else "",
                ("answers report timings.cache_n" if cache.reports_cache_n else "answers carry no timings.cache_n")
                if cache.reports_cache_n is not None else ""]
        lines.append(f"{'cache':<10} {', '.join(s for s in said if s)}")
    return lines


# ---- the store: $ARTOO_HOME/llm/negotiated.json --------------------------------------------------------------
#
# One small JSON file keyed by base URL then model, each entry the profile's fields::
#
#     {"http://127.0.0.1:8080/v1": {"qwen": {"structured": "json_object_schema",
#                                           "structured_because": "HTTP 500: …",
#                                           "tools": "native", "tools_because": "accepted",
#                                           "window": {"tokens": 4096, "source": "server …/props n_ctx"}, …,
#                                           "updated": "2026-11-24T19:52:03+00:00"}}}
#
# Writes are read-modify-write of the fields that changed, under an exclusive ``flock`` of a sidecar lock file,
# and land with ``os.replace`` (atomic), so concurrent runs on one home neither corrupt the file nor drop each
# other's entries, and readers never see half a file.  A corrupt or unreadable file is ignored with a warning
# (the probe simply happens again); before the next write replaces it, its bytes are kept beside it as
# ``negotiated.json.corrupt``.  Nothing here is ever fatal to a run.

Entries = dict[str, dict[str, dict[str, Any]]]


def store_path(home: Path) -> Path:
    """Where a home keeps its endpoint profiles (the name earlier releases gave their negotiated forms)."""
    return home / "llm" / "negotiated.json"


class ProfileStore:
    """The endpoint profiles of one ARTOO_HOME; ``path`` None remembers nothing."""

    def __init__(self, path: Path | None):
        self.path = path

    def entries(self) -> Entries:
        """Every stored entry as written: {base_url: {model: entry}}; {} when missing or unreadable."""
        entries, _ = self._read()
        return entries

    def get(self, base_url: str, model: str) -> dict[str, Any]:
        """The stored entry of one endpoint and model, as written ({} when none)."""
        return dict(self.entries().get(base_url, {}).get(model, {}))

    def profile(self, base_url: str, model: str) -> EndpointProfile:
        """The profile of one endpoint and model (the defaults when nothing is stored)."""
        return EndpointProfile.from_stored(base_url, model, self.get(base_url, model))

    def profiles(self) -> list[EndpointProfile]:
        """Every stored profile, by base URL then model."""
        return [EndpointProfile.from_stored(base_url, model, entry)
                for base_url, models in sorted(self.entries().items()) for model, entry in sorted(models.items())]

    def remember(self, base_url: str, model: str, kind: str, mode: str, because: str) -> None:
        """Record that ``kind`` ("structured", "tools" or "turn") uses ``mode`` on this endpoint, and why."""
        self.update(base_url, model, {kind: mode, f"{kind}_because": because[:500]})

    def update(self, base_url: str, model: str, fields: dict[str, Any]) -> None:
        """Write ``fields`` into one endpoint's entry (an object field is merged key by key), keeping the rest."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(self.path.name + ".lock")):
                entries, corrupt = self._read()
                if corrupt:
                    os.replace(self.path, self.path.with_name(self.path.name + ".corrupt"))
                entry = entries.setdefault(base_url, {}).setdefault(model, {})
                for key, value in fields.items():
                    old = entry.get(key)
                    entry[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
                entry["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
                _write_atomic(self.path, json.dumps(entries, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            _log.warning("could not remember %s of %s in %s: %s", ", ".join(fields), base_url, self.path, exc)

    def _read(self) -> tuple[Entries, bool]:
        """The entries, and whether the file exists but is not a valid store (corrupt)."""
        if self.path is None:
            return {}, False
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, False
        except OSError as exc:
            _log.warning("ignoring %s (unreadable: %s); formats are negotiated again", self.path, exc)
            return {}, False
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            data, why = None, f"not JSON: {exc}"
        else:
            why = "not a {base_url: {model: entry}} object"
        if _valid(data):
            return data, False
        _log.warning("ignoring %s (%s); formats are negotiated again", self.path, why)
        return {}, True


def _valid(data: object) -> bool:
    return isinstance(data, dict) and all(
        isinstance(models, dict) and all(isinstance(entry, dict) for entry in models.values())
        for models in data.values())


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---- behaviour: a model that accepts native tools and never calls one ------------------------------------------
#
# A server that accepts ``tools`` is not a model that uses them.  Qwen2.5-Coder-1.5B on ``llama-server --jinja``
# took every native tool request and answered each with a final ``{"status": "completed", "output": …}`` with
# invented counts, or an ``uncertain`` guess, and no tool call, on every attempt of two rounds
# (tests/transcripts/llama-server-count-lines-2.jsonl); given the JSON-in-content protocol, where the two allowed
# answers are spelled out side by side, the same model called ``glob`` on its first turn.  No refusal ever comes,
# so the refusal-driven fallback never moves; this watch does.
#
# The signal is narrow on purpose: an executor answer on the first turn of an attempt (no tool result in the
# conversation yet), with tools offered, that gives a final answer without calling anything: a result with no
# evidence, which R4a rejects.  One such answer can be honest ("say hello" needs no tool), so only ``limit`` of
# them in a row per endpoint and model switch the mode, and any native tool call resets the count.  Three such
# attempts cost a round (an attempt answering "failed" ends a subtask), so the client first probes
# (``llm.content_probe``): such a first turn is asked once more in the content protocol, and a call there moves
# the mode at once (``probe_reason``).


class SilentToolWatch:
    """Counts first-turn final answers without a tool call under native tools, per endpoint and model."""

    def __init__(self, limit: int):
        self.limit = limit
        """How many such answers in a row switch the mode; 0 never switches."""
        self._silent: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def observe(self, key: tuple[str, str], *, called: bool, first_turn: bool) -> bool:
        """Record one native-tools executor answer; True exactly when this one reaches the limit.

        ``called``: the answer called a tool (else it was a final answer); ``first_turn``: no tool result
        was in the conversation yet.  A later turn's final answer neither counts nor resets."""
        with self._lock:
            if called:
                self._silent.pop(key, None)
                return False
            if not first_turn or self.limit < 1:
                return False
            self._silent[key] = self._silent.get(key, 0) + 1
            return self._silent[key] == self.limit

    def count(self, key: tuple[str, str]) -> int:
        """The current run of silent answers of one endpoint and model."""
        with self._lock:
            return self._silent.get(key, 0)


def silent_reason(limit: int) -> str:
    """Why the mode moved, as the log and the store say it."""
    return (f"behaviour: {limit} executor attempts in a row gave a final answer on their first turn without "
            "calling any of the native tools offered (a server that accepts tools, a model that does not use them)")


def probe_reason(tool: str) -> str:
    """Why the mode moved after one probe, as the log and the store say it."""
    return (f"behaviour: an executor's first turn gave a final answer under native tools, and the same turn in the "
            f"content protocol called {tool}")


# ---- negotiation: this process's profiles -------------------------------------------------------------------


class Negotiator:
    """Per (base_url, model): the profile in use, read from the store once, moved on refusals and behaviour.

    Shared by every role and event loop of the process, so it sits behind one lock; ``store`` is called
    once, when first needed (an unusable home remembers nothing and is never fatal)."""

    def __init__(self, store: Callable[[], ProfileStore], silent_tool_answers: int = 0, tool_mode: str = "auto"):
        self.forced_tools = None if tool_mode == "auto" else tool_mode
        """The executor's tool mode the person chose (``llm.tool_mode``), whatever was negotiated; None: negotiated."""
        self._store_factory = store
        self._store: ProfileStore | None = None
        self._profiles: dict[tuple[str, str], EndpointProfile] = {}
        self._confirmed: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self.watch = SilentToolWatch(silent_tool_answers)
        """Moves native tools to the content protocol on behaviour."""

    def store(self) -> ProfileStore:
        """The home's store, made on first use."""
        if self._store is None:
            self._store = self._store_factory()
        return self._store

    def profile(self, ep: Endpoint) -> EndpointProfile:
        """This endpoint and model's profile, read from the store the first time."""
        with self._lock:
            if ep.key not in self._profiles:
                found = self.store().profile(*ep.key)
                self._profiles[ep.key] = found
                self._confirmed.update((*ep.key, kind) for kind in KINDS if found.learnt(kind))
            return self._profiles[ep.key]

    def mode(self, ep: Endpoint, kind: str) -> str:
        """The mode of one kind (the best one until something moved it; the person's choice of tool mode first)."""
        if kind == "tools" and self.forced_tools is not None:
            return self.forced_tools
        return self.profile(ep).mode(kind)

    def shape(self, ep: Endpoint) -> str:
        """The mode a content-protocol turn is held to: the worse of the structured and the turn modes."""
        modes = STRUCTURED_MODES
        return modes[max(modes.index(self.mode(ep, "structured")), modes.index(self.mode(ep, "turn")))]

    def fall_back(self, ep: Endpoint, refused: FeatureRefused, sent_mode: str, kind: str | None = None) -> None:
        """Move this endpoint's kind past the refused mode, log it and remember it (never backwards).

        ``kind``: the kind to move; by default the one the refused request field belongs to."""
        kind = kind or FEATURE_KIND[refused.feature]
        modes = KINDS[kind]
        if modes.index(sent_mode) + 1 >= len(modes):
            raise ConfigurationError(
                f"the {ep.tier} tier endpoint {ep.base_url} (model {ep.model!r}) refused every {kind} mode "
                f"({', '.join(modes)}); last answer: {refused}") from None
        self._move(ep, kind, sent_mode, modes[modes.index(sent_mode) + 1], f"it answered {refused}", str(refused))

    def refuse_sampling(self, ep: Endpoint, refused: FeatureRefused) -> None:
        """A sampling field the endpoint refused is no longer sent to it; the person's setting is not honoured
        there, which the log says once."""
        field = refused.feature
        self.profile(ep)
        with self._lock:
            profile = self._profiles[ep.key]
            if field in profile.sampling_refused:
                return
            because = str(refused)[:500]
            self._profiles[ep.key] = profile.model_copy(
                update={"sampling_refused": {**profile.sampling_refused, field: because}})
        _log.warning("LLM endpoint %s model %r refused %s (llm.%s is set), so it is no longer sent there: %s",
                     ep.base_url, ep.model, field, field, refused)
        self.store().update(*ep.key, {"sampling_refused": {field: because}})

    def confirm(self, ep: Endpoint, kind: str, mode: str) -> None:
        """The first request of a kind a server accepted: log and remember the mode (once per process)."""
        key = (*ep.key, kind)
        self.profile(ep)
        with self._lock:
            if key in self._confirmed:
                return
            self._confirmed.add(key)
            self._profiles[ep.key] = self._profiles[ep.key].model_copy(update={f"{kind}_because": "accepted"})
        _log.info("LLM endpoint %s model %r: %s mode %s accepted", ep.base_url, ep.model, kind, mode)
        self.store().remember(ep.base_url, ep.model, kind, mode, "accepted")

    def saw_server(self, ep: Endpoint, facts: ServerFacts) -> None:
        """What the server said about itself (its window, grammar and cache): kept when it differs from the profile."""
        said = _said(facts.cache)
        self._learn(ep, lambda profile: {"window": facts.window, "grammar": facts.grammar,
                                         "cache": profile.cache.model_copy(update=said)})

    def saw_timings(self, ep: Endpoint, timings: object) -> None:
        """An answer's ``timings`` (llama.cpp): whether the server reports how much of the prompt its cache served."""
        reports = isinstance(timings, dict) and isinstance(timings.get("cache_n"), int)
        self._learn(ep, lambda profile: {"cache": profile.cache.model_copy(update={"reports_cache_n": reports})})

    def _learn(self, ep: Endpoint, observed: Callable[[EndpointProfile], dict[str, Any]]) -> None:
        """Apply what was observed (worked out from the profile under the lock); only a change is logged and
        written, so a server that says the same every run costs no write."""
        self.profile(ep)
        with self._lock:
            profile = self._profiles[ep.key]
            changed = {key: value for key, value in observed(profile).items() if getattr(profile, key) != value}
            if not changed:
                return
            self._profiles[ep.key] = profile.model_copy(update=changed)
        stored = {key: value.model_dump(mode="json") if isinstance(value, BaseModel) else value
                  for key, value in changed.items()}
        _log.info("LLM endpoint %s model %r: %s", ep.base_url, ep.model,
                  ", ".join(f"{key} {value}" for key, value in stored.items()))
        self.store().update(*ep.key, stored)

    def tool_answer(self, ep: Endpoint, messages: list[dict], *, called: bool) -> None:
        """One executor answer under native tools: the behaviour watch may move tools to the content protocol."""
        if self.mode(ep, "tools") != "native":
            return
        first_turn = not any(m.get("role") == "tool" for m in messages)
        if self.watch.observe(ep.key, called=called, first_turn=first_turn):
            reason = silent_reason(self.watch.limit)
            self._move(ep, "tools", "native", "content", reason, reason)

    def probe_due(self, ep: Endpoint, messages: list[dict]) -> bool:
        """Whether a native-tools final answer on this turn is worth asking again in the content protocol:
        tools are native, no tool result is in the conversation yet, and the watch has not moved the mode."""
        return self.mode(ep, "tools") == "native" and not any(m.get("role") == "tool" for m in messages)

    def probed(self, ep: Endpoint, tool: str) -> None:
        """The content protocol got a call where native tools got a final answer: move tools to content."""
        reason = probe_reason(tool)
        self._move(ep, "tools", "native", "content", reason, reason)

    def _move(self, ep: Endpoint, kind: str, sent_mode: str, to: str, why: str, because: str) -> None:
        self.profile(ep)
        modes = KINDS[kind]
        with self._lock:
            profile = self._profiles[ep.key]
            if modes.index(profile.mode(kind)) > modes.index(sent_mode):  # another request moved on
                return
            self._profiles[ep.key] = profile.model_copy(update={kind: to, f"{kind}_because": because[:500]})
            self._confirmed.add((*ep.key, kind))
        _log.info("LLM endpoint %s model %r: %s mode %s -> %s, because %s", ep.base_url, ep.model, kind,
                  sent_mode, to, why)
        self.store().remember(ep.base_url, ep.model, kind, to, because)


def _said(cache: CacheBehaviour) -> dict[str, Any]:
    """The cache fields a server stated (the rest stays as learnt from its answers)."""
    return {key: value for key, value in cache.model_dump().items() if value is not None}
