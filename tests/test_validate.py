"""API invariants (SPEC §3.1): each violation code, its severity and where it points."""

from __future__ import annotations

from typing import Any

import pytest

from ctxcompact.errors import InputError
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_messages
from ctxcompact.transcripts.validate import Violation, errors_only, validate_messages


def check(records: list[dict[str, Any]], dialect: str | None = None) -> list[tuple[str, str, int]]:
    conv = load_messages(records, dialect=dialect)
    return [
        (v.code, v.severity, v.message_index) for v in validate_messages(conv.messages, dialect=conv.dialect)
    ]


def use(*ids: str, text: str | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": i, "name": "read_file", "input": {"path": i}} for i in ids]
    return {"role": "assistant", "content": blocks}


def result(*ids: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids],
    }


USER = {"role": "user", "content": "please look"}
DONE = {"role": "assistant", "content": "done"}


def test_valid_tool_loop_has_no_violations() -> None:
    assert check([USER, use("a", "b", text="reading"), result("a", "b"), use("c"), result("c"), DONE]) == []


def test_orphan_tool_result() -> None:
    found = check([USER, use("a"), result("a", "zzz"), DONE])
    assert found == [("orphan_tool_result", "error", 2)]


def test_tool_result_must_answer_the_immediately_preceding_assistant() -> None:
    # "a" was answered already; answering it again two turns later is an orphan.
    found = check([USER, use("a"), result("a"), use("b"), result("b", "a"), DONE])
    assert ("orphan_tool_result", "error", 4) in found


def test_tool_result_with_no_assistant_before_it() -> None:
    assert check([result("a"), DONE]) == [("orphan_tool_result", "error", 0)]


def test_unanswered_tool_use() -> None:
    found = check([USER, use("a", "b"), result("a"), DONE])
    assert found == [("unanswered_tool_use", "error", 1)]


def test_pending_tool_use_in_the_last_assistant_message_is_allowed() -> None:
    """The calls of the last assistant turn may still be running (the live tool loop)."""
    assert check([USER, use("a"), result("a"), use("b", "c")]) == []


def test_duplicate_tool_id_is_an_error_for_anthropic() -> None:
    found = check([USER, use("a"), result("a"), use("a"), result("a"), DONE])
    assert found == [("duplicate_tool_id", "error", 3)]


def test_duplicate_tool_id_within_one_message_is_an_error() -> None:
    found = check([USER, use("a", "a"), result("a"), DONE])
    assert ("duplicate_tool_id", "error", 1) in found


def openai_call(call_id: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "ok"},
    ]


def test_openai_id_reused_in_a_later_turn_is_only_a_warning() -> None:
    """gpt-4o reuses call ids across turns (tau-bench does); its API accepts that."""
    records = [USER, *openai_call("call_1"), {"role": "user", "content": "again"}, *openai_call("call_1")]
    found = check(records)
    assert found == [("duplicate_tool_id", "warning", 4)]
    conv = load_messages(records)
    assert errors_only(validate_messages(conv.messages, dialect="openai")) == []


def test_missing_tool_id() -> None:
    records = [USER, {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}, DONE]
    assert ("missing_tool_id", "error", 1) in check(records)


def test_system_message_after_the_start() -> None:
    found = check([{"role": "system", "content": "rules"}, USER, {"role": "system", "content": "late"}, DONE])
    assert found == [("system_not_leading", "error", 2)]


def test_consecutive_roles_warn_in_anthropic_only() -> None:
    records = [USER, {"role": "user", "content": "and another thing"}, DONE]
    assert check(records) == [("consecutive_roles", "warning", 1)]
    assert check(records, dialect="openai") == []


def test_first_message_not_from_the_user() -> None:
    assert check([{"role": "system", "content": "s"}, DONE, USER]) == [("first_not_user", "warning", 1)]


def test_openai_tool_runs_are_one_user_message() -> None:
    records = [
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c2", "content": "2"},
        {"role": "assistant", "content": "both done"},
    ]
    assert check(records) == []
    records_missing = [*records[:3], records[4]]
    assert check(records_missing) == [("unanswered_tool_use", "error", 1)]


def test_violation_text_and_errors_only() -> None:
    conv = load_messages([USER, use("a"), result("b"), DONE])
    found = validate_messages(conv.messages)
    assert {v.code for v in found} == {"orphan_tool_result", "unanswered_tool_use"}
    assert all(v.severity == "error" for v in errors_only(found))
    text = str(next(v for v in found if v.code == "orphan_tool_result"))
    assert (
        text
        == "message 2: tool_result b answers no tool_use of the previous assistant message [orphan_tool_result]"
    )
    assert isinstance(found[0], Violation)


def test_validate_never_raises_on_odd_blocks() -> None:
    # Built directly: the loader refuses a non-string id, but library callers can hand the
    # validator any IR, and it must report rather than raise.
    messages = [
        Message("user", ({"type": "text", "text": "hi"},)),
        Message("assistant", ({"type": "tool_use", "id": 7, "name": None, "input": None},)),
        Message("user", ({"type": "tool_result"}, {"no": "type"})),
    ]
    found = [(v.code, v.severity, v.message_index) for v in validate_messages(messages)]
    assert ("missing_tool_id", "error", 1) in found


def test_the_loader_refuses_a_non_string_tool_id() -> None:
    with pytest.raises(InputError, match="message 1, content block 0: 'id' is a JSON number"):
        load_messages(
            [
                USER,
                {"role": "assistant", "content": [{"type": "tool_use", "id": 7, "name": "x", "input": {}}]},
            ]
        )


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_empty_list_is_valid(dialect: str) -> None:
    assert validate_messages([], dialect=dialect) == []
