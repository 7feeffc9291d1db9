"""``OpenAICompatLLM``: the LLM interface over any OpenAI-compatible endpoint, and everything that needs ``openai``.

Why it exists: the roles want a validated answer model or an executor tool turn, not HTTP.  This
class owns everything between: what each request is (``RequestBuilder``, its base: the tier endpoint
per role, the form its profile negotiated), stepping down the modes when a server refuses one (the
move is remembered in the endpoint's profile), deterministic repairs of an answer before the one
re-ask (artoo.tasks.llm.output.repair), error classification, retries of environmental failures
only, and one ``CallRecord`` per HTTP request for the cost report.

Errors: the loops only distinguish *configuration* (the person fixes a setting: bad key, unknown
model) from *run failures* (the world or the request failed); ``classify`` turns each ``openai``
exception into one of those, or into ``FeatureRefused`` when the server refused a request field, with
a message naming the role, tier, model and endpoint.  Retries are done here (the openai client's own
are off) so each HTTP request is recorded and only environmental failures are retried.

One AsyncOpenAI client is kept per tier and per event loop, because Prefect may run async tasks on
worker threads with their own loops and an HTTP connection pool must not cross loops.  The
certificate store is the one the early lane uses (``http.verify_for``), whose raw replies
``read_reply`` turns into what this client's own request would have returned or raised: a
``ChatCompletion``, an ``APIStatusError`` of the status' class, an ``APITimeoutError``, an
``APIConnectionError`` caused by the transport's own error.  So a task's error handling, retries and
records are the same whether its answer came early or not.

The call budget: the client counts its task's requests, weighed (``spent``, ``weight``: a short vote weighs
``ggs.vote_weight``), and refuses one that would take the task over ``ggs.max_calls`` before it is sent
(``CallBudgetSpent``), early requests included, so the GGS's Ω sees every call and no loop can call on forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import openai
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from artoo.config.errors import (
    ArtooError,
    CallBudgetSpent,
    ConfigurationError,
    EnvironmentalFailure,
    RunFailure,
    TimeBudgetSpent,
)
from artoo.config.protocol import Answer, ExecutionAnswer
from artoo.config.settings import Settings
from artoo.tasks.llm.base import (
    TOOLS_SCHEMA,
    CallRecord,
    Endpoint,
    ToolTurn,
    answer_model,
    cached_tokens_of,
    tier_of,
)
from artoo.tasks.llm.capability import KINDS, SAMPLING_FIELDS
from artoo.tasks.llm.output.extract import (
    bash_block,
    bash_turn,
    content_tool_calls,
    first_message,
    lone_command,
    tool_call_turn,
    tool_names,
    written_call_turn,
)
from artoo.tasks.llm.output.modes import BASH_NEXT, PROTOCOL_KEYS, structured_request, tool_request
from artoo.tasks.llm.output.repair import InvalidAnswer, output_error, repair_answer, repair_messages
from artoo.tasks.llm.refusals import FeatureRefused, refused_feature
from artoo.tasks.llm.transport.budget import PromptTooLong
from artoo.tasks.llm.transport.early import EARLY, answer_of, request_key
from artoo.tasks.llm.transport.http import EarlyReply, verify_for
from artoo.tasks.llm.transport.progress import INFLIGHT
from artoo.tasks.llm.transport.requests import RequestBuilder

__all__ = ["OpenAICompatLLM", "backoff", "classify", "is_retryable", "read_reply", "status_error", "unreachable"]

log = logging.getLogger("artoo.llm")

_SLACK = 1e-9
"""Rounding room when weights like 0.1 add up to the budget exactly."""


class OpenAICompatLLM(RequestBuilder):
    """The LLM protocol over OpenAI-compatible HTTP endpoints (brain and tool tiers)."""

    def __init__(self, settings: Settings, max_retries: int = 1):
        super().__init__(settings)
        self.max_retries = max_retries
        self._reached: set[str] = set()
        """Endpoints that answered in this process: only these are waited for when they go away."""
        self.records: list[CallRecord] = []
        self._clients: dict[asyncio.AbstractEventLoop, dict[str, AsyncOpenAI]] = {}
        self._clients_lock = threading.Lock()
        self.observer: Callable[[dict], None] | None = None
        """Called with every request and its answer (the decision log); its failures are ignored."""
        self._unjudged: dict[int, tuple[Endpoint, dict, Any]] = {}
        """Answered exchanges whose answer is being parsed, by id(record): observed once judged."""
        self._spent = 0.0
        self._budget_lock = threading.Lock()  # tasks of one run ask from several threads and loops at once
        self.deadline: Callable[[], float] | None = None
        """When the task's time is spent (``time.monotonic()`` seconds, Law-1 waits added); None: no deadline."""

    @property
    def spent(self) -> float:
        """The weighed LLM calls this client's task made (``weight``): what the GGS counts against ggs.max_calls.

        A request counts once: taken from the budget as it is sent (an early answer as a role's call takes it; one
        no call took costs nothing here), given back when it got no answer (a timeout, no connection, an error
        status, a refused request field), so failed attempts and their retries are not counted: llm_max_retries and
        llm.reconnect_s bound those, and Ω's time term weighs them."""
        with self._budget_lock:
            return self._spent

    def weight(self, role: str) -> float:
        """What one request of ``role`` costs the call budget: a short vote its share, a Dreamer call nothing (it
        belongs to no task), any other role call 1."""
        if role == "dreamer":
            return 0.0
        return self.settings.ggs.vote_weight if role == "vote" else 1.0

    def affords(self, role: str) -> bool:
        """Whether the call budget (and the time budget) can pay for one more request of ``role`` now."""
        if self.weight(role) and self.deadline is not None and time.monotonic() >= self.deadline():
            return False
        with self._budget_lock:
            return self._spent + self.weight(role) <= self.settings.ggs.max_calls + _SLACK

    def send_ahead(self, role: str, schema: str, messages: list[dict],
                   tools: list[dict] | None = None) -> concurrent.futures.Future | None:
        """``RequestBuilder.send_ahead``, except when the budget could not pay for the role's own call: a request
        that call would refuse (CallBudgetSpent) is not sent early either."""
        if not self.affords(role):
            return None
        return super().send_ahead(role, schema, messages, tools)

    def _charge(self, role: str) -> float:
        """Take one request's weight from the budget before it is sent, or refuse it: CallBudgetSpent when it would
        take ``spent`` over ggs.max_calls (taken at once, so parallel subtasks cannot overdraw it together)."""
        weight, limit = self.weight(role), self.settings.ggs.max_calls
        if weight and self.deadline is not None and time.monotonic() >= self.deadline():
            raise TimeBudgetSpent(self.settings.ggs.time_budget_ms / 1000, role)
        with self._budget_lock:
            if self._spent + weight > limit + _SLACK:
                raise CallBudgetSpent(limit, self._spent, role)
            self._spent += weight
        return weight

    async def _within_deadline(self, role: str, weight: float, request: Awaitable[Any]) -> Any:
        """``request``'s answer, cut off when the task's time runs out while it is under way (TimeBudgetSpent; its
        weight given back): the time budget is a hard stop for a call in flight too, so a slow answer cannot take
        a task past it."""
        if not weight or self.deadline is None:
            return await request
        call = asyncio.ensure_future(request)
        try:
            while (left := self.deadline() - time.monotonic()) > 0:  # read again: a Law-1 wait moves the deadline
                done, _ = await asyncio.wait({call}, timeout=left)
                if done:
                    return call.result()
            self._give_back(weight)
            raise TimeBudgetSpent(self.settings.ggs.time_budget_ms / 1000, role)
        finally:
            if not call.done():
                call.cancel()

    def _give_back(self, weight: float) -> None:
        """Return the weight of a request that got no answer (``spent`` says why)."""
        with self._budget_lock:
            self._spent = max(0.0, self._spent - weight)

    def _client(self, ep: Endpoint) -> AsyncOpenAI:
        """This loop's client for a tier; clients of closed loops are dropped (their pools are dead)."""
        with self._clients_lock:
            for loop in [loop for loop in self._clients if loop.is_closed()]:
                del self._clients[loop]
            per_loop = self._clients.setdefault(asyncio.get_running_loop(), {})
            if ep.tier not in per_loop:
                http = DefaultAsyncHttpxClient(verify=verify_for(ep.base_url))
                per_loop[ep.tier] = AsyncOpenAI(base_url=ep.base_url, api_key=ep.api_key,
                                                timeout=ep.timeout_s, max_retries=0, http_client=http)
            return per_loop[ep.tier]

    async def aclose(self) -> None:
        """Close the HTTP clients of the running loop (other loops' go when their loop closes)."""
        with self._clients_lock:
            per_loop = self._clients.pop(asyncio.get_running_loop(), {})
        for client in per_loop.values():
            await client.close()

    async def structured(self, role: str, schema: str, messages: list[dict]) -> Answer:
        """An instance of SCHEMAS[schema]: repaired where it can be, else re-asked once with the validation error."""
        model = answer_model(schema)
        ep = self.endpoint(tier_of(role))
        conversation = list(messages)
        for attempt in range(2):
            response, record = await self._ask_structured(role, schema, ep, conversation)
            message = first_message(response)
            with self._judging(record):
                try:
                    return self._repaired(record, message, model)
                except InvalidAnswer as exc:
                    record.ok, record.error = False, f"invalid answer: {exc}"
                    if attempt:
                        raise output_error(role, schema, ep, message, exc) from None
                    conversation = repair_messages(messages, schema, message.content, str(exc))
        raise AssertionError("unreachable")

    async def command(self, role: str, messages: list[dict], temperature: float | None = None) -> str | None:
        """One free answer holding a shell command: the first fenced block of a shell tag (a lone command line
        when there is no block), or None.  No schema and no grammar: a small model writes a command right far
        more often in a free answer than inside a JSON string a grammar holds it to.  ``temperature``: this
        request's own sampling (votes must differ where the model is unsure), else the configured one."""
        ep = self.endpoint(tier_of(role))
        sampled = {"temperature": temperature} if temperature is not None else {}
        response, record = await self._request(role, "Command", ep, judged_later=True, messages=messages, **sampled)
        message = first_message(response)
        with self._judging(record):
            found = bash_block(message.content) or lone_command(message.content)
            if found is None:
                record.ok, record.error = False, "invalid answer: no command in it"
            return found

    async def tool_turn(self, role: str, messages: list[dict], tools: list[dict]) -> ToolTurn:
        """One executor turn: the tool calls asked for, or the final ExecutionResult."""
        ep = self.endpoint(tier_of(role))
        conversation = list(messages)
        for attempt in range(2):
            response, record = await self._ask_tools(role, ep, conversation, tools)
            message = first_message(response)
            calls = [c for c in message.tool_calls or [] if getattr(c, "function", None) is not None]
            if tools and not calls and self.negotiator.mode(ep, "tools") == "bash":
                with self._judging(record):
                    turn = bash_turn(message.content) or self._bash_fallback(message.content, tools)
                    if turn is not None or attempt:
                        return turn or ToolTurn(final=ExecutionAnswer(status="uncertain", output=message.content or ""),
                                                assistant_message={"role": "assistant", "content": message.content})
                    record.ok, record.error = False, "invalid answer: neither a ```bash block nor a DONE line"
                conversation = [*messages, {"role": "assistant", "content": message.content or ""},
                                {"role": "user", "content": BASH_NEXT}]
                continue
            with self._judging(record):
                written = None if calls else content_tool_calls(message.content, tool_names(tools))
                if calls or written:  # written: the content protocol, or Hermes <tool_call> blocks left in content
                    if tools:
                        self.negotiator.tool_answer(ep, messages, called=True)
                    return tool_call_turn(message.content, calls) if calls else written_call_turn(written)
                try:
                    final = self._repaired(record, message, ExecutionAnswer, PROTOCOL_KEYS)
                except InvalidAnswer as exc:
                    record.ok, record.error = False, f"invalid answer: {exc}"
                    if attempt:
                        raise output_error(role, "ExecutionResult", ep, message, exc) from None
                    conversation = repair_messages(messages, "ExecutionResult", message.content, str(exc))
                    continue
            if tools and (probed := await self._probe_content(role, ep, messages, tools)) is not None:
                return probed
            if tools:  # a model that accepts native tools but never calls one moves to content (SilentToolWatch)
                self.negotiator.tool_answer(ep, messages, called=False)
            return ToolTurn(final=final, assistant_message={"role": "assistant", "content": message.content})
        raise AssertionError("unreachable")

    @staticmethod
    def _bash_fallback(content: str | None, tools: list[dict]) -> ToolTurn | None:
        """A bash-block answer that wrote a JSON tool call instead (read_file, write_file stay usable), or None."""
        written = content_tool_calls(content, tool_names(tools))
        return written_call_turn(written) if written else None

    async def _probe_content(self, role: str, ep: Endpoint, messages: list[dict],
                             tools: list[dict]) -> ToolTurn | None:
        """The same first turn asked once in the content protocol after a final answer under native tools: a call
        there moves tools to content at once; a final answer there is dropped (``negotiator.SilentToolWatch``
        says why)."""
        if not self.settings.llm.content_probe or not self.negotiator.probe_due(ep, messages):
            return None
        try:
            response, record = await self._ask(
                role, TOOLS_SCHEMA, ep, "tools",
                lambda _mode, shape: tool_request("content", messages, tools, shape), confirm=False)
        except ArtooError as exc:  # the turn already has its answer: a failed probe never fails it
            log.warning("content-protocol probe of %s failed, the first answer stands: %s", ep.base_url, exc)
            return None
        message = first_message(response)
        with self._judging(record):
            written = content_tool_calls(message.content, tool_names(tools))
            if not written:
                record.ok, record.error = False, "probe: the content protocol gave a final answer too"
                return None
            self.negotiator.probed(ep, written[0]["name"])  # before the record is observed: it shows the move
        return written_call_turn(written)

    async def _ask_structured(self, role: str, schema: str, ep: Endpoint,
                              messages: list[dict]) -> tuple[Any, CallRecord]:
        """One structured request, falling back along the structured modes when the endpoint refuses a format."""
        return await self._ask(role, schema, ep, "structured",
                               lambda mode, _shape: structured_request(mode, schema, messages, self._grammar(ep)))

    async def _ask_tools(self, role: str, ep: Endpoint, messages: list[dict],
                         tools: list[dict]) -> tuple[Any, CallRecord]:
        """One executor request, falling back to the content protocol when the endpoint refuses ``tools``."""
        return await self._ask(role, TOOLS_SCHEMA, ep, "tools",
                               lambda mode, shape: tool_request(mode, messages, tools, shape), confirm=bool(tools))

    async def _ask(self, role: str, schema: str, ep: Endpoint, kind: str, build: Callable[[str, str], dict],
                   confirm: bool = True) -> tuple[Any, CallRecord]:
        """One request in this endpoint's mode of ``kind``, stepping down the modes (or leaving out a refused
        sampling field) while the endpoint refuses.

        ``build(mode, shape)``: the request in that mode (``shape``: what a content-protocol turn is held to).
        A tool turn's ``response_format`` refused moves only the turn's shape, never the roles' structured mode."""
        while True:
            mode, shape = self.negotiator.mode(ep, kind), self.negotiator.shape(ep)
            try:
                answer = await self._request(role, schema, ep, judged_later=True, **build(mode, shape))
            except FeatureRefused as exc:
                if exc.feature in SAMPLING_FIELDS:
                    self.negotiator.refuse_sampling(ep, exc)
                elif kind == "tools" and exc.feature == "response_format":
                    self.negotiator.fall_back(ep, exc, shape, kind="turn")
                else:
                    self.negotiator.fall_back(ep, exc, mode)
                continue
            if confirm:
                self.negotiator.confirm(ep, kind, mode)
            return answer

    async def _request(self, role: str, schema: str, ep: Endpoint, judged_later: bool = False,
                       **kwargs: Any) -> tuple[Any, CallRecord]:
        """One chat completion with retries of environmental failures; every attempt is recorded.

        The prompt is fitted to the model's window first; one that cannot fit is never sent (PromptTooLong).
        ``judged_later``: the caller parses the answer and observes the exchange when it is judged
        (``_judging``), so its decision-log record says whether the answer was used and how repaired."""
        try:
            kwargs, budget = await asyncio.to_thread(self._fit, role, ep, kwargs)
        except PromptTooLong as exc:
            refused = CallRecord(role, ep.model, schema, 0, 0, 0.0, ok=False, error=str(exc), budget=exc.budget)
            self._observe(refused, ep, kwargs, None)  # in the decision log; not a request, so not in records
            raise
        try:
            weight = self._charge(role)
        except CallBudgetSpent as exc:
            refused = CallRecord(role, ep.model, schema, 0, 0, 0.0, ok=False, error=str(exc), budget=budget)
            self._observe(refused, ep, kwargs, None)  # in the decision log; never sent, so not in records
            raise
        early = EARLY.take(request_key(ep.base_url, ep.model, kwargs)) if EARLY.pending() else None
        reconnect_until = time.monotonic() + self.settings.llm.reconnect_s
        attempt = -1
        while True:
            attempt += 1
            started = time.perf_counter()
            try:
                if early is not None and attempt == 0:  # sent ahead of this task: its answer, or its error
                    reply, latency = await answer_of(early)
                    response = read_reply(reply)
                else:
                    response = await self._within_deadline(role, weight, _tracked(
                        role, ep, self._client(ep).chat.completions.create(model=ep.model, **kwargs)))
                    latency = time.perf_counter() - started
            except openai.APIError as exc:
                error = classify(exc, role, ep, sent_format="response_format" in kwargs,
                                 sent_tools=bool(kwargs.get("tools")),
                                 sent_sampling=frozenset(f for f in SAMPLING_FIELDS if f in kwargs))
                self.records.append(CallRecord(role, ep.model, schema, 0, 0, time.perf_counter() - started,
                                               ok=False, error=str(error), budget=budget))
                self._observe(self.records[-1], ep, kwargs, None,
                              refused=error.feature if isinstance(error, FeatureRefused) else None)
                if is_retryable(error) and attempt < self.max_retries:
                    await asyncio.sleep(backoff(exc, attempt))
                    continue
                if is_retryable(error) and self._may_reconnect(ep, exc, attempt, reconnect_until):
                    await asyncio.sleep(min(0.5 * 2 ** min(attempt, 4), 5.0))
                    continue
                self._give_back(weight)
                raise error from exc
            self._reached.add(ep.base_url)
            self.negotiator.saw_timings(ep, getattr(response, "timings", None))
            usage = getattr(response, "usage", None)
            record = CallRecord(role, ep.model, schema, getattr(usage, "prompt_tokens", 0) or 0,
                                getattr(usage, "completion_tokens", 0) or 0, latency, ok=True, budget=budget,
                                cached_tokens=cached_tokens_of(response))
            self.records.append(record)
            if judged_later:
                self._unjudged[id(record)] = (ep, kwargs, response)
            else:
                self._observe(record, ep, kwargs, response)
            return response, record
        raise AssertionError("unreachable")

    def _may_reconnect(self, ep: Endpoint, exc: openai.APIError, attempt: int, until: float) -> bool:
        """Whether to keep trying an endpoint that went away after answering in this process.

        Why: a person restarting llama-server mid-run (it loads the model for seconds, answering 503
        "Loading model" or refusing connections meanwhile) cost the whole run: each later round's R2 failed
        at once and the GGS abandoned after four rounds in seconds.  An endpoint that never
        answered is a configuration mistake and still fails at once; one that did is waited for, up to
        ``llm.reconnect_s``, with a warning in the log."""
        if ep.base_url not in self._reached or not unreachable(exc) or time.monotonic() >= until:
            return False
        if attempt == self.max_retries:
            log.warning("LLM endpoint %s is unreachable (%s); retrying for up to %g s", ep.base_url,
                        type(exc).__name__, self.settings.llm.reconnect_s)
        return True

    @contextlib.contextmanager
    def _judging(self, record: CallRecord) -> Iterator[None]:
        """Observe an answered exchange when the block that judges its answer ends, however it ends."""
        try:
            yield
        finally:
            exchange = self._unjudged.pop(id(record), None)
            if exchange is not None:
                self._observe(record, *exchange)

    def _repaired(self, record: CallRecord, message: Any, model: type[Answer],
                  protocol: frozenset[str] = frozenset()) -> Answer:
        """The message's answer, repaired where it can be (artoo.tasks.llm.output.repair); the repairs go on the
        record."""
        repaired = repair_answer(message.content, message.refusal, model, protocol)
        record.repairs = repaired.repairs
        if repaired.repairs:
            log.info("%s %s answer repaired: %s", record.role, record.schema,
                     "; ".join(f"{r.kind}: {r.detail}" for r in repaired.repairs))
        return repaired.answer

    def _observe(self, record: CallRecord, ep: Endpoint, request: dict, response: Any,
                 refused: str | None = None) -> None:
        """Hand the observer the whole exchange: the request as sent, the response as received, its repairs,
        and the endpoint's negotiated modes (``refused``: the request feature a refusal named, which the next
        request no longer sends)."""
        if self.observer is None:
            return
        try:
            answer = response.model_dump(mode="json", exclude_none=True) if hasattr(response, "model_dump") else None
            negotiated = {kind: self.negotiator.mode(ep, kind) for kind in KINDS}
            self.observer({"role": record.role, "model": record.model, "tier": ep.tier, "schema": record.schema,
                           "request": {"model": ep.model, **request}, "response": answer,
                           "prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens,
                           "cached_tokens": record.cached_tokens,
                           "latency_s": round(record.latency_s, 4), "ok": record.ok, "error": record.error,
                           "budget": record.budget, "repairs": [r._asdict() for r in record.repairs],
                           "negotiated": negotiated, **({"refused": refused} if refused else {})})
        except Exception:  # recording explains a run; it never fails one
            return


async def _tracked(role: str, ep: Endpoint, request: Awaitable[Any]) -> Any:
    """Await one request marked in flight (artoo.tasks.llm.transport.progress), so a terminal can show a slow call."""
    with INFLIGHT.track(role, ep.model, ep.tier):
        return await request


# ---- openai's errors, read ----------------------------------------------------------------------------------

_ENVIRONMENTAL_STATUS = {408, 409, 425, 429}


def _detail(exc: openai.APIError, limit: int = 300) -> str:
    return " ".join(str(exc.message).split())[:limit]


def classify(exc: openai.APIError, role: str, ep: Endpoint, sent_format: bool, sent_tools: bool = False,
             sent_sampling: frozenset[str] = frozenset()) -> Exception:
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
    feature = refused_feature(status, str(exc.message), sent_format, sent_tools, sent_sampling)
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


def backoff(exc: openai.APIError, attempt: int) -> float:
    """Seconds to wait before retrying: the server's retry-after when given, else exponential."""
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        wait = float(header) if header else 0.25 * 2**attempt
    except ValueError:
        wait = 0.25 * 2**attempt
    return min(max(wait, 0.0), 5.0)


# ---- the early lane's replies, read as openai's own ---------------------------------------------------------


def read_reply(reply: EarlyReply) -> Any:
    """The ``ChatCompletion`` of a 2xx reply, else raise the openai error the openai client raises for it."""
    import httpx2  # openai's transport: its errors carry these; loaded with openai
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
    raise status_error(response, body)


_STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                  404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError", 429: "RateLimitError"}


def status_error(response: Any, body: object) -> Exception:
    """The openai client's error for a 4xx/5xx answer: its class by status, its message, its body."""
    message = f"Error code: {response.status_code}"
    error = body.get("error", body) if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if isinstance(detail, str) and detail:
        message += f" - {detail}"
    name = "InternalServerError" if response.status_code >= 500 else _STATUS_ERRORS.get(response.status_code)
    kind = getattr(openai, name) if name else openai.APIStatusError
    return kind(message, response=response, body=error if isinstance(body, dict) else body)
