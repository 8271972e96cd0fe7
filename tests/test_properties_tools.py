"""Invariants of offload, prune and clean-tools over random valid transcripts (both dialects).

For every strategy: the output passes the validator (no error, no new warning), the input
records are not mutated, tokens never grow, messages it keeps are the very same objects and
are written back field for field, and a second pass changes nothing. For offload: ``--undo``
gives the original back, byte for byte once written.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction.strategies.clean_tools import clean_tool_calls
from ctxcompact.compaction.strategies.prune import prune_tool_outputs
from ctxcompact.ir import Message
from ctxcompact.offload.tool_results import content_chars, offload_tool_results, undo_offload
from ctxcompact.transcripts.io import Transcript, conversation_records, dump_transcript, load_transcript
from ctxcompact.transcripts.validate import validate_messages

COUNTER = EstimateCounter()
PROPS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Rewrite = Callable[[Sequence[Message]], tuple[Message, ...]]


def _load(dialect: str, records: list[Any]) -> Transcript:
    return load_transcript(data=orjson.dumps(records), name="generated", dialect=dialect)


def _prune(messages: Sequence[Message]) -> tuple[Message, ...]:
    return prune_tool_outputs(
        messages, keep=1, keep_thinking=0, clear_tool_inputs=True, counter=COUNTER
    ).messages


def _prune_whole_loop(messages: Sequence[Message]) -> tuple[Message, ...]:
    return prune_tool_outputs(messages, keep=0, keep_thinking=0, protect_loop=False, counter=COUNTER).messages


def _clean(messages: Sequence[Message]) -> tuple[Message, ...]:
    return clean_tool_calls(messages, rounds=1).messages


def _clean_all(messages: Sequence[Message]) -> tuple[Message, ...]:
    return clean_tool_calls(messages, rounds=0).messages


def _offloader(out_dir: Path, **options: Any) -> Rewrite:
    def run(messages: Sequence[Message]) -> tuple[Message, ...]:
        return offload_tool_results(messages, out_dir=out_dir, counter=COUNTER, **options).messages

    return run


def _codes(messages: Sequence[Message], dialect: str) -> set[str]:
    return {v.code for v in validate_messages(messages, dialect=dialect)}


def check_invariants(
    dialect: str, records: list[Any], rewrite: Rewrite, *, tokens_may_grow: bool = False
) -> None:
    pristine = copy.deepcopy(records)
    transcript = _load(dialect, records)
    conv = transcript.conversations[0]
    before = conv.messages
    assert not [v for v in validate_messages(before, dialect=dialect) if v.severity == "error"]

    after = rewrite(before)

    # The API's rules hold, and no warning appears that the input did not have.
    errors = [v for v in validate_messages(after, dialect=dialect) if v.severity == "error"]
    assert not errors, errors
    assert _codes(after, dialect) <= _codes(before, dialect)
    # Nothing mutated: the raw records and the IR messages are as they were.
    assert transcript.root == pristine
    assert conv.messages is before
    # Tokens never grow.
    if not tokens_may_grow:
        assert count_tokens(after, counter=COUNTER).total <= count_tokens(before, counter=COUNTER).total
    # Kept messages are the very same objects, in order, and are written back field for field.
    kept = [m for m in after if not m.changed]
    ids = [id(m) for m in before]
    positions = [ids.index(id(m)) for m in kept]
    assert positions == sorted(positions)
    new_conv = conv.with_messages(after)
    written = conversation_records(new_conv)
    for message in kept:
        assert message.source is not None
        for record in message.source.records:
            assert any(r is record for r in written)
    # What is written reads back as the same messages.
    reread = load_transcript(data=dump_transcript(transcript.with_conversations([new_conv])), dialect=dialect)
    assert [m.role for m in reread.messages] == [m.role for m in after]
    for old, new in zip(after, reread.messages, strict=True):
        assert _visible(old) == _visible(new)
    # A second pass finds nothing more to do.
    again = rewrite(after)
    assert all(a is b for a, b in zip(again, after, strict=True)) and len(again) == len(after)


def _visible(message: Message) -> list[Any]:
    """What the model sees of a message, in a form both dialects write back identically
    (OpenAI holds one ``reasoning_content`` per message: thinking blocks come back joined)."""
    thinking = [str(b.get("thinking", "")) for b in message.content if b.get("type") == "thinking"]
    out: list[Any] = [("thinking", "\n".join(thinking))] if thinking else []
    for block in message.content:
        kind = block.get("type")
        if kind == "tool_use":
            out.append(("tool_use", block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            out.append(("tool_result", block.get("tool_use_id"), block.get("content")))
        elif kind == "text":
            out.append(("text", block.get("text")))
        elif kind != "thinking":
            out.append(dict(block))
    return out


@PROPS
@given(transcripts())
def test_prune_invariants(drawn: tuple[str, list[Any]]) -> None:
    check_invariants(*drawn, _prune)


@PROPS
@given(transcripts())
def test_prune_without_loop_protection_invariants(drawn: tuple[str, list[Any]]) -> None:
    check_invariants(*drawn, _prune_whole_loop)


@PROPS
@given(transcripts())
def test_clean_tools_invariants(drawn: tuple[str, list[Any]]) -> None:
    check_invariants(*drawn, _clean)
    check_invariants(*drawn, _clean_all)


@PROPS
@given(transcripts())
def test_offload_invariants_and_undo(drawn: tuple[str, list[Any]]) -> None:
    dialect, records = drawn
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp) / "offload"
        # At the seed's 100-character threshold a reference can cost more tokens than the
        # content it replaces (random ids tokenize badly), so only characters are compared.
        check_invariants(dialect, records, _offloader(out_dir), tokens_may_grow=True)
        check_invariants(dialect, records, _offloader(out_dir, min_chars=400, preview=40, keep_recent=1))
        _check_undo(dialect, records, out_dir)
        # Nothing was ever written outside the offload directory.
        assert {p.parent for p in Path(tmp).rglob("*") if p.is_file()} <= {out_dir}


def _check_undo(dialect: str, records: list[Any], out_dir: Path) -> None:
    transcript = _load(dialect, records)
    original = dump_transcript(replace(transcript, raw=None))  # the canonical serialization
    conv = transcript.conversations[0]
    offloaded = offload_tool_results(conv.messages, out_dir=out_dir, counter=COUNTER)
    for path in offloaded.files:
        assert Path(path).resolve().parent == out_dir.resolve()
    lean = dump_transcript(transcript.with_conversations([conv.with_messages(offloaded.messages)]))
    read_back = load_transcript(data=lean, dialect=dialect)
    restored = undo_offload(read_back.messages, out_dir=out_dir)
    assert restored.restored_count == offloaded.offloaded_count
    assert [_visible(m) for m in restored.messages] == [_visible(m) for m in conv.messages]
    assert [m.content for m in restored.messages] == [m.content for m in conv.messages]
    again = dump_transcript(
        replace(
            read_back.with_conversations([read_back.conversations[0].with_messages(restored.messages)]),
            raw=None,
        )
    )
    assert again == original


@pytest.mark.parametrize("min_chars", [1, 100])
@PROPS
@given(drawn=transcripts())
def test_offload_never_grows_characters(min_chars: int, drawn: tuple[str, list[Any]]) -> None:
    """The seed's own measure: each offloaded result shrinks in characters."""
    dialect, records = drawn
    conv = _load(dialect, records).conversations[0]
    with tempfile.TemporaryDirectory() as tmp:
        result = offload_tool_results(conv.messages, out_dir=tmp, min_chars=min_chars, counter=COUNTER)
    for old, new in zip(conv.messages, result.messages, strict=True):
        for a, b in zip(old.content, new.content, strict=True):
            if a is not b:
                assert isinstance(b["content"], str)
                assert len(b["content"]) < content_chars(a["content"])
