"""The one home of the ``anthropic`` SDK: client creation, exact token counts, error mapping.

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

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_COUNT_MODEL = "claude-sonnet-4-5"


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
        from ctxcompact.dialects.anthropic import to_api_messages

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


# --- single text requests (used by the summarizer's own retry loop) --------------------------


@dataclass(frozen=True, slots=True)
class ApiFailure:
    """What went wrong with one API attempt, without the key or the request.

    ``retryable``: a timeout, a connection error, or HTTP 408/409/429/5xx (529 overloaded
    included), unless the server said ``x-should-retry: false`` — the SDK's own policy.
    ``retry_after``: seconds the server asked us to wait (``retry-after-ms`` or
    ``retry-after``), when it said so.
    """

    description: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class TextReply:
    """The text of a Messages API answer (text blocks joined) and why the model stopped."""

    text: str
    stop_reason: str | None
    model: str | None


def classify_api_error(exc: BaseException) -> ApiFailure | None:
    """An :class:`ApiFailure` for an SDK error, ``None`` for anything else (a bug stays a bug)."""
    import anthropic

    if not isinstance(exc, anthropic.APIError):
        return None
    description = describe_api_error(exc)
    if isinstance(exc, anthropic.APIConnectionError):  # APITimeoutError is one of these
        return ApiFailure(description, retryable=True)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        headers = exc.response.headers
        should_retry = headers.get("x-should-retry")
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        else:
            retryable = status in (408, 409, 429) or status >= 500
        return ApiFailure(description, retryable, status, _retry_after(headers))
    return ApiFailure(description, retryable=False)


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


def request_text(client: Any, *, model: str, system: str, user: str, max_tokens: int) -> TextReply:
    """One Messages API call, exactly one HTTP attempt (the SDK's retries are switched off so
    the caller's retry loop counts attempts exactly). SDK errors propagate: classify them with
    :func:`classify_api_error`."""
    response = client.with_options(max_retries=0).messages.create(
        model=model,
        max_tokens=max_tokens,
        system=system,
        messages=[{"role": "user", "content": user}],
    )
    texts = [str(getattr(b, "text", "")) for b in response.content if getattr(b, "type", None) == "text"]
    return TextReply("".join(texts), getattr(response, "stop_reason", None), getattr(response, "model", None))
