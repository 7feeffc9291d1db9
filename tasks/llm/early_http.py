"""The early lane's HTTP: one chat completion sent without ``openai``, read back as openai's own objects.

Why: ``artoo run`` sends R1 before it imports anything heavy (artoo.runner), and ``import openai``
alone is ≈ 0.45 s of a 2-core machine, paid before the first request left.  So an early request is a
plain ``httpx`` POST of exactly the body the openai client would send, and its reply is kept raw.
When the role's task takes it (artoo.tasks.llm.client, with openai loaded by then), ``read_reply``
turns it into what the openai client would have returned or raised for the same exchange: a
``ChatCompletion``, an ``APIStatusError`` of the status' class, an ``APITimeoutError``, an
``APIConnectionError`` caused by the transport's own error.  So the task's error handling, retries
and records are the same whether its answer came early or not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from artoo.tasks.llm.base import answer_model
from artoo.tasks.llm.endpoint import Endpoint
from artoo.tasks.llm.parsing import InvalidAnswer
from artoo.tasks.llm.progress import INFLIGHT
from artoo.tasks.llm.repair import repair_answer
from artoo.tasks.llm.tls import verify_for


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
    """The answer a 2xx reply carries, repaired exactly as the role's task repairs it (``_repaired``), without
    openai; None for an error, a reply without a message, or an answer code cannot repair (the task then asks,
    or re-asks, itself, and whoever read ahead has nothing to build on)."""
    if reply.error is not None or not 200 <= reply.status < 300:
        return None
    try:
        message = json.loads(reply.body)["choices"][0]["message"]
        return repair_answer(message.get("content"), message.get("refusal"), answer_model(schema)).answer
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, InvalidAnswer):
        return None


def read_reply(reply: EarlyReply) -> Any:
    """The ``ChatCompletion`` of a 2xx reply, else raise the openai error the openai client raises for it."""
    import httpx2  # openai's transport: its errors carry these; loaded with openai by the client
    import openai
    from openai.types.chat import ChatCompletion

    request = httpx2.Request("POST", reply.url)
    if reply.error is not None:
        if isinstance(reply.error, httpx.TimeoutException):
            raise openai.APITimeoutError(request=request) from reply.error
        raise openai.APIConnectionError(request=request) from reply.error
    response = httpx2.Response(reply.status, headers=list(reply.headers), content=reply.body, request=request)
    try:
        body = json.loads(reply.body)
    except ValueError:
        body = reply.body.decode(errors="replace").strip()
    if 200 <= reply.status < 300:
        if not isinstance(body, dict):
            raise openai.APIError(f"the answer is not a JSON object: {str(body)[:200]!r}", request, body=None)
        return ChatCompletion.construct(**body)
    raise status_error(openai, response, body)


_STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                  404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError", 429: "RateLimitError"}


def status_error(openai: Any, response: Any, body: object) -> Exception:
    """The openai client's error for a 4xx/5xx answer: its class by status, its message, its body."""
    message = f"Error code: {response.status_code}"
    error = body.get("error", body) if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if isinstance(detail, str) and detail:
        message += f" - {detail}"
    name = "InternalServerError" if response.status_code >= 500 else _STATUS_ERRORS.get(response.status_code)
    kind = getattr(openai, name) if name else openai.APIStatusError
    return kind(message, response=response, body=error if isinstance(body, dict) else body)
