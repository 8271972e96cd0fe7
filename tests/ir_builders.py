"""Small builders of IR messages and blocks for unit tests (one home, not a copy per file)."""

from __future__ import annotations

from typing import Any

from ctxcompact.ir import Message, Source


def msg(role: Any, *blocks: dict[str, Any]) -> Message:
    """A message read from one (empty) raw record, so the writer treats it as kept."""
    return Message(role, tuple(blocks), Source(({},), (0,)))


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def result(tool_id: str, content: Any, *, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}
