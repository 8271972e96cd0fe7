"""One request with retries: the policy every network path shares — Messages (the summarizer,
``eval --judge``), Message Batches (submit, poll, results) and ``count_tokens``.

:class:`RequestLimits` bounds a path: each attempt as a whole (``timeout``: connect, send,
wait and read, so a server that drips one byte a second is cut off too), the retries, a
response's size, and a total deadline (``deadline_at``, a :func:`time.monotonic` value) after
which no attempt starts and no wait ends — the CLI's ``--deadline``.

A failure the transport calls retryable (a timeout, a connection error, HTTP
408/409/429/5xx/529, an unreadable answer) or an answer ``accept`` rejects (an empty one) is
retried up to ``max_retries`` times, after the wait the server asked for (``retry-after-ms`` /
``retry-after``) or else ``backoff(retry, None)``. A server asking for more than
:data:`MAX_RETRY_AFTER` seconds is not waited for: the request fails at once, and so does one
whose next wait would end past the deadline. Other failures (HTTP 400/401/403/404) fail at
once. Each attempt holds a slot of the batch's request gate (:mod:`.gate`) while it runs,
never while it waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ctxcompact.llm.gate import request_slot
from ctxcompact.llm.transport import TextReply, Transport, TransportFailure

T = TypeVar("T")

#: The longest ``retry-after`` honoured, in seconds. A server asking for more (rate limits of
#: an hour were seen) is not waited for: the attempt counts as failed, with no further retry.
MAX_RETRY_AFTER = 60.0
#: Seconds one attempt may take as a whole.
DEFAULT_REQUEST_TIMEOUT = 60.0
#: The most bytes one answer may have (a summary is tens of KB; the API's own limits are far
#: below this): a larger one is refused as it streams in, never held whole.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """How long and how much one network path may take (see the module docstring)."""

    timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_retries: int = 2
    #: ``time.monotonic()`` after which nothing starts; None: no total deadline.
    deadline_at: float | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES

    def left(self, clock: Callable[[], float] = time.monotonic) -> float | None:
        """Seconds to the deadline (None without one)."""
        return None if self.deadline_at is None else self.deadline_at - clock()


class GaveUp(Exception):
    """No acceptable answer: ``description`` is key-free, for the user."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


DEADLINE_REACHED = "the deadline was reached (--deadline)"


def retry_loop(
    attempt: Callable[[float], T | None],
    *,
    limits: RequestLimits,
    backoff: Callable[[int, float | None], float],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rejected: str = "the answer was rejected",
    on_attempt: Callable[[], None] | None = None,
) -> T:
    """``attempt(timeout)``'s first value that is not None, where ``timeout`` is what the
    attempt may take (``limits.timeout``, less when the deadline is nearer). ``attempt``
    raises :class:`TransportFailure` when it fails; None means the answer was rejected and is
    worth asking again. Raises :class:`GaveUp` with the last reason."""
    last = "no attempt was made"
    for retry in range(limits.max_retries + 1):
        left = limits.left(clock)
        if left is not None and left <= 0:
            raise GaveUp(DEADLINE_REACHED if retry == 0 else f"{last}; then {DEADLINE_REACHED}")
        if on_attempt is not None:
            on_attempt()
        more = retry < limits.max_retries
        try:
            value = attempt(limits.timeout if left is None else min(limits.timeout, left))
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
            if value is not None:
                return value
            last = rejected
            wait = backoff(retry, None)
        if more:
            left = limits.left(clock)
            if left is not None and wait >= left:
                raise GaveUp(f"{last}; the next try would start after the deadline (--deadline)")
            sleep(wait)
    raise GaveUp(last)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One request to a model: its system and user text and the most tokens of its reply."""

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
    deadline_at: float | None = None,
) -> T:
    """``accept(reply)`` of the first reply it does not reject (None); raises :class:`GaveUp`
    (so may ``accept``, for an answer no retry can mend). ``on_attempt`` is called before each
    attempt (the summarizer counts them)."""

    def attempt(left: float) -> T | None:
        with request_slot():
            reply = transport.complete(
                model=prompt.model,
                system=prompt.system,
                user=prompt.user,
                max_tokens=prompt.max_tokens,
                timeout=left,
            )
        return accept(reply)

    limits = RequestLimits(timeout=timeout, max_retries=max_retries, deadline_at=deadline_at)
    return retry_loop(
        attempt, limits=limits, backoff=backoff, sleep=sleep, rejected=rejected, on_attempt=on_attempt
    )
