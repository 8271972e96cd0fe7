"""Pins, earlier summaries and the recent tail (:mod:`ctxcompact.compaction.pins`)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction.pins import (
    PIN_FIELD,
    PinOptions,
    first_task_index,
    is_earlier_summary,
    pinned_indices,
    protected_part,
    recent_tail_start,
)
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_transcript

COUNTER = EstimateCounter()


def load(records: list[Any], dialect: str = "anthropic") -> tuple[Message, ...]:
    return load_transcript(data=orjson.dumps(records), name="t", dialect=dialect).conversations[0].messages


RECORDS: list[dict[str, Any]] = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "[Conversation compressed]\n\nearlier summary"},
    {
        "role": "assistant",
        "content": "Understood. I have the context from the compressed conversation. Continuing work.",
    },
    {"role": "user", "content": "Fix the bug in app.py. Never touch tests/."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read_file", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "SECRET-RULE"}]},
    {"role": "assistant", "content": "done", PIN_FIELD: True},
    {"role": "user", "content": "next please"},
    {"role": "assistant", "content": "ok"},
]


def test_first_real_user_message_is_pinned_by_default() -> None:
    messages = load(RECORDS)
    assert first_task_index(messages) == 3  # not the earlier summary
    assert 3 in pinned_indices(messages)
    assert 3 not in pinned_indices(messages, PinOptions(pin_first=False))


def test_marker_field_and_regex_pin_whole_blocks() -> None:
    messages = load(RECORDS)
    pins = pinned_indices(messages, PinOptions(patterns=("SECRET-RULE",), pin_first=False))
    assert pins == {4, 5, 6}  # the result's block (use + result), and the marked message


def test_bad_regex_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"pin .* is not a valid regular expression"):
        PinOptions(patterns=("(",))


def test_summaries_and_claude_code_compact_summary() -> None:
    messages = load(RECORDS)
    guard = protected_part(messages)
    assert {1, 2} <= guard.summaries
    assert 0 in guard and 7 in guard and 8 in guard  # head and the live loop
    assert 4 not in guard
    cc = load([{"role": "user", "content": "anything", "isCompactSummary": True}])
    assert is_earlier_summary(cc[0])


def _rounds(n: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for i in range(n):
        records += [
            {"role": "user", "content": f"request {i}"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "w " * 50}],
            },
            {"role": "assistant", "content": f"answer {i}"},
        ]
    return records


def test_recent_tail_cuts_at_a_round_within_the_tokens() -> None:
    messages = load(_rounds(5))
    tail_two = count_tokens(messages[12:], counter=COUNTER).total
    assert recent_tail_start(messages, tokens=tail_two, counter=COUNTER) == 12
    assert recent_tail_start(messages, tokens=tail_two - 1, counter=COUNTER) == 16
    assert recent_tail_start(messages, tokens=1, counter=COUNTER) == len(messages)
    assert recent_tail_start(messages, tokens=0, counter=COUNTER) == len(messages)
    assert recent_tail_start(messages, tokens=10**9, counter=COUNTER) == 0


def test_recent_tail_never_starts_inside_a_tool_block() -> None:
    records = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "out"},
                {"type": "text", "text": "and also this"},
            ],
        },
        {"role": "assistant", "content": "fine"},
    ]
    messages = load(records)
    tail = count_tokens(messages[2:], counter=COUNTER).total
    assert recent_tail_start(messages, tokens=tail, counter=COUNTER) == len(messages)
