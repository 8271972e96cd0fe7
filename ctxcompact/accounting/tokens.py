"""Message accounting: what each block contributes, counted.

Counters (all offline unless noted; the local ones live in :mod:`ctxcompact.accounting.counters`):

``tiktoken``   default: exact cl100k_base counts (tiktoken, or bpe-openai when installed).
``estimate``   ``ceil(ascii / 4 + non_ascii)`` per string: no tokenizer load.
``anthropic``  exact totals from the Messages API ``count_tokens`` endpoint (needs a key; the
               only counter that uses the network). Per-message figures are the tiktoken
               figures scaled to the exact total, and are labelled approximate.

What counts (every block type, so the figure matches what the model is sent):

* ``text``: the text; ``thinking``: the thinking text (signatures are not counted);
* ``tool_use``: the tool name plus the compact JSON of its input (an OpenAI call's raw
  ``arguments`` string as written);
* ``tool_result``: its content (a string, or its blocks counted by these same rules);
* ``image``: Anthropic's rule ``ceil(width × height / 750)`` after scaling the long edge down to
  1568 px, when the size can be read from base64 PNG/JPEG/GIF/WebP data; otherwise
  :data:`IMAGE_TOKENS_DEFAULT` (also used for OpenAI ``image_url`` parts);
* ``document``: a text source counts its text; a base64 PDF counts
  :data:`DOCUMENT_TOKENS_PER_PAGE` per page; anything else :data:`DOCUMENT_TOKENS_PER_PAGE`;
* ``redacted_thinking`` (Anthropic's redacted thinking, Codex's ``encrypted_content``): the
  ciphertext's length over :data:`ENCRYPTED_CHARS_PER_TOKEN` — what the reasoning it carries
  cost, not what its base64 would tokenize to (~1.4 characters a token, 13× more);
* any other block type (``server_tool_use``, ``web_search_tool_result``, ``compaction``…): its
  compact JSON without the ``type`` key — a conservative figure;
* a request body's ``system`` prompt (role ``system``) and each ``tools`` definition's compact
  JSON (role ``tools``);
* plus :data:`MESSAGE_OVERHEAD` tokens per message for the role and delimiters (the OpenAI
  cookbook's figure for its chat models).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import orjson

# The counters live in ctxcompact.accounting.counters; these names stay importable from here.
from ctxcompact.accounting.counters import DEFAULT_ENCODING as DEFAULT_ENCODING
from ctxcompact.accounting.counters import CachedCounter as CachedCounter
from ctxcompact.accounting.counters import EstimateCounter as EstimateCounter
from ctxcompact.accounting.counters import TiktokenCounter as TiktokenCounter
from ctxcompact.accounting.counters import TokenCounter as TokenCounter
from ctxcompact.accounting.counters import cached as cached
from ctxcompact.accounting.counters import estimate_tokens as estimate_tokens
from ctxcompact.accounting.counters import load_encoding as load_encoding
from ctxcompact.accounting.counters import make_counter as make_counter
from ctxcompact.accounting.media import DOCUMENT_TOKENS_PER_PAGE as DOCUMENT_TOKENS_PER_PAGE
from ctxcompact.accounting.media import IMAGE_MAX_EDGE as IMAGE_MAX_EDGE
from ctxcompact.accounting.media import IMAGE_TOKENS_DEFAULT as IMAGE_TOKENS_DEFAULT
from ctxcompact.accounting.media import document_pieces, image_tokens
from ctxcompact.accounting.media import image_size as image_size
from ctxcompact.ir import TEXT_ACTION, Block, Message, tool_names_by_id, tool_result_text
from ctxcompact.transcripts.jsontext import dumps

MESSAGE_OVERHEAD = 3
#: Characters of encrypted reasoning per reasoning token, measured on the corpus's Codex
#: rollout that records usage: 32,780 characters of ``encrypted_content`` for 1,759
#: ``reasoning_output_tokens`` (``tests/test_real_sessions.py`` recomputes it).
ENCRYPTED_CHARS_PER_TOKEN = 18.6


# --- what a block contributes ----------------------------------------------------------------


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a number kept as written (ExactFloat), a lone surrogate
        return dumps(value).decode("utf-8", "surrogatepass")


def block_pieces(block: Block) -> tuple[list[str], int]:
    """The strings a block contributes, and fixed tokens (images, PDF pages) on top."""
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text") or "")], 0
    if kind == "tool_use":
        if block.get(TEXT_ACTION):
            return [], 0  # written in the reply's text, counted there
        raw = block.get("arguments")
        args = raw if isinstance(raw, str) else _json(block.get("input", {}))
        return [str(block.get("name") or ""), args], 0
    if kind == "tool_result":
        content = block.get("content")
        if content is None or isinstance(content, str):
            return [content or ""], 0
        if isinstance(content, list):
            texts: list[str] = []
            fixed = 0
            for inner in content:
                if isinstance(inner, Mapping):
                    t, f = block_pieces(inner)
                    texts.extend(t)
                    fixed += f
            return texts, fixed
        return [_json(content)], 0
    if kind == "thinking":
        return [str(block.get("thinking") or "")], 0
    if kind == "redacted_thinking":
        data = block.get("data")
        return [], math.ceil(len(data) / ENCRYPTED_CHARS_PER_TOKEN) if isinstance(data, str) else 0
    if kind in ("image", "image_url"):
        return [], image_tokens(block)
    if kind == "document":
        return document_pieces(block)
    return [_json({k: v for k, v in block.items() if k != "type"})], 0


def block_tokens(blocks: Sequence[Block], counter: TokenCounter) -> list[int]:
    """Tokens of each block: its text pieces counted in one batch, plus fixed costs (images,
    PDF pages). What prune and offload use to say how much they freed."""
    texts: list[str] = []
    plan: list[tuple[int, int]] = []
    for block in blocks:
        pieces, fixed = block_pieces(block)
        texts.extend(pieces)
        plan.append((len(pieces), fixed))
    counts = counter.count_batch(texts) if texts else []
    out: list[int] = []
    pos = 0
    for n, fixed in plan:
        out.append(sum(counts[pos : pos + n]) + fixed)
        pos += n
    return out


def _display_type(block: Block) -> str:
    kind = block.get("type")
    if kind == "image_url":
        return "image"
    return kind if isinstance(kind, str) else "other"


# --- accounting ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageTokens:
    """One message's tokens, by block type, with a preview of its text."""

    index: int
    role: str
    tokens: int
    by_type: Mapping[str, int]
    preview: str


@dataclass(frozen=True, slots=True)
class ToolResultTokens:
    """One tool result's tokens, with its call's id and tool name and a preview."""

    message_index: int
    tool_use_id: str
    tool_name: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class TokenReport:
    """Where the tokens of one message list (plus system prompt and tools) go."""

    counter: str
    total: int
    by_role: Mapping[str, int]
    by_type: Mapping[str, int]
    messages: tuple[MessageTokens, ...]
    tool_results: tuple[ToolResultTokens, ...]
    exact_total: bool = False
    per_message_approximate: bool = False
    encoding: str | None = None
    extras: Mapping[str, int] = field(default_factory=dict)
    #: the library that counted (``tiktoken``, ``bpe-openai``); None for estimates and totals
    #: from the API
    tokenizer: str | None = None

    @property
    def message_count(self) -> int:
        return len(self.messages)

    def largest_messages(self, n: int = 10) -> list[MessageTokens]:
        return sorted(self.messages, key=lambda m: (-m.tokens, m.index))[:n]

    def largest_tool_results(self, n: int = 10) -> list[ToolResultTokens]:
        return sorted(self.tool_results, key=lambda r: (-r.tokens, r.message_index))[:n]


def preview(text: str, width: int = 60) -> str:
    """The first ``width`` characters of ``text`` with runs of whitespace made one space.

    Flattens a growing prefix, not the whole text (a tool result can be megabytes): the
    flattened prefix is a prefix of the flattened whole, so the answer is the same."""
    size = 4 * width
    while True:
        flat = " ".join(text[:size].split())
        if size >= len(text) or len(flat) > width:
            return flat if len(flat) <= width else flat[: width - 1] + "…"
        size *= 4


#: (message index, or -1 system / -2 tools; block type; piece count; fixed tokens; result key)
_PlanRow = tuple[int, str, int, int, int]


def _count_plan(
    messages: Sequence[Message], system: Sequence[Block], tools: Sequence[Any]
) -> tuple[list[str], list[_PlanRow], list[tuple[int, str]]]:
    """The texts to encode in one batch, what each run of them belongs to, and the
    (message index, tool_use_id) of every tool result in order."""
    texts: list[str] = []
    plan: list[_PlanRow] = []
    results_meta: list[tuple[int, str]] = []
    for block in system:
        pieces, fixed = block_pieces(block)
        texts.extend(pieces)
        plan.append((-1, _display_type(block), len(pieces), fixed, -1))
    for tool in tools:
        texts.append(_json(tool))
        plan.append((-2, "tool_definition", 1, 0, -1))
    for i, message in enumerate(messages):
        for block in message.content:
            pieces, fixed = block_pieces(block)
            texts.extend(pieces)
            key = -1
            if block.get("type") == "tool_result":
                key = len(results_meta)
                results_meta.append((i, str(block.get("tool_use_id") or "")))
            plan.append((i, _display_type(block), len(pieces), fixed, key))
    return texts, plan, results_meta


def count_tokens(
    messages: Sequence[Message],
    *,
    counter: TokenCounter | None = None,
    system: Sequence[Block] = (),
    tools: Sequence[Any] = (),
    previews: bool = True,
) -> TokenReport:
    """Count every message, the system prompt and the tool definitions with one batched call
    to ``counter`` (default: tiktoken cl100k_base). Pure apart from loading the encoding.
    ``previews=False`` leaves every ``preview`` empty (for callers that show none)."""
    counter = counter or make_counter()
    texts, plan, results_meta = _count_plan(messages, system, tools)
    counts = counter.count_batch(texts) if texts else []
    per_message = [dict[str, int]() for _ in messages]
    result_tokens = [0] * len(results_meta)
    extras = {"system": 0, "tools": 0}
    by_type: dict[str, int] = {}
    pos = 0
    for owner, kind, n_pieces, fixed, key in plan:
        # Most blocks are one piece: no slice to sum.
        tokens = (counts[pos] if n_pieces == 1 else sum(counts[pos : pos + n_pieces])) + fixed
        pos += n_pieces
        by_type[kind] = by_type.get(kind, 0) + tokens
        if owner == -1:
            extras["system"] += tokens
        elif owner == -2:
            extras["tools"] += tokens
        else:
            per_message[owner][kind] = per_message[owner].get(kind, 0) + tokens
            if key >= 0:
                result_tokens[key] = tokens

    if messages:
        by_type["overhead"] = MESSAGE_OVERHEAD * len(messages)
    by_role: dict[str, int] = {}
    if extras["system"]:
        by_role["system"] = extras["system"]
    if extras["tools"]:
        by_role["tools"] = extras["tools"]
    rows: list[MessageTokens] = []
    sizes = counter.message_sizes if isinstance(counter, CachedCounter) else {}
    for i, message in enumerate(messages):
        total = sum(per_message[i].values()) + MESSAGE_OVERHEAD
        by_role[message.role] = by_role.get(message.role, 0) + total
        shown = preview(_message_preview(message)) if previews else ""
        rows.append(MessageTokens(i, message.role, total, per_message[i], shown))
        sizes[id(message)] = (message, total)

    names = tool_names_by_id(messages)
    results = tuple(
        ToolResultTokens(
            i,
            tool_id,
            names.get(tool_id, ""),
            result_tokens[k],
            preview(_result_preview(messages[i], tool_id)) if previews else "",
        )
        for k, (i, tool_id) in enumerate(results_meta)
    )
    return TokenReport(
        counter=counter.name,
        total=sum(by_role.values()),
        by_role=by_role,
        by_type={k: v for k, v in by_type.items() if v},
        messages=tuple(rows),
        tool_results=results,
        encoding=getattr(counter, "encoding", None),
        extras=extras,
        tokenizer=getattr(counter, "tokenizer", None),
    )


def total_tokens(
    messages: Sequence[Message],
    *,
    counter: TokenCounter | None = None,
    system: Sequence[Block] = (),
    tools: Sequence[Any] = (),
) -> int:
    """``count_tokens(...).total`` without the breakdown (no rows, no previews): what the
    before and after figures of a compaction need."""
    counter = counter or make_counter()
    return sum(_outside_messages(system, tools, counter)) + sum(message_totals(messages, counter))


#: The empty breakdown of :func:`count_totals`' rows (one shared, read-only mapping).
_NO_BREAKDOWN: Mapping[str, int] = MappingProxyType({})


def count_totals(
    messages: Sequence[Message],
    *,
    counter: TokenCounter | None = None,
    system: Sequence[Block] = (),
    tools: Sequence[Any] = (),
) -> TokenReport:
    """:func:`count_tokens`' total, tokens by role and each message's total — the figures a
    compaction decides by — without the breakdown: no tokens by block type (``by_type`` is
    empty, in the report and its rows), no tool-result rows, no previews. Each message is
    counted as :func:`message_totals` counts it (with a :class:`CachedCounter`, looked up by
    identity when this run counted it already); the figures are :func:`count_tokens`' own."""
    counter = counter or make_counter()
    system_tokens, tool_tokens = _outside_messages(system, tools, counter)
    by_role: dict[str, int] = {}
    if system_tokens:
        by_role["system"] = system_tokens
    if tool_tokens:
        by_role["tools"] = tool_tokens
    rows: list[MessageTokens] = []
    for i, (message, total) in enumerate(zip(messages, message_totals(messages, counter), strict=True)):
        by_role[message.role] = by_role.get(message.role, 0) + total
        rows.append(MessageTokens(i, message.role, total, _NO_BREAKDOWN, ""))
    return TokenReport(
        counter=counter.name,
        total=sum(by_role.values()),
        by_role=by_role,
        by_type={},
        messages=tuple(rows),
        tool_results=(),
        encoding=getattr(counter, "encoding", None),
        extras={"system": system_tokens, "tools": tool_tokens},
        tokenizer=getattr(counter, "tokenizer", None),
    )


def _outside_messages(
    system: Sequence[Block], tools: Sequence[Any], counter: TokenCounter
) -> tuple[int, int]:
    """The tokens of the system prompt and of the tool definitions, in one counter batch."""
    texts: list[str] = [_json(tool) for tool in tools]
    fixed = 0
    for block in system:
        pieces, extra = block_pieces(block)
        texts.extend(pieces)
        fixed += extra
    if not texts:
        return fixed, 0
    counts = counter.count_batch(texts)
    return sum(counts[len(tools) :]) + fixed, sum(counts[: len(tools)])


def message_totals(messages: Sequence[Message], counter: TokenCounter) -> list[int]:
    """Tokens of each message (its blocks plus :data:`MESSAGE_OVERHEAD`), as
    :func:`count_tokens` reports them, in one counter batch.

    With a :class:`CachedCounter` (one per run), a message already counted this run — by the
    before figure, a strategy, a step's figures — is looked up by identity, not read again:
    only new and changed messages are counted.
    """
    sizes = counter.message_sizes if isinstance(counter, CachedCounter) else {}
    totals = [known[1] if known is not None else -1 for known in map(sizes.get, map(id, messages))]
    todo = [i for i, total in enumerate(totals) if total < 0]
    if not todo:
        return totals
    texts: list[str] = []
    plan: list[tuple[int, int]] = []  # (where its pieces end in texts, fixed tokens) per message
    for i in todo:
        fixed = 0
        for block in messages[i].content:
            pieces, extra = block_pieces(block)
            texts += pieces
            fixed += extra
        plan.append((len(texts), fixed))
    counts = counter.count_batch(texts) if texts else []
    start = 0
    for i, (end, fixed) in zip(todo, plan, strict=True):
        # Most messages are one piece: no slice to sum.
        total = (counts[start] if end - start == 1 else sum(counts[start:end])) + fixed + MESSAGE_OVERHEAD
        start = end
        totals[i] = total
        message = messages[i]
        sizes[id(message)] = (message, total)
    return totals


def edited_total(edited: Message, total: int, delta: int, counter: TokenCounter) -> int:
    """The total of ``edited`` — a message whose blocks were replaced, counting ``total``
    before, where the new blocks count ``delta`` tokens more than the old (:func:`block_tokens`
    of each; a message's total is :data:`MESSAGE_OVERHEAD` plus its blocks') — noted for
    :func:`message_totals`' look-up by identity, so a rewrite that knows its blocks' counts
    never counts the message again."""
    new_total = total + delta
    if isinstance(counter, CachedCounter):
        counter.message_sizes[id(edited)] = (edited, new_total)
    return new_total


def _message_preview(message: Message) -> str:
    for block in message.content:
        kind = block.get("type")
        if kind == "text" and str(block.get("text", "")).strip():
            return str(block["text"])
        if kind == "tool_use":
            return f"{block.get('name')}({_json(block.get('input', {}))})"
        if kind == "tool_result":
            return tool_result_text(block)
        if kind == "thinking":
            return str(block.get("thinking", ""))
    return ""


def _result_preview(message: Message, tool_id: str) -> str:
    for block in message.content:
        if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id:
            return tool_result_text(block)
    return ""


def scale_report(report: TokenReport, exact_total: int, counter_name: str) -> TokenReport:
    """A report whose total is ``exact_total`` and whose parts are scaled to match it
    (used by the exact ``anthropic`` counter: the API gives one number per request)."""
    factor = exact_total / report.total if report.total else 0.0

    def scale(mapping: Mapping[str, int]) -> dict[str, int]:
        return {k: round(v * factor) for k, v in mapping.items()}

    return TokenReport(
        counter=counter_name,
        total=exact_total,
        by_role=scale(report.by_role),
        by_type=scale(report.by_type),
        messages=tuple(
            MessageTokens(m.index, m.role, round(m.tokens * factor), scale(m.by_type), m.preview)
            for m in report.messages
        ),
        tool_results=tuple(
            ToolResultTokens(r.message_index, r.tool_use_id, r.tool_name, round(r.tokens * factor), r.preview)
            for r in report.tool_results
        ),
        exact_total=True,
        per_message_approximate=True,
        encoding=None,
        extras=scale(report.extras),
    )
