"""The table entries of selective and hybrid through the pipeline: the summary fallback, its
rollback, hybrid's summary only when still needed, and pipeline-level invariants."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.accounting.windows import make_budget, resolve_model
from ctxcompact.compaction.pins import protected_part
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.summarize import Summary, SummaryFailed
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.errors import WorkFailedError
from ctxcompact.ir import Message, live_start
from ctxcompact.transcripts.io import load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

COUNTER = EstimateCounter()


class Failing:
    name = "failing"

    def summarize(
        self, messages: Sequence[Message], *, max_words: int = 1200, instructions: str | None = None
    ) -> Summary:
        raise SummaryFailed("HTTP 529", attempts=3)


def conversation(rounds: int, size: int) -> Any:
    records: list[dict[str, Any]] = []
    for n in range(rounds):
        records += [
            {"role": "user", "content": f"request {n} " + "words " * size},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "x", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "w " * size}],
            },
            {"role": "assistant", "content": f"answer {n} " + "words " * size},
        ]
    return load_transcript(data=orjson.dumps(records), name="t").conversations[0]


def budget(window: int) -> Any:
    return make_budget(resolve_model(None, context_window=window), output_reserve=0, ratio=0.5)


def test_selective_summary_fallback_when_rules_are_not_enough(tmp_path: Path) -> None:
    conv = conversation(4, 300)  # few items: keep_recent 5 keeps them all
    options = CompactOptions(strategies=("selective",), archive_dir=tmp_path)
    result = compact_conversation(
        conv, options=options, budget=budget(2000), summarizer=ExtractiveSummarizer(), counter=COUNTER
    )
    step = result.stats.steps[0]
    assert [e["phase"] for e in step["events"]][-2:] == ["summary_start", "summary_done"]
    assert "summary_fallback" in step and result.compacted
    assert result.conversation.messages[-4:] == conv.messages[-4:]  # the live round verbatim


@pytest.mark.parametrize("on_failure", ["skip", "error"])
def test_selective_rolls_back_when_the_summary_fails(tmp_path: Path, on_failure: str) -> None:
    conv = conversation(4, 300)
    options = CompactOptions(
        strategies=("selective",),
        archive_dir=tmp_path,
        configured=(FullOptions(on_failure=on_failure),),  # type: ignore[arg-type]
    )
    if on_failure == "error":
        with pytest.raises(SummaryFailed):
            compact_conversation(
                conv, options=options, budget=budget(2000), summarizer=Failing(), counter=COUNTER
            )
        return
    result = compact_conversation(
        conv, options=options, budget=budget(2000), summarizer=Failing(), counter=COUNTER
    )
    first = result.stats.steps[0]
    assert first["rolled_back"] and first["changed"] is False  # selective's own work undone
    assert any("rolled back" in w for w in result.stats.warnings)
    # still over the threshold: the fallback ladder, the safety net for a failed summary, runs
    assert result.stats.steps[1]["strategy"] == "ladder"


def test_hybrid_summarizes_only_when_pruning_is_not_enough(tmp_path: Path) -> None:
    conv = conversation(8, 400)
    options = CompactOptions(strategies=("hybrid",), archive_dir=tmp_path)
    roomy = compact_conversation(
        conv, options=options, budget=budget(44000), summarizer=Failing(), counter=COUNTER
    )  # masking alone reaches the target (half the threshold): the (failing) summarizer is never called
    hybrid = roomy.stats.steps[0]
    assert [s["strategy"] for s in hybrid["steps"]] == ["mask"] and hybrid["skipped"] == ["summary"]
    tight = compact_conversation(
        conv, options=options, budget=budget(1000), summarizer=ExtractiveSummarizer(), counter=COUNTER
    )
    assert [s["strategy"] for s in tight.stats.steps[0]["steps"]] == ["mask", "summary"]


PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(data=transcripts())
def test_pipeline_auto_is_valid_never_larger_and_keeps_the_protected_part(
    data: tuple[str, list[Any]],
) -> None:
    dialect, records = data
    conv = load_transcript(data=orjson.dumps(records), name="g", dialect=dialect).conversations[0]
    guard = protected_part(conv.messages)
    for strategy in ("selective", "key-messages", "hybrid"):
        options = CompactOptions(strategies=(strategy,), archive_dir=Path("/nonexistent"))
        try:
            result = compact_conversation(
                conv, options=options, budget=budget(600), auto=True, dry_run=True,
                summarizer=ExtractiveSummarizer(), counter=COUNTER,
            )  # fmt: skip
        except WorkFailedError as exc:  # nothing fits under the threshold: --auto says so
            assert "could not bring the context under the threshold" in str(exc)
            continue
        out = result.conversation.messages
        live = conv.messages[live_start(conv.messages) :]
        assert tuple(out[len(out) - len(live) :]) == live  # what the model has not seen: whole
        assert not errors_only(validate_messages(out, dialect=dialect)) or errors_only(
            validate_messages(conv.messages, dialect=dialect)
        )
        assert result.stats.compacted_tokens <= result.stats.original_tokens
        ladder = any(s["strategy"] == "ladder" and s["changed"] for s in result.stats.steps)
        if strategy != "hybrid" and not ladder:  # the ladder works inside the loop (not its live part)
            live = conv.messages[guard.loop_start :]
            assert tuple(out[len(out) - len(live) :]) == live
