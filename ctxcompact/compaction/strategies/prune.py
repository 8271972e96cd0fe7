"""``compact --strategy prune``: clear old tool output in place (observation masking).

The semantics of Anthropic's server-side context edits, which users already know, done on
the transcript itself so that any model and any later strategy (``prune`` then ``full``) sees
the result:

* ``clear_tool_uses_20250919``: the ``keep`` most recent tool uses stay untouched; the
  results of older ones are replaced, oldest first, by a one-line stub naming the tool, its
  input, the outcome and the size removed (:mod:`ctxcompact.compaction.masking`); ``exclude_tools`` are never cleared;
  ``clear_tool_inputs`` also blanks the tool_use input (to ``{}``); with ``clear_at_least``,
  if clearing everything eligible frees fewer tokens than that, nothing is cleared (clearing
  breaks the prompt cache, so it must be worth it).
* ``clear_thinking_20251015``: with ``keep_thinking=N`` the thinking blocks of all but the N
  most recent assistant turns that have thinking are removed (``0`` removes all it may);
  ``None`` keeps every thinking block (the API's ``"all"``).

What is never done: no message is added, removed or reordered, and no tool_use/tool_result
pair is split — only contents change, so pairs stay valid by construction. Nothing from
:func:`~ctxcompact.ir.current_loop_start` onward is touched (the live request and its tool
loop; that also keeps the thinking of the loop's last assistant turn, which the API
requires), although ``keep`` counts tool uses over the whole list, like the API.

``protect_loop=False`` (opt-in) lifts the loop protection the way the API's own edit works:
a single-prompt agent run is *all* current loop, so by default prune cannot help it. Then
only ``keep`` protects recent tool uses (and the live part, :func:`~ctxcompact.ir.live_start`:
results the model has not seen are never cleared), and the thinking of the last assistant message is
still never removed (the API requires it in a live tool loop). A result
is only cleared when its placeholder is smaller than it, and an assistant turn only loses its
thinking when something else remains in it, so tokens never grow and no message becomes
empty. A second pass changes nothing: placeholders are recognised by their prefix, blanked
inputs and removed thinking have nothing left to free.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.accounting.tokens import TokenCounter, block_tokens, make_counter
from ctxcompact.compaction.masking import STUB_PREFIX, is_stub, masked_result, stub_text
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyResult
from ctxcompact.compaction.strategies.options import DEFAULT_CLEAR_AT_LEAST as DEFAULT_CLEAR_AT_LEAST
from ctxcompact.compaction.strategies.options import DEFAULT_KEEP as DEFAULT_KEEP
from ctxcompact.compaction.strategies.options import PruneOptions as PruneOptions
from ctxcompact.errors import OptionError
from ctxcompact.ir import (
    Block,
    Message,
    ToolPair,
    current_loop_start,
    live_start,
    replace_blocks,
    tool_pairs,
)

PLACEHOLDER_PREFIX = STUB_PREFIX
THINKING_TYPES = ("thinking", "redacted_thinking")
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"


@dataclass(frozen=True, slots=True)
class AppliedEdit:
    """One context edit, shaped like the API's ``applied_edits`` entries."""

    type: str
    cleared: int  # tool uses or thinking turns, by ``type``
    cleared_input_tokens: int

    def to_dict(self) -> dict[str, Any]:
        what = "cleared_tool_uses" if self.type == CLEAR_TOOL_USES else "cleared_thinking_turns"
        return {"type": self.type, what: self.cleared, "cleared_input_tokens": self.cleared_input_tokens}


@dataclass(frozen=True, slots=True)
class PruneDetails:
    """What ``prune`` cleared: tool uses, thinking turns, the tokens freed and the edits applied."""

    tool_uses_cleared: int = 0
    thinking_turns_cleared: int = 0
    tokens_freed: int = 0
    applied_edits: tuple[AppliedEdit, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_uses_cleared": self.tool_uses_cleared,
            "thinking_turns_cleared": self.thinking_turns_cleared,
            "tokens_freed": self.tokens_freed,
            "applied_edits": [e.to_dict() for e in self.applied_edits],
        }


def is_placeholder(content: Any) -> bool:
    return is_stub(content)


def run_prune(messages: Sequence[Message], options: PruneOptions, context: StrategyContext) -> StrategyResult:
    """The strategy table's entry: :func:`prune_tool_outputs` with the run's options."""
    return prune_tool_outputs(
        messages,
        keep=options.keep,
        clear_at_least=options.clear_at_least,
        exclude_tools=options.exclude_tools,
        clear_tool_inputs=options.clear_tool_inputs,
        keep_thinking=options.keep_thinking,
        protect_loop=not options.include_loop,
        counter=context.counter,
    )


def prune_tool_outputs(
    messages: Sequence[Message],
    *,
    keep: int = DEFAULT_KEEP,
    clear_at_least: int = 0,
    exclude_tools: Collection[str] = (),
    clear_tool_inputs: bool = False,
    keep_thinking: int | None = None,
    protect_loop: bool = True,
    counter: TokenCounter | None = None,
) -> StrategyResult:
    """Clear old tool results (and optionally inputs and thinking) in place.

    ``keep``: most recent tool uses left untouched (counted over the whole list).
    ``clear_at_least``: minimum tokens the tool clearing must free, else it is not applied.
    ``exclude_tools``: tool names never cleared. ``clear_tool_inputs``: also blank inputs.
    ``keep_thinking``: None keeps all thinking; N keeps the N most recent thinking turns.
    ``protect_loop``: leave the current tool loop alone (default; see the module docstring).
    ``counter`` measures tokens (default: tiktoken).

    Details: :class:`PruneDetails` (``applied_edits`` shaped like the API's). Never mutates
    ``messages``.
    """
    if keep < 0 or clear_at_least < 0 or (keep_thinking is not None and keep_thinking < 0):
        raise OptionError(
            "{keep}, {clear_at_least} and {keep_thinking} must be 0 or more.",
            "keep",
            "clear_at_least",
            "keep_thinking",
        )
    counter = counter or make_counter()
    # Without the loop's protection, what the model has not seen yet is still never touched.
    loop_start = current_loop_start(messages) if protect_loop else live_start(messages)
    replaced: dict[tuple[int, int], Block | None] = {}  # None: block removed (thinking)
    warnings: list[str] = []

    tool_changes, tool_tokens, cleared_uses = _clear_tool_uses(
        messages,
        loop_start=loop_start,
        keep=keep,
        exclude_tools=frozenset(exclude_tools),
        clear_tool_inputs=clear_tool_inputs,
        counter=counter,
    )
    if tool_changes and tool_tokens < clear_at_least:
        warnings.append(
            f"clearing old tool uses would free only {tool_tokens:,} tokens, less than "
            f"--clear-at-least {clear_at_least:,}: tool uses left as they were."
        )
        tool_changes, tool_tokens, cleared_uses = {}, 0, 0
    replaced.update(tool_changes)

    thinking_changes: dict[tuple[int, int], Block | None] = {}
    thinking_tokens = cleared_turns = 0
    if keep_thinking is not None:
        thinking_changes, thinking_tokens, cleared_turns = _clear_thinking(
            messages, loop_start=loop_start, keep_turns=keep_thinking, counter=counter
        )
    replaced.update(thinking_changes)

    out = replace_blocks(messages, replaced)
    edits: list[AppliedEdit] = []
    if cleared_uses:
        edits.append(AppliedEdit(CLEAR_TOOL_USES, cleared_uses, tool_tokens))
    if cleared_turns:
        edits.append(AppliedEdit(CLEAR_THINKING, cleared_turns, thinking_tokens))
    details = PruneDetails(cleared_uses, cleared_turns, tool_tokens + thinking_tokens, tuple(edits))
    return StrategyResult(out, bool(replaced), details, tuple(warnings))


def _clear_tool_uses(
    messages: Sequence[Message],
    *,
    loop_start: int,
    keep: int,
    exclude_tools: frozenset[str],
    clear_tool_inputs: bool,
    counter: TokenCounter,
) -> tuple[dict[tuple[int, int], Block | None], int, int]:
    """The blocks to replace, the tokens that frees, and how many tool uses are cleared."""
    # Each tool use is one pair: when all of them are among the newest kept, there is nothing
    # to clear and no pair to find (hybrid asks for thinking alone so).
    uses = sum(1 for m in messages if m.role == "assistant" for b in m.content if b.get("type") == "tool_use")
    if keep >= uses:
        return {}, 0, 0
    pairs = tool_pairs(messages)
    eligible = [
        p
        for p in pairs[: max(len(pairs) - keep, 0)]
        # A pair is cleared whole or not at all: its use and every result before the loop.
        if p.name not in exclude_tools and all(i < loop_start for i, _ in (p.use, *p.results))
    ]
    candidates: list[tuple[ToolPair, tuple[int, int], Block]] = []
    for pair in eligible:
        for i, j in pair.results:
            block = messages[i].content[j]
            if not is_placeholder(block.get("content")):
                candidates.append((pair, (i, j), block))
    before = block_tokens([b for _, _, b in candidates], counter)

    proposals: list[tuple[ToolPair, tuple[int, int], Block, int]] = []
    for (pair, pos, block), tokens in zip(candidates, before, strict=True):
        use = messages[pair.use[0]].content[pair.use[1]]
        # Inputs being cleared are not repeated in the stub (and a second pass, which sees
        # them blank, writes the same stub).
        shown = None if clear_tool_inputs else use.get("arguments", use.get("input"))
        stub = stub_text(pair.name, shown, block, tokens)
        proposals.append((pair, pos, masked_result(block, stub), tokens))
    if clear_tool_inputs:
        inputs = [p for p in eligible if _has_input(messages[p.use[0]].content[p.use[1]])]
        old_inputs = [messages[p.use[0]].content[p.use[1]] for p in inputs]
        for pair, block, tokens in zip(inputs, old_inputs, block_tokens(old_inputs, counter), strict=True):
            blanked = dict(block)
            blanked["input"] = {}
            if "arguments" in block:
                blanked["arguments"] = "{}"  # OpenAI keeps the raw string: blank it too
            proposals.append((pair, pair.use, blanked, tokens))
    after = block_tokens([b for _, _, b, _ in proposals], counter)

    changes: dict[tuple[int, int], Block | None] = {}
    cleared: set[tuple[int, int]] = set()
    freed = 0
    for (pair, pos, proposed, old_tokens), new_tokens in zip(proposals, after, strict=True):
        if new_tokens < old_tokens:  # a result smaller than its placeholder stays as it is
            changes[pos] = proposed
            cleared.add(pair.use)
            freed += old_tokens - new_tokens
    return changes, freed, len(cleared)


def _has_input(block: Block) -> bool:
    return block.get("input") != {} or block.get("arguments", "{}") != "{}"


def _clear_thinking(
    messages: Sequence[Message], *, loop_start: int, keep_turns: int, counter: TokenCounter
) -> tuple[dict[tuple[int, int], Block | None], int, int]:
    turns = [
        i
        for i, m in enumerate(messages)
        if m.role == "assistant" and any(b.get("type") in THINKING_TYPES for b in m.content)
    ]
    older = turns[: max(len(turns) - keep_turns, 0)]
    # The API requires the thinking of the last assistant turn of a live tool loop.
    last_assistant = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    changes: dict[tuple[int, int], Block | None] = {}
    removed: list[Block] = []
    cleared = 0
    for i in older:
        if i >= loop_start or i == last_assistant:
            continue
        content = messages[i].content
        if all(b.get("type") in THINKING_TYPES for b in content):
            continue  # nothing would be left: an empty assistant message is invalid
        for j, block in enumerate(content):
            if block.get("type") in THINKING_TYPES:
                changes[(i, j)] = None
                removed.append(block)
        cleared += 1
    return changes, sum(block_tokens(removed, counter)), cleared
