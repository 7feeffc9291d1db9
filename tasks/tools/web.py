"""search: web search through DuckDuckGo's HTML endpoint.

No API key and one GET.  When the machine is offline (or DuckDuckGo refuses the
request) the failure is environmental with the cause spelled out, so the loops know
the approach was sound and the world blocked it; a real page with no results is a
valid answer ("no results"), not a failure.
"""

from __future__ import annotations

import functools
import socket
import threading
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlparse

import httpx

from artoo.tasks.tools.models import ToolError

DDG_URL = "https://html.duckduckgo.com/html/"
SEARCH_TIMEOUT_S = 8.0
MAX_HITS = 8


@dataclass
class SearchHit:
    """One result: title, link, snippet."""

    title: str
    url: str
    snippet: str = ""


class _DDGParser(HTMLParser):
    """Collects ``a.result__a`` titles/links and ``.result__snippet`` texts in page order."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: list[SearchHit] = []
        self._field: str | None = None
        self._depth = 0
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._field:
            self._depth += 1
            return
        classes = (dict(attrs).get("class") or "").split()
        if tag == "a" and "result__a" in classes:
            self.hits.append(SearchHit("", unwrap_link(dict(attrs).get("href") or "")))
            self._field, self._depth, self._text = "title", 0, []
        elif "result__snippet" in classes and self.hits:
            self._field, self._depth, self._text = "snippet", 0, []

    def handle_endtag(self, tag: str) -> None:
        if not self._field:
            return
        if self._depth:
            self._depth -= 1
            return
        text = " ".join("".join(self._text).split())
        setattr(self.hits[-1], self._field, text)
        self._field = None

    def handle_data(self, data: str) -> None:
        if self._field:
            self._text.append(data)


def unwrap_link(href: str) -> str:
    """DuckDuckGo wraps result links as ``//duckduckgo.com/l/?uddg=<url>``: return the real URL."""
    parsed = urlparse(href)
    target = parse_qs(parsed.query).get("uddg")
    if target:
        return target[0]
    return "https:" + href if href.startswith("//") else href


def parse_ddg_html(html: str) -> list[SearchHit]:
    """The results of a DuckDuckGo HTML page, in order."""
    parser = _DDGParser()
    parser.feed(html)
    parser.close()
    return [h for h in parser.hits if h.url]


def render_hits(hits: list[SearchHit]) -> str:
    """Numbered results: title, link, snippet."""
    lines = []
    for n, hit in enumerate(hits, start=1):
        lines.append(f"{n}. {hit.title or '(untitled)'}\n   {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)


async def web_search(query: str, url: str = DDG_URL, timeout_s: float = SEARCH_TIMEOUT_S,
                     max_hits: int = MAX_HITS) -> str:
    """Search the web; environmental ToolError when search is unreachable or refuses."""
    headers = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) artoo/0.1"}
    try:
        async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=True, headers=headers) as client:
            response = await client.get(url, params={"q": query})
    except httpx.HTTPError as exc:
        cause = str(exc) or type(exc).__name__
        raise ToolError(f"web search unavailable: {type(exc).__name__}: {cause}", "environmental") from exc
    if response.status_code != 200:
        raise ToolError(f"web search unavailable: HTTP {response.status_code} from {url}", "environmental")
    hits = parse_ddg_html(response.text)
    if not hits and ("anomaly" in response.text or "captcha" in response.text.lower()):
        raise ToolError("web search unavailable: DuckDuckGo asked for a bot check", "environmental")
    return render_hits(hits[:max_hits]) if hits else "no results"


@functools.cache
def reachable(url: str = DDG_URL, timeout_s: float = 1.5) -> bool:
    """Whether the search service's host resolves from here (asked once per process): a machine with no network
    is not offered a tool it cannot serve (a small model spent three attempts reading "Name or service not
    known")."""
    host = urlparse(url).hostname or ""
    done: list[bool] = []

    def resolve() -> None:
        try:
            socket.getaddrinfo(host, 443)
            done.append(True)
        except OSError:
            done.append(False)
    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return bool(done and done[0])
