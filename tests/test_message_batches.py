"""``--summarizer anthropic-batch``: a batch's summaries through the Message Batches API of the
fake server (submit, poll, results by custom_id), and failed results falling back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest
from cli_helpers import run_cli
from fake_anthropic import BATCHES_PATH, MESSAGES_PATH, FakeAnthropicServer

from ctxcompact.batch.message_batches import POLL_INTERVAL, run_message_batch
from ctxcompact.ir import Message, Source
from ctxcompact.llm.anthropic_api import AnthropicBatches
from ctxcompact.llm.transport import BatchPoll, BatchRequest, TextReply

TOPICS = ("ALPHA", "BRAVO", "CHARLIE")


def _write_inputs(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for topic in TOPICS:
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Task {topic}: fix the parser bug in module {topic.lower()}."},
            {"role": "assistant", "content": f"I looked at {topic.lower()}.py and found the off-by-one."},
            {"role": "user", "content": "Good, now add a test for it."},
            {"role": "assistant", "content": "Added test_parser.py::test_off_by_one; it passes."},
        ]
        path = folder / f"{topic.lower()}.json"
        path.write_text(json.dumps(messages))
        paths.append(path)
    return paths


def _answer(body: Any) -> str:
    """A summary that depends on the request only, the same whichever API asked for it."""
    user = body["messages"][0]["content"]
    topic = next(t for t in TOPICS if f"Task {t}" in user)
    digest = hashlib.sha256(user.encode()).hexdigest()[:12]
    return f"<summary>## Goals & Decisions\nWork on {topic} ({digest}).</summary>"


def _env(fake_api: FakeAnthropicServer) -> dict[str, str | None]:
    return {"ANTHROPIC_API_KEY": "sk-test-secret", "ANTHROPIC_BASE_URL": fake_api.base_url}


def _compact(inputs: list[Path], out: Path, fake_api: FakeAnthropicServer, *extra: str) -> Any:
    return run_cli(
        "compact", *inputs, "--out-dir", out, "--no-restore", "--jobs", "1", *extra, env=_env(fake_api)
    )


def test_a_batch_gives_the_files_the_messages_api_would(
    tmp_path: Path, fake_api: FakeAnthropicServer
) -> None:
    inputs = _write_inputs(tmp_path / "in")
    fake_api.answer = _answer
    fake_api.batch_polls_in_progress = 0  # the CLI polls every 30 s: end at the first look

    direct = _compact(inputs, tmp_path / "direct", fake_api, "--summarizer", "anthropic")
    assert direct.exit_code == 0, direct.stderr
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 3

    batched = _compact(inputs, tmp_path / "batched", fake_api, "--summarizer", "anthropic-batch")
    assert batched.exit_code == 0, batched.stderr
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 3  # no Messages request more
    created = [r for r in fake_api.requests_to(BATCHES_PATH) if r.method == "POST"]
    assert len(created) == 1 and len(created[0].body["requests"]) == 3  # one batch, one per file
    assert "message batch msgbatch_fake_" in batched.stderr and ": ended" in batched.stderr
    for path in inputs:
        got = json.loads((tmp_path / "batched" / path.name).read_text())
        assert got == json.loads((tmp_path / "direct" / path.name).read_text())
        assert "Work on " + path.stem.upper() in got[1]["content"]


def _fail_some(custom_id: str, params: dict[str, Any]) -> dict[str, Any]:
    user = params["messages"][0]["content"]
    if "Task BRAVO" in user:
        return FakeAnthropicServer.batch_errored("overloaded_error")
    if "Task CHARLIE" in user:
        return FakeAnthropicServer.batch_expired()
    return FakeAnthropicServer.batch_succeeded(_answer(params))


def test_errored_and_expired_results_fall_back_to_extractive(
    tmp_path: Path, fake_api: FakeAnthropicServer
) -> None:
    inputs = _write_inputs(tmp_path / "in")
    fake_api.batch_result = _fail_some
    fake_api.batch_polls_in_progress = 0
    report = tmp_path / "report.json"
    result = _compact(
        inputs, tmp_path / "out", fake_api, "--summarizer", "anthropic-batch", "--report", report
    )
    assert result.exit_code == 0, result.stderr
    summaries = {p.stem: json.loads((tmp_path / "out" / p.name).read_text())[1]["content"] for p in inputs}
    assert "Work on ALPHA" in summaries["alpha"]
    for stem in ("bravo", "charlie"):
        assert summaries[stem].startswith("[Conversation compressed]") and "Work on" not in summaries[stem]
    stats = [item["stats"][0] for item in json.loads(report.read_text())["inputs"]]
    assert [s["summarizer"] for s in stats] == ["anthropic-batch", "extractive", "extractive"]
    assert "the batch request errored (overloaded_error)" in stats[1]["warnings"][0]
    assert "the batch request expired" in stats[2]["warnings"][0]
    assert "sk-test-secret" not in result.stderr


def test_failed_results_with_on_failure_error_exit_3(tmp_path: Path, fake_api: FakeAnthropicServer) -> None:
    inputs = _write_inputs(tmp_path / "in")
    fake_api.batch_result = _fail_some
    fake_api.batch_polls_in_progress = 0
    result = _compact(
        inputs, tmp_path / "out", fake_api, "--summarizer", "anthropic-batch", "--on-failure", "error"
    )
    assert result.exit_code == 3, result.stderr
    assert (tmp_path / "out" / "alpha.json").exists()
    assert not (tmp_path / "out" / "bravo.json").exists() and not (tmp_path / "out" / "charlie.json").exists()


def test_polling_waits_while_in_progress_then_reads_results(fake_api: FakeAnthropicServer) -> None:
    fake_api.batch_polls_in_progress = 2
    fake_api.answer = lambda params: "<summary>done</summary>"
    client = anthropic.Anthropic(api_key="k", base_url=fake_api.base_url, max_retries=0)
    requests = [BatchRequest(f"req-{n}", "claude-x", "sys", f"user {n}", 100) for n in range(2)]
    polls: list[BatchPoll] = []
    sleeps: list[float] = []
    answers = run_message_batch(
        requests, AnthropicBatches(client=client), sleep=sleeps.append, on_poll=polls.append
    )
    assert [p.status for p in polls] == ["in_progress", "in_progress", "ended"]
    assert polls[0].processing == 2 and polls[-1].succeeded == 2
    assert sleeps == [POLL_INTERVAL, POLL_INTERVAL]
    assert {k: v.text for k, v in answers.items() if isinstance(v, TextReply)} == {
        "req-0": "<summary>done</summary>",
        "req-1": "<summary>done</summary>",
    }


def test_single_output_to_stdout_is_refused(tmp_path: Path) -> None:
    inputs = _write_inputs(tmp_path / "in")
    result = run_cli("compact", inputs[0], "--summarizer", "anthropic-batch")
    assert result.exit_code == 2
    assert "--out-dir" in result.stderr


@pytest.mark.parametrize("extra", [(), ("--in-place",)])
def test_no_key_is_refused_before_any_work(tmp_path: Path, extra: tuple[str, ...]) -> None:
    inputs = _write_inputs(tmp_path / "in")
    args = extra or ("--out-dir", str(tmp_path / "out"))
    result = run_cli("compact", *inputs[:1], "--summarizer", "anthropic-batch", *args)
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_chunked_summary_takes_a_second_round_for_its_merge() -> None:
    from ctxcompact.batch.message_batches import ReplayTransport
    from ctxcompact.compaction.summarize.llm import LLMSummarizer

    messages = [
        Message(
            "user" if n % 2 == 0 else "assistant",
            ({"type": "text", "text": f"step {n}: " + "parser detail " * 150},),
            Source(({},), (n,)),
        )
        for n in range(12)
    ]
    answers: dict[str, TextReply | str] = {}
    asked: list[int] = []
    for _ in range(4):
        wanted: dict[str, BatchRequest] = {}
        summarizer = LLMSummarizer(
            ReplayTransport(answers, collect=wanted), "claude-x", context_budget=2_000, max_retries=0
        )
        summarizer.summarize(messages)
        asked.append(len(wanted))
        answers.update({key: TextReply(f"<summary>answer {key}</summary>") for key in wanted})
    assert asked[0] > 1 and asked[1:] == [1, 0, 0]  # the chunks, then their merge, then nothing
    final = LLMSummarizer(ReplayTransport(answers), "claude-x", context_budget=2_000, max_retries=0)
    summary = final.summarize(messages)
    assert summary.chunks == asked[0] and summary.text.startswith("answer ctxc-")
    assert summary.summarizer == "anthropic-batch"
