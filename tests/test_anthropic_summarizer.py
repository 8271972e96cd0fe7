"""The LLM summarizer over the Anthropic transport, against a fake Messages API on 127.0.0.1,
through the real SDK client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fake_anthropic import MESSAGES_PATH, FakeAnthropicServer, RecordedRequest
from ir_builders import msg, text

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.summarize import Summary, SummaryFailed, make_summarizer
from ctxcompact.compaction.summarize.llm import LLMSummarizer, extract_summary
from ctxcompact.compaction.summarize.prompt import DIMENSIONS, MOST_RECENT_RULE
from ctxcompact.errors import InputError
from ctxcompact.ir import Message
from ctxcompact.llm.anthropic_api import DEFAULT_SUMMARY_MODEL, AnthropicTransport, make_client

KEY = "sk-ant-test-key-do-not-leak"


SMALL = [
    msg("user", text("Please fix the rounding bug in src/tax.py.")),
    msg(
        "assistant",
        text("Reading it."),
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/tax.py"}},
    ),
    msg("user", {"type": "tool_result", "tool_use_id": "t1", "content": "def tax(): ..."}),
    msg("assistant", text("The fix is to use ROUND_HALF_UP. Next I will run the tests.")),
]


def long_conversation(rounds: int) -> list[Message]:
    messages: list[Message] = []
    for r in range(rounds):
        messages.append(msg("user", text(f"Request {r}: " + "please handle this carefully " * 30)))
        messages.append(
            msg(
                "assistant",
                text("ok"),
                {"type": "tool_use", "id": f"t{r}", "name": "run", "input": {"command": f"job {r}"}},
            )
        )
        messages.append(
            msg("user", {"type": "tool_result", "tool_use_id": f"t{r}", "content": "result line\n" * 150})
        )
        messages.append(msg("assistant", text(f"Finished step {r}. " + "details " * 40)))
    return messages


class SleepLog:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> SleepLog:
    return SleepLog()


@pytest.fixture
def client(fake_api: FakeAnthropicServer) -> Iterator[Any]:
    c = make_client(api_key=KEY, base_url=fake_api.base_url, timeout=5.0)
    yield c
    c.close()


def summarizer(client: Any, sleeps: SleepLog, **kwargs: Any) -> LLMSummarizer:
    transport = AnthropicTransport(client=client)
    return LLMSummarizer(transport, DEFAULT_SUMMARY_MODEL, sleep=sleeps, jitter=lambda: 0.0, **kwargs)


def user_text(request: RecordedRequest) -> str:
    return str(request.body["messages"][0]["content"])


def test_request_carries_the_prompt_and_transcript(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    fake_api.enqueue(fake_api.reply_text("<summary>All good.</summary>"))
    summary = summarizer(client, sleeps).summarize(SMALL, max_words=500, instructions="Focus on tax.py")
    assert summary == Summary("All good.", "anthropic", attempts=1, chunks=1, model=DEFAULT_SUMMARY_MODEL)
    (request,) = fake_api.requests_to(MESSAGES_PATH)
    body = request.body
    assert body["model"] == DEFAULT_SUMMARY_MODEL
    assert "summary" in body["system"]
    prompt = user_text(request)
    assert MOST_RECENT_RULE in prompt
    assert all(f"## {d}" in prompt for d in DIMENSIONS)
    assert "at most 500 words" in prompt
    assert prompt.rstrip().endswith("Focus on tax.py")
    assert '→ read_file({"path": "src/tax.py"}) [id: t1]' in prompt
    assert request.api_key == KEY
    assert request.headers.get("x-stainless-retry-count") == "0"
    assert sleeps.calls == []


def test_overloaded_twice_then_success_counts_three_attempts(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    fake_api.enqueue(fake_api.reply_error(529), fake_api.reply_error(529), fake_api.reply_text("fine"))
    summary = summarizer(client, sleeps).summarize(SMALL)
    assert summary.text == "fine"
    assert summary.attempts == 3
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 3
    assert sleeps.calls == [0.001, 0.001]  # the server's retry-after-ms was honoured


def test_backoff_without_retry_after_is_exponential_and_capped(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    fake_api.enqueue(
        fake_api.reply_error(429, retry_after_ms=None),
        fake_api.reply_error(500, retry_after_ms=None),
        fake_api.reply_error(503, retry_after_ms=None),
        fake_api.reply_text("ok"),
    )
    summary = summarizer(client, sleeps, max_retries=3).summarize(SMALL)
    assert summary.attempts == 4
    assert sleeps.calls == [0.5, 1.0, 2.0]


def test_retry_after_up_to_the_cap_is_honoured(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    fake_api.enqueue(
        fake_api.reply_error(429, retry_after_ms=None, retry_after="30"), fake_api.reply_text("ok")
    )
    assert summarizer(client, sleeps).summarize(SMALL).attempts == 2
    assert sleeps.calls == [30.0]


def test_retry_after_beyond_the_cap_fails_at_once(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    # Issue 9.8: "retry-after: 3600" made a run wait 122 s; now it fails over without waiting.
    fake_api.enqueue(
        fake_api.reply_error(429, retry_after_ms=None, retry_after="3600"), fake_api.reply_text("ok")
    )
    with pytest.raises(SummaryFailed) as info:
        summarizer(client, sleeps).summarize(SMALL)
    assert info.value.attempts == 1
    assert "429" in info.value.reason and "3,600 s" in info.value.reason
    assert sleeps.calls == []
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 1


def test_all_attempts_fail(fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog) -> None:
    fake_api.enqueue(*(fake_api.reply_error(529) for _ in range(3)))
    with pytest.raises(SummaryFailed) as info:
        summarizer(client, sleeps).summarize(SMALL)
    assert info.value.attempts == 3
    assert "529" in info.value.reason and "overloaded" in info.value.reason
    assert info.value.exit_code == 3
    assert KEY not in str(info.value)
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_fail_at_once(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog, status: int
) -> None:
    fake_api.enqueue(fake_api.reply_error(status), fake_api.reply_text("never sent"))
    with pytest.raises(SummaryFailed) as info:
        summarizer(client, sleeps).summarize(SMALL)
    assert info.value.attempts == 1
    assert str(status) in str(info.value)
    assert KEY not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert sleeps.calls == []


def test_server_may_forbid_a_retry(fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog) -> None:
    fake_api.enqueue(fake_api.reply_error(500, should_retry=False), fake_api.reply_text("never"))
    with pytest.raises(SummaryFailed):
        summarizer(client, sleeps).summarize(SMALL)
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 1


def test_empty_answer_is_a_failure(fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog) -> None:
    fake_api.enqueue(
        fake_api.reply_text(""), fake_api.reply_text("  \n "), fake_api.reply_text("<summary> </summary>")
    )
    with pytest.raises(SummaryFailed) as info:
        summarizer(client, sleeps).summarize(SMALL)
    assert info.value.attempts == 3
    assert "empty" in info.value.reason


def test_empty_answer_then_a_real_one(fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog) -> None:
    fake_api.enqueue(fake_api.reply_text(""), fake_api.reply_text("real"))
    summary = summarizer(client, sleeps).summarize(SMALL)
    assert (summary.text, summary.attempts) == ("real", 2)


def test_slow_reply_times_out(fake_api: FakeAnthropicServer, sleeps: SleepLog) -> None:
    fake_api.enqueue(replace(fake_api.reply_text("too late"), delay=2.0))
    slow_client = make_client(api_key=KEY, base_url=fake_api.base_url, timeout=0.2)
    try:
        with pytest.raises(SummaryFailed) as info:
            summarizer(slow_client, sleeps, max_retries=0).summarize(SMALL)
    finally:
        slow_client.close()
    assert "did not answer in time" in info.value.reason
    assert info.value.attempts == 1


def test_connection_refused_is_retried_then_fails(sleeps: SleepLog) -> None:
    dead = make_client(api_key=KEY, base_url="http://127.0.0.1:9", timeout=1.0)
    try:
        with pytest.raises(SummaryFailed) as info:
            summarizer(dead, sleeps, max_retries=1).summarize(SMALL)
    finally:
        dead.close()
    assert info.value.attempts == 2
    assert "could not connect" in info.value.reason


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("<analysis>thinking</analysis>\n<summary>\n## Goals\nDo it.\n</summary>", "## Goals\nDo it."),
        ("no tags at all", "no tags at all"),
    ],
)
def test_summary_tag_extraction(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog, answer: str, expected: str
) -> None:
    assert extract_summary(answer) == expected
    fake_api.enqueue(fake_api.reply_text(answer))
    assert summarizer(client, sleeps).summarize(SMALL).text == expected


@pytest.mark.parametrize(
    ("answer", "stop_reason"),
    [("<summary>## Goals\nDo it, then", "max_tokens"), ("## Goals\nDo it, then", "max_tokens")],
)
def test_a_summary_cut_off_at_max_tokens_is_a_failure_not_a_summary(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog, answer: str, stop_reason: str
) -> None:
    """Issue 23, defect 16: an unclosed ``<summary>`` (the answer hit ``max_tokens``) was kept
    as the summary. It fails at once (the same request would be cut again) so the caller
    falls back."""
    fake_api.enqueue(fake_api.reply_text(answer, stop_reason=stop_reason))
    with pytest.raises(SummaryFailed) as info:
        summarizer(client, sleeps).summarize(SMALL)
    assert "cut off" in info.value.reason and info.value.attempts == 1


def test_long_transcript_is_chunked_and_merged_within_budget(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    counter = EstimateCounter()
    budget = 3000
    messages = long_conversation(12)
    fake_api.enqueue(*(fake_api.reply_text(f"<summary>partial {i}</summary>") for i in range(40)))
    summary = summarizer(client, sleeps, context_budget=budget, counter=counter).summarize(messages)

    requests = fake_api.requests_to(MESSAGES_PATH)
    assert summary.chunks > 1
    assert len(requests) == summary.chunks + 1 == summary.attempts
    for request in requests:
        size = sum(counter.count_batch([request.body["system"], user_text(request)]))
        assert size <= budget
    chunk_prompts = [user_text(r) for r in requests[:-1]]
    assert f"This is part 1 of {summary.chunks}." in chunk_prompts[0]
    assert "It is the last part" in chunk_prompts[-1]
    assert "Request 0:" in chunk_prompts[0] and "Request 11:" in chunk_prompts[-1]
    merge = user_text(requests[-1])
    assert "partial summaries" in merge and MOST_RECENT_RULE in merge
    assert all(f"partial {i}" in merge for i in range(summary.chunks))
    assert summary.text == f"partial {summary.chunks}"


def test_an_oversized_single_block_is_clipped_to_fit(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    counter = EstimateCounter()
    huge = [msg("user", text("Summarize this: " + "lorem ipsum dolor " * 4000))]
    summary = summarizer(client, sleeps, context_budget=2000, counter=counter).summarize(huge)
    (request,) = fake_api.requests_to(MESSAGES_PATH)
    assert sum(counter.count_batch([request.body["system"], user_text(request)])) <= 2000
    assert "chars clipped" in user_text(request)
    assert summary.chunks == 1


def test_merge_runs_in_rounds_when_partials_do_not_fit_together(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    counter = EstimateCounter()
    budget = 1800
    partial = "<summary>" + "fact " * 350 + "</summary>"  # each partial ~ a quarter of the budget
    fake_api.enqueue(*(fake_api.reply_text(partial) for _ in range(60)))
    summary = summarizer(client, sleeps, context_budget=budget, counter=counter).summarize(
        long_conversation(14)
    )
    requests = fake_api.requests_to(MESSAGES_PATH)
    assert len(requests) > summary.chunks + 1  # more than one merge request
    for request in requests:
        assert sum(counter.count_batch([request.body["system"], user_text(request)])) <= budget


def test_budget_smaller_than_the_prompt_fails_without_a_request(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    with pytest.raises(SummaryFailed, match="too small"):
        summarizer(client, sleeps, context_budget=100, counter=EstimateCounter()).summarize(
            long_conversation(3)
        )
    assert fake_api.requests_to(MESSAGES_PATH) == []


def test_no_messages_fails_without_a_request(
    fake_api: FakeAnthropicServer, client: Any, sleeps: SleepLog
) -> None:
    with pytest.raises(SummaryFailed):
        summarizer(client, sleeps).summarize([])
    assert fake_api.requests == []


def test_client_from_environment_is_created_and_closed(
    fake_api: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch, sleeps: SleepLog
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    fake_api.enqueue(fake_api.reply_error(529), fake_api.reply_text("<summary>env ok</summary>"))
    s = make_summarizer("auto", model="claude-opus-4-6", max_retries=1)
    assert isinstance(s, LLMSummarizer) and isinstance(s.transport, AnthropicTransport)
    s._sleep = sleeps  # no real wait in tests
    summary = s.summarize(SMALL)
    assert (summary.text, summary.attempts, summary.model) == ("env ok", 2, "claude-opus-4-6")
    assert fake_api.requests[0].body["model"] == "claude-opus-4-6"
    assert KEY not in repr(s)


def test_make_summarizer_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_summarizer().name == "extractive"  # conftest removed the key
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        make_summarizer("anthropic")
    with pytest.raises(InputError, match="unknown summarizer"):
        make_summarizer("gpt")  # type: ignore[arg-type]
    assert make_summarizer("auto", client=object()).name == "anthropic"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert make_summarizer().name == "anthropic"
    assert make_summarizer("extractive").name == "extractive"


def test_importing_and_extractive_use_do_not_import_the_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ctxcompact.compaction.summarize import make_summarizer\n"
        "import ctxcompact.compaction.summarize.llm, ctxcompact.llm.anthropic_api, ctxcompact.compaction.restore\n"
        "make_summarizer('auto').summarize([])\n"
        "assert 'anthropic' not in sys.modules, 'anthropic was imported'\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
