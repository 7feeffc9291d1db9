"""Which HTTP errors mean "this server does not support what you sent", read from the real bodies.

Why a module of its own: OpenAI-compatible servers refuse ``response_format`` and ``tools`` in
different words and with different status codes, and a wrong reading costs either a run (a refusal
taken for an outage) or a silent downgrade (an outage taken for a refusal).  Every rule here is
checked table-driven against the bodies real servers send (tests/test_negotiation.py):

* llama-cpp-python 0.3.x answers ``json_schema`` with **HTTP 500**: its ``RouteErrorHandler``
  turns FastAPI's request validation error into ``internal_server_error`` whose message says
  ``'loc': ('body', 'response_format', 'type')`` … ``Input should be 'text' or 'json_object'``;
* llama.cpp's ``llama-server`` before its json_schema support (and forks such as ik_llama.cpp)
  answers 500 ``response_format type must be one of "text" or "json_object", but got: json_schema``;
  started with ``--no-jinja`` it answers ``tools`` with 500 ``tools param requires --jinja flag``;
* Ollama answers ``tools`` for a model whose template has none with 400
  ``registry.ollama.ai/library/X:latest does not support tools``;
* vLLM without a tool parser answers 400 ``"auto" tool choice requires --enable-auto-tool-choice
  and --tool-call-parser to be set``.

A 400 or 422 that names the format is a refusal (the request itself is wrong for this server); a
500 counts only when it names ``response_format``, ``json_schema`` or ``json_object`` (a crash
that merely mentions a "schema" stays an environmental failure), and the same for tools.
"""

from __future__ import annotations

import re
from typing import Literal

Feature = Literal["response_format", "tools"]

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")
_FORMAT_WORDS_500 = ("response_format", "json_schema", "json_object")
_REFUSING_STATUS = (400, 422, 500, 501)
_TOOLS_REFUSED = re.compile(
    r"(does not support|doesn't support|not supported|unsupported|requires?)\W+(\w+\W+){0,3}?"
    r"(tools|tool[ _]choice|tool calling|function calling)\b"
    r"|\b(tools|tool[ _]choice)\b( param)?\W+(\w+\W+){0,2}?(requires|is not supported|are not supported|unsupported)",
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


def refused_feature(status: int, message: str, sent_format: bool, sent_tools: bool) -> Feature | None:
    """The request feature an HTTP error refuses (only one that was sent), or None when it refuses none."""
    if sent_tools and is_tools_rejection(status, message):
        return "tools"
    if sent_format and is_format_rejection(status, message):
        return "response_format"
    return None
