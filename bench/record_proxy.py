"""A recording proxy: a loopback OpenAI-compatible endpoint that forwards to a real server and writes
every exchange, raw, to a JSONL transcript.

Why: artoo's robustness to real model output is tested by *replaying* what real servers said
(``artoo.tasks.llm.testing.transcript``), not by what we expect a model to say.  The proxy sits between artoo
and the server so the transcript holds the HTTP bodies exactly as the server sent them, refusals
included, whatever artoo's client makes of them.  Point artoo at the proxy::

    python -m artoo.bench.record_proxy --upstream http://127.0.0.1:8080 --out run.jsonl --port 8090
    OPENAI_BASE_URL=http://127.0.0.1:8090/v1 artoo run "…"

Each line: ``{"method", "path", "request" (the JSON body, or null), "status", "response" (the body as
text), "seconds"}``.  Streams are buffered whole (the transcript is for replay, not for timing).  A client
that goes away (a run stopped by hand) cancels its upstream request, recorded with status 499: a local
model would otherwise go on generating for nobody and delay the next run's first answer by minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CLIENT_GONE = 499
"""The status recorded for a request whose client disconnected before the server answered (nginx's code)."""
_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding", "host"}


def build_app(upstream: str, out: Path, timeout_s: float = 600.0) -> Starlette:
    """The proxy app: every request under / forwarded to ``upstream`` and appended to ``out``."""
    lock = threading.Lock()
    client = httpx.AsyncClient(base_url=upstream.rstrip("/"), timeout=timeout_s)

    async def forward(request: Request) -> Response:
        body = await request.body()
        started = time.monotonic()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        call = asyncio.ensure_future(client.request(request.method, request.url.path, params=request.query_params,
                                                    content=body, headers=headers))
        gone = asyncio.ensure_future(_gone(request))
        await asyncio.wait({call, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if not call.done():  # the client went away: stop the server's work too (a local model would go on)
            call.cancel()
            status, text, kind = CLIENT_GONE, json.dumps({"error": {"message": "proxy: the client went away; "
                                                                    "the upstream request was cancelled"}}), ""
        else:
            try:
                answer = call.result()
                status, text, kind = answer.status_code, answer.text, answer.headers.get("content-type", "")
            except httpx.HTTPError as exc:  # recorded too: a transcript of an unreachable server is evidence
                status, text, kind = 502, json.dumps({"error": {"message": f"proxy: {exc!r}"}}), "application/json"
        record = {"method": request.method, "path": request.url.path, "request": _json_or_none(body),
                  "status": status, "response": text, "seconds": round(time.monotonic() - started, 3)}
        with lock, out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        return Response(text, status_code=status, media_type=kind.split(";")[0] or None)

    return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])


async def _gone(request: Request) -> None:
    """Returns when the client has disconnected (polled: Starlette reports it on the next receive)."""
    while not await request.is_disconnected():
        await asyncio.sleep(0.2)


def _json_or_none(body: bytes) -> object:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> None:
    """``python -m artoo.bench.record_proxy --upstream URL --out FILE [--port N]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the real server's root, e.g. http://127.0.0.1:8080")
    parser.add_argument("--out", required=True, type=Path, help="the JSONL transcript (appended to)")
    parser.add_argument("--port", type=int, default=8090, help="the loopback port to listen on")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"recording {args.upstream} on http://127.0.0.1:{args.port}/v1 into {args.out}", flush=True)
    uvicorn.run(build_app(args.upstream, args.out), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
