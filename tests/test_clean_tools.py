"""``clean-tools`` (seed 003 §4.2, Appendix A ``cleanToolCalls``): old tool calls go, text stays."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import corpus_files, requires_corpus

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction.strategies.clean_tools import clean_tool_calls
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message, round_starts, text_of
from ctxcompact.transcripts.io import dump_transcript, load_messages, load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

COUNTER = EstimateCounter()


def use(tool_id: str, text: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": tool_id, "name": "run", "input": {"cmd": tool_id}})
    return {"role": "assistant", "content": content}


def result(tool_id: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": f"out {tool_id}"}],
    }


def round_(n: int, *, steps: int = 1, say: bool = True) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"role": "user", "content": f"request {n}"}]
    for s in range(steps):
        records += [use(f"r{n}s{s}", f"let me check {n}.{s}" if say else None), result(f"r{n}s{s}")]
    records.append({"role": "assistant", "content": f"answer {n}"})
    return records


def ir(records: list[dict[str, Any]], dialect: str | None = None) -> tuple[Message, ...]:
    return load_messages(records, dialect=dialect).messages


def tool_ids(messages: Any) -> list[str]:
    return [str(b.get("id")) for m in messages for b in m.content if b.get("type") == "tool_use"]


def test_keeps_the_current_round_and_the_last_n_before_it() -> None:
    messages = ir(round_(1) + round_(2) + round_(3) + round_(4))
    result = clean_tool_calls(messages, rounds=2)
    # Seed: boundary at the (N+1)-th user message from the end -> request 2; round 1 is cleaned.
    assert tool_ids(result.messages) == ["r2s0", "r3s0", "r4s0"]
    assert result.stats == {
        "tool_uses_removed": 1,
        "tool_results_removed": 1,
        "messages_removed": 2,
        "messages_merged": 1,
    }
    # The text of the cleaned messages stays.
    texts = [text_of(m) for m in result.messages]
    assert texts[:2] == ["request 1", "let me check 1.0\nanswer 1"]
    assert not errors_only(validate_messages(result.messages))
    # Everything from the boundary on is the very same objects.
    boundary = round_starts(messages)[-3]
    assert all(
        a is b
        for a, b in zip(result.messages[-(len(messages) - boundary) :], messages[boundary:], strict=True)
    )


def test_rounds_zero_keeps_only_the_current_round() -> None:
    result = clean_tool_calls(ir(round_(1, steps=2) + round_(2) + round_(3, steps=2)), rounds=0)
    assert tool_ids(result.messages) == ["r3s0", "r3s1"]


def test_too_few_rounds_is_a_no_op() -> None:
    messages = ir(round_(1) + round_(2))
    result = clean_tool_calls(messages, rounds=2)
    assert not result.changed and all(a is b for a, b in zip(result.messages, messages, strict=True))


def test_messages_left_empty_are_dropped_and_neighbours_merged() -> None:
    # Tool steps without any text: the assistant turns and the result messages all vanish.
    messages = ir(round_(1, steps=3, say=False) + round_(2))
    result = clean_tool_calls(messages, rounds=0)
    assert [(m.role, text_of(m)) for m in result.messages[:2]] == [
        ("user", "request 1"),
        ("assistant", "answer 1"),
    ]
    assert result.messages[1] is messages[7]  # kept whole: the very same object
    assert result.stats["messages_removed"] == 6 and result.stats["messages_merged"] == 0
    assert not [v for v in validate_messages(result.messages) if v.code == "consecutive_roles"]


def test_thinking_alone_does_not_keep_a_message() -> None:
    records = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "  "},
                {"type": "tool_use", "id": "t1", "name": "run", "input": {}},
            ],
        },
        result("t1"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "so", "signature": "s2"},
                {"type": "text", "text": "done"},
            ],
        },
        {"role": "user", "content": "next"},
    ]
    messages = ir(records)
    out = clean_tool_calls(messages, rounds=0).messages
    assert [m.role for m in out] == ["user", "assistant", "user"]
    assert out[1] is messages[3]


def test_merged_assistant_puts_thinking_first() -> None:
    records = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "first"},
                {"type": "tool_use", "id": "t1", "name": "run", "input": {}},
            ],
        },
        result("t1"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "so", "signature": "s2"},
                {"type": "text", "text": "then"},
            ],
        },
        {"role": "user", "content": "next"},
    ]
    out = clean_tool_calls(ir(records), rounds=0).messages
    assert [b["type"] for b in out[1].content] == ["thinking", "text", "text"]
    assert text_of(out[1]) == "first\nthen"


def test_a_block_whose_results_reach_the_boundary_is_kept_whole() -> None:
    # Claude Code style: the results and the next request share one user message.
    records = [
        {"role": "user", "content": "one"},
        use("t1", "checking"),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                {"type": "text", "text": "two"},
            ],
        },
        {"role": "assistant", "content": "ok"},
    ]
    result = clean_tool_calls(ir(records), rounds=0)
    assert not result.changed


def test_a_merge_never_reaches_into_the_boundary_message() -> None:
    # OpenAI: a request, a call with no text, its result, then the next request (boundary).
    records = [
        {"role": "user", "content": "one"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "ok"},
    ]
    messages = ir(records)
    result = clean_tool_calls(messages, rounds=0)
    # Dropping the call would leave "one" next to "two": the block is kept instead.
    assert not result.changed and all(a is b for a, b in zip(result.messages, messages, strict=True))
    # One round further back there is room to merge before the boundary.
    longer = ir(
        [
            *records[:4],
            *records[1:3],
            {"role": "user", "content": "three"},
            {"role": "assistant", "content": "ok"},
        ]
    )
    # (ids repeat in `longer`, which is fine for OpenAI; only the first block is before the boundary)
    assert clean_tool_calls(longer, rounds=0).stats["tool_uses_removed"] >= 1


def test_openai_written_back_in_its_dialect() -> None:
    records = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "one"},
        {
            "role": "assistant",
            "content": "looking",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 300},
        {"role": "assistant", "content": "found it", "extra": 1},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "ok"},
    ]
    transcript = load_transcript(data=json.dumps(records))
    conv = transcript.conversations[0]
    out = clean_tool_calls(conv.messages, rounds=0)
    written = json.loads(dump_transcript(transcript.with_conversations([conv.with_messages(out.messages)])))
    assert written == [
        records[0],
        records[1],
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "looking"}, {"type": "text", "text": "found it"}],
        },
        records[5],
        records[6],
    ]


def test_input_not_mutated_and_tokens_shrink() -> None:
    records = round_(1, steps=2) + round_(2) + round_(3)
    pristine = copy.deepcopy(records)
    messages = ir(records)
    out = clean_tool_calls(messages, rounds=1)
    assert records == pristine
    assert count_tokens(out.messages, counter=COUNTER).total < count_tokens(messages, counter=COUNTER).total


def test_second_pass_changes_nothing() -> None:
    first = clean_tool_calls(ir(round_(1, steps=2) + round_(2, steps=2) + round_(3) + round_(4)), rounds=1)
    assert first.changed
    second = clean_tool_calls(first.messages, rounds=1)
    assert not second.changed


def test_negative_rounds_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        clean_tool_calls((), rounds=-1)


@pytest.mark.corpus
@requires_corpus
@pytest.mark.parametrize("path", corpus_files("anthropic", "openai", "claude-code"), ids=lambda p: p.name)
def test_corpus_clean_tools_is_valid(path: Any) -> None:
    transcript = load_transcript(path)
    for conv in transcript.conversations[:20]:
        for rounds in (0, 2):
            out = clean_tool_calls(conv.messages, rounds=rounds)
            found = validate_messages(out.messages, dialect=conv.dialect)
            assert not errors_only(found)
            before = {v.code for v in validate_messages(conv.messages, dialect=conv.dialect)}
            assert {v.code for v in found} <= before
            assert (
                count_tokens(out.messages, counter=COUNTER).total
                <= count_tokens(conv.messages, counter=COUNTER).total
            )
