"""Secret redaction for everything artoo writes to disk to explain a run (the decision log).

Why a separate pass and not "be careful at each call site": the decision log records whole
LLM requests and tool outputs, and a secret can arrive from anywhere in them: the user
pasted a token into the request, a tool printed an environment, a header was echoed.  So
every record passes through one function before it is written.  It removes three things:
the configured API keys themselves (exact values, wherever they appear), the values of
keys whose name says secret (``api_key``, ``token``, ``Authorization``, ``password``…),
and strings shaped like well-known credentials (``Bearer …``, ``sk-…``, ``ghp_…``, ``AKIA…``,
``xox?-…``, ``key=value`` assignments of secret-named variables).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MASK = "[REDACTED]"

SECRET_KEY = re.compile(r"(api[_-]?key|apikey|token|secret|passw(or)?d|authorization|auth[_-]?header|"
                        r"private[_-]?key|access[_-]?key|cookie|credential)", re.IGNORECASE)
"""A dict key or variable name whose value is a secret."""

PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer|basic|token)?\s*[^\s\"',]+"), rf"\1{MASK}"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), f"Bearer {MASK}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), MASK),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), MASK),
    (re.compile(r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|token|secret|passw(?:or)?d)[A-Z0-9_]*)(\s*[:=]\s*)"
                r"(?!\[REDACTED\])(?![\d.]+\b)[\"']?[^\s\"',;]+[\"']?"), rf"\1\2{MASK}"),
)
"""Credential shapes recognised inside free text."""


@dataclass
class Redactor:
    """Removes secrets from JSON-like data; ``known`` are exact secret values (the configured keys)."""

    known: list[str] = field(default_factory=list)

    @classmethod
    def from_settings(cls, settings: Any) -> Redactor:
        """A redactor that also knows every API key configured in ``settings``."""
        values = []
        for name in ("brain_api_key", "tool_api_key", "openai_api_key"):
            secret = getattr(settings, name, None)
            value = secret.get_secret_value() if secret is not None else ""
            if len(value) >= 8:  # a short placeholder ("demo", "none") would redact ordinary words
                values.append(value)
        return cls(sorted(set(values), key=len, reverse=True))

    def __call__(self, value: Any) -> Any:
        """``value`` with every secret replaced by ``[REDACTED]``."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: (MASK if _secret_key(k, v) else self(v)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value

    def text(self, text: str) -> str:
        """Free text with known secrets and credential shapes masked."""
        for secret in self.known:
            text = text.replace(secret, MASK)
        for pattern, replacement in PATTERNS:
            text = pattern.sub(replacement, text)
        return text


def _secret_key(key: Any, value: Any) -> bool:
    """A secret-named key holding a scalar (a dict under "tokens" is counted, not secret: usage stats)."""
    if not isinstance(key, str) or not SECRET_KEY.search(key):
        return False
    if isinstance(value, bool | int | float) or value is None:
        return False  # prompt_tokens: 120, max_tokens: 50 … are numbers, not secrets
    return isinstance(value, str)
