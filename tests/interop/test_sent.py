"""The normaliser removes the clients' own additions and nothing of the session (no npm needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import MESSAGES_PATH, RecordedRequest
from fake_apis import RESPONSES_PATH
from sent import (
    SYNTHETIC_REPLY,
    TOOL_LOADED,
    TOOLS_REMOVED,
    NotSent,
    aligned,
    anthropic_pair_findings,
    claude_sent,
    codex_pair_findings,
    codex_sent,
    context_findings,
    normalised,
)

PROMPT = "the new prompt"
REMINDER = {"type": "text", "text": "<system-reminder>\nattribution\n</system-reminder>\n"}


def request(path: str, body: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest("POST", path, {}, body)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_claude_code_additions_go_and_the_session_stays() -> None:
    session = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [text(SYNTHETIC_REPLY)]},  # the session's own: kept
        {"role": "user", "content": [REMINDER, text("a reminder the session itself recorded")]},
        {"role": "assistant", "content": [text("done")]},
        {"role": "user", "content": [text("last words")]},
    ]
    sent = [
        session[0],
        {"role": "system", "content": [text("# Environment")]},
        *session[1:4],
        {"role": "user", "content": [{**text("last words"), "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [text(SYNTHETIC_REPLY)]},
        {"role": "user", "content": [REMINDER, text(PROMPT)]},
    ]
    got = claude_sent([request(MESSAGES_PATH, {"messages": sent})], PROMPT)
    assert got.messages == normalised(session)
    assert len(got.removed) == 3  # the system turn, the new turn, the synthetic reply


def test_a_prompt_joined_to_the_sessions_last_user_message_leaves_that_message() -> None:
    sent = [{"role": "user", "content": [text("unanswered"), REMINDER, text(PROMPT)]}]
    got = claude_sent([request(MESSAGES_PATH, {"messages": sent})], PROMPT)
    assert got.messages == [{"role": "user", "content": [text("unanswered")]}]
    # Joined to the new turn, its last block got Claude Code's "\n" (a /compact's output, the
    # session's last entry): it counts as the export's block, and only then.
    sent = [
        {
            "role": "user",
            "content": [text("<local-command-stdout>Compacted</local-command-stdout>\n"), text(PROMPT)],
        }
    ]
    got = claude_sent([request(MESSAGES_PATH, {"messages": sent})], PROMPT)
    exported = [{"role": "user", "content": [text("<local-command-stdout>Compacted</local-command-stdout>")]}]
    assert got.joined_last and aligned(got.messages, exported, joined_last=True) == exported
    assert aligned(got.messages, exported) != exported


def test_the_attribution_reminder_claude_code_renders_from_its_attachment_goes() -> None:
    """2.1.332 renders its ``remote_session_change`` attachment entry as a reminder at the
    start of the user message it follows, wherever that is in the conversation."""
    attribution = text(
        "<system-reminder>\nAttribution for git commits and pull requests you create from here on "
        "(…):\n- End git commit messages with:\nCo-Authored-By: Claude\n</system-reminder>\n"
    )
    session = [
        {"role": "user", "content": [text("task")]},
        {"role": "assistant", "content": [text("done")]},
        {"role": "user", "content": [REMINDER, text("a reminder the session itself recorded")]},
        {"role": "assistant", "content": [text("ok")]},
    ]
    sent = [
        {"role": "user", "content": [attribution, text("task")]},
        session[1],
        {"role": "user", "content": [attribution, *session[2]["content"]]},
        session[3],
        {"role": "user", "content": [text(PROMPT)]},
    ]
    got = claude_sent([request(MESSAGES_PATH, {"messages": sent})], PROMPT)
    assert got.messages == normalised(session)


def test_tool_loaded_goes_only_after_a_tool_loading_result() -> None:
    loading = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "tool_reference", "tool_name": "Bash"}],
    }
    plain = {"type": "tool_result", "tool_use_id": "t2", "content": "Tool loaded."}
    sent = [
        {"role": "user", "content": [loading, TOOL_LOADED]},
        {"role": "user", "content": [plain, TOOL_LOADED]},
        {"role": "user", "content": [text(PROMPT)]},
    ]
    got = claude_sent([request(MESSAGES_PATH, {"messages": sent})], PROMPT)
    assert [m["content"] for m in got.messages] == [[loading], [plain, TOOL_LOADED]]


def test_aligned_takes_back_only_what_the_export_shows() -> None:
    references = [{"type": "tool_reference", "tool_name": "TaskOutput"}]
    exported = [
        {"role": "user", "content": [text("joined"), text("next")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": references}]},
    ]
    removed = [{"type": "tool_result", "tool_use_id": "t", "content": [text(TOOLS_REMOVED)]}]
    sent = [
        {"role": "user", "content": [text("joined\n"), text("next")]},
        {"role": "user", "content": removed},
    ]
    assert aligned(sent, exported) == exported
    # A trailing newline on the message's last block, or a different call, is a real difference.
    other = [
        {"role": "user", "content": [text("joined"), text("next\n")]},
        {"role": "user", "content": removed},
    ]
    assert (
        aligned(
            other,
            [exported[0], {"role": "user", "content": [{**exported[1]["content"][0], "tool_use_id": "u"}]}],
        )
        == other
    )


def test_no_request_with_the_prompt_is_reported() -> None:
    with pytest.raises(NotSent, match="0 requests"):
        claude_sent([request(MESSAGES_PATH, {"messages": [{"role": "user", "content": "other"}]})], PROMPT)


def rollout(tmp_path: Path, instructions: str) -> Path:
    meta = {
        "type": "session_meta",
        "payload": {"id": "t", "cwd": "/w", "base_instructions": {"text": instructions}},
    }
    path = tmp_path / "rollout.jsonl"
    path.write_text(json.dumps(meta) + "\n")
    return path


def message(role: str, value: str, **extra: Any) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": value}], **extra}


def test_codex_additions_go_and_the_history_stays(tmp_path: Path) -> None:
    history = [
        message("developer", "<permissions instructions>"),  # the session's own initial context
        message("user", "<environment_context>recorded</environment_context>"),
        message("user", "task"),
        message("assistant", "answer"),
    ]
    sent = [
        {"type": "additional_tools", "tools": []},
        message("developer", "INSTRUCTIONS", id="msg_1"),
        *history,
        message("developer", "<skills_instructions>"),
        message("user", "<environment_context>now</environment_context>"),
        message("user", PROMPT),
        {"type": "configuration_update"},
    ]
    got = codex_sent(
        [request(RESPONSES_PATH, {"input": sent})],
        PROMPT,
        rollout(tmp_path, "INSTRUCTIONS"),
        tmp_path / "s.jsonl",
    )
    assert got.items == history
    assert [m["role"] for m in got.messages] == ["system", "user", "user", "assistant"]


def test_pair_checks_name_what_is_missing() -> None:
    calls = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": ""}]},
    ]
    assert len(anthropic_pair_findings(calls)) == 2
    items = [{"type": "function_call", "call_id": "a"}, {"type": "function_call_output", "call_id": "a"}]
    assert codex_pair_findings(items) == []
    assert codex_pair_findings(items[1:]) != []


def test_context_findings_tell_twice_from_before_from_different() -> None:
    before = normalised([{"role": "user", "content": "old"}, {"role": "user", "content": "kept"}])
    exported = normalised([{"role": "user", "content": "summary"}, {"role": "user", "content": "kept"}])
    sent = normalised(
        [{"role": "user", "content": "old"}, {"role": "user", "content": [text("kept"), text("kept")]}]
    )
    found = context_findings(sent, exported, before)
    assert [bool(found[k]) for k in ("twice", "before", "context")] == [True, True, True]
    assert context_findings(exported, exported, before) == {"twice": [], "before": [], "context": []}
