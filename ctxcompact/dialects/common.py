"""Pieces the dialect adapters share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import Block, Message


@dataclass(frozen=True, slots=True)
class Parsed:
    """A dialect's reading of a conversation's records."""

    messages: tuple[Message, ...]
    #: Indices of records that are not model-visible messages (kept as they are on write).
    passthrough: frozenset[int] = frozenset()
    warnings: tuple[str, ...] = field(default_factory=tuple)


def require_mapping(record: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        raise InputError(f"{where} is a JSON {json_kind(record)}, expected an object (a message).")
    return record


def json_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


def content_blocks(content: Any, where: str) -> tuple[Block, ...]:
    """Anthropic-style content (a string, a list of blocks, or null) as a tuple of blocks."""
    if content is None:
        return ()
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    if isinstance(content, list):
        for j, block in enumerate(content):
            if not isinstance(block, Mapping):
                raise InputError(
                    f"{where}: content block {j} is a JSON {json_kind(block)}, expected an object."
                )
            kind = block.get("type")
            key = "id" if kind == "tool_use" else "tool_use_id" if kind == "tool_result" else None
            if key is not None:
                require_tool_id(block.get(key), f"{where}, content block {j}: '{key}'")
        return tuple(content)
    raise InputError(f"{where}: 'content' is a JSON {json_kind(content)}, expected a string or a list.")


def plain_text(blocks: tuple[Block, ...]) -> str | None:
    """The text of a message that is exactly one bare text block, else None.

    Such messages are written with string content, the form the seeds use for the messages
    a compaction creates.
    """
    if len(blocks) == 1:
        block = blocks[0]
        if block.get("type") == "text" and set(block) <= {"type", "text"}:
            return str(block.get("text", ""))
    return None


def require_tool_id(value: Any, where: str) -> None:
    """Tool ids pair calls with results: they must be strings (or absent, which the validator
    reports). Anything else — an object, a list, a number — is refused here, by position."""
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where} is a JSON {json_kind(value)}, expected a string id.")
