"""An HTTP transport for the SDK's client that refuses a response body over a byte limit as it
streams in — an answer, an error body or a batch's results — so a hostile or broken server
cannot make ctxcompact hold gigabytes (a 2 GB answer once cost 5.2 GB of memory).

Imported only by :func:`ctxcompact.llm.anthropic_api.make_client`, when a request is about to be
sent (it imports ``httpx2``, the SDK's HTTP library).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2


class ResponseTooLarge(Exception):
    """A response body went past the limit; what was read of it is dropped."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the API's answer is larger than {limit:,} bytes")
        self.limit = limit


class CappedTransport(httpx2.BaseTransport):
    """``inner`` (the SDK's own transport) with every response body capped at ``limit`` bytes:
    a declared ``content-length`` over it is refused before any byte is read, and a body that
    streams past it is cut off there."""

    def __init__(self, inner: httpx2.BaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._inner.handle_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:
            response.close()
            raise ResponseTooLarge(self._limit)
        response.stream = _CappedStream(response.stream, self._limit)
        return response

    def close(self) -> None:
        self._inner.close()


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(self._limit)
            yield chunk

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


def capped_http_client(limit: int, *, timeout: float) -> httpx2.Client:
    """The SDK's default HTTP client (its timeouts, connection limits, keep-alive) with
    :class:`CappedTransport` in front of its transport."""
    import anthropic

    return anthropic.DefaultHttpxClient(
        transport=CappedTransport(httpx2.HTTPTransport(), limit),
        timeout=timeout,
    )
