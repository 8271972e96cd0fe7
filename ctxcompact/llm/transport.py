"""The seam between the LLM summarizer and an LLM backend: one text request, one answer.

A :class:`Transport` sends one prompt (a system text and a user text) to one model and returns
the answer's text, in exactly one attempt: retries, backoff, chunking and merging belong to
:class:`ctxcompact.compaction.summarize.llm.LLMSummarizer`, which every backend shares. Adding a backend
(an OpenAI-compatible endpoint by ``base_url``, the Message Batches API) is one class with a
``name`` and a ``complete`` method; see :class:`ctxcompact.llm.anthropic_api.AnthropicTransport`.

The contract of ``complete``:

- ``timeout`` bounds the whole attempt (connect, send, wait, read), not each read: a server
  that drips one byte a second still fails after ``timeout`` seconds.
  :func:`call_with_deadline` gives any blocking client that guarantee.
- Whatever goes wrong on the way to the answer (no connection, an HTTP error, a body that is
  not UTF-8 or not JSON, an answer of the wrong shape) is raised as :class:`TransportFailure`,
  never as the client library's own exception, so the summarizer can retry and its caller
  can fall back. Its ``description`` never holds the key or the request.

This module imports no client library.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

__all__ = [
    "BatchAnswer",
    "BatchPoll",
    "BatchRequest",
    "TextReply",
    "Transport",
    "TransportFailure",
    "call_with_deadline",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TextReply:
    """The text of an answer (text blocks joined) and why the model stopped."""

    text: str
    stop_reason: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One summary request of a Message Batch, named by ``custom_id`` (a hash of the rest)."""

    custom_id: str
    model: str
    system: str
    user: str
    max_tokens: int


#: A Message Batch's answer to one request: the reply, or why there is none (key-free:
#: "the batch request errored (invalid_request_error)", "the batch request expired").
BatchAnswer = TextReply | str


@dataclass(frozen=True, slots=True)
class BatchPoll:
    """What one look at a submitted Message Batch saw: ``status`` is the API's
    ``processing_status`` (``in_progress``, ``canceling``, ``ended``)."""

    batch_id: str
    status: str
    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    canceled: int = 0

    @property
    def ended(self) -> bool:
        return self.status == "ended"

    def describe(self) -> str:
        """One progress line: ``message batch msgbatch_…: in_progress (2 processing, 1 succeeded)``."""
        counts = [
            f"{n} {label}"
            for n, label in (
                (self.processing, "processing"),
                (self.succeeded, "succeeded"),
                (self.errored, "errored"),
                (self.expired, "expired"),
                (self.canceled, "canceled"),
            )
            if n
        ]
        return f"message batch {self.batch_id}: {self.status}" + (f" ({', '.join(counts)})" if counts else "")


class TransportFailure(Exception):
    """One attempt failed. ``description``: key-free, for the user ("the API answered HTTP
    529 (overloaded_error)"). ``retryable``: whether another attempt may succeed (timeouts,
    connection errors, rate limits, overload, garbled answers). ``retry_after``: seconds the
    server asked the client to wait before the next attempt, when it said so."""

    def __init__(
        self,
        description: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(description)
        self.description = description
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class Transport(Protocol):
    """One LLM backend, one attempt per call. See the module docstring for the contract."""

    @property
    def name(self) -> str:
        """The summarizer name a summary made through this transport reports."""
        ...

    def complete(self, *, model: str, system: str, user: str, max_tokens: int, timeout: float) -> TextReply:
        """The answer to one prompt; raises :class:`TransportFailure`, nothing else, when
        there is none within ``timeout`` seconds."""
        ...


def call_with_deadline(call: Callable[[], T], *, timeout: float, cancel: Callable[[], None]) -> T:
    """``call()``'s result, or :class:`TransportFailure` once ``timeout`` seconds have passed.

    ``call`` runs in a daemon thread, so the deadline holds whatever the client does with its
    sockets (per-read timeouts never fire on a server that drips). At the deadline ``cancel``
    is called to stop the abandoned call (close the client it uses); the caller does not wait
    for it. Whatever ``call`` raises is re-raised here, in the caller's thread.
    """
    done = threading.Event()
    outcome: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the caller's thread, which re-raises it
            error.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="ctxcompact-request", daemon=True).start()
    try:
        finished = done.wait(timeout)
    except BaseException:  # Ctrl-C while waiting: stop the request too
        cancel()
        raise
    if not finished:
        cancel()
        raise TransportFailure(f"the API did not answer in time (within {timeout:g} s)", retryable=True)
    if error:
        raise error[0]
    return outcome[0]
