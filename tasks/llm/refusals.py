"""Refusals: reading a server's error to learn which request field it refused.

Why its own module: servers refuse ``response_format``, ``tools`` or a sampling field in their own words and
with their own statuses, and a wrong reading costs a run or a silent downgrade, so the rules, read from the
bodies real servers send, stand apart from the client that sends and the negotiator that moves on them.
"""

from __future__ import annotations

import re

from artoo.tasks.llm.capability import SAMPLING_FIELDS, Feature

__all__ = ["FeatureRefused", "is_format_rejection", "is_tools_rejection", "refused_feature"]


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
