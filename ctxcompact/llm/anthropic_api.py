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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.errors import InputError, WorkFailedError
from ctxcompact.ir import Block, Message
from ctxcompact.llm.transport import (
    BatchAnswer,
    BatchPoll,
    BatchRequest,
    TextReply,
    TransportFailure,
    call_with_deadline,
)

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
) -> Any:
    """An ``anthropic.Anthropic`` client. Raises :class:`InputError` when no key is set."""
    key = api_key or os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise InputError(f"the Anthropic API needs a key: set {API_KEY_ENV}.")
    import anthropic

    return anthropic.Anthropic(
        api_key=key,
        base_url=base_url or os.environ.get(BASE_URL_ENV) or None,
        timeout=timeout,
        max_retries=max_retries,
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
    """Exact request totals from ``messages.count_tokens``."""

    model: str = DEFAULT_COUNT_MODEL
    client: Any = None
    name: str = "anthropic"

    def count_request(
        self, messages: Sequence[Message], *, system: Sequence[Block] = (), tools: Sequence[Any] = ()
    ) -> int:
        from ctxcompact.transcripts.dialects.anthropic import to_api_messages

        client = self.client or make_client()
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
        import anthropic

        try:
            result = client.messages.count_tokens(**kwargs)
        except anthropic.APIError as exc:
            raise WorkFailedError(f"exact token count failed: {describe_api_error(exc)}.") from None
        return int(result.input_tokens)


# --- the summarizer's transport ----------------------------------------------------------------


class AnthropicTransport:
    """The Messages API as a :class:`~ctxcompact.llm.transport.Transport`: one HTTP
    attempt per :meth:`complete` (the SDK's own retries are off, so the summarizer counts
    attempts exactly), bounded by a total deadline.

    ``client``: an ``anthropic.Anthropic``, used with its own per-read timeouts and left open;
    at the deadline the caller gets its failure at once and the abandoned request ends when
    the client's timeouts fire. ``None`` (the CLI's way): a client per attempt from
    ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL`` (or ``api_key`` / ``base_url``), closed when
    the attempt ends — at the deadline too, which drops the connection.
    """

    name = "anthropic"

    def __init__(
        self, *, client: Any = None, api_key: str | None = None, base_url: str | None = None
    ) -> None:
        self.client = client
        self._api_key = api_key
        self._base_url = base_url

    def __repr__(self) -> str:  # never shows the key
        return f"AnthropicTransport(client={'given' if self.client is not None else 'per attempt'})"

    def complete(self, *, model: str, system: str, user: str, max_tokens: int, timeout: float) -> TextReply:
        owned = self.client is None
        if owned:
            client = make_client(
                api_key=self._api_key, base_url=self._base_url, timeout=timeout, max_retries=0
            )
        else:
            client = self.client.with_options(max_retries=0)

        def send() -> Any:
            return client.messages.create(
                model=model,
                max_tokens=max_tokens,
                system=system,
                messages=[{"role": "user", "content": user}],
            )

        try:
            response = call_with_deadline(
                send, timeout=timeout, cancel=client.close if owned else _leave_open
            )
        except TransportFailure:
            raise
        except Exception as exc:
            # The boundary of the SDK call: whatever the server's answer made the SDK raise
            # (an HTTP error, a body that is not UTF-8 or not JSON, an AttributeError on JSON
            # of the wrong shape) is a failed attempt, not a bug of ours.
            raise classify_api_error(exc) from None
        finally:
            if owned:
                client.close()
        return _text_reply(response)


class AnthropicBatches:
    """The Message Batches API (``client.messages.batches``): submit requests, look at the
    batch, read its results. ``client`` None: one from ``ANTHROPIC_API_KEY`` /
    ``ANTHROPIC_BASE_URL`` (an :class:`InputError` when no key is set), with the SDK's own
    retries. An API error becomes a :class:`WorkFailedError` (exit 3), key-free."""

    def __init__(self, *, client: Any = None) -> None:
        self.client = client if client is not None else make_client()

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
        batch = self._call(
            "submitting the message batch", lambda: self.client.messages.batches.create(requests=params)
        )
        return str(batch.id)

    def poll(self, batch_id: str) -> BatchPoll:
        batch = self._call(
            "polling the message batch", lambda: self.client.messages.batches.retrieve(batch_id)
        )
        counts = batch.request_counts
        return BatchPoll(
            batch_id,
            str(batch.processing_status),
            processing=int(counts.processing),
            succeeded=int(counts.succeeded),
            errored=int(counts.errored),
            expired=int(counts.expired),
            canceled=int(counts.canceled),
        )

    def results(self, batch_id: str) -> dict[str, BatchAnswer]:
        """Each request's answer by ``custom_id``: its reply, or why it has none."""

        def read() -> dict[str, BatchAnswer]:
            return {
                str(entry.custom_id): _batch_answer(entry.result)
                for entry in self.client.messages.batches.results(batch_id)
            }

        return self._call("reading the message batch's results", read)

    def _call(self, doing: str, call: Any) -> Any:
        import anthropic

        try:
            return call()
        except anthropic.AnthropicError as exc:
            raise WorkFailedError(f"{doing} failed: {describe_api_error(exc)}.") from None


def _batch_answer(result: Any) -> BatchAnswer:
    """One result of a batch: the reply when it succeeded, else a key-free reason."""
    kind = getattr(result, "type", None)
    if kind == "succeeded":
        try:
            return _text_reply(result.message)
        except TransportFailure as failure:
            return failure.description
    if kind == "errored":
        error = getattr(getattr(result, "error", None), "error", None)
        detail = getattr(error, "type", None)
        return "the batch request errored" + (f" ({detail})" if isinstance(detail, str) else "")
    return f"the batch request {kind if isinstance(kind, str) else 'failed'}"


def _leave_open() -> None:
    """A client the caller passed in is theirs to close."""


def classify_api_error(exc: BaseException) -> TransportFailure:
    """A :class:`TransportFailure` for anything the SDK raised during one request.

    Retryable: a timeout, a connection error, HTTP 408/409/429/5xx (529 overloaded included)
    unless the server said ``x-should-retry: false`` (the SDK's own policy), and an answer the
    SDK could not read. Other HTTP statuses (400, 401, 403, 404, ...) are not.
    """
    import anthropic

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
    """The text blocks of a Messages API answer, joined; a failure when it has no content list
    (the SDK builds its objects without validating the server's JSON)."""
    content = getattr(response, "content", None)
    if not isinstance(content, list):
        raise TransportFailure("the API's answer has no content", retryable=True)
    texts = [
        block.text
        for block in content
        if getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str)
    ]
    stop_reason = getattr(response, "stop_reason", None)
    model = getattr(response, "model", None)
    return TextReply(
        "".join(texts),
        stop_reason if isinstance(stop_reason, str) else None,
        model if isinstance(model, str) else None,
    )
