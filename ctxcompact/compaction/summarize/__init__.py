"""Summarizers: turn the messages a compaction replaces into one structured summary text.

Two implementations behind one small interface:

``anthropic``   :class:`.llm.LLMSummarizer` over the Messages API
                (:class:`ctxcompact.llm.anthropic_api.AnthropicTransport`): the prompt of
                :mod:`.prompt`, bounded retries with backoff, ``<summary>`` extraction,
                chunk-and-merge for transcripts longer than its context budget. Another LLM
                backend is another :class:`.transport.Transport` under the same summarizer.
``extractive``  offline and deterministic, no key (:mod:`.extractive`): the same five
                sections built from the transcript itself. The default when no API key is
                set, and the fallback when the LLM fails.

A summarizer never mutates the messages, never prints, and raises :class:`SummaryFailed`
(exit code 3) when it cannot produce a summary; what to do then (retry later, fall back to
``extractive``, keep the transcript unchanged) is the caller's decision. Importing this
package does not import ``anthropic``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ctxcompact.compaction.summarize.prompt import SUMMARY_MAX_WORDS
from ctxcompact.errors import InputError, UsageError, WorkFailedError
from ctxcompact.ir import Message
from ctxcompact.names import SummarizerName

if TYPE_CHECKING:
    from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
    from ctxcompact.compaction.summarize.llm import LLMSummarizer

__all__ = [
    "SUMMARIZER_NAMES",
    "SUMMARY_MAX_WORDS",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Summarizer",
    "Summary",
    "SummaryFailed",
    "make_summarizer",
]

SUMMARIZER_NAMES: tuple[SummarizerName, ...] = tuple(SummarizerName)


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary and how it was made.

    ``attempts``: API requests sent in total (1 for a first-time success; retries and chunk
    requests add up; 1 for the extractive summarizer). ``chunks``: how many parts the
    transcript was summarized in (1 unless it exceeded the context budget). ``model``: the
    model asked for, ``None`` for the extractive summarizer.
    """

    text: str
    summarizer: str
    attempts: int = 1
    chunks: int = 1
    model: str | None = None


class SummaryFailed(WorkFailedError):
    """No summary could be produced. ``reason`` is key-free (an HTTP status, "timed out",
    "empty answer"); ``attempts`` is how many API requests were sent before giving up."""

    def __init__(self, reason: str, *, attempts: int = 0) -> None:
        self.reason = reason
        self.attempts = attempts
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
        super().__init__(f"summary failed{tries}: {reason}")


class Summarizer(Protocol):
    """Anything that can summarize a list of messages."""

    @property
    def name(self) -> str: ...

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_words: int = SUMMARY_MAX_WORDS,
        instructions: str | None = None,
    ) -> Summary: ...


def make_summarizer(
    name: SummarizerName | str = SummarizerName.auto,
    *,
    model: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    client: Any = None,
    deadline_at: float | None = None,
) -> Summarizer:
    """A summarizer by name. ``auto``: ``anthropic`` when ``ANTHROPIC_API_KEY`` is set (or a
    ``client`` is given), else ``extractive``.

    ``anthropic`` without a key or client raises :class:`InputError` (exit 2) here, before
    any work is done. ``model``, ``timeout`` (seconds per request, all of it), ``max_retries``,
    ``deadline_at`` (``time.monotonic()`` after which nothing is sent) and ``client`` (an
    ``anthropic.Anthropic``) only apply to ``anthropic``. Nothing is sent
    until ``summarize`` is called.
    """
    if name == "auto":
        from ctxcompact.llm.anthropic_api import api_key_available

        name = (
            SummarizerName.anthropic
            if client is not None or api_key_available()
            else SummarizerName.extractive
        )
    if name == "extractive":
        from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer()
    if name == "anthropic":
        from ctxcompact.llm.anthropic_api import API_KEY_ENV, api_key_available

        if client is None and not api_key_available():
            raise InputError(
                f"the anthropic summarizer needs an API key: set {API_KEY_ENV}, "
                "or use --summarizer extractive (offline)."
            )
        from ctxcompact.compaction.summarize.llm import LLMSummarizer
        from ctxcompact.llm.anthropic_api import DEFAULT_SUMMARY_MODEL, AnthropicTransport

        return LLMSummarizer(
            AnthropicTransport(client=client),
            model or DEFAULT_SUMMARY_MODEL,
            timeout=timeout,
            max_retries=max_retries,
            deadline_at=deadline_at,
        )
    if name == "anthropic-batch":
        raise UsageError(
            "--summarizer anthropic-batch summarizes a whole batch at once: give --out-dir or "
            "--in-place (library: ctxcompact.batch.message_batches.compact_files_in_batches)."
        )
    raise InputError(f"unknown summarizer {name!r}; expected one of {', '.join(SUMMARIZER_NAMES)}.")


def __getattr__(name: str) -> Any:
    # Lazy exports: the summarizers' modules load only when asked for.
    if name == "LLMSummarizer":
        from ctxcompact.compaction.summarize.llm import LLMSummarizer

        return LLMSummarizer
    if name == "ExtractiveSummarizer":
        from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer
    raise AttributeError(f"module 'ctxcompact.compaction.summarize' has no attribute {name!r}")
