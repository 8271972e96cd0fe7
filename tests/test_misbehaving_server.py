"""A summary server that misbehaves (issue 9, points 6-8), through the real SDK and the CLI.

Garbled answers, a server that drips one byte a second, and a retry-after of an hour must each
end as a summary failure within the time the options promise: retried, then the extractive
fallback (or exit 3 with ``--on-failure error``), never exit 70 and never a hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES
from fake_anthropic import MESSAGES_PATH, FakeAnthropicServer, Reply

from ctxcompact.compaction.summarize import SummaryFailed, make_summarizer
from ctxcompact.compaction.summarize.llm import LLMSummarizer
from ctxcompact.ir import Message, Source
from ctxcompact.llm.anthropic_api import DEFAULT_SUMMARY_MODEL, AnthropicTransport, make_client

KEY = "sk-ant-test-key-do-not-leak"
SESSION = SAMPLES / "anthropic-session.json"
SMALL = [
    Message("user", ({"type": "text", "text": "Fix the bug in parser.py."},), Source(({},), (0,))),
    Message("assistant", ({"type": "text", "text": "Fixed the off-by-one."},), Source(({},), (1,))),
]
NOT_UTF8 = b'{"type": "message", "content": [{"type": "text", "text": "caf\xe9"}]}'
#: Each byte 0.5 s apart: a full answer would take minutes, yet no single read waits long.
DRIP = Reply(body={"content": [{"type": "text", "text": "too slow"}]}, drip=0.5)


@pytest.fixture
def client(fake_api: FakeAnthropicServer) -> Iterator[Any]:
    c = make_client(api_key=KEY, base_url=fake_api.base_url, timeout=5.0)
    yield c
    c.close()


def summarizer(client: Any = None, **kwargs: Any) -> LLMSummarizer:
    transport = AnthropicTransport(client=client)
    return LLMSummarizer(transport, DEFAULT_SUMMARY_MODEL, sleep=lambda _: None, jitter=lambda: 0.0, **kwargs)


# -- point 6: an answer the SDK cannot read --------------------------------------------------


def test_a_non_utf8_answer_is_retried(fake_api: FakeAnthropicServer, client: Any) -> None:
    fake_api.enqueue(Reply(body=NOT_UTF8), fake_api.reply_text("<summary>fine</summary>"))
    summary = summarizer(client).summarize(SMALL)
    assert (summary.text, summary.attempts) == ("fine", 2)


@pytest.mark.parametrize(
    "body",
    [NOT_UTF8, b"\xff\xfe not json", b"[1, 2]", b'{"content": 5}'],
    ids=["utf8", "json", "list", "shape"],
)
def test_an_unreadable_answer_every_time_is_a_summary_failure(
    fake_api: FakeAnthropicServer, client: Any, body: bytes
) -> None:
    fake_api.enqueue(*(Reply(body=body) for _ in range(3)))
    with pytest.raises(SummaryFailed) as info:
        summarizer(client, max_retries=2).summarize(SMALL)
    assert info.value.attempts == 3
    assert "answer" in info.value.reason and KEY not in str(info.value)


# -- point 7: a server that drips --------------------------------------------------------------


def test_a_dripping_server_is_cut_off_at_the_timeout(
    fake_api: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    fake_api.enqueue(DRIP, DRIP)
    s = make_summarizer("anthropic", timeout=1.0, max_retries=1)
    assert isinstance(s, LLMSummarizer)
    s._sleep = lambda _: None
    start = time.monotonic()
    with pytest.raises(SummaryFailed) as info:
        s.summarize(SMALL)
    assert time.monotonic() - start < 3.5  # about timeout x (retries + 1)
    assert info.value.attempts == 2 and "in time" in info.value.reason
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 2


def test_a_dripping_server_is_cut_off_with_a_given_client_too(
    fake_api: FakeAnthropicServer, client: Any
) -> None:
    fake_api.enqueue(DRIP)
    start = time.monotonic()
    with pytest.raises(SummaryFailed, match="in time"):
        summarizer(client, timeout=0.5, max_retries=0).summarize(SMALL)
    assert time.monotonic() - start < 2.0


# -- through the CLI ---------------------------------------------------------------------------


def compact(
    fake_api: FakeAnthropicServer, tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "compact", str(SESSION), "--summarizer", "anthropic", "--no-restore",
         "--archive-dir", str(tmp_path / "a"), "--stats-json", str(tmp_path / "s.json"), *args],
        capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert b"Traceback" not in proc.stderr and KEY.encode() not in proc.stderr
    return proc, time.monotonic() - start


def test_cli_non_utf8_answers_fall_back(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.enqueue(*(Reply(body=NOT_UTF8) for _ in range(2)))
    proc, _ = compact(fake_api, tmp_path, "--max-retries", "1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "s.json").read_text())["summarizer"] == "extractive"
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 2


def test_cli_non_utf8_answers_with_on_failure_error_exit_3(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_api.enqueue(*(Reply(body=NOT_UTF8) for _ in range(2)))
    proc, _ = compact(fake_api, tmp_path, "--max-retries", "1", "--on-failure", "error")
    assert proc.returncode == 3, proc.stderr
    assert b"could not be read" in proc.stderr


def test_cli_dripping_server_gives_up_after_the_timeout(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_api.enqueue(DRIP, DRIP)
    proc, elapsed = compact(fake_api, tmp_path, "--timeout", "1", "--max-retries", "1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "s.json").read_text())["summarizer"] == "extractive"
    assert elapsed < 20  # 2 x 1 s and a backoff, plus start-up; the drip alone takes minutes


def test_cli_retry_after_an_hour_fails_over_at_once(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.enqueue(
        fake_api.reply_error(429, retry_after_ms=None, retry_after="3600"), fake_api.reply_text("no")
    )
    proc, elapsed = compact(fake_api, tmp_path, "--max-retries", "2")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "s.json").read_text())["summarizer"] == "extractive"
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 1
    assert elapsed < 20
