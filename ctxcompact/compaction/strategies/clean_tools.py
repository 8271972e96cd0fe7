"""``compact --strategy clean-tools``: drop old tool calls, keep the words.

``cleanToolCalls(messages, keepRounds)`` walks back from the end counting user
messages; the first one that makes the count exceed ``keepRounds`` is the boundary, and the
messages *before* it lose their tool-call parts. Because that builds the context for a
request whose user message is already at the end, that keeps the current request plus
``keepRounds`` complete rounds. Here a round starts at a user message with user text
(:func:`ctxcompact.ir.round_starts`; tool-result messages do not count), so with ``rounds=N``
the boundary is the (N+1)-th round start from the end: the current round (the live request and
its tool loop) and the N rounds before it keep their tool calls. ``rounds=0`` keeps only the
current round's.

Before the boundary, each tool interaction block (an assistant message's tool uses and the
results answering them) loses its tool_use blocks and those tool_result blocks together — a
block whose results reach the boundary message is kept whole, so no pair is ever split. The
text of the messages stays (seed: "仅保留文本内容"). A message left with nothing but blank text
or thinking is dropped; two messages of the same role that end up next to each other because
of a drop are merged into one (the first one's record carries the concatenated content, its
thinking first), so the roles still alternate. A merge never reaches into the boundary
message: if it would, the tool interaction block next to the boundary is kept instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ctxcompact.compaction.strategies.base import StrategyContext, StrategyResult
from ctxcompact.compaction.strategies.options import DEFAULT_ROUNDS as DEFAULT_ROUNDS
from ctxcompact.compaction.strategies.options import CleanToolsOptions as CleanToolsOptions
from ctxcompact.errors import OptionError
from ctxcompact.ir import Block, Message, Span, round_starts, tool_interaction_blocks, tool_pairs

_INVISIBLE = ("thinking", "redacted_thinking")


@dataclass(frozen=True, slots=True)
class CleanToolsDetails:
    """``messages_removed`` counts messages dropped or merged away."""

    tool_uses_removed: int = 0
    tool_results_removed: int = 0
    messages_removed: int = 0
    messages_merged: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_clean_tools(
    messages: Sequence[Message], options: CleanToolsOptions, context: StrategyContext
) -> StrategyResult:
    """The strategy table's entry: :func:`clean_tool_calls` with the run's options."""
    return clean_tool_calls(messages, rounds=options.rounds)


def clean_tool_calls(messages: Sequence[Message], *, rounds: int = DEFAULT_ROUNDS) -> StrategyResult:
    """Remove tool uses and their results older than the last ``rounds`` rounds (plus the
    current one), keeping text; drop emptied messages and merge same-role neighbours.

    Details: :class:`CleanToolsDetails`. Never mutates ``messages``; messages it does not
    change are returned as the same objects.
    """
    if rounds < 0:
        raise OptionError("{rounds} must be 0 or more.", "rounds")
    starts = round_starts(messages)
    if len(starts) <= rounds:
        return StrategyResult(tuple(messages), False, CleanToolsDetails())
    boundary = starts[-(rounds + 1)]
    spans = [s for s in tool_interaction_blocks(messages) if s.end <= boundary]
    while spans:
        rewrite = _rewrite(messages, spans, boundary)
        if rewrite is not None:
            out, uses, results, merged = rewrite
            removed = len(messages) - len(out)
            return StrategyResult(out, bool(uses), CleanToolsDetails(uses, results, removed, merged))
        # A merge would have to change the boundary message: keep the block next to it.
        spans.pop()
    return StrategyResult(tuple(messages), False, CleanToolsDetails())


def _rewrite(
    messages: Sequence[Message], spans: Sequence[Span], boundary: int
) -> tuple[tuple[Message, ...], int, int, int] | None:
    """The cleaned list, or None when a merge would reach the boundary message."""
    removed: dict[int, set[int]] = {}
    chosen = {span.start for span in spans}
    uses = 0
    answered: set[tuple[int, int]] = set()
    for pair in tool_pairs(messages):
        if pair.span.start in chosen:
            removed.setdefault(pair.use[0], set()).add(pair.use[1])
            uses += 1
            answered.update(pair.results)
    for i, j in answered:
        removed.setdefault(i, set()).add(j)
    results = len(answered)

    out: list[Message] = []
    merged = 0
    dropped_since_last = False
    for i, message in enumerate(messages):
        gone = removed.get(i)
        if gone:
            content = [b for j, b in enumerate(message.content) if j not in gone]
            if _is_empty(content):
                dropped_since_last = True
                continue
            message = message.with_content(content)
        if dropped_since_last and out and message.role != "system" and out[-1].role == message.role:
            if i >= boundary:
                return None
            out[-1] = out[-1].with_content(_merged(out[-1].content, message.content))
            merged += 1
        else:
            out.append(message)
        dropped_since_last = False
    return tuple(out), uses, results, merged


def _merged(first: Sequence[Block], second: Sequence[Block]) -> list[Block]:
    """The content of two merged messages. Thinking leads an assistant message (the
    Anthropic API expects it first, and OpenAI has one ``reasoning_content`` per message)."""
    blocks = [*first, *second]
    thinking = [b for b in blocks if b.get("type") in _INVISIBLE]
    return thinking + [b for b in blocks if b.get("type") not in _INVISIBLE]


def _is_empty(content: Sequence[Block]) -> bool:
    """Nothing the model would read as a message: no blocks, blank text, or only thinking."""
    for block in content:
        kind = block.get("type")
        if kind in _INVISIBLE:
            continue
        if kind == "text" and not str(block.get("text") or "").strip():
            continue
        return False
    return True
