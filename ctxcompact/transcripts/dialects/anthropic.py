"""Anthropic Messages API dialect: ``{"role", "content": str | [blocks]}``.

The IR *is* Anthropic-shaped, so this adapter only normalizes string content to a text block
and back. A leading ``role: "system"`` message in the list is accepted (the seeds' format);
a request body's top-level ``system`` is handled by :mod:`ctxcompact.transcripts.io`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import Message, Source
from ctxcompact.transcripts.dialects.common import (
    DialectDefaults,
    Parsed,
    content_blocks,
    plain_text,
    require_mapping,
)
from ctxcompact.transcripts.dialects.detect import ANTHROPIC_ROLES as ROLES
from ctxcompact.transcripts.dialects.detect import looks_like_anthropic

NAME = "anthropic"


def parse_records(records: Sequence[Any]) -> Parsed:
    messages: list[Message] = []
    passthrough: set[int] = set()
    warnings: list[str] = []
    for i, record in enumerate(records):
        where = f"message {i}"
        rec = require_mapping(record, where)
        role = rec.get("role")
        if role is None:
            raise InputError(f"{where} has no 'role' (expected 'user', 'assistant' or 'system').")
        if role in ("tool", "function") or rec.get("tool_calls"):
            raise InputError(
                f"{where} is an OpenAI {'tool call' if rec.get('tool_calls') else 'tool message'} "
                "in a transcript of Anthropic messages (content blocks): no API accepts the mix, and "
                "rewriting it would break its tool pairs; convert it to one dialect first."
            )
        if role not in ROLES:
            passthrough.add(i)
            warnings.append(f"{where} has role {role!r}: kept as it is, not counted.")
            continue
        blocks = content_blocks(rec.get("content"), where)
        messages.append(Message(role, blocks, Source((record,), (i,))))
    return Parsed(tuple(messages), frozenset(passthrough), tuple(warnings))


def render_message(message: Message) -> list[Any]:
    template = message.source.records[0] if message.source else None
    out: dict[str, Any] = dict(template) if isinstance(template, dict) else {}
    out["role"] = message.role
    text = plain_text(message.content)
    out["content"] = text if text is not None else [dict(b) for b in message.content]
    return [out]


class AnthropicDialect(DialectDefaults):
    """The Messages API's own shape; the registry's default when no dialect claims a file."""

    name = NAME
    read_tools: tuple[tuple[str, str], ...] = (("read_file", "path"),)

    def looks_like(self, records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
        return looks_like_anthropic(records, body)

    def parse(self, records: Sequence[Any]) -> Parsed:
        return parse_records(records)

    def render(self, message: Message) -> list[Any]:
        return render_message(message)


DIALECT = AnthropicDialect()


def to_api_messages(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """IR messages as an Anthropic API call: ``(system, messages)``.

    System messages move to the ``system`` parameter (the API has no system role); everything
    else is rendered as-is. Used to send a transcript of any dialect to the API.
    """
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system_parts.extend(str(b.get("text", "")) for b in message.content if b.get("type") == "text")
            continue
        # Unsigned thinking (DeepSeek's reasoning_content) cannot be sent back to this API.
        blocks = [
            _api_block(b)
            for b in message.content
            if not (b.get("type") == "thinking" and not b.get("signature"))
        ]
        out.append({"role": message.role, "content": blocks or [{"type": "text", "text": "(empty)"}]})
    return ("\n\n".join(system_parts) or None), out


#: Keys the OpenAI adapter adds to IR blocks (to write them back exactly) that the Messages
#: API rejects as extra inputs: a call's raw ``arguments`` string, a tool message's ``name``.
_OPENAI_ONLY_KEYS = {"tool_use": "arguments", "tool_result": "name"}


def _api_block(block: Any) -> dict[str, Any]:
    extra = _OPENAI_ONLY_KEYS.get(block.get("type"))
    if extra is not None and extra in block:
        return {k: v for k, v in block.items() if k != extra}
    return dict(block)
