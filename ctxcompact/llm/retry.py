"""One request with retries: the retry policy every LLM backend user shares (the summarizer,
``eval --judge``).

A failure the transport calls retryable (a timeout, a connection error, HTTP
408/409/429/5xx/529, an unreadable answer) or an answer ``accept`` rejects (an empty one) is
retried up to ``max_retries`` times, after the wait the server asked for (``retry-after-ms`` /
``retry-after``) or else ``backoff(retry, None)``. A server asking for more than
:data:`MAX_RETRY_AFTER` seconds is not waited for: the request fails at once. Other failures
(HTTP 400/401/403/404) fail at once. Each attempt holds a slot of the batch's request gate
(:mod:`.gate`) while it runs, never while it waits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ctxcompact.llm.gate import request_slot
from ctxcompact.llm.transport import TextReply, Transport, TransportFailure

T = TypeVar("T")

#: The longest ``retry-after`` honoured, in seconds. A server asking for more (rate limits of
#: an hour were seen) is not waited for: the attempt counts as failed, with no further retry.
MAX_RETRY_AFTER = 60.0


class GaveUp(Exception):
    """No acceptable answer: ``description`` is key-free, for the user."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True, slots=True)
class Prompt:
    model: str
    system: str
    user: str
    max_tokens: int


def complete_with_retries(
    transport: Transport,
    prompt: Prompt,
    *,
    timeout: float,
    max_retries: int,
    accept: Callable[[TextReply], T | None],
    backoff: Callable[[int, float | None], float],
    sleep: Callable[[float], None],
    rejected: str = "the model returned an empty answer",
    on_attempt: Callable[[], None] | None = None,
) -> T:
    """``accept(reply)`` of the first reply it does not reject (None); raises :class:`GaveUp`.
    ``on_attempt`` is called before each attempt (the summarizer counts them)."""
    last = "no attempt was made"
    for retry in range(max_retries + 1):
        if on_attempt is not None:
            on_attempt()
        more = retry < max_retries
        try:
            with request_slot():
                reply = transport.complete(
                    model=prompt.model,
                    system=prompt.system,
                    user=prompt.user,
                    max_tokens=prompt.max_tokens,
                    timeout=timeout,
                )
        except TransportFailure as failure:
            last = failure.description
            if not failure.retryable:
                raise GaveUp(last) from None
            if more and failure.retry_after is not None and failure.retry_after > MAX_RETRY_AFTER:
                last += (
                    f"; the server asked to wait {failure.retry_after:,.0f} s before retrying,"
                    f" more than the {MAX_RETRY_AFTER:g} s ctxcompact waits"
                )
                raise GaveUp(last) from None
            wait = backoff(retry, failure.retry_after)
        else:
            value = accept(reply)
            if value is not None:
                return value
            last = rejected
            wait = backoff(retry, None)
        if more:
            sleep(wait)
    raise GaveUp(last)
