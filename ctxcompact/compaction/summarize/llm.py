"""The LLM summarizer, for every backend.

:class:`LLMSummarizer` holds everything that does not depend on who answers: the prompt, the
chunking, the merging, the retries and the backoff. The backend is a
:class:`~ctxcompact.llm.transport.Transport` (the Anthropic Messages API:
:class:`ctxcompact.llm.anthropic_api.AnthropicTransport`); a new one needs none of this code.

How a call goes:

1. The messages are serialized (:mod:`.serialize`) into the prompt of :mod:`.prompt` and the
   request is measured with ``counter`` (tiktoken by default). If it fits in
   ``context_budget`` tokens, it is sent as one request.
2. Otherwise the messages are split into chunks that fit (tool interaction blocks are never
   split; a block too large on its own is clipped to fit), each chunk is summarized, and the
   partial summaries are merged with one more request (in rounds, if even the partial
   summaries do not fit in one). No request over ``context_budget`` is ever sent.
3. Every request is one attempt of the transport, bounded as a whole by ``timeout`` seconds,
   inside this module's retry loop, so ``Summary.attempts`` is exact. A failure the transport
   calls retryable (a timeout, a connection error, HTTP 408/409/429/5xx/529, an unreadable
   answer) or an empty answer is retried up to ``max_retries`` times, after the wait the
   server asked for (``retry-after-ms`` / ``retry-after``) or else an exponential backoff
   with jitter (:data:`BACKOFF_INITIAL` doubling up to :data:`BACKOFF_MAX`). A server that
   asks for more than :data:`MAX_RETRY_AFTER` seconds is not waited for: the summary fails at
   once, so the caller can fall back. Other failures (HTTP 400/401/403/404) fail at once.
   A run therefore gives up after about ``timeout × (max_retries + 1)`` plus the waits.
4. The text inside ``<summary>…</summary>`` is returned (the whole answer when there are no
   tags). An empty or whitespace-only answer is a failure, and so is one cut off at
   ``max_tokens`` (its ``<summary>`` never closed): half a summary is never kept.
5. ``deadline_at`` (``--deadline``) bounds the whole run: no request starts after it and no
   wait ends past it (:func:`ctxcompact.llm.retry.retry_loop`).

Failures raise :class:`~ctxcompact.compaction.summarize.SummaryFailed` with a key-free reason.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence

from ctxcompact.accounting.tokens import TiktokenCounter, TokenCounter
from ctxcompact.compaction.summarize import Summary, SummaryFailed
from ctxcompact.compaction.summarize.limits import DEFAULT_MAX_RETRIES as DEFAULT_MAX_RETRIES
from ctxcompact.compaction.summarize.limits import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ctxcompact.compaction.summarize.prompt import SUMMARY_MAX_WORDS, build_merge_prompt, build_prompt
from ctxcompact.compaction.summarize.serialize import clip_middle, serialize_for_prompt, split_into_chunks
from ctxcompact.errors import OptionError
from ctxcompact.ir import Message
from ctxcompact.llm.retry import MAX_RETRY_AFTER as MAX_RETRY_AFTER
from ctxcompact.llm.retry import GaveUp, Prompt, complete_with_retries
from ctxcompact.llm.transport import TextReply, Transport

DEFAULT_CONTEXT_BUDGET = 150_000
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 8.0
#: Tokens kept free below the budget: token counts of joined texts are not exactly additive.
BUDGET_MARGIN = 32

_SUMMARY_TAG = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL)


def extract_summary(text: str) -> str:
    """The content of the first ``<summary>`` tag (to the end if it was never closed, as when
    the answer hit ``max_tokens``), else the whole text; stripped."""
    match = _SUMMARY_TAG.search(text)
    return (match.group(1) if match else text).strip()


def accept_summary(reply: TextReply) -> str | None:
    """The summary in ``reply``; None (ask again) when it is empty. A reply cut off at
    ``max_tokens`` — its ``<summary>`` never closed, or no tags and the stop reason says so —
    is no summary: it raises :class:`GaveUp` at once (the same request would be cut again), so
    the caller falls back instead of keeping half a summary."""
    opened = "<summary>" in reply.text
    if (opened and "</summary>" not in reply.text) or (not opened and reply.stop_reason == "max_tokens"):
        raise GaveUp("the summary was cut off at the output limit (max_tokens) before it ended")
    return extract_summary(reply.text) or None


def output_token_limit(max_words: int) -> int:
    """``max_tokens`` for a summary of ``max_words`` words: about 1.3 tokens a word for English
    Markdown, doubled for code and non-English text, plus room for the tags."""
    return min(32_000, max(1024, max_words * 2 + 512))


class LLMSummarizer:
    """Summaries from an LLM behind ``transport``. See the module docstring for the contract.

    ``model`` is passed to the transport and recorded in each :class:`Summary`; the
    summarizer's ``name`` is the transport's. ``sleep`` and ``jitter`` are injectable so tests
    do not wait.
    """

    def __init__(
        self,
        transport: Transport,
        model: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        context_budget: int = DEFAULT_CONTEXT_BUDGET,
        counter: TokenCounter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        deadline_at: float | None = None,
    ) -> None:
        if max_retries < 0:
            raise OptionError.about("max_retries", "must not be negative.")
        if timeout <= 0:
            raise OptionError.about("timeout", "must be positive.")
        self.transport = transport
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.context_budget = context_budget
        self.deadline_at = deadline_at
        self.counter: TokenCounter = counter or TiktokenCounter()
        self._sleep = sleep
        self._jitter = jitter

    @property
    def name(self) -> str:
        return self.transport.name

    def __repr__(self) -> str:
        return (
            f"LLMSummarizer({self.transport!r}, model={self.model!r}, context_budget={self.context_budget})"
        )

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_words: int = SUMMARY_MAX_WORDS,
        instructions: str | None = None,
    ) -> Summary:
        """One summary of ``messages``; raises ``SummaryFailed`` when none can be made."""
        if not messages:
            raise SummaryFailed("there are no messages to summarize")
        return _Run(self, max_words, instructions).summarize(messages)

    # -- used by _Run ------------------------------------------------------------------------

    def _tokens(self, *texts: str) -> int:
        return sum(self.counter.count_batch(list(texts)))

    def _backoff(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after > 0:
            return retry_after
        base = min(BACKOFF_INITIAL * 2**retry, BACKOFF_MAX)
        return base * (1 - 0.25 * self._jitter())


class _Run:
    """One ``summarize`` call: its options and attempt count."""

    def __init__(self, owner: LLMSummarizer, max_words: int, instructions: str | None) -> None:
        self.owner = owner
        self.max_words = max_words
        self.instructions = instructions
        self.attempts = 0
        self.budget = owner.context_budget - BUDGET_MARGIN

    def summarize(self, messages: Sequence[Message]) -> Summary:
        text = serialize_for_prompt(messages)
        prompt = self._chunk_prompt(text, None)
        if self.owner._tokens(*prompt) <= self.budget:
            return self._summary(self._request(*prompt), chunks=1)

        # The longest part note ("last part") sets the room a chunk's text has.
        overhead = self._overhead(self._chunk_prompt("", (1, 1)))
        chunks = split_into_chunks(messages, max_tokens=self.budget - overhead, counter=self.owner.counter)
        partials: list[str] = []
        for index, chunk in enumerate(chunks, 1):
            part = (index, len(chunks)) if len(chunks) > 1 else None
            partials.append(self._request(*self._fit(serialize_for_prompt(chunk), part)))
        return self._summary(self._merge(partials), chunks=len(chunks))

    def _summary(self, text: str, *, chunks: int) -> Summary:
        return Summary(text, self.owner.name, attempts=self.attempts, chunks=chunks, model=self.owner.model)

    def _chunk_prompt(self, text: str, part: tuple[int, int] | None) -> tuple[str, str]:
        return build_prompt(text, max_words=self.max_words, instructions=self.instructions, part=part)

    def _merge_prompt(self, parts: Sequence[str]) -> tuple[str, str]:
        return build_merge_prompt(parts, max_words=self.max_words, instructions=self.instructions)

    def _overhead(self, prompt: tuple[str, str]) -> int:
        """Tokens of a prompt with nothing in it; a failure when even that does not fit."""
        overhead = self.owner._tokens(*prompt)
        if overhead >= self.budget:
            raise SummaryFailed(
                f"the context budget ({self.owner.context_budget:,} tokens) is too small for the "
                f"summary prompt itself ({overhead:,} tokens)",
                attempts=self.attempts,
            )
        return overhead

    def _fit(self, text: str, part: tuple[int, int] | None) -> tuple[str, str]:
        """The prompt for ``text``, with ``text`` clipped (head + tail) until it fits the budget."""
        prompt = self._chunk_prompt(text, part)
        size = self.owner._tokens(*prompt)
        if size <= self.budget:
            return prompt
        overhead = self._overhead(self._chunk_prompt("", part))
        return self._chunk_prompt(self._clip_to(text, self.budget - overhead), part)

    def _clip_to(self, text: str, max_tokens: int) -> str:
        """``text`` clipped in the middle until it counts at most ``max_tokens``."""
        size = self.owner._tokens(text)
        while size > max_tokens:
            # Shrink in proportion to the excess, and always by something.
            target = min(len(text) - 1, int(len(text) * max_tokens / size * 0.95))
            if target <= 0:
                return ""
            text = clip_middle(text, target)
            size = self.owner._tokens(text)
        return text

    def _merge(self, partials: list[str]) -> str:
        """One summary from partial summaries (oldest first), in as many rounds as it takes."""
        empty = self.owner._tokens(*self._merge_prompt([]))
        overhead = self._overhead(self._merge_prompt(["", ""]))
        # What one more part costs beyond its own text (its tags and separator).
        per_part = max(0, (overhead - empty) // 2) + 2
        room = self.budget - empty
        # Each part gets at most half the room, so every request merges at least two parts.
        cap = (self.budget - overhead) // 2
        while len(partials) > 1:
            groups: list[list[str]] = [[]]
            used = 0
            for text in partials:
                text = self._clip_to(text, cap)
                cost = self.owner._tokens(text) + per_part
                if groups[-1] and used + cost > room:
                    groups.append([])
                    used = 0
                groups[-1].append(text)
                used += cost
            merged: list[str] = []
            for group in groups:
                if len(group) == 1:
                    merged.append(group[0])  # carried to the next round as it is
                    continue
                prompt = self._merge_prompt(group)
                if self.owner._tokens(*prompt) > self.budget:  # counts are not exactly additive
                    share = (self.budget - empty) // len(group) - per_part
                    prompt = self._merge_prompt([self._clip_to(t, max(share, 0)) for t in group])
                merged.append(self._request(*prompt))
            partials = merged
        return partials[0]

    def _request(self, system: str, user: str) -> str:
        """One summary text from one prompt, with retries; raises SummaryFailed."""
        owner = self.owner

        def count() -> None:
            self.attempts += 1

        try:
            return complete_with_retries(
                owner.transport,
                Prompt(owner.model, system, user, output_token_limit(self.max_words)),
                timeout=owner.timeout,
                max_retries=owner.max_retries,
                deadline_at=owner.deadline_at,
                accept=accept_summary,
                backoff=owner._backoff,
                sleep=owner._sleep,
                rejected="the model returned an empty summary",
                on_attempt=count,
            )
        except GaveUp as failure:
            raise SummaryFailed(failure.description, attempts=self.attempts) from None
