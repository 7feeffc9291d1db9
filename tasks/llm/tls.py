"""The certificate store of the LLM clients: built once per process, and only for an ``https`` endpoint.

Why: loading the store (certifi, or SSL_CERT_FILE/SSL_CERT_DIR) is most of an HTTP client's construction
cost, 50–140 ms on a 2-core machine, and httpx builds it at construction even for a plain-HTTP URL.  A
local server (llama.cpp, Ollama, vLLM on loopback) is plain HTTP and has no certificate to check, and
``artoo run`` builds its first client (the context-window probe) before R1 goes out.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verification context, built once and shared by every client of the process."""
    return httpx.create_ssl_context()


def verify_for(url: str) -> ssl.SSLContext | bool:
    """What a client of ``url`` verifies with: the shared store for ``https``, nothing to load for ``http``."""
    return tls_context() if url.lower().startswith("https://") else False
