"""The generic LLM summarizer behind a transport that is not Anthropic's: a scripted fake.

These tests prove the seam: retries, backoff, the retry-after cap, chunking and the caller's
fallback all work for any :class:`Transport`, with no SDK and no network.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

import pytest

from ctxcompact import compact_messages
from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.summarize import Summary, SummaryFailed
from ctxcompact.compaction.summarize.llm import MAX_RETRY_AFTER, LLMSummarizer
from ctxcompact.errors import UsageError, WorkFailedError
from ctxcompact.ir import Message, Source
from ctxcompact.llm.transport import TextReply, TransportFailure, call_with_deadline


class ScriptedTransport:
    """A second backend in a dozen lines: answers (or failures) from a queue, calls recorded."""

    name = "scripted"

    def __init__(self, *script: str | TransportFailure) -> None:
        self.script = deque(script)
        self.calls: list[dict[str, Any]] = []

    def complete(self, *, model: str, system: str, user: str, max_tokens: int, timeout: float) -> TextReply:
        self.calls.append({"model": model, "system": system, "user": user, "timeout": timeout})
        step = self.script.popleft() if self.script else "<summary>default answer</summary>"
        if isinstance(step, TransportFailure):
            raise step
        return TextReply(step)


def overloaded(retry_after: float | None = None) -> TransportFailure:
    return TransportFailure(
        "the backend is overloaded (HTTP 503)", retryable=True, status=503, retry_after=retry_after
    )


def msg(role: Any, text: str) -> Message:
    return Message(role, ({"type": "text", "text": text},), Source(({},), (0,)))


CONVERSATION = [msg("user", "Fix the bug in parser.py."), msg("assistant", "Done: the off-by-one is fixed.")]


def summarizer(transport: ScriptedTransport, **kwargs: Any) -> tuple[LLMSummarizer, list[float]]:
    sleeps: list[float] = []
    return LLMSummarizer(transport, "model-x", sleep=sleeps.append, jitter=lambda: 0.0, **kwargs), sleeps


def test_a_second_transport_gets_retries_and_backoff() -> None:
    transport = ScriptedTransport(overloaded(), overloaded(retry_after=2.5), "<summary>It worked.</summary>")
    s, sleeps = summarizer(transport, timeout=7.0)
    summary = s.summarize(CONVERSATION)
    assert summary == Summary("It worked.", "scripted", attempts=3, chunks=1, model="model-x")
    assert sleeps == [0.5, 2.5]  # exponential backoff, then the server's own retry-after
    assert [c["timeout"] for c in transport.calls] == [7.0, 7.0, 7.0]
    assert all(c["model"] == "model-x" for c in transport.calls)
    assert "Fix the bug in parser.py." in transport.calls[0]["user"]


def test_a_permanent_failure_is_not_retried() -> None:
    transport = ScriptedTransport(TransportFailure("HTTP 401", retryable=False, status=401), "never")
    s, sleeps = summarizer(transport)
    with pytest.raises(SummaryFailed) as info:
        s.summarize(CONVERSATION)
    assert (info.value.attempts, info.value.reason, sleeps) == (1, "HTTP 401", [])


def test_retry_after_beyond_the_cap_fails_without_waiting() -> None:
    transport = ScriptedTransport(overloaded(retry_after=MAX_RETRY_AFTER + 1), "never sent")
    s, sleeps = summarizer(transport, max_retries=5)
    with pytest.raises(SummaryFailed) as info:
        s.summarize(CONVERSATION)
    assert info.value.attempts == 1 and sleeps == []
    assert "asked to wait" in info.value.reason
    assert len(transport.calls) == 1


def test_retries_run_out() -> None:
    transport = ScriptedTransport(overloaded(), overloaded(), overloaded(), "never sent")
    s, sleeps = summarizer(transport, max_retries=2)
    with pytest.raises(SummaryFailed) as info:
        s.summarize(CONVERSATION)
    assert info.value.attempts == 3 and "overloaded" in info.value.reason
    assert sleeps == [0.5, 1.0]  # no wait after the last attempt


def test_chunking_and_merging_are_the_transports_too() -> None:
    long = [msg("user" if i % 2 == 0 else "assistant", f"Step {i}: " + "detail " * 300) for i in range(12)]
    transport = ScriptedTransport(*(f"<summary>part {i}</summary>" for i in range(30)))
    s, _ = summarizer(transport, context_budget=2000, counter=EstimateCounter())
    summary = s.summarize(long)
    assert summary.chunks > 1 and summary.attempts == len(transport.calls) == summary.chunks + 1
    assert summary.summarizer == "scripted"
    assert "partial summaries" in transport.calls[-1]["user"]


@pytest.mark.parametrize(
    ("bad", "match"), [({"max_retries": -1}, "max_retries"), ({"timeout": 0}, "timeout")]
)
def test_bad_options_are_refused(bad: dict[str, Any], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        LLMSummarizer(ScriptedTransport(), "m", **bad)


RAW = [
    {"role": "user", "content": "Please fix the rounding bug in src/tax.py."},
    {"role": "assistant", "content": "Fixed: ROUND_HALF_UP. Next: run the tests."},
    {"role": "user", "content": "Thanks, now update the changelog."},
    {"role": "assistant", "content": "Changelog updated."},
]


def test_a_failing_transport_falls_back_to_the_extractive_summary(tmp_path: Any) -> None:
    s, _ = summarizer(ScriptedTransport(overloaded(), overloaded(), overloaded()))
    result = compact_messages(RAW, summarizer=s, on_failure="fallback", restore=False, work_dir=tmp_path)
    assert result.stats.summarizer == "extractive"
    assert any("overloaded" in w for w in result.stats.warnings)


def test_a_failing_transport_with_on_failure_error_raises_exit_3(tmp_path: Any) -> None:
    s, _ = summarizer(ScriptedTransport(overloaded(), overloaded(), overloaded()))
    with pytest.raises(WorkFailedError) as info:
        compact_messages(RAW, summarizer=s, on_failure="error", restore=False, work_dir=tmp_path)
    assert info.value.exit_code == 3


def test_call_with_deadline_returns_raises_and_gives_up_on_time() -> None:
    assert call_with_deadline(lambda: 42, timeout=1.0, cancel=lambda: None) == 42
    with pytest.raises(KeyError):
        call_with_deadline(lambda: {}["missing"], timeout=1.0, cancel=lambda: None)

    release = threading.Event()
    cancelled: list[bool] = []

    def cancel() -> None:
        cancelled.append(True)
        release.set()

    start = time.monotonic()
    with pytest.raises(TransportFailure) as info:
        call_with_deadline(lambda: release.wait(30), timeout=0.2, cancel=cancel)
    assert time.monotonic() - start < 2.0
    assert cancelled == [True] and info.value.retryable and "in time" in info.value.description
