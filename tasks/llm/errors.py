"""Turn ``openai`` exceptions into artoo's error classes, with messages a person can act on.

The loops only distinguish *configuration* (the person fixes a setting: bad key, unknown
model) from *run failures* (the world or the request failed).  Each message names the
role, tier, model and endpoint so a failed run says where to look.
"""

from __future__ import annotations

import openai

from artoo.config.errors import ConfigurationError, EnvironmentalFailure, RunFailure
from artoo.tasks.llm.endpoint import Endpoint, FeatureRefused
from artoo.tasks.llm.refusals import refused_feature

_ENVIRONMENTAL_STATUS = {408, 409, 425, 429}


def _detail(exc: openai.APIError, limit: int = 300) -> str:
    return " ".join(str(exc.message).split())[:limit]


def classify(exc: openai.APIError, role: str, ep: Endpoint, sent_format: bool,
             sent_tools: bool = False) -> Exception:
    """The artoo error (or FeatureRefused) that an openai APIError stands for."""
    where = f"{role} ({ep.tier} tier, model {ep.model!r} at {ep.base_url})"
    if isinstance(exc, openai.APITimeoutError):
        return EnvironmentalFailure(f"{where}: the request timed out after {ep.timeout_s:g}s")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return EnvironmentalFailure(
            f"{where}: cannot connect to the endpoint ({type(cause).__name__}: {cause})")
    if not isinstance(exc, openai.APIStatusError):
        return EnvironmentalFailure(f"{where}: the endpoint returned an unreadable response: {_detail(exc)}")
    status = exc.status_code
    if status in (401, 403):
        return ConfigurationError(
            f"the endpoint rejected the API key for the {ep.tier} tier ({ep.env('API_KEY')}): "
            f"HTTP {status} from {ep.base_url} for {role}: {_detail(exc)}")
    if status == 404:
        return ConfigurationError(
            f"{where}: HTTP 404, the model is not served there or the URL is wrong; check "
            f"{ep.env('MODEL')} and {ep.env('BASE_URL')}: {_detail(exc)}")
    feature = refused_feature(status, str(exc.message), sent_format, sent_tools)
    if feature is not None:
        return FeatureRefused(feature, f"HTTP {status}: {_detail(exc)}")
    if status in _ENVIRONMENTAL_STATUS or status >= 500:
        return EnvironmentalFailure(f"{where}: HTTP {status} from the endpoint: {_detail(exc)}")
    return RunFailure(f"{where}: the endpoint refused the request with HTTP {status}: {_detail(exc)}")


def unreachable(exc: openai.APIError) -> bool:
    """The server is not there right now (no connection, or a gateway/loading answer), not a timeout."""
    if isinstance(exc, openai.APITimeoutError):
        return False
    if isinstance(exc, openai.APIConnectionError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code in (502, 503, 504)


def is_retryable(error: Exception) -> bool:
    """Only environmental failures are worth another try."""
    return isinstance(error, EnvironmentalFailure)
