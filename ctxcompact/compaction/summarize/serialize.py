"""A transcript as legible plain text for a summary prompt, and its split into chunks.

The format (deterministic: the same messages always give the same text)::

    [system]
    You are a coding agent…

    [user]
    Fix the rounding bug.

    [assistant]
    [thinking] The half-cent case smells like banker's rounding…
    I'll read the tax module.
    → read_file({"path": "src/tax.py"}) [id: toolu_01]

    [user]
    ← result (read_file, toolu_01):
    from decimal import Decimal
    … [12,345 chars clipped] …
    ← result (run_command, toolu_02) ERROR:
    Traceback (most recent call last): …

Long tool inputs, tool results and thinking are clipped head + tail around a marker that says
how much was left out; user and assistant text is kept whole (a chunk that is still too long
is the caller's to clip). Images and documents become placeholders.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.ir import Block, Message, Span, tool_interaction_blocks, tool_names_by_id

DEFAULT_MAX_RESULT_CHARS = 2000
DEFAULT_MAX_THINKING_CHARS = 1000
CLIP_MARKER = "… [{count:,} chars clipped] …"
MESSAGE_SEPARATOR = "\n\n"


def clip_middle(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its head and tail around a clip marker.

    Two thirds of the room go to the head (where commands echo what they do), one third to
    the tail (where errors and summaries end up).
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = (max_chars * 2) // 3
    tail = max_chars - head
    clipped = len(text) - head - tail
    return f"{text[:head]}\n{CLIP_MARKER.format(count=clipped)}\n{text[len(text) - tail :]}"


def serialize_for_prompt(
    messages: Sequence[Message],
    *,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    max_thinking_chars: int = DEFAULT_MAX_THINKING_CHARS,
) -> str:
    """The messages as plain text (see the module docstring); ``""`` for no messages."""
    names = tool_names_by_id(messages)
    return MESSAGE_SEPARATOR.join(
        serialize_message(
            m, names=names, max_result_chars=max_result_chars, max_thinking_chars=max_thinking_chars
        )
        for m in messages
    )


def serialize_message(
    message: Message,
    *,
    names: Mapping[str, str],
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    max_thinking_chars: int = DEFAULT_MAX_THINKING_CHARS,
) -> str:
    """One message: a ``[role]`` line, then one entry per block."""
    lines = [f"[{message.role}]"]
    for block in message.content:
        entry = _block_text(block, names, max_result_chars, max_thinking_chars)
        if entry:
            lines.append(entry)
    return "\n".join(lines)


def _block_text(block: Block, names: Mapping[str, str], max_result: int, max_thinking: int) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "thinking":
        return "[thinking] " + clip_middle(str(block.get("thinking") or ""), max_thinking)
    if kind == "redacted_thinking":
        return "[redacted thinking]"
    if kind == "tool_use":
        raw = block.get("arguments")
        args = raw if isinstance(raw, str) else _json(block.get("input", {}))
        return f"→ {block.get('name') or '?'}({clip_middle(args, max_result)}) [id: {block.get('id')}]"
    if kind == "tool_result":
        tool_id = str(block.get("tool_use_id") or "")
        name = names.get(tool_id) or str(block.get("name") or "?")
        error = " ERROR" if block.get("is_error") else ""
        body = clip_middle(_result_text(block.get("content")), max_result)
        return (
            f"← result ({name}, {tool_id}){error}:\n{body}"
            if body
            else f"← result ({name}, {tool_id}){error}: (empty)"
        )
    if kind in ("image", "image_url"):
        return _image_placeholder(block)
    if kind == "document":
        return _document_placeholder(block)
    return f"[{kind if isinstance(kind, str) else 'unknown'} block]"


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for inner in content:
            if not isinstance(inner, Mapping):
                continue
            kind = inner.get("type")
            if kind == "text":
                parts.append(str(inner.get("text") or ""))
            elif kind in ("image", "image_url"):
                parts.append(_image_placeholder(inner))
            elif kind == "document":
                parts.append(_document_placeholder(inner))
            else:
                parts.append(f"[{kind} block]")
        return "\n".join(parts)
    return _json(content)


def _image_placeholder(block: Block) -> str:
    source = block.get("source")
    media = source.get("media_type") if isinstance(source, Mapping) else None
    return f"[image: {media}]" if media else "[image]"


def _document_placeholder(block: Block) -> str:
    title = block.get("title")
    source = block.get("source")
    media = source.get("media_type") if isinstance(source, Mapping) else None
    label = ", ".join(str(x) for x in (title, media) if x)
    return f"[document: {label}]" if label else "[document]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# --- chunks ----------------------------------------------------------------------------------


def split_into_chunks(
    messages: Sequence[Message],
    *,
    max_tokens: int,
    counter: TokenCounter,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    max_thinking_chars: int = DEFAULT_MAX_THINKING_CHARS,
) -> list[list[Message]]:
    """Consecutive groups of messages whose serialized text fits in ``max_tokens`` each.

    A tool interaction block (an assistant message with tool uses and the results answering
    it) is never split across chunks; a unit (block or single message) that alone exceeds the
    budget becomes a chunk of its own, for the caller to clip. Sizes are measured on the
    serialized text with one batched ``counter`` call. Order is kept; ``[]`` for no messages.
    """
    units = _units(messages, tool_interaction_blocks(messages))
    names = tool_names_by_id(messages)
    texts = [
        MESSAGE_SEPARATOR.join(
            serialize_message(
                m, names=names, max_result_chars=max_result_chars, max_thinking_chars=max_thinking_chars
            )
            for m in unit
        )
        for unit in units
    ]
    sizes = counter.count_batch(texts) if texts else []
    # The separator between units costs a token or so; count it so sums stay conservative.
    separator = counter.count_batch([MESSAGE_SEPARATOR])[0] if texts else 0
    chunks: list[list[Message]] = []
    current: list[Message] = []
    used = 0
    for unit, size in zip(units, sizes, strict=True):
        cost = size + (separator if current else 0)
        if current and used + cost > max_tokens:
            chunks.append(current)
            current, used, cost = [], 0, size
        current.extend(unit)
        used += cost
    if current:
        chunks.append(current)
    return chunks


def _units(messages: Sequence[Message], spans: Sequence[Span]) -> list[list[Message]]:
    units: list[list[Message]] = []
    i = 0
    k = 0
    while i < len(messages):
        while k < len(spans) and spans[k].end <= i:
            k += 1
        if k < len(spans) and spans[k].start == i:
            units.append(list(messages[spans[k].start : spans[k].end]))
            i = spans[k].end
        else:
            units.append([messages[i]])
            i += 1
    return units
