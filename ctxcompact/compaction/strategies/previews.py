"""Previews of oversized content, with a visible marker, shared by the local strategies.

``selective`` turns tool inputs over 500 tokens and tool results over 600
tokens into 200-token previews; ``key-messages``, when its selection is still over budget, turns tool results into
previews that keep the tool name, its status and the first and last lines, and clips long
user/assistant texts to their first paragraph, bullets and conclusion. Every preview ends with
:data:`TRUNCATION_MARKER` so the model (and a second pass) can see that something was cut.

Never truncated twice: content that already carries our marker, a ``prune``
placeholder or an ``offload`` reference is left as it is (:func:`is_already_truncated`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.ir import Block, tool_result_text
from ctxcompact.markers import TRUNCATION_MARKER as MARKER_TEXT
from ctxcompact.markers import is_prune_placeholder, is_truncation_preview, offload_reference

#: Every preview we write contains this, e.g. ``[… truncated by ctxcompact: 4,210 tokens, …]``.
TRUNCATION_MARKER = MARKER_TEXT
_CONCLUSION = re.compile(r"\b(conclusion|in summary|summary|to summarize|tl;dr)\b|结论|总结", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def is_already_truncated(text: str) -> bool:
    """True when ``text`` was already shortened by us, ``prune`` or ``offload`` — by its whole
    shape (:mod:`ctxcompact.markers`): text that merely contains or starts with a marker is
    still content to cut."""
    return is_truncation_preview(text) or is_prune_placeholder(text) or offload_reference(text) is not None


def marker(tokens: int, kept: int, what: str = "") -> str:
    label = f"{what}, " if what else ""
    return f"{TRUNCATION_MARKER}: {label}{tokens:,} tokens, about {kept:,} kept]"


def head_within(text: str, tokens: int, limit: int, counter: TokenCounter) -> str:
    """The longest-looking prefix of ``text`` (``tokens`` long) that counts at most ``limit``
    tokens: a proportional cut, shrunk until it fits (a few counter calls at most)."""
    if tokens <= limit:
        return text
    cut = max(len(text) * limit // max(tokens, 1), 0)
    for _ in range(8):
        head = text[:cut]
        if counter.count_batch([head])[0] <= limit:
            return head
        cut = cut * 9 // 10
    return ""


def head_preview(text: str, tokens: int, limit: int, counter: TokenCounter, what: str = "") -> str:
    """The first ``limit`` tokens of ``text`` and the truncation marker."""
    return f"{head_within(text, tokens, limit, counter)}\n{marker(tokens, limit, what)}"


def head_tail_preview(text: str, tokens: int, limit: int, counter: TokenCounter, what: str) -> str:
    """A tool-result preview: tool name and status, the first and the last lines
    (half of ``limit`` tokens each), the marker in between."""
    half = max(limit // 2, 1)
    head = head_within(text, tokens, half, counter)
    tail = head_within(text[::-1], tokens, half, counter)[::-1]
    return f"{head}\n{marker(tokens, limit, what)}\n{tail}"


def clip_long_text(text: str, tokens: int, limit: int, counter: TokenCounter) -> str:
    """The clipping of a long user/assistant text: the first paragraph, the bullet
    lines and the sentences that state a conclusion or summary, within ``limit`` tokens."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    first = paragraphs[0] if paragraphs else text
    keep = [head_within(first, counter.count_batch([first])[0], limit // 2, counter)]
    rest = "\n".join(paragraphs[1:])
    extras = [line for line in rest.splitlines() if _BULLET.match(line)]
    extras += [s for s in re.split(r"(?<=[.!?。])\s+|\n", rest) if _CONCLUSION.search(s) and s not in extras]
    budget = limit - counter.count_batch([keep[0]])[0]
    for piece, n in zip(extras, counter.count_batch(extras) if extras else [], strict=True):
        if n > budget:
            continue
        keep.append(piece.strip())
        budget -= n
    return "\n".join(keep) + "\n" + marker(tokens, limit, "text clipped")


def preview_tool_result(block: Block, tokens: int, limit: int, counter: TokenCounter, tool: str) -> Block:
    """A copy of a tool_result block whose content is a head-and-tail preview."""
    status = "error" if block.get("is_error") else "ok"
    text = head_tail_preview(tool_result_text(block), tokens, limit, counter, f"{tool or 'tool'} {status}")
    new = dict(block)
    new["content"] = (
        text if isinstance(block.get("content"), str | None) else [{"type": "text", "text": text}]
    )
    return new


def preview_tool_input(block: Block, tokens: int, limit: int, counter: TokenCounter) -> Block:
    """A copy of a tool_use block whose input is ``{"ctxcompact_preview": "<first tokens>…"}``.

    The input stays a JSON object (the APIs require one); an OpenAI call's raw ``arguments``
    string is rewritten to the same object so both views agree."""
    raw = block.get("arguments")
    text = raw if isinstance(raw, str) else json.dumps(block.get("input", {}), ensure_ascii=False)
    preview: dict[str, Any] = {"ctxcompact_preview": head_preview(text, tokens, limit, counter, "input")}
    new = dict(block)
    new["input"] = preview
    if "arguments" in block:
        new["arguments"] = json.dumps(preview, ensure_ascii=False)
    return new


def tool_input_text(block: Mapping[str, Any]) -> str:
    raw = block.get("arguments")
    return raw if isinstance(raw, str) else json.dumps(block.get("input", {}), ensure_ascii=False)
