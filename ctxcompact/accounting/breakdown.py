"""Where the real context goes, by category: what ``count`` draws as a picture.

The parts add up to the context size ``check`` decides by
(:func:`ctxcompact.accounting.context_size.context_size`), not to our raw count: our count of
each part is scaled by the same factor the size uses (Claude tokens per cl100k token), and
what the size holds beyond the messages in the file — the system prompt and tool definitions
a session file does not record — is its own part, marked estimated. Where our calibrated count
of the messages is above a recorded size, the parts are scaled down to it. Integer parts are
rounded by largest remainder, so they sum to the size exactly.

Views (``count --by``): ``category`` (the default: system and tools, user text, assistant
text, tool calls, tool results split by tool, thinking, images and documents, other),
``tool`` (each tool's calls and results together, the rest as one part), ``role`` and
``type`` (block types). Then the budget: free space up to the output reserve, the reserve,
and the threshold as a mark. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ctxcompact.accounting.context_size import ContextSize
from ctxcompact.accounting.tokens import MESSAGE_OVERHEAD, TokenCounter, TokenReport, block_tokens
from ctxcompact.accounting.windows import Budget
from ctxcompact.ir import Message

View = Literal["category", "tool", "role", "type"]
VIEWS: tuple[View, ...] = ("category", "tool", "role", "type")
#: The part for what the size holds beyond the file's messages.
UNRECORDED = "system & tools (estimated)"
#: Tool results beyond this many tools are one part ("other tools").
TOP_TOOLS = 6


@dataclass(frozen=True, slots=True)
class Part:
    """One category of the context: its tokens (of the real size) and whether the figure is
    an estimate rather than a count."""

    name: str
    tokens: int
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The real context by ``view``, and the budget around it (None without a known window).

    ``parts`` sum to ``total``. ``free`` is what is left before the output reserve (0 when the
    context reaches into it), ``over`` how far it goes past the window less the reserve."""

    view: View
    total: int
    parts: tuple[Part, ...]
    window: int | None = None
    output_reserve: int | None = None
    threshold: int | None = None
    #: How the estimated part was found ("" when there is none).
    note: str = ""

    @property
    def free(self) -> int | None:
        if self.window is None or self.output_reserve is None:
            return None
        return max(self.window - self.output_reserve - self.total, 0)

    @property
    def over_threshold(self) -> bool:
        return self.threshold is not None and self.total >= self.threshold


def _tool_results(report: TokenReport) -> dict[str, int]:
    by_tool: dict[str, int] = {}
    for result in report.tool_results:
        name = result.tool_name or "?"
        by_tool[name] = by_tool.get(name, 0) + result.tokens
    return by_tool


def tool_calls(messages: Sequence[Message], counter: TokenCounter) -> list[tuple[str, int]]:
    """Every tool call as (tool name, tokens), counted as ``count`` counts a ``tool_use``."""
    blocks = [b for m in messages for b in m.content if b.get("type") == "tool_use"]
    return [
        (str(b.get("name") or "?"), n) for b, n in zip(blocks, block_tokens(blocks, counter), strict=True)
    ]


def counted_parts(
    report: TokenReport, view: View, *, calls: Sequence[tuple[str, int]] = ()
) -> dict[str, int]:
    """Our count by ``view`` (sums to ``report.total``). ``calls`` are the tool calls as
    (tool name, tokens) (:func:`tool_calls`), for the ``tool`` view."""
    if view == "role":
        return dict(report.by_role)
    if view == "type":
        return dict(report.by_type)
    parts: dict[str, int] = {}

    def add(name: str, tokens: int) -> None:
        if tokens:
            parts[name] = parts.get(name, 0) + tokens

    add("system prompt", report.extras.get("system", 0))
    add("tool definitions", report.extras.get("tools", 0))
    results = _tool_results(report)
    if view == "tool":
        call_tokens: dict[str, int] = {}
        for name, tokens in calls:
            call_tokens[name] = call_tokens.get(name, 0) + tokens
        for name in sorted(set(results) | set(call_tokens)):
            add(f"tool {name}", results.get(name, 0) + call_tokens.get(name, 0))
        rest = report.total - sum(parts.values())
        add("everything else", rest)
        return parts
    for message in report.messages:
        for kind, tokens in message.by_type.items():
            if kind == "tool_result":
                continue  # by tool, below
            if kind == "text":
                add("system prompt" if message.role == "system" else f"{message.role} text", tokens)
            elif kind == "tool_use":
                add("tool calls", tokens)
            elif kind == "thinking":
                add("thinking", tokens)
            elif kind in ("image", "document"):
                add("images & documents", tokens)
            else:
                add("other blocks", tokens)
        add("message framing", MESSAGE_OVERHEAD)
    ranked = sorted(results.items(), key=lambda kv: (-kv[1], kv[0]))
    for name, tokens in ranked[:TOP_TOOLS]:
        add(f"tool results: {name}", tokens)
    add("tool results: other tools", sum(tokens for _, tokens in ranked[TOP_TOOLS:]))
    return parts


def _apportion(values: Mapping[str, float], total: int) -> dict[str, int]:
    """Integers proportional to ``values`` that sum to ``total`` (largest remainder)."""
    whole = sum(values.values())
    if total <= 0 or whole <= 0:
        return {k: 0 for k in values}
    exact = {k: v * total / whole for k, v in values.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    short = total - sum(out.values())
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], k))[:short]:
        out[k] += 1
    return out


def context_breakdown(
    report: TokenReport,
    size: ContextSize,
    *,
    view: View = "category",
    budget: Budget | None = None,
    calls: Sequence[tuple[str, int]] = (),
) -> Breakdown:
    """The parts of ``size.tokens`` by ``view`` (module docstring); ``report`` is our count of
    the same conversation, ``budget`` its model's (for free space, reserve and threshold)."""
    counted = {k: v for k, v in counted_parts(report, view, calls=calls).items() if v}
    total = size.tokens
    ours = sum(counted.values()) * size.factor
    # What the size holds beyond the file's messages: recorded usage, or an estimate's overhead.
    beyond = size.source == "recorded" or bool(size.system_tokens)
    unrecorded = max(total - round(ours), 0) if beyond else 0
    scaled = _apportion(counted, total - unrecorded) if counted else {}
    parts = [Part(name, tokens) for name, tokens in sorted(scaled.items(), key=lambda kv: -kv[1]) if tokens]
    if unrecorded:
        parts.insert(0, Part(UNRECORDED, unrecorded, estimated=True))
    return Breakdown(
        view=view,
        total=total,
        parts=tuple(parts),
        window=budget.model.context_window if budget is not None else None,
        output_reserve=budget.output_reserve if budget is not None else None,
        threshold=budget.threshold if budget is not None else None,
        note=_note(size, unrecorded, ours) if unrecorded else "",
    )


def _note(size: ContextSize, unrecorded: int, ours: float) -> str:
    scaled = f" × {size.factor:g}" if size.factor != 1.0 else ""
    if size.source == "recorded":
        return (
            f"{UNRECORDED}: the recorded size less our count of the messages in the file{scaled} "
            f"({size.tokens:,} − {round(ours):,}); the rest is our count{scaled}"
        )
    return f"{UNRECORDED}: --system-tokens {unrecorded:,} (what the file does not hold); the rest is our count{scaled}"
