"""``compact --strategy hybrid``, the policy of ``compact --auto``: fill a budget in priority order.

The budget is the run's target (:meth:`StrategyContext.message_target`: ``--target-tokens``, or
``--target-ratio`` × the threshold, half of it by default). What an agent needs to go on is
kept first, and each later kind only while it fits (SPEC §6 "A budget, filled in priority
order"):

1. the head (system messages), the pins and the task, earlier compaction summaries;
2. the live part — tool results the model has not seen yet, or a last user request —
   whole, always (:func:`~ctxcompact.ir.live_start`);
3. the last :data:`RECENT_TURNS` assistant turns verbatim, tool pairs whole;
4. every older user message and the agent's own words (the text of older turns);
5. older tool results as one-line stubs — tool, input, outcome, size
   (:mod:`ctxcompact.compaction.masking`) —, oldest first and only as many as needed, so the
   newest results stay whole; thinking of older turns goes first (the API ignores it there);
6. a summary only of what still does not fit: the oldest turns, cut at a turn boundary,
   written with the words the budget has left (the summary grows with the budget). The task
   goes into the summary (whole, when the summary does not hold it already), never after it.

Masking works inside one long tool loop too (a single-task agent run is all loop): the stubs
replace the oldest observations, the newest stay whole. Without a budget (no model, no window)
the policy cannot weigh anything: it masks what ``prune`` would and summarizes the rest, as
``prune,full`` would.

Why masking before summarizing: "The Complexity Trap" (Lindenbauer et al., 2025) finds that
masking old observations matches LLM summaries on SWE-bench Verified at half the cost, and a
replication kept more tasks solved with masking than with summaries (62.0 % vs 54.2 %); a
summary is written only for what masking cannot make fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxcompact.accounting.tokens import block_tokens
from ctxcompact.compaction.masking import is_stub, masked_result, stub_text
from ctxcompact.compaction.pins import PinOptions, message_tokens, protected_part
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyDetails, StrategyResult
from ctxcompact.compaction.strategies.full import run_full, summarize_before
from ctxcompact.compaction.strategies.options import FullOptions, PruneOptions
from ctxcompact.compaction.strategies.options import HybridOptions as HybridOptions
from ctxcompact.compaction.strategies.previews import preview_tool_input
from ctxcompact.compaction.strategies.prune import THINKING_TYPES, prune_tool_outputs, run_prune
from ctxcompact.ir import Block, Message, leading_system_count, live_start, tool_pairs, turn_starts

#: The newest assistant turns kept verbatim, tool pairs whole, before anything older is kept.
RECENT_TURNS = 3
#: A masked call's input over this many tokens (a file written whole) becomes a preview too.
INPUT_PREVIEW_OVER = 400
INPUT_PREVIEW_TOKENS = 120
#: Words a summary may use per token of budget left (English prose runs ~1.3 tokens a word).
WORDS_PER_TOKEN = 0.7
#: When there is a summary, the share of the budget it gets at the least: a long history
#: told in 200 words carries little, and the turns it replaces are the oldest.
SUMMARY_SHARE = 0.25
#: A summary gets at least this many words, and at most :data:`SUMMARY_WORDS_CAP`.
MIN_SUMMARY_WORDS = 200
SUMMARY_WORDS_CAP = 6_000
#: The share of the room left after the kept messages that restored files may take.
RESTORE_SHARE = 1 / 3


@dataclass(frozen=True, slots=True)
class HybridDetails:
    """What the policy kept, masked and summarized (its ``--stats-json`` step)."""

    budget_tokens: int | None
    tokens_before: int
    tokens_after_masking: int
    results_masked: int
    thinking_turns_cleared: int
    recent_start: int
    live_start: int
    summary: StrategyDetails | None = None
    summary_words: int | None = None
    prune: StrategyDetails | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "budget_tokens": self.budget_tokens,
            "tokens_before": self.tokens_before,
            "tokens_after_masking": self.tokens_after_masking,
            "results_masked": self.results_masked,
            "thinking_turns_cleared": self.thinking_turns_cleared,
            "recent_start": self.recent_start,
            "live_start": self.live_start,
            "summarized": self.summary is not None,
            "summary_words": self.summary_words,
            "summary": None if self.summary is None else self.summary.to_dict(),
        }
        if self.prune is not None:
            out["prune"] = self.prune.to_dict()
        return out


@dataclass(slots=True)
class _Plan:
    """The list as the policy rewrites it: masked copies at the original indices."""

    messages: list[Message]
    sizes: list[int]
    masked: int = 0

    @property
    def total(self) -> int:
        return sum(self.sizes)


def run_hybrid(
    messages: Sequence[Message], options: HybridOptions, context: StrategyContext
) -> StrategyResult:
    """Fill the run's budget in priority order (see the module docstring)."""
    budget = context.message_target()
    if budget is None:
        return _without_budget(messages, context)
    counter = context.counter
    pins = PinOptions(context.pins.patterns, context.pins.first_pinned(True))
    live = max(live_start(messages), leading_system_count(messages))
    recent = _recent_start(messages, live)
    before = sum(message_tokens(messages, counter))
    if before <= budget:
        details = HybridDetails(budget, before, before, 0, 0, recent, live)
        return StrategyResult(tuple(messages), False, details)

    thinned, thinking = _drop_old_thinking(messages, recent, context)
    plan = _Plan(list(thinned), message_tokens(thinned, counter))
    guard = protected_part(messages, pins)
    keep = guard.pins | guard.summaries | frozenset(range(guard.head)) | frozenset(range(live, len(messages)))
    _mask(plan, end=recent, budget=budget, keep=keep, context=context)
    floor = _summary_floor(budget)
    if sum(plan.sizes[recent:]) + floor > budget:
        # Even a summary of everything older would not make room: the newest turns' results
        # are masked too (oldest first), never the live part.
        _mask(plan, end=live, budget=budget - floor, keep=keep, context=context, counted_from=recent)
    masked_total = plan.total
    details = HybridDetails(budget, before, masked_total, plan.masked, thinking, recent, live)
    if masked_total <= budget:
        return StrategyResult(tuple(plan.messages), True, details)
    return _summarize_oldest(
        messages, plan, budget=budget, recent=recent, pins=pins, context=context, details=details
    )


def _without_budget(messages: Sequence[Message], context: StrategyContext) -> StrategyResult:
    """No budget to weigh against: ``prune`` with the run's options, then ``full``."""
    pruned = run_prune(messages, context.options_for(PruneOptions), context)
    pins = PinOptions(context.pins.patterns, context.pins.first_pinned(True))
    full = run_full(pruned.messages, context.options_for(FullOptions), replace(context, pins=pins))
    tokens = sum(message_tokens(pruned.messages, context.counter))
    n = len(messages)
    details = HybridDetails(None, tokens, tokens, 0, 0, n, n, full.details, prune=pruned.details)
    return replace(
        full,
        changed=full.changed or pruned.changed,
        details=details,
        warnings=(*pruned.warnings, *full.warnings),
    )


def _recent_start(messages: Sequence[Message], live: int) -> int:
    """Where the last :data:`RECENT_TURNS` assistant turns before the live part start."""
    turns = [t for t in turn_starts(messages) if t < live]
    start = turns[-RECENT_TURNS] if len(turns) >= RECENT_TURNS else (turns[0] if turns else live)
    return max(start, leading_system_count(messages))


def _drop_old_thinking(
    messages: Sequence[Message], recent: int, context: StrategyContext
) -> tuple[tuple[Message, ...], int]:
    """The thinking of assistant turns before ``recent`` removed (``prune``'s
    ``clear_thinking``: never the last assistant turn, never all of a message)."""
    newer = sum(
        1
        for m in messages[recent:]
        if m.role == "assistant" and any(b.get("type") in THINKING_TYPES for b in m.content)
    )
    result = prune_tool_outputs(
        messages, keep=len(messages) * 64, keep_thinking=newer, protect_loop=False, counter=context.counter
    )
    return result.messages, int(result.details.to_dict()["thinking_turns_cleared"])


def _mask(
    plan: _Plan,
    *,
    end: int,
    budget: int,
    keep: frozenset[int],
    context: StrategyContext,
    counted_from: int = 0,
) -> None:
    """Mask the results of tool pairs before ``end`` (none in ``keep``), oldest first, until
    the plan from ``counted_from`` on counts at most ``budget``; a masked call's oversized
    input becomes a preview."""
    counter = context.counter
    for pair in tool_pairs(plan.messages):
        if sum(plan.sizes[counted_from:]) <= budget:
            return
        indices = [pair.use[0], *(i for i, _ in pair.results)]
        if max(indices) >= end or any(i in keep for i in indices) or not pair.results:
            continue
        use = plan.messages[pair.use[0]].content[pair.use[1]]
        changes: dict[tuple[int, int], Block] = {}
        for i, j in pair.results:
            block = plan.messages[i].content[j]
            if is_stub(block.get("content")):
                continue
            [tokens] = block_tokens([block], counter)
            stub = masked_result(
                block, stub_text(pair.name, use.get("arguments", use.get("input")), block, tokens)
            )
            if block_tokens([stub], counter)[0] < tokens:
                changes[(i, j)] = stub
        [input_tokens] = block_tokens([use], counter)
        if changes and input_tokens > INPUT_PREVIEW_OVER:
            changes[pair.use] = preview_tool_input(use, input_tokens, INPUT_PREVIEW_TOKENS, counter)
        if changes:
            _apply(plan, changes, context)
            plan.masked += sum(1 for pos in changes if pos != pair.use)


def _apply(plan: _Plan, changes: dict[tuple[int, int], Block], context: StrategyContext) -> None:
    for i in sorted({i for i, _ in changes}):
        message = plan.messages[i]
        content = [changes.get((i, j), block) for j, block in enumerate(message.content)]
        plan.messages[i] = message.with_content(content)
        plan.sizes[i] = message_tokens([plan.messages[i]], context.counter)[0]


def _summary_floor(budget: int) -> int:
    """The room a summary gets at the least, when there is one: :data:`SUMMARY_SHARE` of the
    budget (so it grows with the budget), never under its minimum words."""
    return max(int(MIN_SUMMARY_WORDS / WORDS_PER_TOKEN), int(budget * SUMMARY_SHARE))


def _summarize_oldest(
    messages: Sequence[Message],
    plan: _Plan,
    *,
    budget: int,
    recent: int,
    pins: PinOptions,
    context: StrategyContext,
    details: HybridDetails,
) -> StrategyResult:
    """Summarize the oldest turns — the original messages, not their stubs — up to the first
    turn boundary after which the (masked) rest fits with room for the summary; the summary
    gets the words that room holds, restored files a share of it."""
    head = leading_system_count(messages)
    floor = _summary_floor(budget)
    live = details.live_start
    pinned = protected_part(messages, pins).pins

    def kept(cut: int) -> int:  # the masked rest, and the pins the summary leaves in place
        return sum(plan.sizes[cut:]) + sum(plan.sizes[i] for i in pinned if head <= i < cut)

    # A turn boundary before the live part (never past the last turn: the agent's last words
    # stay), or the live part itself when there is one.
    cuts = sorted(
        {t for t in turn_starts(messages) if head < t < live} | ({live} if live < len(messages) else set())
    )
    if not cuts:
        return StrategyResult(
            tuple(plan.messages), plan.masked > 0 or details.thinking_turns_cleared > 0, details
        )
    cut = next((c for c in cuts if kept(c) + floor <= budget), cuts[-1])
    room = max(budget - kept(cut), 0)
    full = context.options_for(FullOptions)
    restore = min(full.max_tokens_total, int(room * RESTORE_SHARE))
    words = int((room - restore) * WORDS_PER_TOKEN)
    words = max(MIN_SUMMARY_WORDS, min(words, SUMMARY_WORDS_CAP))
    combined = (*messages[:cut], *plan.messages[cut:])
    options = replace(full, max_tokens_total=restore, keep_loop=False, keep_recent_tokens=None)
    result = summarize_before(combined, cut, options, replace(context, pins=pins), max_words=words)
    out = replace(details, summary=result.details, summary_words=words)
    return replace(result, details=out)
