"""Who answers the judge's requests: the Messages API one request at a time
(:class:`DirectAsker`), the Message Batches API one batch per call (:class:`BatchAsker`), and
the content-hash cache in front of either (:class:`CachedAsker`).

Every asker answers a list of :class:`~ctxcompact.llm.transport.BatchRequest` (named by
``custom_id``, a hash of the rest) with a :data:`~ctxcompact.llm.transport.BatchAnswer`
per request: the reply, or a key-free reason why there is none. A failed request never raises:
its score is reported missing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ctxcompact.batch.message_batches import POLL_INTERVAL, BatchBackend, run_message_batch
from ctxcompact.compaction.summarize.llm import BACKOFF_INITIAL, BACKOFF_MAX, DEFAULT_TIMEOUT
from ctxcompact.evaluation.judge.cache import JudgeCache
from ctxcompact.llm.retry import GaveUp, Prompt, complete_with_retries
from ctxcompact.llm.transport import (
    BatchAnswer,
    BatchPoll,
    BatchRequest,
    TextReply,
    Transport,
)

DEFAULT_MAX_RETRIES = 3


class Asker(Protocol):
    def ask(self, requests: Sequence[BatchRequest]) -> dict[str, BatchAnswer]: ...


class DirectAsker:
    """The requests one after the other through ``transport`` (one attempt per call), with the
    summarizer's retry policy (:func:`ctxcompact.llm.retry.complete_with_retries`:
    timeouts, 408/409/429/5xx/529, unreadable and empty answers retried up to ``max_retries``
    times) and its exponential backoff with jitter."""

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        deadline_at: float | None = None,
    ) -> None:
        self.transport = transport
        self.deadline_at = deadline_at
        self.timeout = timeout
        self.max_retries = max_retries
        self._sleep = sleep
        self._jitter = jitter

    def ask(self, requests: Sequence[BatchRequest]) -> dict[str, BatchAnswer]:
        return {r.custom_id: self._one(r) for r in requests}

    def _one(self, request: BatchRequest) -> BatchAnswer:
        prompt = Prompt(request.model, request.system, request.user, request.max_tokens)
        try:
            return complete_with_retries(
                self.transport,
                prompt,
                timeout=self.timeout,
                max_retries=self.max_retries,
                accept=lambda reply: reply if reply.text.strip() else None,
                backoff=self._backoff,
                sleep=self._sleep,
                deadline_at=self.deadline_at,
            )
        except GaveUp as failure:
            return failure.description

    def _backoff(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after > 0:
            return retry_after
        return min(BACKOFF_INITIAL * 2**retry, BACKOFF_MAX) * (1 - 0.25 * self._jitter())


class BatchAsker:
    """All the requests of one call as one Message Batch (split at the API's size limit),
    polled every ``poll_interval`` seconds until it ends (each look to ``on_poll``)."""

    def __init__(
        self,
        backend: BatchBackend,
        *,
        poll_interval: float = POLL_INTERVAL,
        sleep: Callable[[float], None] = time.sleep,
        on_poll: Callable[[BatchPoll], None] | None = None,
        deadline_at: float | None = None,
    ) -> None:
        self.backend = backend
        self.deadline_at = deadline_at
        self.poll_interval = poll_interval
        self._sleep = sleep
        self.on_poll = on_poll

    def ask(self, requests: Sequence[BatchRequest]) -> dict[str, BatchAnswer]:
        if not requests:
            return {}
        answers = run_message_batch(
            requests,
            self.backend,
            poll_interval=self.poll_interval,
            sleep=self._sleep,
            on_poll=self.on_poll,
            deadline_at=self.deadline_at,
        )
        return {
            r.custom_id: answers.get(r.custom_id, "the message batch has no answer for this request")
            for r in requests
        }


class CachedAsker:
    """``inner`` behind ``cache``: a request answered before is not sent again; a new reply
    is stored. ``sent`` counts the requests handed to ``inner``."""

    def __init__(self, inner: Asker, cache: JudgeCache) -> None:
        self.inner = inner
        self.cache = cache
        self.sent = 0

    def ask(self, requests: Sequence[BatchRequest]) -> dict[str, BatchAnswer]:
        out: dict[str, BatchAnswer] = {}
        todo: dict[str, BatchRequest] = {}
        for request in requests:
            cached = self.cache.get(request.custom_id)
            if cached is not None:
                out[request.custom_id] = TextReply(cached)
            else:
                todo.setdefault(request.custom_id, request)
        if todo:
            self.sent += len(todo)
            for key, answer in self.inner.ask(list(todo.values())).items():
                if isinstance(answer, TextReply):
                    self.cache.put(key, answer.text)
                out[key] = answer
        return out
