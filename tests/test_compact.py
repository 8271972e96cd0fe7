"""The compaction pipeline: seed 000 full compaction, archive, stats, auto mode, failures."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

from ctxcompact import compact_messages
from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.accounting.windows import make_budget, resolve_model
from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.restore import InMemoryFileReader
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.summarize import Summary, SummaryFailed
from ctxcompact.errors import WorkFailedError
from ctxcompact.ir import Message, text_of
from ctxcompact.markers import SUMMARY_ACK, SUMMARY_PREFIX, claude_code_summary_text
from ctxcompact.output.json import compact_stats_json
from ctxcompact.transcripts.io import dump_transcript, load_messages, load_transcript, parse_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages


class FakeSummarizer:
    """Records what it was asked to summarize; answers a fixed text or fails."""

    def __init__(self, text: str = "SUMMARY TEXT", *, fail: bool = False, name: str = "fake") -> None:
        self.text = text
        self.fail = fail
        self.name = name
        self.calls: list[list[Message]] = []

    def summarize(
        self, messages: Sequence[Message], *, max_words: int = 1200, instructions: str | None = None
    ) -> Summary:
        self.calls.append(list(messages))
        if self.fail:
            raise SummaryFailed("the API answered HTTP 529 (overloaded_error)", attempts=3)
        return Summary(self.text, self.name, attempts=1)


def _conversation(records: list[dict[str, Any]]) -> Any:
    return load_messages(records)


def _tool_session() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the tax bug in src/tax.py, don't change the public API."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the file."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/tax.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "def tax(x):\n    return x / 0\n" * 20,
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t2", "name": "run_command", "input": {"command": "pytest"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "is_error": True,
                    "content": "Traceback (most recent call last):\n  File x\nZeroDivisionError: division by zero",
                }
            ],
        },
        {"role": "assistant", "content": "The division is wrong; I will fix it next."},
    ]


def _options(tmp_path: Path, **changes: Any) -> CompactOptions:
    return CompactOptions.from_keywords(work_dir=tmp_path, archive_dir=tmp_path / "archive", **changes)


def test_full_compaction_assembles_the_seed_strings(tmp_path: Path) -> None:
    conv = _conversation(_tool_session())
    reader = InMemoryFileReader({tmp_path / "src/tax.py": b"def tax(x):\n    return x * 0.2\n"})
    result = compact_conversation(
        conv,
        options=_options(tmp_path),
        summarizer=FakeSummarizer(),
        reader=reader,
        counter=EstimateCounter(),
    )
    out = result.messages
    assert out[0] is conv.records[0]  # the head is the very record read
    assert out[1] == {"role": "user", "content": SUMMARY_PREFIX + "SUMMARY TEXT"}
    assert out[1]["content"].startswith("[Conversation compressed]\n\n")
    assert out[2] == {"role": "assistant", "content": SUMMARY_ACK}
    assert out[3] == {
        "role": "user",
        "content": "[Restored after compact] src/tax.py:\ndef tax(x):\n    return x * 0.2\n",
    }
    assert out[4] == {"role": "assistant", "content": "Noted, file content restored."}
    assert len(out) == 5
    stats = result.stats
    assert stats.compacted
    assert (stats.compacted_message_count, stats.retained_message_count) == (6, 1)
    assert (stats.restored_file_count, stats.restored_token_count) == (1, stats.restored_token_count)
    assert stats.restored_token_count > 0
    assert stats.compacted_tokens < stats.original_tokens
    assert not errors_only(validate_messages(result.conversation.messages))


def test_archive_holds_exactly_the_replaced_raw_records(tmp_path: Path) -> None:
    records = _tool_session()
    result = compact_conversation(
        _conversation(records),
        options=_options(tmp_path, restore=False),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    assert result.stats.archive_path is not None
    archive = Path(result.stats.archive_path)
    assert archive.parent == tmp_path / "archive"
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert lines == records[1:]


def test_archive_failure_compacts_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    options = CompactOptions(
        work_dir=tmp_path, archive_dir=blocker / "archive", configured=(FullOptions(restore=False),)
    )
    with pytest.raises(WorkFailedError) as info:
        compact_conversation(
            _conversation(_tool_session()),
            options=options,
            summarizer=FakeSummarizer(),
            counter=EstimateCounter(),
        )
    assert info.value.exit_code == 3
    assert "nothing was compacted" in str(info.value)


def test_no_system_message_puts_the_summary_first_and_only_system_is_untouched(tmp_path: Path) -> None:
    records = _tool_session()[1:]
    result = compact_conversation(
        _conversation(records),
        options=_options(tmp_path, restore=False),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    assert result.messages[0]["content"].startswith("[Conversation compressed]")

    only_system = _conversation([{"role": "system", "content": "sys"}])
    fake = FakeSummarizer()
    same = compact_conversation(
        only_system, options=_options(tmp_path), summarizer=fake, counter=EstimateCounter()
    )
    assert not same.compacted
    assert same.conversation.messages == only_system.messages
    assert fake.calls == []

    empty = compact_conversation(
        _conversation([]), options=_options(tmp_path), summarizer=fake, counter=EstimateCounter()
    )
    assert not empty.compacted and empty.messages == []


@pytest.mark.parametrize("mode", ["fallback", "skip", "error"])
def test_summarizer_failure_modes(tmp_path: Path, mode: str) -> None:
    conv = _conversation(_tool_session())
    options = _options(tmp_path, on_failure=mode, restore=False)
    failing = FakeSummarizer(fail=True, name="anthropic")
    if mode == "error":
        with pytest.raises(SummaryFailed) as info:
            compact_conversation(conv, options=options, summarizer=failing, counter=EstimateCounter())
        assert info.value.exit_code == 3
        assert not (tmp_path / "archive").exists()
        return
    result = compact_conversation(conv, options=options, summarizer=failing, counter=EstimateCounter())
    if mode == "skip":
        assert not result.compacted
        assert all(a is b for a, b in zip(result.conversation.messages, conv.messages, strict=True))
        assert any("skipped" in w for w in result.stats.warnings)
    else:
        assert result.compacted
        assert result.stats.summarizer == "extractive"
        assert any("used the extractive summarizer" in w for w in result.stats.warnings)


def test_auto_passes_through_under_the_threshold_and_compacts_over_it(tmp_path: Path) -> None:
    conv = _conversation(_tool_session())
    roomy = make_budget(resolve_model("claude-sonnet-4-5"))
    fake = FakeSummarizer()
    result = compact_conversation(
        conv, options=_options(tmp_path), budget=roomy, auto=True, summarizer=fake, counter=EstimateCounter()
    )
    assert not result.compacted and "under the threshold" in result.stats.reason
    assert result.conversation is conv and fake.calls == []

    tight = make_budget(resolve_model(None, context_window=400), output_reserve=0, ratio=0.4)
    result = compact_conversation(
        conv,
        options=_options(tmp_path, restore=False),
        budget=tight,
        auto=True,
        summarizer=fake,
        counter=EstimateCounter(),
    )
    assert result.compacted


def test_auto_never_emits_a_larger_transcript(tmp_path: Path) -> None:
    conv = _conversation(_tool_session())
    tight = make_budget(resolve_model(None, context_window=400), output_reserve=0, ratio=0.4)
    verbose = FakeSummarizer("word " * 5000)
    # --auto ends under the threshold or writes nothing and says why (exit 3).
    with pytest.raises(WorkFailedError, match="could not bring the context under the threshold"):
        compact_conversation(
            conv,
            options=_options(tmp_path, restore=False),
            budget=tight,
            auto=True,
            summarizer=verbose,
            counter=EstimateCounter(),
        )
    # Without --auto the larger result is emitted, with a plain warning.
    result = compact_conversation(
        conv, options=_options(tmp_path, restore=False), summarizer=verbose, counter=EstimateCounter()
    )
    assert result.compacted and any("not smaller" in w for w in result.stats.warnings)


def test_repeated_compaction_includes_the_earlier_summary(tmp_path: Path) -> None:
    """UC-005: compact, append turns, compact again."""
    first = compact_conversation(
        _conversation(_tool_session()),
        options=_options(tmp_path, restore=False),
        summarizer=FakeSummarizer("FIRST"),
        counter=EstimateCounter(),
    )
    records = [
        *first.messages,
        {"role": "user", "content": "Now add a test."},
        {"role": "assistant", "content": "Added."},
    ]
    again = FakeSummarizer("SECOND")
    second = compact_conversation(
        _conversation(records),
        options=_options(tmp_path, restore=False),
        summarizer=again,
        counter=EstimateCounter(),
    )
    seen = "\n".join(text_of(m) for m in again.calls[0])
    assert "[Conversation compressed]\n\nFIRST" in seen and "Now add a test." in seen
    assert second.messages[1]["content"] == SUMMARY_PREFIX + "SECOND"
    assert len(list((tmp_path / "archive").iterdir())) == 2


def test_input_is_never_mutated(tmp_path: Path) -> None:
    records = _tool_session()
    snapshot = copy.deepcopy(records)
    conv = _conversation(records)
    compact_conversation(
        conv, options=_options(tmp_path), summarizer=FakeSummarizer(), counter=EstimateCounter()
    )
    assert records == snapshot


def test_retention_check_reports_paths_errors_and_last_request(tmp_path: Path) -> None:
    good = FakeSummarizer(
        "Goal: fix the tax bug in src/tax.py without changing the public API. ZeroDivisionError seen."
    )
    result = compact_conversation(
        _conversation(_tool_session()),
        options=_options(tmp_path, restore=False),
        summarizer=good,
        counter=EstimateCounter(),
    )
    retention = result.stats.retention
    assert retention is not None
    assert (retention.paths_found, retention.paths_total) == (1, 1)
    assert (retention.errors_found, retention.errors_total) == (1, 1)
    assert retention.last_request is True
    bad = FakeSummarizer("Something happened.")
    result = compact_conversation(
        _conversation(_tool_session()),
        options=_options(tmp_path, restore=False),
        summarizer=bad,
        counter=EstimateCounter(),
    )
    assert result.stats.retention is not None
    assert result.stats.retention.summary_line() == "paths 0/1, errors 0/1, last request no"
    assert any("last user request" in w for w in result.stats.warnings)
    # A caller that scores the result itself (eval) skips the check: same result, no report.
    unchecked = compact_conversation(
        _conversation(_tool_session()),
        options=replace(_options(tmp_path, restore=False), check_retention=False),
        summarizer=bad,
        counter=EstimateCounter(),
    )
    assert unchecked.stats.retention is None
    assert not any("last user request" in w for w in unchecked.stats.warnings)
    assert [(m.role, m.content) for m in unchecked.conversation.messages] == [
        (m.role, m.content) for m in result.conversation.messages
    ]


def test_stats_json_has_the_seed_fields(tmp_path: Path) -> None:
    result = compact_conversation(
        _conversation(_tool_session()),
        options=_options(tmp_path, restore=False),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    data = compact_stats_json(result.stats)
    for key in (
        "original_token_count",
        "compacted_token_count",
        "compaction_ratio",
        "compacted_message_count",
        "retained_message_count",
        "restored_file_count",
        "restored_token_count",
        "archive_path",
        "summarizer",
        "retries",
        "retention",
    ):
        assert key in data
    assert data["compaction_ratio"] == pytest.approx(
        data["compacted_token_count"] / data["original_token_count"], abs=1e-4
    )


def test_openai_transcript_comes_back_in_openai_dialect(tmp_path: Path) -> None:
    transcript = load_transcript(SAMPLES / "openai-chat.json")
    conv = transcript.conversations[0]
    result = compact_conversation(
        conv,
        options=_options(tmp_path, restore=False),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    out = result.messages
    assert out[0]["role"] == "system" and out[0] is conv.records[0]
    assert out[1] == {"role": "user", "content": SUMMARY_PREFIX + "SUMMARY TEXT"}
    # The summary pair is plain text, valid in both dialects; the untouched system record and
    # nothing Anthropic-only (no content blocks) comes out.
    assert all(isinstance(r.get("content"), str) for r in out)
    reloaded = parse_transcript(
        dump_transcript(transcript.with_conversations([result.conversation])), dialect="openai"
    )
    assert not errors_only(validate_messages(reloaded.messages, dialect="openai"))


def test_claude_code_session_compacts_and_reloads(tmp_path: Path) -> None:
    transcript = load_transcript(SAMPLES / "claude-code-session.jsonl")
    conv = transcript.conversations[0]
    result = compact_conversation(
        conv,
        options=_options(tmp_path, restore=False),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    data = dump_transcript(transcript.with_conversations([result.conversation]))
    reloaded = parse_transcript(data)
    assert reloaded.container == "claude-code"
    texts = [text_of(m) for m in reloaded.conversations[0].messages]
    # Written the way Claude Code writes its own summary, after a compact_boundary.
    assert texts[0] == claude_code_summary_text("SUMMARY TEXT")
    # Lines that are not messages (summary, file-history-snapshot) are all still there.
    kept = [r for r in conv.records if r.get("type") not in ("user", "assistant")]
    assert all(r in reloaded.root for r in kept)


def test_library_facade_on_raw_dicts_offline(tmp_path: Path) -> None:
    result = compact_messages(_tool_session(), summarizer="extractive", work_dir=tmp_path, restore=False)
    assert result.stats.summarizer == "extractive"
    assert result.messages[1]["content"].startswith("[Conversation compressed]\n\n")
    again = compact_messages(_tool_session(), summarizer="extractive", work_dir=tmp_path, restore=False)
    assert again.messages == result.messages  # deterministic


def test_prune_then_full_runs_as_one_pipeline(tmp_path: Path) -> None:
    fake = FakeSummarizer()
    result = compact_conversation(
        _conversation(_tool_session()),
        options=_options(tmp_path, strategies=("prune", "full"), keep=0, restore=False),
        summarizer=fake,
        counter=EstimateCounter(),
    )
    assert [s["strategy"] for s in result.stats.steps] == ["prune", "full"]
    assert result.compacted


def test_async_facade_gives_the_same_result(tmp_path: Path) -> None:
    import asyncio

    from ctxcompact import acompact_messages

    sync = compact_messages(_tool_session(), summarizer="extractive", work_dir=tmp_path, restore=False)
    result = asyncio.run(
        acompact_messages(_tool_session(), summarizer="extractive", work_dir=tmp_path, restore=False)
    )
    assert result.messages == sync.messages


def test_keep_loop_keeps_the_live_request_and_its_tool_loop(tmp_path: Path) -> None:
    records = [
        *_tool_session(),
        {"role": "user", "content": "Now run the tests again."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t9", "name": "run_command", "input": {"command": "pytest"}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "3 passed"}]},
    ]
    conv = _conversation(records)
    result = compact_conversation(
        conv,
        options=_options(tmp_path, keep_loop=True, restore=False),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    out = result.conversation.messages
    assert out[-3:] == conv.messages[-3:] and all(
        a is b for a, b in zip(out[-3:], conv.messages[-3:], strict=True)
    )
    assert text_of(out[1]).startswith("[Conversation compressed]")
    assert result.stats.compacted_message_count == len(conv.messages) - 4  # head and the live loop stay
    assert result.stats.retained_message_count == 4
    assert not errors_only(validate_messages(out))
    # A single request is all loop: nothing before it to compact.
    single = compact_conversation(
        _conversation([{"role": "user", "content": "hi"}]),
        options=_options(tmp_path, keep_loop=True),
        summarizer=FakeSummarizer(),
        counter=EstimateCounter(),
    )
    assert not single.compacted


def _long_task_session(task_words: int) -> list[dict[str, Any]]:
    task = "Port the billing module to the new ledger API. " + " ".join(
        f"Requirement {n}: keep invoice {n} stable." for n in range(task_words // 6)
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for n in range(6):
        messages += [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"r{n}",
                        "name": "Read",
                        "input": {"file_path": f"src/billing_{n}.py"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"r{n}", "content": f"def total_{n}(): ...\n" * 40}
                ],
            },
        ]
    messages += [
        {"role": "assistant", "content": "Read every billing module."},
        {"role": "user", "content": "Now write the adapter."},
        {"role": "assistant", "content": "Writing it."},
    ]
    return messages


@pytest.mark.parametrize("max_words", [250, 400])
def test_a_task_too_long_for_the_summary_is_written_whole_once_not_clipped_again(max_words: int) -> None:
    """The pinned task (``--pin-first``, the default of hybrid and ``--auto``) goes whole
    before a summary that cannot hold it; the extractive summary then refers to it instead of
    spending its words on a clipped copy, and those words keep the rest (the files read)."""
    messages = _long_task_session(task_words=600)
    statement = messages[0]["content"]
    result = compact_messages(
        messages,
        strategy="full",
        summarizer="extractive",
        summary_max_words=max_words,
        restore=False,
        pins=PinOptions(pin_first=True),
    )
    summary = next(t for m in result.conversation.messages if SUMMARY_PREFIX.strip() in (t := text_of(m)))
    assert summary.count(statement) == 1
    assert "of the task statement omitted" not in summary
    assert "(written whole above this summary)" in summary
    assert "`src/billing_5.py`" in summary


def test_a_task_the_summary_holds_is_not_written_twice() -> None:
    messages = _long_task_session(task_words=60)
    statement = messages[0]["content"]
    result = compact_messages(
        messages, strategy="full", summarizer="extractive", restore=False, pins=PinOptions(pin_first=True)
    )
    summary = next(t for m in result.conversation.messages if SUMMARY_PREFIX.strip() in (t := text_of(m)))
    assert summary.count(statement) == 1
    assert "written whole above" not in summary and "The task, as the user gave it" not in summary
