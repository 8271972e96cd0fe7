"""Transcript I/O: containers, dialect detection, ``--format``, lossless write-back, Claude Code
entries, stdin, and the messages bad input gets (issue items 2 and 7)."""

from __future__ import annotations

import copy
import io
import json
import sys
from dataclasses import replace
from typing import Any

import orjson
import pytest
from conftest import SAMPLES, same_json

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.errors import InputError
from ctxcompact.ir import Message, new_message, text_of
from ctxcompact.transcripts.io import (
    STDIN_NAME,
    Transcript,
    conversation_records,
    dump_transcript,
    load_messages,
    load_transcript,
    read_bytes,
)
from ctxcompact.transcripts.validate import errors_only, validate_messages


def load(value: Any, name: str = "t.json", **kwargs: Any) -> Transcript:
    return load_transcript(data=orjson.dumps(value), name=name, **kwargs)


def jsonl(*records: Any) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def round_trip(transcript: Transcript) -> Transcript:
    return load_transcript(data=dump_transcript(transcript), name=transcript.name)


def rewrite(transcript: Transcript, messages: list[Message], conversation: int = 0) -> Any:
    """Dump a transcript after replacing one conversation's messages; return the parsed output."""
    convs = list(transcript.conversations)
    convs[conversation] = convs[conversation].with_messages(messages)
    out = dump_transcript(transcript.with_conversations(convs))
    if transcript.container in ("jsonl", "claude-code"):
        return [orjson.loads(line) for line in out.splitlines()]
    return orjson.loads(out)


# --- containers --------------------------------------------------------------------------------

ANTHROPIC = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
]


def test_json_array() -> None:
    t = load(ANTHROPIC)
    assert (t.container, t.dialect, len(t.messages)) == ("array", "anthropic", 2)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.messages[0].content == ({"type": "text", "text": "hi"},)
    assert t.messages[0].source is not None
    assert t.messages[0].source.records == (ANTHROPIC[0],)


def test_request_body_keeps_every_top_level_key() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "messages": ANTHROPIC,
        "temperature": 0.0,
        "x-unknown": {"nested": [1, 2.5, True, None]},
    }
    t = load(body)
    conv = t.conversations[0]
    assert (t.container, t.dialect) == ("body", "anthropic")
    assert conv.model == "claude-sonnet-4-5"
    assert conv.system == tuple(body["system"])
    assert conv.tools == tuple(body["tools"])
    assert same_json(round_trip(t).root, body)


def test_request_body_with_a_string_system_prompt() -> None:
    conv = load({"system": "You are terse.", "messages": ANTHROPIC}).conversations[0]
    assert conv.system == ({"type": "text", "text": "You are terse."},)


def test_jsonl_one_message_per_line() -> None:
    t = load_transcript(data=jsonl(*ANTHROPIC) + b"\n\n", name="t.jsonl")
    assert (t.container, t.dialect, len(t.messages)) == ("jsonl", "anthropic", 2)
    assert dump_transcript(t) == jsonl(*ANTHROPIC) + b"\n\n"  # unchanged: the bytes read
    assert dump_transcript(replace(t, raw=None)) == jsonl(*ANTHROPIC)  # rewritten: one per line


def test_a_single_message_object_is_one_line_of_jsonl() -> None:
    t = load({"role": "user", "content": "just one"})
    assert (t.container, len(t.messages)) == ("jsonl", 1)


def test_collection_of_trajectories() -> None:
    """tau-bench: a list of {task_id, traj: [messages]}; each item is a conversation."""
    root = [
        {
            "task_id": 0,
            "reward": 1.0,
            "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "a"}],
        },
        {
            "task_id": 1,
            "reward": 0.0,
            "traj": [
                {"role": "user", "content": "b"},
                {"role": "assistant", "content": None, "tool_calls": []},
            ],
        },
    ]
    t = load(root, name="runs.json")
    assert t.container == "collection"
    assert t.collection_key == "traj"
    assert [c.label for c in t.conversations] == ["runs.json#0", "runs.json#1"]
    assert [len(c.messages) for c in t.conversations] == [2, 2]
    # One dialect for the file, although trajectory 0 alone shows no OpenAI shape.
    assert [c.dialect for c in t.conversations] == ["openai", "openai"]
    with pytest.raises(InputError, match="holds 2 conversations"):
        _ = t.messages
    assert same_json(round_trip(t).root, root)


def test_mini_swe_agent_wrapper_and_trailing_exit_record() -> None:
    root = {
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant.", "extra": {}},
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "ok", "extra": {"response": {"usage": {"total_tokens": 1}}}},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ],
        "trajectory_format": "mini-swe-agent-1",
    }
    t = load(root)
    conv = t.conversations[0]
    assert (t.container, len(conv.messages)) == ("body", 3)
    assert conv.passthrough == frozenset({3})
    assert any("role 'exit'" in w for w in conv.warnings)
    assert same_json(round_trip(t).root, root)


# --- dialect detection and --format ------------------------------------------------------------


@pytest.mark.parametrize(
    "records",
    [
        [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "y"}],
        [
            {
                "role": "assistant",
                "content": "x",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            }
        ],
        [{"role": "assistant", "content": None}],
        [{"role": "developer", "content": "rules"}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}],
    ],
    ids=["tool-role", "tool_calls", "null-content", "developer", "image_url"],
)
def test_openai_shapes_are_detected(records: list[dict[str, Any]]) -> None:
    assert load(records).dialect == "openai"


@pytest.mark.parametrize(
    "block",
    [
        {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
    ],
    ids=["tool_use", "thinking", "image"],
)
def test_anthropic_blocks_are_detected(block: dict[str, Any]) -> None:
    assert (
        load([{"role": "user", "content": "q"}, {"role": "assistant", "content": [block]}]).dialect
        == "anthropic"
    )


def test_plain_text_defaults_to_anthropic_unless_the_body_says_otherwise() -> None:
    plain = [{"role": "user", "content": "hi"}]
    assert load(plain).dialect == "anthropic"
    assert load({"model": "gpt-4o", "messages": plain}).dialect == "openai"
    openai_tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert load({"tools": openai_tools, "messages": plain}).dialect == "openai"
    assert load({"tools": [{"name": "f", "input_schema": {}}], "messages": plain}).dialect == "anthropic"


def test_format_forces_the_dialect() -> None:
    t = load(ANTHROPIC, dialect="openai")
    assert t.dialect == "openai"
    assert same_json(round_trip(t).root, ANTHROPIC)
    records = [{"role": "user", "content": "x"}, {"role": "assistant", "content": None}]
    assert load(records).dialect == "openai"
    assert load(records, dialect="anthropic").dialect == "anthropic"


def test_unknown_format_is_refused() -> None:
    with pytest.raises(
        InputError,
        match="unknown format 'gemini'; expected one of anthropic, openai, text-action, claude-code",
    ):
        load(ANTHROPIC, dialect="gemini")


def test_forcing_claude_code_on_bare_messages_is_refused() -> None:
    """Reading API messages as Claude Code entries would find no message: 0 tokens, a false 'fits'."""
    with pytest.raises(InputError, match="line 1 is a bare API message"):
        load_transcript(data=jsonl(*ANTHROPIC), name="t.jsonl", dialect="claude-code")


def test_load_messages_detects_and_refuses_non_lists() -> None:
    assert load_messages([{"role": "tool", "tool_call_id": "a", "content": "x"}]).dialect == "openai"
    with pytest.raises(InputError, match="must be a list"):
        load_messages("not a list")  # type: ignore[arg-type]


# --- write-back: unchanged messages keep every field ------------------------------------------

RICH_ANTHROPIC = [
    {"role": "system", "content": "rules"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Read a.py", "cache_control": {"type": "ephemeral", "ttl": "5m"}}
        ],
        "id": "msg_user_1",
        "metadata": {"source": "ui", "score": 1.0, "flag": True},
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need the file.", "signature": "sig=="},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "read_file",
                "input": {"path": "a.py"},
                "caller": {"type": "direct"},
            },
        ],
        "stop_reason": "tool_use",
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "x = 1"}],
                "is_error": False,
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
            {"type": "compaction", "content": "..."},
        ],
    },
]


def test_unchanged_messages_are_written_back_field_for_field() -> None:
    t = load(RICH_ANTHROPIC)
    out = orjson.loads(dump_transcript(t))
    assert same_json(out, RICH_ANTHROPIC)
    # Not a copy of the data: the very same record objects are written.
    assert all(a is b for a, b in zip(conversation_records(t.conversations[0]), t.root, strict=True))


def test_rewritten_list_keeps_untouched_records_as_they_were() -> None:
    t = load(RICH_ANTHROPIC)
    kept = list(t.messages)
    kept[1] = kept[1].with_content([{"type": "text", "text": "Read a.py, please"}])
    out = rewrite(t, kept)
    assert same_json(out[0], RICH_ANTHROPIC[0])
    assert same_json(out[2:], RICH_ANTHROPIC[2:])


def test_changed_anthropic_message_keeps_its_template_fields() -> None:
    t = load(RICH_ANTHROPIC)
    messages = list(t.messages)
    messages[1] = messages[1].with_content([{"type": "text", "text": "shorter"}])
    messages[3] = messages[3].with_content(
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "[cleared]",
                "cache_control": {"type": "ephemeral"},
            }
        ]
    )
    out = rewrite(t, messages)
    assert out[1] == {
        "role": "user",
        "content": "shorter",
        "id": "msg_user_1",
        "metadata": {"source": "ui", "score": 1.0, "flag": True},
    }
    assert list(out[1]) == ["role", "content", "id", "metadata"]  # key order of the template
    assert out[3] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "[cleared]",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }


def test_new_and_dropped_messages_land_in_order() -> None:
    t = load(RICH_ANTHROPIC)
    m = list(t.messages)
    summary = new_message("user", "Summary of earlier work.")
    ack = new_message("assistant", "Understood.")
    out = rewrite(t, [m[0], summary, ack, m[4]])
    assert out == [
        RICH_ANTHROPIC[0],
        {"role": "user", "content": "Summary of earlier work."},
        {"role": "assistant", "content": "Understood."},
        RICH_ANTHROPIC[4],
    ]
    at_start = rewrite(t, [summary, *m])
    assert at_start[0] == {"role": "user", "content": "Summary of earlier work."}
    assert same_json(at_start[1:], RICH_ANTHROPIC)


OPENAI = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "list and read"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I should list first.",
        "function_call": None,
        "provider_specific_fields": {"refusal": None},
        "tool_calls": [
            {
                "index": 0,
                "id": "call_a",
                "type": "function",
                "function": {"name": "ls", "arguments": '{"path": "."}'},
            },
            {
                "index": 1,
                "id": "call_b",
                "type": "function",
                "function": {"name": "cat", "arguments": '{"path": "a.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "name": "ls", "content": "a.py\nb.py"},
    {"role": "tool", "tool_call_id": "call_b", "name": "cat", "content": "print(1)\n" * 20},
    {"role": "assistant", "content": "Done.", "extra": {"usage": {"total_tokens": 99}}},
    {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
]


def test_openai_reading_maps_to_the_ir() -> None:
    t = load(OPENAI)
    conv = t.conversations[0]
    assert (t.dialect, [m.role for m in conv.messages]) == (
        "openai",
        ["system", "user", "assistant", "user", "assistant"],
    )
    assistant = conv.messages[2]
    assert [b["type"] for b in assistant.content] == ["thinking", "tool_use", "tool_use"]
    assert assistant.content[1]["input"] == {"path": "."}
    results = conv.messages[3]
    assert results.source is not None
    assert results.source.indices == (3, 4)  # one IR message, two raw records
    assert [b["tool_use_id"] for b in results.content] == ["call_a", "call_b"]
    assert conv.passthrough == frozenset({6})
    assert same_json(orjson.loads(dump_transcript(t)), OPENAI)


def test_changed_openai_assistant_keeps_calls_and_unknown_fields() -> None:
    t = load(OPENAI)
    m = list(t.messages)
    # Drop the thinking, keep both calls: only reasoning_content goes away.
    m[2] = m[2].with_content([b for b in m[2].content if b["type"] == "tool_use"])
    m[4] = m[4].with_content([{"type": "text", "text": "All done."}])
    out = rewrite(t, m)
    expected_call = {k: v for k, v in OPENAI[2].items() if k != "reasoning_content"}
    assert out[2] == expected_call
    assert out[2]["tool_calls"] == OPENAI[2]["tool_calls"]  # index, type, raw arguments kept
    assert out[5] == {"role": "assistant", "content": "All done.", "extra": {"usage": {"total_tokens": 99}}}
    assert out[6] == OPENAI[6]  # the exit record stays last


def test_changed_openai_tool_results_keep_their_records() -> None:
    t = load(OPENAI)
    m = list(t.messages)
    blocks = list(m[3].content)
    blocks[1] = {**blocks[1], "content": "[offloaded]"}
    m[3] = m[3].with_content(blocks)
    out = rewrite(t, m)
    assert out[3] == OPENAI[3]
    assert out[4] == {"role": "tool", "tool_call_id": "call_b", "name": "cat", "content": "[offloaded]"}
    assert same_json(out[5:], OPENAI[5:])


def test_new_openai_assistant_message_with_a_tool_call() -> None:
    t = load(OPENAI)
    m = list(t.messages)
    call = Message(
        "assistant",
        ({"type": "tool_use", "id": "call_new", "name": "read_file", "input": {"path": "a.py"}},),
        None,
        True,
    )
    result = Message(
        "user", ({"type": "tool_result", "tool_use_id": "call_new", "content": "x"},), None, True
    )
    out = rewrite(t, [*m, call, result])
    assert out[6:8] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_new",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_new", "content": "x"},
    ]
    assert out[8] == OPENAI[6]


def test_body_and_collection_rewrites_keep_the_container() -> None:
    body = {"model": "gpt-4o", "tools": [], "messages": OPENAI[:2], "seed": 7}
    t = load(body)
    out = rewrite(t, [t.messages[1]])
    assert out == {"model": "gpt-4o", "tools": [], "messages": [OPENAI[1]], "seed": 7}
    assert list(out) == list(body)

    root = [{"id": 0, "messages": ANTHROPIC}, {"id": 1, "messages": ANTHROPIC}]
    t = load(root)
    out = rewrite(t, [t.conversations[1].messages[0]], conversation=1)
    assert out == [{"id": 0, "messages": ANTHROPIC}, {"id": 1, "messages": ANTHROPIC[:1]}]


# --- Claude Code sessions ----------------------------------------------------------------------


def cc(kind: str, content: Any, uuid: str, *, msg_id: str | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
            "usage": {"input_tokens": 3, "output_tokens": 9},
        }
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": kind,
        "message": message,
        "uuid": uuid,
        "sessionId": "s1",
        **extra,
    }


def tool_use(tid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/src/{tid}.py"}}


def tool_res(tid: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": tid, "content": f"contents of {tid}"}]


SESSION = [
    {"type": "summary", "summary": "Earlier work", "leafUuid": "u0"},  # 0
    cc("user", "fix the bug", "u1"),  # 1
    cc(
        "assistant",
        [{"type": "thinking", "thinking": "Look first.", "signature": "sig"}],
        "a1",
        msg_id="msg_1",
    ),  # 2
    cc("assistant", [tool_use("t1")], "a2", msg_id="msg_1"),  # 3
    cc("user", tool_res("t1"), "u2", toolUseResult={"file": {"content": "DUPLICATE " * 500}}),  # 4
    cc("assistant", [tool_use("t2")], "a3", msg_id="msg_1"),  # 5: same response, after a result
    cc("user", tool_res("t2"), "u3", toolUseResult="Error: duplicate"),  # 6
    {"type": "progress", "data": {"type": "hook_progress"}, "uuid": "p1", "sessionId": "s1"},  # 7
    cc("assistant", [{"type": "text", "text": "Fixed."}], "a4", msg_id="msg_2"),  # 8
    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"trackedFileBackups": {}}},  # 9
]


def load_session(records: list[Any] = SESSION) -> Transcript:
    return load_transcript(data=jsonl(*records), name="session.jsonl")


def test_claude_code_session_is_detected_and_grouped_by_message_id() -> None:
    t = load_session()
    conv = t.conversations[0]
    assert (t.container, t.dialect) == ("claude-code", "claude-code")
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assistant = conv.messages[1]
    assert [b["type"] for b in assistant.content] == ["thinking", "tool_use", "tool_use"]
    assert assistant.source is not None
    assert assistant.source.indices == (2, 3, 5)  # tool result entry 4 came in between
    results = conv.messages[2]
    assert results.source is not None
    assert results.source.indices == (4, 6)
    assert [b["tool_use_id"] for b in results.content] == ["t1", "t2"]
    assert conv.passthrough == frozenset({0, 7, 9})
    assert errors_only(validate_messages(conv.messages)) == []


def test_claude_code_json_array_of_entries_is_read_too() -> None:
    t = load(SESSION, name="session.json")
    assert (t.container, len(t.messages)) == ("claude-code", 4)


def test_different_message_ids_are_different_messages() -> None:
    records = [
        cc("user", "q", "u1"),
        cc("assistant", "one", "a1", msg_id="m1"),
        cc("assistant", "two", "a2", msg_id="m2"),
    ]
    assert len(load_session(records).messages) == 3


def test_tool_use_result_duplicate_is_not_counted() -> None:
    without = [{k: v for k, v in r.items() if k != "toolUseResult"} for r in SESSION]
    counter = EstimateCounter()
    with_dup = count_tokens(load_session().messages, counter=counter)
    no_dup = count_tokens(load_session(without).messages, counter=counter)
    assert with_dup.total == no_dup.total


def test_sidechain_entries_are_kept_but_not_counted() -> None:
    side = [
        cc("user", "subagent task " * 50, "s-u1", isSidechain=True),
        cc("assistant", "subagent answer " * 50, "s-a1", msg_id="msg_side", isSidechain=True),
    ]
    records = [*SESSION[:2], *side, *SESSION[2:]]
    t = load_session(records)
    assert len(t.messages) == 4
    assert {2, 3} <= t.conversations[0].passthrough
    counter = EstimateCounter()
    assert (
        count_tokens(t.messages, counter=counter).total
        == count_tokens(load_session().messages, counter=counter).total
    )
    assert dump_transcript(t) == jsonl(*records)


def test_a_subagent_file_is_read_as_its_own_thread() -> None:
    records = [
        cc("user", "find the config", "s-u1", isSidechain=True, agentId="a485154"),
        cc("assistant", [tool_use("t9")], "s-a1", msg_id="m9", isSidechain=True, agentId="a485154"),
        cc("user", tool_res("t9"), "s-u2", isSidechain=True, agentId="a485154"),
        cc("assistant", "It is in /etc.", "s-a2", msg_id="m10", isSidechain=True, agentId="a485154"),
    ]
    assert [m.role for m in load_session(records).messages] == ["user", "assistant", "user", "assistant"]


def test_only_entries_after_the_last_compact_boundary_are_messages() -> None:
    records = [
        cc("user", "old question " * 100, "o1"),
        cc("assistant", "old answer " * 100, "o2", msg_id="mo"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "logicalParentUuid": "o2",
            "compactMetadata": {"trigger": "auto", "preTokens": 155000},
        },
        cc(
            "user",
            "This session is being continued... summary",
            "c1",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        cc("assistant", "Continuing.", "c2", msg_id="mc"),
    ]
    t = load_session(records)
    conv = t.conversations[0]
    assert [m.index for m in conv.messages] == [3, 4]
    assert conv.messages[0].content[0]["text"].startswith("This session is being continued")
    assert conv.passthrough == frozenset({0, 1, 2})
    assert dump_transcript(t) == jsonl(*records)


def test_the_messages_a_compaction_preserved_follow_its_summary() -> None:
    """Claude Code 2.1.332 keeps the latest messages through its compaction (manual and auto)
    without writing them again: its boundary names them (``preservedSegment``: head … tail,
    before the boundary in the file) and the summary they are sent after (``anchorUuid``). A
    resume sends summary, preserved messages, then what came after (seen with the real client,
    tests/interop/test_agent_hooks.py); the file is written back as it was."""

    def linked(record: dict[str, Any], parent: str | None) -> dict[str, Any]:
        return {**record, "parentUuid": parent}

    preserved = {"headUuid": "a2", "anchorUuid": "c1", "tailUuid": "u2"}
    records = [
        linked(cc("user", "old question " * 100, "o1"), None),
        linked(cc("assistant", "old answer " * 100, "a1", msg_id="m1"), "o1"),
        linked(cc("assistant", "Added the test; it passes.", "a2", msg_id="m2"), "a1"),
        linked(cc("user", "Now run it.", "u2"), "a2"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "logicalParentUuid": "u2",
            "compactMetadata": {"trigger": "auto", "preTokens": 155000, "preservedSegment": preserved},
        },
        {"type": "attachment", "uuid": "t1", "parentUuid": "b1", "attachment": {"type": "date"}},
        linked(cc("user", "This session is being continued... summary", "c1", isCompactSummary=True), "t1"),
        {"type": "attachment", "uuid": "t2", "parentUuid": "c1", "attachment": {"type": "date"}},
        linked(cc("assistant", "Ran it: green.", "c2", msg_id="m3"), "t2"),
    ]
    t = load_session(records)
    conv = t.conversations[0]
    assert [(m.role, text_of(m)) for m in conv.messages] == [
        ("user", "This session is being continued... summary"),
        ("assistant", "Added the test; it passes."),
        ("user", "Now run it."),
        ("assistant", "Ran it: green."),
    ]
    assert conv.passthrough == frozenset({0, 1, 4, 5, 7})
    assert dump_transcript(t) == jsonl(*records)
    # A boundary whose segment does not resolve (a link missing) preserves nothing.
    broken = [
        *records[:4],
        {**records[4], "compactMetadata": {"preservedSegment": {**preserved, "headUuid": "x"}}},
    ]
    assert [m.index for m in load_session([*broken, *records[5:]]).messages] == [6, 8]
    # A rewrite that removes the segment's head keeps what is left of it after the summary.
    rewritten = replace(
        conv, messages=tuple(m for m in conv.messages if text_of(m) != "Added the test; it passes.")
    )
    written = [
        json.loads(line) for line in dump_transcript(replace(t, conversations=(rewritten,))).splitlines()
    ]
    assert [(m.role, text_of(m)) for m in load_session(written).conversations[0].messages] == [
        ("user", "This session is being continued... summary\nNow run it."),  # two user turns join
        ("assistant", "Ran it: green."),
    ]
    boundary = next(r for r in written if r.get("subtype") == "compact_boundary")
    assert boundary["compactMetadata"]["preservedSegment"] == {**preserved, "headUuid": "u2"}
    # … and one that removes all of it leaves a boundary that preserves nothing.
    gone = {"Added the test; it passes.", "Now run it."}
    emptied = replace(conv, messages=tuple(m for m in conv.messages if text_of(m) not in gone))
    written = [
        json.loads(line) for line in dump_transcript(replace(t, conversations=(emptied,))).splitlines()
    ]
    boundary = next(r for r in written if r.get("subtype") == "compact_boundary")
    assert "preservedSegment" not in boundary["compactMetadata"]
    assert boundary["compactMetadata"]["preTokens"] == 155000


def test_claude_code_write_back_keeps_passthrough_records_in_place() -> None:
    t = load_session()
    m = list(t.messages)
    out = rewrite(t, [m[0], m[3]])  # drop the tool interaction block
    assert out == [SESSION[0], SESSION[1], SESSION[7], SESSION[8], SESSION[9]]


def test_changed_claude_code_message_keeps_its_entry_fields() -> None:
    """A changed message is written into its own entries: every entry that survives keeps its
    uuid, session fields and API message fields; entry and passthrough order is kept; the new
    content reads back as written."""
    t = load_session()
    m = list(t.messages)
    new_results = [{"type": "tool_result", "tool_use_id": "t1", "content": "[cleared]"}, *m[2].content[1:]]
    m[2] = m[2].with_content(new_results)
    m[3] = m[3].with_content([{"type": "text", "text": "Fixed, and tested."}])
    out = rewrite(t, m)

    originals = {r["uuid"]: r for r in SESSION if "uuid" in r}
    uuids = [r["uuid"] for r in out if "uuid" in r]
    assert uuids == [u for u in originals if u in uuids]  # original order, nothing invented
    assert {"u1", "a1", "a2", "a3", "p1", "a4"} <= set(uuids)
    for record in out:
        template = originals.get(record.get("uuid"))
        if template is None:
            continue
        fields = {k: v for k, v in record.items() if k not in ("message", "toolUseResult")}
        assert fields == {k: v for k, v in template.items() if k not in ("message", "toolUseResult")}
        if "message" in template:
            inner = {k: v for k, v in record["message"].items() if k != "content"}
            assert inner == {k: v for k, v in template["message"].items() if k != "content"}
    passthrough = [r for r in out if r.get("type") in ("summary", "progress", "file-history-snapshot")]
    assert passthrough == [SESSION[0], SESSION[7], SESSION[9]]
    position = {r["uuid"]: i for i, r in enumerate(out) if "uuid" in r}
    assert position["a3"] < out.index(SESSION[7]) < position["a4"]  # the progress line stays put

    again = load_session(out)
    assert [msg.content for msg in again.messages] == [
        m[0].content,
        m[1].content,
        tuple(new_results),
        ({"type": "text", "text": "Fixed, and tested."},),
    ]


def test_new_claude_code_message_is_a_minimal_entry() -> None:
    t = load_session()
    out = rewrite(t, [*t.messages, new_message("user", "Next step?")])
    new = out[-2]  # before the trailing snapshot record, right after the last message
    assert out[-1] == SESSION[9]
    assert new["type"] == "user"
    assert new["message"] == {"role": "user", "content": "Next step?"}
    assert new["isSidechain"] is False
    assert isinstance(new["uuid"], str) and new["uuid"]
    assert load_session(out).messages[-1].content == ({"type": "text", "text": "Next step?"},)


def test_one_line_session_with_plain_string_content() -> None:
    """A session just started is a single line: one JSON object, still a Claude Code file."""
    records = [cc("user", "hello there", "u1")]
    t = load_session(records)
    assert (t.container, t.dialect) == ("claude-code", "claude-code")
    assert t.messages[0].content == ({"type": "text", "text": "hello there"},)
    assert dump_transcript(t) == jsonl(*records)


# --- stdin -------------------------------------------------------------------------------------


def test_stdin_is_read_for_none_and_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    data = jsonl(*ANTHROPIC)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    t = load_transcript(None)
    assert t.name == STDIN_NAME
    assert len(t.messages) == 2
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(orjson.dumps(ANTHROPIC))))
    assert load_transcript("-").container == "array"
    assert read_bytes("-", io.BytesIO(b"[]")) == (STDIN_NAME, b"[]")


def test_paths_are_read(tmp_path: Any) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps(ANTHROPIC))
    assert load_transcript(path).name == str(path)
    with pytest.raises(InputError, match=r"nope\.json: no such file"):
        load_transcript(tmp_path / "nope.json")
    with pytest.raises(InputError, match="is a directory"):
        load_transcript(tmp_path)


# --- loading never mutates ----------------------------------------------------------------------


def test_loading_and_counting_do_not_mutate_the_input() -> None:
    records = copy.deepcopy(OPENAI)
    conv = load_messages(records)
    count_tokens(conv.messages, counter=EstimateCounter())
    validate_messages(conv.messages, dialect=conv.dialect)
    conversation_records(conv.with_messages([m.with_content(m.content) for m in conv.messages]))
    assert records == OPENAI


# --- bad input: what the user is told ----------------------------------------------------------


def load_raw(data: bytes, name: str = "t.json") -> Transcript:
    return load_transcript(data=data, name=name)


def test_invalid_json_names_file_line_and_column() -> None:
    data = b'[{"role": "user", "content": "hi"},\n {"role": "assistant", "content": "x",}\n]'
    with pytest.raises(InputError) as info:
        load_raw(data)
    assert str(info.value).startswith("t.json: invalid JSON at line 2, column 39")


def test_message_without_a_role_names_its_index() -> None:
    with pytest.raises(InputError, match=r"^t\.json: message 1 has no 'role'"):
        load([{"role": "user", "content": "hi"}, {"content": "who am I?"}])
    with pytest.raises(InputError, match=r"message 0 has no 'role'"):
        load([{"content": "x"}, {"content": "y"}])


def test_an_object_that_is_neither_a_message_nor_a_body() -> None:
    with pytest.raises(InputError) as info:
        load({"foo": 1, "bar": 2})
    text = str(info.value)
    assert "keys: foo, bar" in text
    assert "expected a message array, a request body with 'messages', JSONL or a Claude Code session" in text


@pytest.mark.parametrize(
    ("value", "kind"), [("str", "string"), (3, "number"), (None, "null"), (True, "boolean")]
)
def test_a_scalar_document_names_its_json_type(value: Any, kind: str) -> None:
    with pytest.raises(InputError, match=rf"t\.json: is a JSON {kind}; expected a message array"):
        load(value)


def test_truncated_jsonl_names_the_line() -> None:
    data = jsonl(*ANTHROPIC) + b'{"role": "user", "content": "tru'
    with pytest.raises(
        InputError, match=r"^t\.jsonl: invalid JSON on line 3, column \d+: .*\(truncated line\?\)"
    ):
        load_raw(data, "t.jsonl")


def test_a_broken_middle_line_of_jsonl() -> None:
    data = b'{"role": "user", "content": "a"}\n{"role": oops}\n{"role": "assistant", "content": "b"}\n'
    with pytest.raises(InputError, match=r"^t\.jsonl: invalid JSON on line 2, column 10") as info:
        load_raw(data, "t.jsonl")
    assert "truncated" not in str(info.value)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"role": "user", "content": "a"}, 7], "message 1 is a JSON number, expected an object"),
        ([{"role": "user", "content": 5}], "message 0: 'content' is a JSON number"),
        ([{"role": "user", "content": ["bare string"]}], "message 0: content block 0 is a JSON string"),
        (
            [{"role": "assistant", "content": "x", "tool_calls": {"id": 1}}],
            "message 0: 'tool_calls' is a JSON object",
        ),
    ],
)
def test_malformed_messages_name_their_index(records: list[Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        load(records)


def test_claude_code_non_object_line_names_it() -> None:
    data = jsonl(*SESSION[:3]) + b"[1, 2]\n"
    with pytest.raises(InputError, match=r"line 4 is a JSON array, expected a Claude Code entry"):
        load_raw(data, "s.jsonl")


def test_empty_list_is_valid_and_empty_file_is_not() -> None:
    t = load([])
    assert (t.container, t.messages) == ("array", ())
    assert dump_transcript(replace(t, raw=None)) == b"[]\n"
    assert load({"messages": []}).messages == ()
    for blank in (b"", b"  \n\t", b"\xef\xbb\xbf"):
        with pytest.raises(InputError, match=r"t\.json: is empty"):
            load_raw(blank)
    # Zero lines is valid JSONL (an empty list, line by line).
    empty_jsonl = load_raw(b"\n", "t.jsonl")
    assert (empty_jsonl.container, empty_jsonl.messages) == ("jsonl", ())
    assert dump_transcript(replace(empty_jsonl, raw=None)) == b""


def test_utf8_bom_and_non_utf8() -> None:
    assert len(load_raw(b"\xef\xbb\xbf" + orjson.dumps(ANTHROPIC)).messages) == 2
    with pytest.raises(InputError, match=r"t\.json: invalid JSON at byte 0: not valid UTF-8"):
        load_raw(b"\xff\xfe[]")


def test_big_integers_survive_a_round_trip() -> None:
    data = b'[{"role": "user", "content": "big", "n": 123456789012345678901234567890}]'
    t = load_raw(data)
    out = dump_transcript(t)
    assert same_json(load_raw(out).root, t.root)


def test_lone_surrogates_are_refused_with_their_position() -> None:
    """Not text, accepted by no API, and not writable as UTF-8: refused, not crashed on later."""
    data = b'[{"role": "user",\n "content": "bad \\ud800 half"}]'
    with pytest.raises(InputError, match=r"line 2, column 18: \\ud800 is a lone surrogate"):
        load_raw(data)
    paired = b'[{"role": "user", "content": "fine \\ud83d\\ude00"}]'
    assert load_raw(paired).messages[0].content[0]["text"] == "fine \U0001f600"


# --- the sample transcripts --------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(p for p in SAMPLES.glob("*.json*")), ids=lambda p: p.name)
def test_sample_transcripts_round_trip_losslessly(path: Any) -> None:
    t = load_transcript(path)
    assert t.conversations
    assert all(c.messages for c in t.conversations)
    assert same_json(round_trip(t).root, t.root)
    raw = path.read_bytes()
    original = (
        [orjson.loads(x) for x in raw.splitlines() if x.strip()]
        if path.suffix == ".jsonl"
        else orjson.loads(raw)
    )
    assert same_json(t.root, original)


@pytest.mark.parametrize("path", sorted(p for p in SAMPLES.glob("*.json*")), ids=lambda p: p.name)
def test_an_unchanged_transcript_is_written_back_byte_for_byte(path: Any) -> None:
    raw = path.read_bytes()
    assert dump_transcript(load_transcript(path)) == raw
