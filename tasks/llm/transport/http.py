"""The HTTP that goes out before ``openai`` is loaded: the server's self-description and the early chat request.

Why: ``artoo run`` sends R1 before it imports anything heavy (artoo.runner), and ``import openai`` alone
is ≈ 0.45 s of a 2-core machine, paid before the first request left.  What must happen before R1 (asking
the server for its window, ``probe``) and R1 itself (``post_chat``, exactly the body the openai client
would send, its reply kept raw as an ``EarlyReply``) is plain ``httpx``.  The client turns a raw reply into
what its own request would have returned or raised (artoo.tasks.llm.transport.client: ``read_reply``), and
``answer_in`` reads the answer out of one, as the role's task will, for whoever reads ahead.

The certificate store is built once per process and only for an ``https`` endpoint (``verify_for``):
loading it is most of an HTTP client's construction cost, 50–140 ms on a 2-core machine, and httpx builds
it at construction even for a plain-HTTP URL, which a local server (llama.cpp, Ollama, vLLM on loopback)
is.  The window probe has a short timeout and never fails a run: a server that does not say gets None.
"""

from __future__ import annotations

import functools
import json
import ssl
from dataclasses import dataclass
from typing import Any

import httpx

from artoo.tasks.llm.base import Endpoint, answer_model
from artoo.tasks.llm.capability import ContextWindow
from artoo.tasks.llm.output.repair import InvalidAnswer, repair_answer
from artoo.tasks.llm.server_facts import ServerFacts, facts_from_props, from_models, server_root
from artoo.tasks.llm.transport.progress import INFLIGHT

__all__ = ["EarlyReply", "answer_in", "post_chat", "probe", "tls_context", "verify_for"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verification context, built once and shared by every client of the process."""
    return httpx.create_ssl_context()


def verify_for(url: str) -> ssl.SSLContext | bool:
    """What a client of ``url`` verifies with: the shared store for ``https``, nothing to load for ``http``."""
    return tls_context() if url.lower().startswith("https://") else False


# ---- the server's self-description --------------------------------------------------------------------------


def _get_json(client: httpx.Client, url: str) -> object:
    try:
        response = client.get(url)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def probe(base_url: str, model: str, api_key: str, timeout_s: float) -> ServerFacts | None:
    """What the server says about itself: llama.cpp's ``GET /props`` (at the server root, not under ``/v1``),
    else vLLM's ``max_model_len`` in ``GET {base_url}/models``; None when it says nothing usable."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(timeout=timeout_s, headers=headers, verify=verify_for(base_url)) as client:
        root = server_root(base_url)
        facts = facts_from_props(_get_json(client, f"{root}/props"), root)
        if facts is not None:
            return facts
        models = f"{base_url.rstrip('/')}/models"
        tokens = from_models(_get_json(client, models), model)
        if tokens:
            return ServerFacts(window=ContextWindow(tokens=tokens, source=f"server {models} max_model_len"))
    return None


# ---- the early chat request ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EarlyReply:
    """What came back for an early request: the HTTP answer, or the transport error instead."""

    url: str
    """Where the request went (the openai errors carry the request)."""
    status: int = 0
    """The HTTP status; 0 when no answer came."""
    headers: tuple[tuple[str, str], ...] = ()
    """The answer's headers (a ``retry-after`` paces the task's retry)."""
    body: bytes = b""
    """The answer's body as received."""
    error: BaseException | None = None
    """The transport's exception when no answer came (a timeout, a refused connection)."""


_CLIENTS: dict[tuple[str, float], httpx.AsyncClient] = {}


def _client(ep: Endpoint) -> httpx.AsyncClient:
    """The lane's client for an endpoint, kept for the process (it only ever runs on the lane's loop)."""
    key = (ep.base_url, ep.timeout_s)
    if key not in _CLIENTS:
        _CLIENTS[key] = httpx.AsyncClient(verify=verify_for(ep.base_url), timeout=httpx.Timeout(ep.timeout_s))
    return _CLIENTS[key]


async def post_chat(role: str, ep: Endpoint, fields: dict[str, Any]) -> EarlyReply:
    """POST ``{"model": …, **fields}`` to the endpoint's chat completions, marked in flight meanwhile."""
    url = ep.base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {ep.api_key}", "Accept": "application/json"}
    with INFLIGHT.track(role, ep.model, ep.tier):
        try:
            answer = await _client(ep).post(url, json={"model": ep.model, **fields}, headers=headers)
        except Exception as exc:  # handed to the task as the openai client would have raised it
            return EarlyReply(url, error=exc)
    return EarlyReply(url, answer.status_code, tuple(answer.headers.items()), answer.content)


def answer_in(reply: EarlyReply, schema: str) -> Any | None:
    """The answer a 2xx reply carries, repaired exactly as the role's task repairs it, without openai; None for
    an error, a reply without a message, or an answer code cannot repair (the task then asks, or re-asks,
    itself, and whoever read ahead has nothing to build on)."""
    if reply.error is not None or not 200 <= reply.status < 300:
        return None
    try:
        message = json.loads(reply.body)["choices"][0]["message"]
        return repair_answer(message.get("content"), message.get("refusal"), answer_model(schema)).answer
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, InvalidAnswer):
        return None
