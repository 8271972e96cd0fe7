"""The one home of the ``anthropic`` SDK: client creation, exact token counts, the
summarizer's transport (:class:`AnthropicTransport`) with its error mapping, and the Message
Batches client (:class:`AnthropicBatches`) ``--summarizer anthropic-batch`` uses.

The SDK takes about a second to import, so it is imported inside functions only, when a
command actually calls the API. The API key comes from the environment
(``ANTHROPIC_API_KEY``) or the caller and is never printed, logged or written: error
messages are built from the SDK's status and error type, not from request objects.
``ANTHROPIC_BASE_URL`` points the client elsewhere (the tests' fake server; a proxy).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ctxcompact.errors import InputError, WorkFailedError
from ctxcompact.ir import Block, Message
from ctxcompact.llm.retry import MAX_RESPONSE_BYTES, GaveUp, RequestLimits, retry_loop
from ctxcompact.llm.transport import (
    BatchAnswer,
    BatchPoll,
    BatchRequest,
    TextReply,
    TransportFailure,
    call_with_deadline,
)
from ctxcompact.transcripts.jsontext import loads

T = TypeVar("T")

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_COUNT_MODEL = "claude-sonnet-5-5"  # claude-sonnet-4-5 retires 2026-11-30 (SDK deprecation list)
DEFAULT_SUMMARY_MODEL = "claude-haiku-4-5"


def api_key_available(env: Mapping[str, str] | None = None) -> bool:
    return bool((env if env is not None else os.environ).get(API_KEY_ENV, "").strip())


def make_client(
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    max_response_bytes: int | None = None,
) -> Any:
    """An ``anthropic.Anthropic`` client; with ``max_response_bytes``, every answer it reads
    is capped at that size (:mod:`ctxcompact.llm.capped_http`). Raises :class:`InputError`
    when no key is set."""
    key = _key(api_key)
    import anthropic

    http_client = None
    if max_response_bytes is not None:
        from ctxcompact.llm.capped_http import capped_http_client

        http_client = capped_http_client(max_response_bytes, timeout=timeout)
    return anthropic.Anthropic(
        api_key=key,
        base_url=base_url or os.environ.get(BASE_URL_ENV) or None,
        timeout=timeout,
        max_retries=max_retries,
        http_client=http_client,
    )


def describe_api_error(exc: BaseException) -> str:
    """A one-line, key-free description of an SDK exception."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return "the API did not answer in time"
    if isinstance(exc, anthropic.APIConnectionError):
        return "could not connect to the API"
    if isinstance(exc, anthropic.APIStatusError):
        kind = ""
        body = exc.body
        if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
            kind = str(body["error"].get("type", ""))
        return f"the API answered HTTP {exc.status_code}" + (f" ({kind})" if kind else "")
    return type(exc).__name__


def api_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tool definitions in Anthropic's shape (OpenAI ``function`` tools converted)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        if isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            out.append(
                {
                    "name": fn.get("name", "tool"),
                    "description": fn.get("description", ""),
                    "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
                }
            )
        else:
            out.append(dict(tool))
    return out


@dataclass(slots=True)
class AnthropicTotalCounter:
    """Exact request totals from ``messages.count_tokens``, within ``limits`` (a client per
    attempt unless ``client`` is given; see :class:`AnthropicTransport`)."""

    model: str = DEFAULT_COUNT_MODEL
    client: Any = None
    name: str = "anthropic"
    limits: RequestLimits = field(default_factory=RequestLimits)

    def count_request(
        self, messages: Sequence[Message], *, system: Sequence[Block] = (), tools: Sequence[Any] = ()
    ) -> int:
        from ctxcompact.transcripts.dialects.anthropic import to_api_messages

        inline_system, api_messages = to_api_messages(messages)
        system_text = "\n\n".join(
            [str(b.get("text", "")) for b in system if b.get("type") == "text"]
            + ([inline_system] if inline_system else [])
        )
        kwargs: dict[str, Any] = {"model": self.model, "messages": api_messages}
        if system_text:
            kwargs["system"] = system_text
        if tools:
            kwargs["tools"] = api_tools(tools)

        def send(client: Any) -> int:
            tokens = _field(client.messages.count_tokens(**kwargs), "input_tokens")
            if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
                raise TransportFailure("the API's token count is not a number", retryable=True)
            return tokens

        return _with_retries(_Connection(self.client), "exact token count", send, self.limits)


# --- one attempt, and the retries around it -----------------------------------------------------


class _Connection:
    """Where attempts go: a ``client`` the caller gave (used as it is, with the SDK's retries
    off, and left open), or a fresh client per attempt from ``ANTHROPIC_API_KEY`` /
    ``ANTHROPIC_BASE_URL`` (or ``api_key`` / ``base_url``) whose HTTP transport caps every
    answer's size, closed when the attempt ends — at the deadline too, which drops the
    connection. Raises :class:`InputError` at once when there is no client and no key."""

    def __init__(
        self, client: Any = None, *, api_key: str | None = None, base_url: str | None = None
    ) -> None:
        self.client = client
        self._api_key = api_key
        self._base_url = base_url
        if client is None:
            _key(api_key)

    def attempt(self, send: Callable[[Any], T], *, timeout: float, max_bytes: int) -> T:
        """``send(client)``, one attempt of at most ``timeout`` seconds as a whole; whatever
        goes wrong is a :class:`TransportFailure`."""
        owned = self.client is None
        if owned:
            client = make_client(
                api_key=self._api_key,
                base_url=self._base_url,
                timeout=timeout,
                max_retries=0,
                max_response_bytes=max_bytes,
            )
        else:
            client = self.client.with_options(max_retries=0)
        try:
            return call_with_deadline(
                lambda: send(client), timeout=timeout, cancel=client.close if owned else _leave_open
            )
        except TransportFailure:
            raise
        except Exception as exc:
            # The boundary of the SDK call: whatever the server's answer made the SDK (or our
            # reading of it) raise — an HTTP error, a body that is not UTF-8 or not JSON, JSON
            # of the wrong shape, one too large — is a failed attempt, not a bug of ours.
            raise classify_api_error(exc) from None
        finally:
            if owned:
                client.close()


def _with_retries(
    connection: _Connection,
    doing: str,
    send: Callable[[Any], T],
    limits: RequestLimits,
    *,
    max_bytes: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``send`` through ``connection`` with the shared retry policy
    (:func:`ctxcompact.llm.retry.retry_loop`); a failure is :class:`WorkFailedError` (exit 3)
    saying what was being done, key-free."""

    def attempt(timeout: float) -> T:
        return connection.attempt(send, timeout=timeout, max_bytes=max_bytes or limits.max_response_bytes)

    try:
        return retry_loop(attempt, limits=limits, backoff=_backoff, sleep=sleep)
    except GaveUp as failure:
        raise WorkFailedError(f"{doing} failed: {failure.description}.") from None


def _backoff(retry: int, retry_after: float | None) -> float:
    if retry_after is not None and retry_after > 0:
        return retry_after
    return min(0.5 * 2**retry, 8.0) * (1 - 0.25 * random.random())


# --- the summarizer's transport ----------------------------------------------------------------


class AnthropicTransport:
    """The Messages API as a :class:`~ctxcompact.llm.transport.Transport`: one HTTP
    attempt per :meth:`complete` (the SDK's own retries are off, so the summarizer counts
    attempts exactly), bounded as a whole by its ``timeout``.

    ``client``: an ``anthropic.Anthropic``, used with its own per-read timeouts and left open;
    at the deadline the caller gets its failure at once and the abandoned request ends when
    the client's timeouts fire. ``None`` (the CLI's way): a client per attempt (see
    :class:`_Connection`), its answers capped at ``max_response_bytes``.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.client = client
        self._connection = _Connection(client, api_key=api_key, base_url=base_url) if client else None
        self._api_key = api_key
        self._base_url = base_url
        self.max_response_bytes = max_response_bytes

    def __repr__(self) -> str:  # never shows the key
        return f"AnthropicTransport(client={'given' if self.client is not None else 'per attempt'})"

    def complete(self, *, model: str, system: str, user: str, max_tokens: int, timeout: float) -> TextReply:
        def send(client: Any) -> TextReply:
            return _text_reply(
                client.messages.create(
                    model=model,
                    max_tokens=max_tokens,
                    system=system,
                    messages=[{"role": "user", "content": user}],
                )
            )

        # The key is looked up at the first request, not before: a summarizer is built before
        # it is known whether any summary will be asked for.
        connection = self._connection or _Connection(api_key=self._api_key, base_url=self._base_url)
        return connection.attempt(send, timeout=timeout, max_bytes=self.max_response_bytes)


# --- Message Batches -------------------------------------------------------------------------------

#: A line of a batch's results: one answer, so at most a reply of 32K tokens and its envelope.
MAX_RESULT_LINE_BYTES = 16 * 1024 * 1024
#: All of a batch's results: 100,000 requests (the API's most) of ~10 KB answers.
MAX_RESULTS_BYTES = 1024 * 1024 * 1024


class AnthropicBatches:
    """The Message Batches API: submit requests, look at the batch, read its results — each
    request within ``limits`` (the same per-request timeout, retries, retry-after cap and
    deadline as every other path; a client per attempt unless ``client`` is given). The
    results are read as they stream in, a line at a time, each line capped at
    :data:`MAX_RESULT_LINE_BYTES` and all of them at :data:`MAX_RESULTS_BYTES`. No key:
    :class:`InputError` (exit 2) at once; an API that fails or answers what is not a batch:
    :class:`WorkFailedError` (exit 3), key-free."""

    def __init__(
        self,
        *,
        client: Any = None,
        limits: RequestLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.limits = limits or RequestLimits()
        self._connection = _Connection(client)
        self._sleep = sleep

    def __repr__(self) -> str:  # never shows the key
        return "AnthropicBatches()"

    def submit(self, requests: Sequence[BatchRequest]) -> str:
        """Submit ``requests`` as one batch; its id."""
        params = [
            {
                "custom_id": r.custom_id,
                "params": {
                    "model": r.model,
                    "max_tokens": r.max_tokens,
                    "system": r.system,
                    "messages": [{"role": "user", "content": r.user}],
                },
            }
            for r in requests
        ]

        def send(client: Any) -> str:
            batch_id = _field(client.messages.batches.create(requests=params), "id")
            if not isinstance(batch_id, str) or not batch_id:
                raise TransportFailure("the API's answer names no batch", retryable=False)
            return batch_id

        return self._call("submitting the message batch", send)

    def poll(self, batch_id: str) -> BatchPoll:
        def send(client: Any) -> BatchPoll:
            batch = client.messages.batches.retrieve(batch_id)
            counts = _field(batch, "request_counts")
            status = _field(batch, "processing_status")
            if not isinstance(status, str):
                raise TransportFailure("the API's answer is not a message batch", retryable=True)
            return BatchPoll(batch_id, status, **{k: _count(_field(counts, k)) for k in _COUNTS})

        return self._call("polling the message batch", send)

    def results(self, batch_id: str) -> dict[str, BatchAnswer]:
        """Each request's answer by ``custom_id``: its reply, or why it has none."""

        def send(client: Any) -> dict[str, BatchAnswer]:
            answers: dict[str, BatchAnswer] = {}
            with client.messages.batches.with_streaming_response.results(batch_id) as response:
                for line in _lines(response.iter_bytes(), MAX_RESULT_LINE_BYTES):
                    entry, error = loads(line)
                    if error is not None or not isinstance(entry, Mapping):
                        raise TransportFailure("a line of the batch's results is not JSON", retryable=True)
                    answers[str(entry.get("custom_id"))] = _batch_answer(entry.get("result"))
            return answers

        return self._call("reading the message batch's results", send, max_bytes=MAX_RESULTS_BYTES)

    def _call(self, doing: str, send: Callable[[Any], T], *, max_bytes: int | None = None) -> T:
        return _with_retries(
            self._connection, doing, send, self.limits, max_bytes=max_bytes, sleep=self._sleep
        )


_COUNTS = ("processing", "succeeded", "errored", "expired", "canceled")


def _count(value: Any) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise TransportFailure("the API's batch counts are not numbers", retryable=True)
    return value


def _lines(chunks: Iterable[bytes], max_line: int) -> Iterator[bytes]:
    """The non-empty lines of a byte stream; a line over ``max_line`` bytes is refused as
    soon as it gets there (never held whole)."""
    pending = bytearray()  # grown in place: a long line costs its length, not its square
    for chunk in chunks:
        pending += chunk
        cut = pending.rfind(b"\n")
        if cut >= 0:
            for line in bytes(pending[:cut]).split(b"\n"):
                if line.strip():
                    yield line
            del pending[: cut + 1]
        if len(pending) > max_line:
            raise TransportFailure(
                f"a line of the batch's results is over {max_line:,} bytes", retryable=False
            )
    if pending.strip():
        yield bytes(pending)


def _batch_answer(result: Any) -> BatchAnswer:
    """One result of a batch: the reply when it succeeded, else a key-free reason."""
    kind = _field(result, "type")
    if kind == "succeeded":
        try:
            return _text_reply(_field(result, "message"))
        except TransportFailure as failure:
            return failure.description
    if kind == "errored":
        detail = _field(_field(_field(result, "error"), "error"), "type")
        return "the batch request errored" + (f" ({detail})" if isinstance(detail, str) else "")
    return f"the batch request {kind if isinstance(kind, str) else 'failed'}"


def _field(value: Any, name: str) -> Any:
    """``value[name]`` of parsed JSON, or the attribute of an SDK object; None when absent."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _key(api_key: str | None) -> str:
    key = api_key or os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise InputError(f"the Anthropic API needs a key: set {API_KEY_ENV}.")
    return key


def _leave_open() -> None:
    """A client the caller passed in is theirs to close."""


def classify_api_error(exc: BaseException) -> TransportFailure:
    """A :class:`TransportFailure` for anything the SDK raised during one request.

    Retryable: a timeout, a connection error, HTTP 408/409/429/5xx (529 overloaded included)
    unless the server said ``x-should-retry: false`` (the SDK's own policy), and an answer the
    SDK could not read. Other HTTP statuses (400, 401, 403, 404, ...) are not.
    """
    import anthropic

    from ctxcompact.llm.capped_http import ResponseTooLarge

    cause: BaseException | None = exc
    while cause is not None:  # the SDK wraps what the HTTP layer raised
        if isinstance(cause, ResponseTooLarge):
            return TransportFailure(str(cause), retryable=False)
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        headers = exc.response.headers
        should_retry = headers.get("x-should-retry")
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        else:
            retryable = status in (408, 409, 429) or status >= 500
        return TransportFailure(
            describe_api_error(exc), retryable=retryable, status=status, retry_after=_retry_after(headers)
        )
    if isinstance(exc, anthropic.APIConnectionError):  # APITimeoutError is one of these
        return TransportFailure(describe_api_error(exc), retryable=True)
    return TransportFailure(f"the API's answer could not be read ({type(exc).__name__})", retryable=True)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms``, or ``retry-after`` (seconds or an HTTP date)."""
    try:
        return float(headers.get("retry-after-ms", "")) / 1000
    except ValueError:
        pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    import email.utils
    import time

    parsed = email.utils.parsedate_tz(value)
    return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def _text_reply(response: Any) -> TextReply:
    """The text blocks of a Messages API answer (an SDK object, or parsed JSON), joined; a
    failure when it has no content list (the SDK builds its objects without validating the
    server's JSON)."""
    content = _field(response, "content")
    if not isinstance(content, list):
        raise TransportFailure("the API's answer has no content", retryable=True)
    texts = [
        _field(block, "text")
        for block in content
        if _field(block, "type") == "text" and isinstance(_field(block, "text"), str)
    ]
    stop_reason = _field(response, "stop_reason")
    model = _field(response, "model")
    return TextReply(
        "".join(texts),
        stop_reason if isinstance(stop_reason, str) else None,
        model if isinstance(model, str) else None,
    )
