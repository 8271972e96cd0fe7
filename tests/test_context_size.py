"""The real context size: recorded usage first, else a calibrated estimate (SPEC §5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import CORPUS
from session_builders import SessionBuilder

from ctxcompact.accounting.check import conversation_model
from ctxcompact.accounting.context_size import (
    CLAUDE_CODE_SYSTEM_TOKENS,
    CLAUDE_TOKEN_FACTOR,
    context_size,
    recorded_usage,
    side_entries,
)
from ctxcompact.accounting.tokens import count_tokens, make_counter
from ctxcompact.ir import new_message
from ctxcompact.transcripts.dialects import DIALECTS, dialect_named
from ctxcompact.transcripts.io import Conversation, load_transcript

BIG = "lorem ipsum dolor sit amet " * 200


def _conv(builder: SessionBuilder) -> Conversation:
    data = "".join(json.dumps(e) + "\n" for e in builder.entries)
    [conv] = load_transcript(data=data, name="s.jsonl").conversations
    return conv


def _session() -> SessionBuilder:
    return (
        SessionBuilder()
        .user("fix the bug")
        .assistant("looking", usage=(10, 20_000, 0, 5))
        .user("go on")
        .assistant("done", usage=(3, 1_000, 140_000, 456))
    )


def test_last_usage_of_the_live_thread_is_recorded() -> None:
    usage = recorded_usage(_conv(_session()))
    assert usage is not None
    assert (usage.input, usage.cache_creation, usage.cache_read, usage.output) == (3, 1_000, 140_000, 456)
    assert usage.prompt == 141_003 and usage.context == 141_459
    assert usage.at_message_index == 3
    assert usage.source == "message.usage, entry 4"


def test_synthetic_and_sidechain_usage_are_skipped() -> None:
    builder = _session()
    builder.user("agent", isSidechain=True).assistant("sub", usage=(1, 0, 900_000, 1), isSidechain=True)
    builder.assistant("API Error", usage=(0, 0, 0, 0), model="<synthetic>")
    usage = recorded_usage(_conv(builder))
    assert usage is not None and usage.cache_read == 140_000


def test_usage_before_a_compact_boundary_is_not_the_live_context() -> None:
    builder = _session().boundary().user("next task")
    assert recorded_usage(_conv(builder)) is None
    builder.assistant("ok", usage=(5, 30_000, 0, 40))
    usage = recorded_usage(_conv(builder))
    assert usage is not None and usage.prompt == 30_005


def test_streamed_entries_of_one_response_take_the_largest_output() -> None:
    builder = _session()
    # Claude Code writes one response as several entries sharing message.id; early ones
    # hold streaming snapshots of output_tokens.
    builder.entries[-1]["message"]["usage"]["output_tokens"] = 1
    builder.assistant("more", usage=(3, 1_000, 140_000, 456))
    builder.entries[-1]["message"]["id"] = builder.entries[-2]["message"]["id"]
    usage = recorded_usage(_conv(builder))
    assert usage is not None and usage.output == 456 and usage.source == "message.usage, entry 5"


def test_recorded_size_adds_our_count_of_what_came_after() -> None:
    conv = _conv(_session().user(BIG))
    report = count_tokens(conv.messages)
    size = context_size(conv, report, model="claude-sonnet-4-5")
    after = report.messages[-1].tokens
    assert size.source == "recorded"
    assert size.after == after
    assert size.tokens == 141_459 + round(after * CLAUDE_TOKEN_FACTOR)
    ours = report.total - after
    assert size.difference == pytest.approx((ours - 141_459) / 141_459 * 100)


def test_usage_after_a_rewritten_message_is_stale() -> None:
    conv = _conv(_session())
    summary = new_message("user", "summary of the work")
    rewritten = conv.with_messages([summary, *conv.messages[2:]])
    size = context_size(rewritten, count_tokens(rewritten.messages), model="claude-sonnet-4-5")
    assert size.source == "estimate"
    assert size.stale is not None and size.stale.context == 141_459


def test_estimate_for_claude_models_count_for_others() -> None:
    builder = SessionBuilder().user("hello").assistant("hi")
    conv = _conv(builder)
    report = count_tokens(conv.messages)
    claude = context_size(conv, report, model="claude-opus-4-5")
    assert claude.source == "estimate"
    assert claude.tokens == round(report.total * CLAUDE_TOKEN_FACTOR) + CLAUDE_CODE_SYSTEM_TOKENS
    assert context_size(conv, report, model="claude-opus-4-5", system_tokens=0).tokens == round(
        report.total * CLAUDE_TOKEN_FACTOR
    )
    other = context_size(conv, report, model="gpt-4o")
    assert (other.source, other.tokens) == ("count", report.total)
    # A request body holds its own system prompt and tools: no overhead by default.
    [body] = load_transcript(data=json.dumps({"messages": [{"role": "user", "content": "hi"}]})).conversations
    body_report = count_tokens(body.messages)
    size = context_size(body, body_report, model="claude-sonnet-4-5")
    assert size.tokens == round(body_report.total * CLAUDE_TOKEN_FACTOR) and size.system_tokens == 0


def test_mini_swe_agent_response_usage_is_recorded() -> None:
    messages = [
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "ls",
            "extra": {
                "response": {
                    "model": "deepseek-chat",
                    "usage": {
                        "prompt_tokens": 1636,
                        "completion_tokens": 94,
                        "prompt_tokens_details": {"cached_tokens": 320},
                    },
                }
            },
        },
    ]
    [conv] = load_transcript(data=json.dumps({"messages": messages}), dialect="openai").conversations
    usage = recorded_usage(conv)
    assert usage is not None
    assert (usage.input, usage.cache_read, usage.output, usage.context) == (1316, 320, 94, 1730)


def test_sidechain_and_meta_entries_are_reported_apart() -> None:
    builder = _session()
    builder.user("Caveat: local command output", isMeta=True)
    builder.user("sub task " + BIG, isSidechain=True).assistant("sub answer", isSidechain=True)
    conv = _conv(builder)
    side = side_entries(conv, make_counter())
    assert side is not None
    assert (side.sidechain_entries, side.meta_entries) == (2, 1)
    assert side.sidechain_tokens > 1000 and 0 < side.meta_tokens < 20


# --- the commands ------------------------------------------------------------------------------


def test_check_decides_from_recorded_usage(tmp_path: Path) -> None:
    path = _session().write(tmp_path / "s.jsonl")
    result = run_cli("check", path, "--json")
    assert result.exit_code == 1, result.stdout  # our count is tiny; the recorded usage is not
    [row] = result.json()["transcripts"]
    assert row["source"] == "recorded"
    assert row["tokens"] == 141_459 and row["counted"] < 100
    assert row["context"]["recorded_usage"]["cache_read_input_tokens"] == 140_000
    text = run_cli("check", path)
    assert "source: recorded usage 141,459 (message.usage, entry 4)" in text.stdout


def test_compact_auto_compacts_what_recorded_usage_says_is_over(tmp_path: Path) -> None:
    path = _session().write(tmp_path / "s.jsonl")
    args = ["compact", path, "--auto", "--summarizer", "extractive", "--archive-dir", tmp_path / "a"]
    result = run_cli(*args, "--stats-json", tmp_path / "stats.json")
    # Due by its recorded usage; its messages are tiny next to the 141K the usage shows outside
    # them, so no compaction can get it under the threshold: --auto says so and writes nothing.
    assert result.exit_code == 3, result.stderr
    assert "could not bring the context under the threshold" in result.stderr
    small = SessionBuilder().user("hi").assistant("hello", usage=(5, 100, 0, 3)).write(tmp_path / "t.jsonl")
    quiet = run_cli("compact", small, "--auto", "--summarizer", "extractive", "--archive-dir", tmp_path / "a")
    assert "by recorded size" in quiet.stderr


def test_count_shows_recorded_beside_ours_and_uses_the_transcripts_model(tmp_path: Path) -> None:
    path = _session().write(tmp_path / "s.jsonl")
    out = run_cli("count", path).stdout
    assert "of claude-sonnet-4-5-20250929's 200,000-token window" in out
    assert "source: recorded usage 141,459" in out and "our count" in out
    [row] = run_cli("count", path, "--json").json()["transcripts"]
    assert row["model"] == "claude-sonnet-4-5-20250929"
    assert row["context"]["source"] == "recorded"
    assert row["context"]["difference_percent"] < -99
    assert row["sidechain"] == {"entries": 0, "tokens": 0}


def test_system_tokens_option_sets_the_estimate_overhead(tmp_path: Path) -> None:
    path = SessionBuilder().user("hello").assistant("hi").write(tmp_path / "s.jsonl")
    base = run_cli("check", path, "--json", "--system-tokens", "0").json()["transcripts"][0]
    more = run_cli("check", path, "--json", "--system-tokens", "50000").json()["transcripts"][0]
    assert base["source"] == more["source"] == "estimate"
    assert more["tokens"] - base["tokens"] == 50_000


CORPUS_SESSION = CORPUS / "claude-code" / "codemie-196820da-thinking.jsonl"


@pytest.mark.skipif(not CORPUS_SESSION.exists(), reason="corpus not present")
def test_real_session_over_the_threshold_by_its_recorded_usage() -> None:
    # The report: our count said "within budget" while the session's own last usage
    # said 14 + 15,142 cache creation + 126,159 cache read (+456 output of that turn).
    result = run_cli("check", CORPUS_SESSION, "--json")
    assert result.exit_code == 1
    [row] = result.json()["transcripts"]
    assert row["source"] == "recorded" and row["tokens"] == 14 + 15_142 + 126_159 + 456
    assert row["counted"] < 100_800 <= row["tokens"]


def test_mini_swe_agent_names_its_model_in_info_config() -> None:
    trajectory = {
        "info": {"config": {"model": {"model_name": "deepseek/deepseek-chat"}}},
        "messages": [{"role": "user", "content": "task"}, {"role": "assistant", "content": "ls"}],
        "trajectory_format": "mini-swe-agent-1",
    }
    [conv] = load_transcript(data=json.dumps(trajectory)).conversations
    assert conversation_model(conv) == "deepseek/deepseek-chat"


def test_every_dialect_answers_for_its_recorded_usage() -> None:
    # The protocol seam: a dialect says what it records (None when nothing).
    for dialect in DIALECTS:
        assert dialect.recorded_usage(()) is None
    conv = _conv(_session())
    assert dialect_named("claude-code").recorded_usage(conv.messages) == recorded_usage(conv)
