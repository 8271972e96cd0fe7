"""Hostile servers on 127.0.0.1 for every network path (issue 23, defects 3, 7, 9, 16): the
Messages API (the summarizer), Message Batches (submit, poll, results) and ``count_tokens``.
Each path has the same per-request timeout, retry-after cap, total ``--deadline`` and byte
cap: a server that asks to wait an hour, drips a byte a second, never ends its answer, answers
what is not JSON or keeps a batch ``in_progress`` costs seconds, never hours or gigabytes, and
ends in exit 0 (a summary falls back), 2 or 3 — never 70."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import CliOutcome, run_cli
from fake_anthropic import BATCHES_PATH, COUNT_TOKENS_PATH, MESSAGES_PATH, FakeAnthropicServer, Reply

SAMPLE = Path(__file__).resolve().parents[2] / "sample_transcripts" / "anthropic-session.json"
KEY = "sk-ant-test-never-printed"

pytestmark = pytest.mark.slow

#: What a hostile server does, each as a reply to queue (or to answer every look with).
HOSTILE: dict[str, Callable[[FakeAnthropicServer], Reply]] = {
    "retry-after-an-hour": lambda api: api.reply_error(429, retry_after_ms=None, retry_after="3600"),
    "drip": lambda api: Reply(body={"never": "finished"}, drip=1.0),
    "endless": lambda api: Reply(body=b'{"content": [', endless=True),
    "not-json": lambda api: Reply(body="<html>proxy error</html>"),
    "lies-about-its-size": lambda api: Reply(body={"id": "x"}, declare_length=2_000_000_000),
}


def _env(api: FakeAnthropicServer) -> dict[str, str | None]:
    return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.base_url}


def _timed(call: Callable[[], CliOutcome]) -> tuple[CliOutcome, float]:
    start = time.monotonic()
    done = call()
    return done, time.monotonic() - start


def _sane(done: CliOutcome, codes: tuple[int, ...]) -> None:
    assert done.exit_code in codes, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert KEY not in done.stderr and KEY not in done.stdout


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_messages(fake_api: FakeAnthropicServer, tmp_path: Path, kind: str) -> None:
    fake_api.enqueue(*(HOSTILE[kind](fake_api) for _ in range(6)))  # for both runs
    args = ["compact", SAMPLE, "--summarizer", "anthropic", "--timeout", "1", "--max-retries", "1"]
    done, elapsed = _timed(
        lambda: run_cli(*args, "--on-failure", "error", "-q", "-o", tmp_path / "o.json", env=_env(fake_api))
    )
    _sane(done, (3,))
    assert elapsed < 15
    assert not (tmp_path / "o.json").exists()
    if kind in ("endless", "lies-about-its-size"):  # refused by its size, not by the clock
        assert "larger than 67,108,864 bytes" in done.stderr
    fallback = run_cli(
        *args, "--stats-json", tmp_path / "s.json", "-o", tmp_path / "o.json", env=_env(fake_api)
    )
    _sane(fallback, (0,))
    assert json.loads((tmp_path / "s.json").read_text())["summarizer"] == "extractive"


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_count_tokens(fake_api: FakeAnthropicServer, kind: str) -> None:
    fake_api.enqueue(*(HOSTILE[kind](fake_api) for _ in range(3)), path=COUNT_TOKENS_PATH)
    done, elapsed = _timed(
        lambda: run_cli("count", SAMPLE, "--counter", "anthropic", "--deadline", "2", env=_env(fake_api))
    )
    _sane(done, (3,))
    assert "exact token count failed" in done.stderr
    assert elapsed < 15
    if kind in ("endless", "lies-about-its-size"):
        assert "larger than 67,108,864 bytes" in done.stderr


def _batch(api: FakeAnthropicServer, tmp_path: Path, *extra: str) -> tuple[CliOutcome, float]:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    (folder / "a.json").write_text(SAMPLE.read_text())
    api.batch_polls_in_progress = 0
    args = ["compact", folder, "--summarizer", "anthropic-batch", "--out-dir", tmp_path / "out", "-q"]
    return _timed(lambda: run_cli(*args, "--timeout", "1", "--deadline", "3", *extra, env=_env(api)))


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_batch_submit(fake_api: FakeAnthropicServer, tmp_path: Path, kind: str) -> None:
    fake_api.enqueue(*(HOSTILE[kind](fake_api) for _ in range(3)), path=BATCHES_PATH)
    done, elapsed = _batch(fake_api, tmp_path)
    _sane(done, (3,))
    assert "submitting the message batch failed" in done.stderr
    assert elapsed < 20
    assert not (tmp_path / "out" / "a.json").exists()


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_batch_poll(fake_api: FakeAnthropicServer, tmp_path: Path, kind: str) -> None:
    fake_api.poll_reply = HOSTILE[kind](fake_api)
    done, elapsed = _batch(fake_api, tmp_path)
    _sane(done, (3,))
    assert "polling the message batch failed" in done.stderr
    assert elapsed < 20


@pytest.mark.parametrize("kind", [*HOSTILE, "not-json-lines"])
def test_batch_results(fake_api: FakeAnthropicServer, tmp_path: Path, kind: str) -> None:
    fake_api.results_reply = (
        Reply(body='{"custom_id": "x", "result": {}}\nnot json at all\n')
        if kind == "not-json-lines"
        else HOSTILE[kind](fake_api)
    )
    done, elapsed = _batch(fake_api, tmp_path)
    _sane(done, (3,))
    assert "reading the message batch's results failed" in done.stderr
    assert elapsed < 25


def test_a_batch_stuck_in_progress_stops_at_the_deadline(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(SAMPLE.read_text())
    fake_api.batch_polls_in_progress = 10**9
    args = ["compact", folder, "--summarizer", "anthropic-batch", "--out-dir", tmp_path / "out", "-q"]
    done, elapsed = _timed(lambda: run_cli(*args, "--deadline", "3", env=_env(fake_api)))
    _sane(done, (3,))
    assert "still in_progress at the deadline" in done.stderr
    assert 2.5 < elapsed < 15


def test_a_summary_cut_off_at_max_tokens_falls_back(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    """Defect 16: ``<summary>`` never closed (the answer hit ``max_tokens``) was kept."""
    fake_api.enqueue(fake_api.reply_text("<summary>## Goals\nThe user wants", stop_reason="max_tokens"))
    done = run_cli(
        "compact", SAMPLE, "--summarizer", "anthropic", "--stats-json", tmp_path / "s.json",
        "-o", tmp_path / "o.json", env=_env(fake_api),
    )  # fmt: skip
    _sane(done, (0,))
    assert json.loads((tmp_path / "s.json").read_text())["summarizer"] == "extractive"
    assert "cut off" in done.stderr
    assert "The user wants" not in (tmp_path / "o.json").read_text()
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 1  # the same request would be cut again
