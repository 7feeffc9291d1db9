"""A Prefect server process on loopback, as every server artoo starts needs it: a port, a health probe.

Why one module: the one-shot embedded server (artoo.servers.embedded), the home's lingering server
(artoo.servers.lingering) and ``artoo server`` (artoo.servers.local) each picked a port and polled ``/health``
in their own words.  Standard library only.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_taken(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port`` (binding it fails)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def api_url(port: int) -> str:
    """Where Prefect's client finds the API of a server on this loopback port (``PREFECT_API_URL``)."""
    return f"http://127.0.0.1:{port}/api"


def healthy(url: str, timeout_s: float = 2.0) -> bool:
    """Whether the Prefect API at ``url`` answers ``/health`` with 200 now."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout_s) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False
