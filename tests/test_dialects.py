"""Each dialect module on its own: looks_like, parse, render, finalize and round trip on small
hand-written records, and the registry that orders them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ctxcompact
from ctxcompact.errors import InputError
from ctxcompact.ir import Message, new_message
from ctxcompact.transcripts.dialects import (
    DEFAULT_DIALECT,
    DIALECT_NAMES,
    DIALECTS,
    ENTRIES,
    dialect_named,
    file_dialect,
    message_dialect,
)
from ctxcompact.transcripts.dialects.anthropic import DIALECT as ANTHROPIC
from ctxcompact.transcripts.dialects.claude_code import DIALECT as CLAUDE_CODE
from ctxcompact.transcripts.dialects.common import Dialect
from ctxcompact.transcripts.dialects.openai import DIALECT as OPENAI


def rendered_unchanged(dialect: Dialect, records: list[Any]) -> list[Any]:
    """Parse, then render every message as if a rewrite had touched it (same content)."""
    out: list[Any] = []
    for message in dialect.parse(records).messages:
        out.extend(dialect.render(message.with_content(message.content)))
    return out


# --- the registry ----------------------------------------------------------------------------


class TestRegistry:
    def test_names_in_registry_order_are_the_format_choices(self) -> None:
        assert DIALECT_NAMES == ("anthropic", "openai", "text-action", "claude-code", "codex")
        assert tuple(d.name for d in DIALECTS) == DIALECT_NAMES
        assert DEFAULT_DIALECT is ANTHROPIC

    def test_lookup_by_name_and_unknown_names(self) -> None:
        assert dialect_named("openai") is OPENAI
        with pytest.raises(InputError, match="unknown format 'gemini'; expected one of anthropic, openai"):
            dialect_named("gemini")

    def test_only_session_logs_own_their_file(self) -> None:
        assert [d.name for d in DIALECTS if d.owns_file] == ["claude-code", "codex"]

    @pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
    def test_the_registry_knows_each_adapter_before_loading_it(self, entry: Any) -> None:
        """Detection asks the registry's entries, which load no adapter: each entry's name,
        ``owns_file`` and check are its adapter's own."""
        adapter = dialect_named(entry.name)
        assert (adapter.name, adapter.owns_file) == (entry.name, entry.owns_file)
        samples: list[tuple[list[Any], dict[str, Any] | None]] = [
            ([{"role": "user", "content": "hi"}], None),
            ([{"role": "tool", "tool_call_id": "c", "content": ""}], None),
            ([{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u"}], None),
            ([{"type": "session_meta", "payload": {}}], None),
            ([{"role": "user", "content": "hi"}], {"trajectory_format": "mini-swe-agent-1"}),
        ]
        for records, body in samples:
            assert adapter.looks_like(records, body) == entry.looks_like(records, body)

    def test_message_lists_default_to_anthropic_and_openai_shapes_win(self) -> None:
        plain = [{"role": "user", "content": "hi"}]
        assert message_dialect(plain, None) is ANTHROPIC
        assert message_dialect([*plain, {"role": "tool", "tool_call_id": "c", "content": ""}], None) is OPENAI
        # Never a session-log dialect for bare messages, even when asked about entries.
        entries = [{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u"}]
        assert message_dialect(entries, None) is ANTHROPIC

    def test_file_dialect_recognises_session_entries_only(self) -> None:
        entries = [{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u"}]
        assert file_dialect(entries) is CLAUDE_CODE
        assert file_dialect([{"role": "user", "content": "hi"}]) is None


# --- Anthropic -------------------------------------------------------------------------------

ANTHROPIC_RECORDS: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Read a.py", "id": "m1"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need the file.", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "x = 1",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    },
]


class TestAnthropic:
    def test_rules(self) -> None:
        assert (ANTHROPIC.name, ANTHROPIC.owns_file) == ("anthropic", False)
        assert ANTHROPIC.alternating_roles and not ANTHROPIC.reused_tool_ids
        assert ANTHROPIC.read_tools == (("read_file", "path"),)

    def test_looks_like_role_messages_not_entries(self) -> None:
        assert ANTHROPIC.looks_like(ANTHROPIC_RECORDS, None)
        assert not ANTHROPIC.looks_like([{"type": "user", "message": {}}], None)

    def test_parse_makes_string_content_a_text_block_and_keeps_sources(self) -> None:
        parsed = ANTHROPIC.parse(ANTHROPIC_RECORDS)
        assert [m.role for m in parsed.messages] == ["system", "user", "assistant", "user"]
        assert parsed.messages[1].content == ({"type": "text", "text": "Read a.py"},)
        assert parsed.messages[2].source is not None
        assert parsed.messages[2].source.records[0] is ANTHROPIC_RECORDS[2]
        assert parsed.messages[3].source.indices == (3,)  # type: ignore[union-attr]

    def test_unknown_roles_pass_through_with_a_warning(self) -> None:
        parsed = ANTHROPIC.parse([{"role": "user", "content": "a"}, {"role": "exit", "content": ""}])
        assert len(parsed.messages) == 1
        assert parsed.passthrough == frozenset({1})
        assert parsed.warnings == ("message 1 has role 'exit': kept as it is, not counted.",)

    @pytest.mark.parametrize(
        ("record", "message"),
        [
            ({"content": "x"}, "message 0 has no 'role'"),
            ("text", "message 0 is a JSON string, expected an object"),
            ({"role": "user", "content": 3}, "'content' is a JSON number"),
            ({"role": "assistant", "content": [{"type": "tool_use", "id": 7}]}, "'id' is a JSON number"),
        ],
    )
    def test_bad_records_are_refused_by_position(self, record: Any, message: str) -> None:
        with pytest.raises(InputError, match=message):
            ANTHROPIC.parse([record])

    def test_render_round_trips_and_keeps_unknown_fields(self) -> None:
        original = copy.deepcopy(ANTHROPIC_RECORDS)
        assert rendered_unchanged(ANTHROPIC, ANTHROPIC_RECORDS) == original
        assert original == ANTHROPIC_RECORDS  # never mutated

    def test_render_of_a_new_message_is_plain(self) -> None:
        assert ANTHROPIC.render(new_message("user", "summary")) == [{"role": "user", "content": "summary"}]

    def test_finalize_changes_nothing(self) -> None:
        records = list(ANTHROPIC_RECORDS)
        assert ANTHROPIC.finalize(records, ANTHROPIC_RECORDS) == ANTHROPIC_RECORDS


# --- OpenAI ----------------------------------------------------------------------------------

OPENAI_RECORDS: list[Any] = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "Read a.py and b.py"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Two files.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"b.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
    {"role": "tool", "tool_call_id": "c2", "content": "y = 2", "name": "read_file"},
    {"role": "assistant", "content": "Done."},
    {"role": "exit", "content": "", "extra": {"status": "ok"}},
]


class TestOpenAI:
    def test_rules(self) -> None:
        assert (OPENAI.name, OPENAI.owns_file) == ("openai", False)
        assert not OPENAI.alternating_roles and OPENAI.reused_tool_ids
        assert OPENAI.read_tools == (("read_file", "path"),)

    @pytest.mark.parametrize(
        ("records", "body", "expected"),
        [
            ([{"role": "tool", "tool_call_id": "c", "content": ""}], None, True),
            ([{"role": "assistant", "content": None}], None, True),
            ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}], None, True),
            ([{"role": "user", "content": "hi"}], None, False),
            ([{"role": "user", "content": "hi"}], {"model": "gpt-4o"}, True),
            ([{"role": "user", "content": "hi"}], {"tools": [{"type": "function", "function": {}}]}, True),
            (
                [{"role": "user", "content": "hi"}],
                {"tools": [{"input_schema": {}}], "model": "gpt-4o"},
                False,
            ),
            # The first record with a dialect-specific shape decides.
            (
                [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}]},
                    {"role": "tool", "tool_call_id": "c", "content": ""},
                ],
                None,
                False,
            ),
        ],
    )
    def test_looks_like(self, records: list[Any], body: dict[str, Any] | None, expected: bool) -> None:
        assert OPENAI.looks_like(records, body) is expected

    def test_parse_maps_calls_results_reasoning_and_system(self) -> None:
        parsed = OPENAI.parse(OPENAI_RECORDS)
        system, user, assistant, results, done = parsed.messages
        assert (system.role, user.role, done.role) == ("system", "user", "assistant")
        assert assistant.content[0] == {"type": "thinking", "thinking": "Two files."}
        call = assistant.content[1]
        assert (call["type"], call["id"], call["input"]) == ("tool_use", "c1", {"path": "a.py"})
        assert call["arguments"] == '{"path": "a.py"}'
        # A run of tool messages is one user message of results, one source of two records.
        assert results.role == "user"
        assert [b["tool_use_id"] for b in results.content] == ["c1", "c2"]
        assert results.source is not None and results.source.indices == (3, 4)
        assert parsed.passthrough == frozenset({6})

    @pytest.mark.parametrize(
        ("record", "message"),
        [
            ({"content": "x"}, "message 0 has no 'role'"),
            (
                {"role": "assistant", "tool_calls": {"id": "c"}},
                "'tool_calls' is a JSON object, expected a list",
            ),
            ({"role": "assistant", "tool_calls": [{"id": 5}]}, "tool call 0: 'id' is a JSON number"),
            ({"role": "tool", "tool_call_id": "c", "content": 1}, "'content' is a JSON number"),
        ],
    )
    def test_bad_records_are_refused_by_position(self, record: Any, message: str) -> None:
        with pytest.raises(InputError, match=message):
            OPENAI.parse([record])

    def test_render_round_trips_every_message(self) -> None:
        original = copy.deepcopy(OPENAI_RECORDS)
        assert rendered_unchanged(OPENAI, OPENAI_RECORDS) == original[:-1]  # exit: not a message
        assert original == OPENAI_RECORDS

    def test_render_of_a_changed_result_keeps_the_other_tool_message_fields(self) -> None:
        results = OPENAI.parse(OPENAI_RECORDS).messages[3]
        pruned = results.with_content([results.content[0], {**results.content[1], "content": "[pruned]"}])
        assert OPENAI.render(pruned) == [
            OPENAI_RECORDS[3],
            {"role": "tool", "tool_call_id": "c2", "content": "[pruned]", "name": "read_file"},
        ]

    def test_render_of_a_new_call_writes_its_arguments(self) -> None:
        call = {"type": "tool_use", "id": "c9", "name": "grep", "input": {"q": "ü"}}
        assert OPENAI.render(Message("assistant", (call,), None, True)) == [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c9", "type": "function", "function": {"name": "grep", "arguments": '{"q": "ü"}'}}
                ],
            }
        ]


# --- Claude Code -----------------------------------------------------------------------------


def entry(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if "message_id" in extra:
        message["id"] = extra.pop("message_id")
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "message": message,
        **extra,
    }


USE = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"}
CC_RECORDS: list[Any] = [
    {"type": "summary", "summary": "Earlier work", "leafUuid": "u0"},
    entry("user", "u1", None, "Read a.py"),
    entry("assistant", "a1", "u1", [{"type": "text", "text": "Reading."}], message_id="msg_1"),
    entry("assistant", "a2", "a1", [USE], message_id="msg_1"),
    {"type": "progress", "uuid": "p1", "parentUuid": "a2", "data": {}},
    entry("user", "u2", "a2", [RESULT], toolUseResult={"file": "a.py"}),
    entry("assistant", "a3", "u2", [{"type": "text", "text": "x is 1."}], message_id="msg_2"),
]


class TestClaudeCode:
    def test_rules(self) -> None:
        assert (CLAUDE_CODE.name, CLAUDE_CODE.owns_file) == ("claude-code", True)
        assert CLAUDE_CODE.alternating_roles and not CLAUDE_CODE.reused_tool_ids
        assert ("Read", "file_path") in CLAUDE_CODE.read_tools
        assert ("read_file", "path") in CLAUDE_CODE.read_tools

    def test_looks_like_entries_not_messages(self) -> None:
        assert CLAUDE_CODE.looks_like(CC_RECORDS, None)
        assert CLAUDE_CODE.looks_like([{"type": "summary", "summary": "s", "leafUuid": "u"}], None)
        assert not CLAUDE_CODE.looks_like([{"role": "user", "content": "hi"}], None)
        assert not CLAUDE_CODE.looks_like([{"type": "user", "content": "no message field"}], None)
        assert not CLAUDE_CODE.looks_like([{"type": [], "uuid": "u"}], None)  # found by fuzzing

    def test_parse_groups_one_response_and_keeps_other_lines_in_place(self) -> None:
        parsed = CLAUDE_CODE.parse(CC_RECORDS)
        assert [m.role for m in parsed.messages] == ["user", "assistant", "user", "assistant"]
        response = parsed.messages[1]
        assert response.content == ({"type": "text", "text": "Reading."}, USE)
        assert response.source is not None and response.source.indices == (2, 3)
        assert parsed.passthrough == frozenset({0, 4})

    def test_only_what_follows_the_last_compact_boundary_is_read(self) -> None:
        boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None}
        records = [*CC_RECORDS[:3], boundary, entry("user", "u9", "b1", "Summary so far.")]
        parsed = CLAUDE_CODE.parse(records)
        assert [m.content[0]["text"] for m in parsed.messages] == ["Summary so far."]
        assert parsed.passthrough == frozenset({0, 1, 2, 3})

    def test_sidechain_entries_are_left_out_when_the_file_has_a_main_thread(self) -> None:
        side = entry("user", "s1", None, "subagent prompt", isSidechain=True)
        parsed = CLAUDE_CODE.parse([*CC_RECORDS, side])
        assert len(parsed.messages) == 4
        assert 7 in parsed.passthrough

    def test_a_bare_message_is_not_an_entry(self) -> None:
        with pytest.raises(InputError, match="line 1 is a bare API message"):
            CLAUDE_CODE.parse([{"role": "user", "content": "hi"}])

    def test_render_of_unchanged_entries_round_trips(self) -> None:
        out = rendered_unchanged(CLAUDE_CODE, CC_RECORDS)
        messages = [r for i, r in enumerate(CC_RECORDS) if i not in (0, 4)]
        assert out == messages
        # Entries whose blocks are untouched come back as the very records read.
        assert [a is b for a, b in zip(out, messages, strict=True)] == [False, True, True, True, True]

    def test_render_of_a_changed_block_rewrites_only_its_entry(self) -> None:
        results = CLAUDE_CODE.parse(CC_RECORDS).messages[2]
        (out,) = CLAUDE_CODE.render(results.with_content([{**RESULT, "content": "[pruned]"}]))
        assert out["message"]["content"] == [{**RESULT, "content": "[pruned]"}]
        assert out["uuid"] == "u2" and out["toolUseResult"] == {"file": "a.py"}
        assert CC_RECORDS[5]["message"]["content"] == [RESULT]  # input untouched

    def test_a_new_message_joins_the_thread_with_a_derived_uuid(self) -> None:
        records = [*CC_RECORDS, *CLAUDE_CODE.render(new_message("user", "Now b.py"))]
        out = CLAUDE_CODE.finalize(records, CC_RECORDS)
        new = out[-1]
        assert new["parentUuid"] == "a3"
        assert new["sessionId"] == "s1" and new["isSidechain"] is False
        assert new["ctxcompact"] == {"version": ctxcompact.__version__}  # says who wrote it
        assert "__ctxcompact_new__" not in new
        assert new["uuid"] == CLAUDE_CODE.finalize(list(records), CC_RECORDS)[-1]["uuid"]
        assert out[: len(CC_RECORDS)] == CC_RECORDS

    def test_finalize_relinks_children_of_a_removed_entry(self) -> None:
        without_a2 = [r for r in CC_RECORDS if r.get("uuid") != "a2"]
        out = CLAUDE_CODE.finalize(without_a2, CC_RECORDS)
        by_uuid = {r.get("uuid"): r for r in out}
        assert by_uuid["u2"]["parentUuid"] == "a1"
        assert by_uuid["p1"]["parentUuid"] == "a1"

    def test_links_that_are_not_strings_link_nothing(self) -> None:
        """Found by fuzzing: a list as parentUuid made finalize crash (unhashable)."""
        odd = [
            {**CC_RECORDS[1], "parentUuid": []},
            {**CC_RECORDS[2], "uuid": {"not": "a string"}},
            *CC_RECORDS[3:],
        ]
        records = [*odd, *CLAUDE_CODE.render(new_message("user", "next"))]
        out = CLAUDE_CODE.finalize(records, odd)
        assert out[: len(odd)] == odd
        assert out[-1]["parentUuid"] == "a3"

    def test_finalize_of_untouched_records_changes_nothing(self) -> None:
        assert CLAUDE_CODE.finalize(list(CC_RECORDS), CC_RECORDS) == CC_RECORDS


def test_content_blocks_takes_any_mapping_and_refuses_only_non_string_ids() -> None:
    # Files give dicts (checked by type first, for speed); the library may pass any Mapping.
    from types import MappingProxyType

    from ctxcompact.transcripts.dialects.common import content_blocks

    use = MappingProxyType({"type": "tool_use", "id": "t1", "name": "x", "input": {}})
    result = MappingProxyType({"type": "tool_result", "tool_use_id": None, "content": "ok"})
    assert content_blocks([use, result], "message 3") == (use, result)
    for bad in (
        {"type": "tool_use", "id": 7},
        MappingProxyType({"type": "tool_result", "tool_use_id": ["a"]}),
    ):
        with pytest.raises(
            InputError, match=r"message 3, content block 1: '.*' is a JSON .*, expected a string id"
        ):
            content_blocks([use, bad], "message 3")
    with pytest.raises(InputError, match="message 3: content block 0 is a JSON array, expected an object"):
        content_blocks([["text"]], "message 3")
