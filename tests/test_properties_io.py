"""Hypothesis properties of transcript I/O (in the spirit of tiktoken's round-trip tests).

For random valid transcripts in the Anthropic, OpenAI and Claude Code shapes, in every
container:

* parse → write → parse gives the same records (types, values and key order);
* an unchanged conversation is written back from the very same record objects;
* reading, counting, validating and writing never mutate the input;
* a rewrite that keeps some messages writes those records back field for field and keeps
  non-message records in their order;
* valid transcripts read as valid (no validator errors), and counts add up.

The generators are local to this file on purpose (small, shaped like the real files).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from conftest import same_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.transcripts.io import Transcript, conversation_records, dump_transcript, load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- generators --------------------------------------------------------------------------------

TEXT = st.text(max_size=40)
JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
#: Unknown keys a message or block may carry (never one the adapters interpret).
EXTRA_KEYS = st.sampled_from(["metadata", "x_trace", "cache_hint", "annotations", "seq"])
EXTRAS = st.dictionaries(EXTRA_KEYS, JSON, max_size=2)
CACHE_CONTROL = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}])


class Ids:
    """Unique tool ids within one generated transcript."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"{self.prefix}{self.n:04d}"


@st.composite
def anthropic_transcripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = Ids("toolu_")
    records: list[dict[str, Any]] = []
    if draw(st.booleans()):
        records.append({"role": "system", "content": draw(TEXT)})
    for _ in range(draw(st.integers(0, 4))):
        user_content: Any = (
            draw(TEXT)
            if draw(st.booleans())
            else [{"type": "text", "text": draw(TEXT), **draw(CACHE_CONTROL)}]
        )
        records.append({"role": "user", "content": user_content, **draw(EXTRAS)})
        for _ in range(draw(st.integers(0, 2))):  # tool rounds of this turn
            blocks: list[dict[str, Any]] = []
            if draw(st.booleans()):
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": draw(TEXT),
                        "signature": draw(st.text("abcXYZ=+/", max_size=20)),
                    }
                )
            if draw(st.booleans()):
                blocks.append({"type": "text", "text": draw(TEXT)})
            calls = [ids.next() for _ in range(draw(st.integers(1, 3)))]
            blocks += [
                {
                    "type": "tool_use",
                    "id": c,
                    "name": draw(st.sampled_from(["read_file", "bash", "grep"])),
                    "input": draw(st.dictionaries(st.text(max_size=5), JSON, max_size=3)),
                }
                for c in calls
            ]
            records.append({"role": "assistant", "content": blocks, **draw(EXTRAS)})
            results = []
            for c in calls:
                content: Any = draw(TEXT) if draw(st.booleans()) else [{"type": "text", "text": draw(TEXT)}]
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": c,
                    "content": content,
                    **draw(CACHE_CONTROL),
                }
                if draw(st.booleans()):
                    result["is_error"] = draw(st.booleans())
                results.append(result)
            records.append({"role": "user", "content": results})
        records.append({"role": "assistant", "content": draw(TEXT) or "ok", **draw(EXTRAS)})
    return records


@st.composite
def openai_transcripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = Ids("call_")
    records: list[dict[str, Any]] = [
        {"role": draw(st.sampled_from(["system", "developer"])), "content": draw(TEXT)}
    ]
    for _ in range(draw(st.integers(0, 4))):
        records.append({"role": "user", "content": draw(TEXT), **draw(EXTRAS)})
        for _ in range(draw(st.integers(0, 2))):
            calls = [ids.next() for _ in range(draw(st.integers(1, 3)))]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": draw(st.none() | TEXT),
                "tool_calls": [
                    {
                        "id": c,
                        "type": "function",
                        "function": {
                            "name": draw(st.sampled_from(["bash", "read_file"])),
                            "arguments": orjson.dumps(
                                draw(st.dictionaries(st.text(max_size=5), JSON, max_size=2))
                            ).decode(),
                        },
                        **({"index": i} if draw(st.booleans()) else {}),
                    }
                    for i, c in enumerate(calls)
                ],
                **draw(EXTRAS),
            }
            if draw(st.booleans()):
                message["reasoning_content"] = draw(TEXT)
            records.append(message)
            for c in calls:
                tool: dict[str, Any] = {"role": "tool", "tool_call_id": c, "content": draw(TEXT)}
                if draw(st.booleans()):
                    tool["name"] = "bash"
                records.append(tool)
        records.append({"role": "assistant", "content": draw(TEXT), **draw(EXTRAS)})
    if draw(st.booleans()):
        records.append({"role": "exit", "content": "", "extra": draw(EXTRAS)})
    return records


PASSTHROUGH = st.sampled_from(
    [
        {"type": "progress", "data": {"type": "hook_progress"}, "uuid": "p", "sessionId": "s"},
        {"type": "summary", "summary": "Earlier work", "leafUuid": "x"},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        {"type": "system", "subtype": "turn_duration", "durationMs": 1200, "uuid": "d"},
    ]
)


@st.composite
def claude_code_sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Main-thread entries (responses split per block, results possibly interleaved),
    with non-message lines and sidechain entries sprinkled in."""
    ids = Ids("toolu_")
    uid = Ids("u-")
    response = Ids("msg_")
    entries: list[dict[str, Any]] = []

    def entry(kind: str, content: Any, msg_id: str | None = None, **extra: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": content,
            }
        return {
            "parentUuid": None,
            "isSidechain": False,
            "type": kind,
            "message": message,
            "uuid": uid.next(),
            "sessionId": "s",
            **extra,
        }

    for _ in range(draw(st.integers(1, 4))):
        entries.append(entry("user", draw(TEXT) or "go"))
        for _ in range(draw(st.integers(0, 2))):
            mid = response.next()
            if draw(st.booleans()):
                entries.append(
                    entry("assistant", [{"type": "thinking", "thinking": draw(TEXT), "signature": "s"}], mid)
                )
            for _ in range(draw(st.integers(1, 3))):  # one tool_use per entry; each result follows it
                call = ids.next()
                entries.append(
                    entry(
                        "assistant",
                        [
                            {
                                "type": "tool_use",
                                "id": call,
                                "name": "Read",
                                "input": {"file_path": draw(TEXT)},
                            }
                        ],
                        mid,
                    )
                )
                result = [{"type": "tool_result", "tool_use_id": call, "content": draw(TEXT)}]
                entries.append(entry("user", result, toolUseResult=draw(JSON)))
            if draw(st.booleans()):
                entries.append(entry("assistant", draw(TEXT) or "side", response.next(), isSidechain=True))
        entries.append(entry("assistant", [{"type": "text", "text": draw(TEXT)}], response.next()))
    for _ in range(draw(st.integers(0, 3))):
        entries.insert(draw(st.integers(0, len(entries))), draw(PASSTHROUGH))
    return entries


def as_file(records: list[dict[str, Any]], container: str) -> tuple[bytes, str]:
    if container == "array":
        return orjson.dumps(records, option=orjson.OPT_INDENT_2), "t.json"
    if container == "body":
        return orjson.dumps(
            {"model": "m", "max_tokens": 100, "messages": records, "extra": {"k": [1, 2.5]}}
        ), "t.json"
    return b"".join(orjson.dumps(r) + b"\n" for r in records), "t.jsonl"


def reload(t: Transcript) -> Transcript:
    return load_transcript(data=dump_transcript(t), name=t.name)


CONTAINERS = st.sampled_from(["array", "body", "jsonl"])


# --- properties --------------------------------------------------------------------------------


@SETTINGS
@given(records=anthropic_transcripts() | openai_transcripts(), container=CONTAINERS)
def test_round_trip_gives_equal_records(records: list[dict[str, Any]], container: str) -> None:
    data, name = as_file(records, container)
    t = load_transcript(data=data, name=name)
    again = reload(t)
    assert same_json(again.root, t.root)
    assert again.container == t.container
    assert again.dialect == t.dialect
    assert same_json(list(again.conversations[0].records), records)


@SETTINGS
@given(records=claude_code_sessions())
def test_claude_code_round_trip_gives_equal_entries(records: list[dict[str, Any]]) -> None:
    data, name = as_file(records, "jsonl")
    t = load_transcript(data=data, name=name)
    assert t.container == "claude-code"
    assert same_json(list(reload(t).root), records)
    assert dump_transcript(t) == data


@SETTINGS
@given(records=anthropic_transcripts() | openai_transcripts() | claude_code_sessions())
def test_unchanged_conversations_reuse_the_record_objects(records: list[dict[str, Any]]) -> None:
    data, name = as_file(records, "jsonl")
    conv = load_transcript(data=data, name=name).conversations[0]
    out = conversation_records(conv)
    assert len(out) == len(conv.records)
    assert all(a is b for a, b in zip(out, conv.records, strict=True))


@SETTINGS
@given(records=anthropic_transcripts() | openai_transcripts() | claude_code_sessions())
def test_nothing_mutates_the_input(records: list[dict[str, Any]]) -> None:
    from ctxcompact.transcripts.io import load_messages

    frozen = copy.deepcopy(records)
    data, name = as_file(records, "jsonl")
    t = load_transcript(data=data, name=name)
    snapshot = copy.deepcopy(t.root)
    conv = t.conversations[0]
    count_tokens(conv.messages, counter=EstimateCounter())
    validate_messages(conv.messages, dialect=conv.dialect)
    changed = [
        m.with_content([{"type": "text", "text": "x"}]) if i % 2 else m for i, m in enumerate(conv.messages)
    ]
    dump_transcript(t.with_conversations([conv.with_messages(changed)]))
    assert same_json(t.root, snapshot)
    if t.container != "claude-code":
        in_memory = load_messages(records)
        count_tokens(in_memory.messages, counter=EstimateCounter())
        conversation_records(in_memory.with_messages(list(in_memory.messages)[::2]))
    assert same_json(records, frozen)


@SETTINGS
@given(records=anthropic_transcripts() | openai_transcripts() | claude_code_sessions(), data=st.data())
def test_a_rewrite_keeps_kept_records_and_passthrough_order(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    raw, name = as_file(records, "jsonl")
    t = load_transcript(data=raw, name=name)
    conv = t.conversations[0]
    keep = data.draw(st.lists(st.booleans(), min_size=len(conv.messages), max_size=len(conv.messages)))
    kept = [m for m, k in zip(conv.messages, keep, strict=True) if k]
    out = [
        orjson.loads(line)
        for line in dump_transcript(t.with_conversations([conv.with_messages(kept)])).splitlines()
    ]

    expected_indices = sorted({*conv.passthrough, *(i for m in kept if m.source for i in m.source.indices)})
    assert same_json(out, [records[i] for i in expected_indices])


@SETTINGS
@given(records=anthropic_transcripts() | openai_transcripts() | claude_code_sessions())
def test_valid_transcripts_validate_and_counts_add_up(records: list[dict[str, Any]]) -> None:
    raw, name = as_file(records, "jsonl")
    conv = load_transcript(data=raw, name=name).conversations[0]
    assert errors_only(validate_messages(conv.messages, dialect=conv.dialect)) == []
    report = count_tokens(conv.messages, counter=EstimateCounter())
    assert report.total == sum(report.by_role.values()) == sum(report.by_type.values())
    assert report.total == sum(m.tokens for m in report.messages)
    uses = [b["id"] for m in conv.messages for b in m.content if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for m in conv.messages for b in m.content if b.get("type") == "tool_result"]
    assert sorted(uses) == sorted(results)


@SETTINGS
@given(records=anthropic_transcripts() | openai_transcripts() | claude_code_sessions(), data=st.data())
def test_changed_text_reads_back_as_written(records: list[dict[str, Any]], data: st.DataObject) -> None:
    """Render (for changed messages) and parse agree: a new text reads back unchanged."""
    raw, name = as_file(records, "jsonl")
    t = load_transcript(data=raw, name=name)
    conv = t.conversations[0]
    plain = [
        i
        for i, m in enumerate(conv.messages)
        if all(b.get("type") == "text" for b in m.content) and m.content
    ]
    if not plain:
        return
    index = data.draw(st.sampled_from(plain))
    text = data.draw(TEXT.filter(bool))
    messages = list(conv.messages)
    messages[index] = messages[index].with_content([{"type": "text", "text": text}])
    again = load_transcript(
        data=dump_transcript(t.with_conversations([conv.with_messages(messages)])), name=name
    )
    reread = again.conversations[0].messages
    assert len(reread) == len(messages)
    assert reread[index].role == messages[index].role
    assert reread[index].content == ({"type": "text", "text": text},)
