"""The model's context window: how many tokens one request may hold, and where that number came from.

Why: a local model serves a small window (llama-server is often started with ``-c 4096``), and a
prompt that does not fit is cut by the server without a word (or refused with "the request exceeds
the available context size").  The prompt budget (``artoo.tasks.llm.budget``) needs the number
before the request is sent, so it is found in this order:

1. the setting ``llm.context_tokens``, when set: the person knows better (Ollama's ``num_ctx``, a
   gateway in front of a small model);
2. the server, asked once per endpoint and model in this process: llama.cpp's ``GET /props``
   (``default_generation_settings.n_ctx``, the window one request gets, at the server root, not
   under ``/v1``), else ``GET {base_url}/models`` with vLLM's ``max_model_len``.  llama.cpp's
   ``meta.n_ctx_train`` there is the training context, not the served one, so it is not used;
3. ``llm.default_context_tokens``.

The probe has a short timeout and never fails a run: a server that does not say gets the default.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import httpx

from artoo.config.settings import LLMParams
from artoo.tasks.llm.tls import verify_for

LOG = logging.getLogger("artoo.llm")


@dataclass(frozen=True)
class ContextWindow:
    """A context window in tokens and where the number came from (shown in the decision log)."""

    tokens: int
    source: str
    known: bool = True
    """False for the assumed default: the server did not say and no setting does, so the real window may be larger."""
    grammar: bool = False
    """The server is llama.cpp (it answered ``/props``): its JSON-schema grammar takes ``maxLength``."""


def server_root(base_url: str) -> str:
    """The server root of an OpenAI base URL: llama.cpp serves /props beside /v1, not under it."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def from_props(body: object) -> int | None:
    """llama.cpp's served window from a ``GET /props`` body: ``default_generation_settings.n_ctx``."""
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def from_models(body: object, model: str) -> int | None:
    """vLLM's ``max_model_len`` of ``model`` (or of the only model listed) from a ``GET /models`` body."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    return _positive(named[0].get("max_model_len")) if named else None


def _get_json(client: httpx.Client, url: str) -> object:
    try:
        response = client.get(url)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def probe(base_url: str, model: str, api_key: str, timeout_s: float) -> ContextWindow | None:
    """Ask the server for its served window (llama.cpp /props, then vLLM /models); None when it does not say."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(timeout=timeout_s, headers=headers, verify=verify_for(base_url)) as client:
        root = server_root(base_url)
        tokens = from_props(_get_json(client, f"{root}/props"))
        if tokens:
            return ContextWindow(tokens, f"server {root}/props n_ctx", grammar=True)
        tokens = from_models(_get_json(client, f"{base_url.rstrip('/')}/models"), model)
        if tokens:
            return ContextWindow(tokens, f"server {base_url.rstrip('/')}/models max_model_len")
    return None


_SERVED: dict[tuple[str, str], ContextWindow | None] = {}
_LOCK = threading.Lock()


def served(base_url: str, model: str, api_key: str, timeout_s: float) -> ContextWindow | None:
    """The server's window, probed once per endpoint and model in this process (the lock makes it once)."""
    key = (base_url, model)
    with _LOCK:
        if key not in _SERVED:
            _SERVED[key] = probe(base_url, model, api_key, timeout_s)
            found = _SERVED[key]
            LOG.info("context window of %s at %s: %s", model, base_url,
                     f"{found.tokens} tokens ({found.source})" if found else "the server does not say")
        return _SERVED[key]


def forget() -> None:
    """Forget every window learnt, so the next request asks again (a server restarted with another ``-c``;
    tests whose scripted servers may reuse a port another server with another window had)."""
    with _LOCK:
        _SERVED.clear()


def context_window(params: LLMParams, base_url: str, model: str, api_key: str) -> ContextWindow:
    """The window a request to this endpoint and model may fill: the setting, else the server, else the default."""
    if params.context_tokens:
        return ContextWindow(params.context_tokens, "setting llm.context_tokens")
    found = served(base_url, model, api_key, params.probe_timeout_s)
    if found is not None:
        return found
    return ContextWindow(params.default_context_tokens,
                         "default llm.default_context_tokens (the server did not say)", known=False)
