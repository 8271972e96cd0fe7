"""``compact --strategy hybrid``, the policy of ``compact --auto``: fill a budget in priority order.

A pipeline (:mod:`ctxcompact.compaction.strategies.pipeline`) of two steps that stops as
soon as the messages are under the target: :data:`MASK` (steps 1–5 below), then
:data:`SUMMARY` (step 6). The budget is the run's target (:meth:`StrategyContext.message_target`: ``--target-tokens``, or
``--target-ratio`` × the threshold, half of it by default). What an agent needs to go on is
kept first, and each later kind only while it fits (a budget, filled in priority order):

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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any, cast

from ctxcompact.accounting.counters import TokenCounter
from ctxcompact.accounting.tokens import block_tokens, edited_total
from ctxcompact.compaction.masking import is_stub, masked_result, stub_text
from ctxcompact.compaction.pins import message_tokens, pinned_indices, protected_part
from ctxcompact.compaction.strategies import Strategy
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyDetails, StrategyResult
from ctxcompact.compaction.strategies.full import (
    MIN_SUMMARY_WORDS,
    WORDS_PER_TOKEN,
    FullSkipped,
    run_full,
    split_room,
    summarize_before,
)
from ctxcompact.compaction.strategies.options import FullOptions, PruneOptions
from ctxcompact.compaction.strategies.options import HybridOptions as HybridOptions
from ctxcompact.compaction.strategies.pipeline import PipelineOptions, run_pipeline
from ctxcompact.compaction.strategies.previews import preview_tool_input
from ctxcompact.compaction.strategies.prune import THINKING_TYPES, PruneDetails, prune_tool_outputs, run_prune
from ctxcompact.ir import Block, Message, ToolPair, leading_system_count, live_start, tool_pairs, turn_starts

#: The newest assistant turns kept verbatim, tool pairs whole, before anything older is kept.
RECENT_TURNS = 3
#: A masked call's input over this many tokens (a file written whole) becomes a preview too.
INPUT_PREVIEW_OVER = 400
INPUT_PREVIEW_TOKENS = 120
#: When there is a summary, the share of the budget it gets at the least: a long history
#: told in 200 words carries little, and the turns it replaces are the oldest.
SUMMARY_SHARE = 0.25
#: A summary here gets at most this many words (``full.split_room`` gives the least).
SUMMARY_WORDS_CAP = 6_000


@dataclass(frozen=True, slots=True)
class MaskDetails:
    """What the masking step did (its ``--stats-json`` step). ``left_for_summary``: the older
    tool results it left as written because the summary step replaces them and reads them as
    written (:func:`mask_to_budget`); listed only when there are some."""

    budget_tokens: int | None
    results_masked: int
    thinking_turns_cleared: int
    recent_start: int
    live_start: int
    prune: StrategyDetails | None = None
    left_for_summary: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"budget_tokens": self.budget_tokens, "results_masked": self.results_masked}
        if self.left_for_summary:
            out["left_for_summary"] = self.left_for_summary
        out |= {
            "thinking_turns_cleared": self.thinking_turns_cleared,
            "recent_start": self.recent_start,
            "live_start": self.live_start,
        }
        if self.prune is not None:
            out["prune"] = self.prune.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class SummaryDetails:
    """What the summary step did: where it cut, the words it gave the summarizer, and the
    summary's own details (``full``'s)."""

    cut: int
    summary_words: int
    summary: StrategyDetails

    def to_dict(self) -> dict[str, Any]:
        return {"cut": self.cut, "summary_words": self.summary_words, "summary": self.summary.to_dict()}


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
    return run_pipeline(messages, HYBRID, context)


def mask_to_budget(messages: Sequence[Message], options: object, context: StrategyContext) -> StrategyResult:
    """Steps 1–5: the thinking of older turns, then older tool results as stubs, oldest first,
    until the messages fit the target (without a target: ``prune`` with the run's options).

    When masking every older result could not make them fit, the summary step that follows
    replaces the oldest turns and reads their results as written: the stubs it would replace
    are not written (:func:`_mask_what_the_summary_keeps`; the run's messages are the same)."""
    budget = context.message_target()
    if budget is None:
        pruned = run_prune(messages, context.options_for(PruneOptions), context)
        n = len(messages)
        return replace(pruned, details=MaskDetails(None, 0, 0, n, n, pruned.details))
    counter = context.counter
    live = max(live_start(messages), leading_system_count(messages))
    recent = _recent_start(messages, live)
    if sum(message_tokens(messages, counter)) <= budget:
        return StrategyResult(tuple(messages), False, MaskDetails(budget, 0, 0, recent, live))
    thinned, thinking = _drop_old_thinking(messages, recent, context)
    plan = _Plan(list(thinned), message_tokens(thinned, counter))
    guard = protected_part(messages, context.pins)
    keep = guard.pins | guard.summaries | frozenset(range(guard.head)) | frozenset(range(live, len(messages)))
    pairs = tool_pairs(plan.messages)  # masking keeps every block where it is: found once
    # The pairs masking may change (before the live part, in nothing kept), each with the last
    # message it is in; the older ones are before the newest turns.
    candidates = _candidates(pairs, end=live, keep=keep)
    left = _mask_what_the_summary_keeps(plan, candidates, recent, budget, context)
    if left is None:
        left = 0
        _mask(plan, [pair for pair, last in candidates if last < recent], budget=budget, context=context)
        floor = _summary_floor(budget)
        if sum(plan.sizes[recent:]) + floor > budget:
            # Even a summary of everything older would not make room: the newest turns' results
            # are masked too (oldest first), never the live part.
            newer = [pair for pair, _ in candidates]
            _mask(plan, newer, budget=budget - floor, context=context, counted_from=recent)
    changed = plan.masked > 0 or thinking > 0
    details = MaskDetails(budget, plan.masked, thinking, recent, live, left_for_summary=left)
    return StrategyResult(tuple(plan.messages) if changed else tuple(messages), changed, details)


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
    return result.messages, cast(PruneDetails, result.details).thinking_turns_cleared


def _candidates(pairs: Sequence[ToolPair], *, end: int, keep: frozenset[int]) -> list[tuple[ToolPair, int]]:
    """The pairs with results whose messages all lie before ``end``, none in ``keep``, each
    with the last message it is in."""
    out: list[tuple[ToolPair, int]] = []
    for pair in pairs:
        if pair.results:
            rows = [pair.use[0], *[i for i, _ in pair.results]]
            last = max(rows)
            if last < end and keep.isdisjoint(rows):
                out.append((pair, last))
    return out


def _mask(
    plan: _Plan,
    candidates: Sequence[ToolPair],
    *,
    budget: int,
    context: StrategyContext,
    counted_from: int = 0,
) -> None:
    """Mask the results of ``candidates`` (tool pairs of the plan), oldest first, until the
    plan from ``counted_from`` on counts at most ``budget``; a masked call's oversized input
    becomes a preview."""
    total = sum(plan.sizes[counted_from:])  # kept as masks change it: one sum, not one per pair
    masks = _masks(plan, candidates, context.counter)
    while total > budget:  # before each pair: no stub is written past the one that fits
        found = next(masks, None)
        if found is None:
            return
        pair, changes = found
        if changes:
            total += sum(d for i, d in _apply(plan, pair, changes, context).items() if i >= counted_from)


def _mask_what_the_summary_keeps(
    plan: _Plan,
    candidates: Sequence[tuple[ToolPair, int]],
    recent: int,
    budget: int,
    context: StrategyContext,
) -> int | None:
    """Masking when not even every older result as a stub fits: the summary step will cut.

    Masking the pairs before ``recent`` oldest first (:func:`_mask`) would then mask them all,
    and the summary would replace the oldest turns, reading their results as written, not
    their stubs. So the stubs are written newest first, one pair at a time, and only until the
    masked messages after the oldest pair left as written count more than the budget on their
    own: every cut the summary could make before that point leaves more than the budget, so
    it cuts after it, where the messages are those masking everything gives — the same cut,
    summary and result, without the stubs the summary would discard. The newest turns are
    masked first, as :func:`_mask` would after the older pairs (they hold none of their
    blocks, and it counts only from ``recent``).

    Returns how many results were left as written; None, with the plan unchanged, when this
    cannot be proven: the messages may fit once masked (:func:`_all_masked_over`), the summary
    may not run or not read the results left (``--on-failure skip``; a message with no record
    read), ``--pin`` patterns may match a stub, or two pairs share a result (the older one
    writes its stub)."""
    counter = context.counter
    older = [pair for pair, last in candidates if last < recent]
    if (
        not older
        or not context.original
        or context.pins.patterns
        or context.options_for(FullOptions).on_failure == "skip"
    ):
        return None
    positions = [pos for pair, _ in candidates for pos in pair.results]
    if len(set(positions)) < len(positions):
        return None
    newest = [pair for pair, last in candidates if last >= recent]
    # reach[k]: the last message any of older[:k + 1] is in. With older[:k + 1] left as
    # written and the rest masked, the messages after reach[k] are final.
    reach = list(accumulate((last for _, last in candidates if last < recent), max))
    if not _all_masked_over(plan, older, reach, newest, budget, counter):
        return None
    saved = (list(plan.messages), list(plan.sizes), plan.masked)
    floor = _summary_floor(budget)
    if sum(plan.sizes[recent:]) + floor > budget:
        _mask(plan, newest, budget=budget - floor, context=context, counted_from=recent)
    # Each message's least size in any state masking passes through (one pair's masks could
    # in principle grow a message: a preview longer than its input): what the rest counts
    # at the least, in every order of masking.
    least = [min(before, after) for before, after in zip(saved[1], plan.sizes, strict=True)]
    start, tail, left = len(least), 0, len(older)
    masks = _masks(plan, older[::-1], counter)
    while left:
        final = reach[left - 1] + 1
        tail += sum(least[final:start])
        start = final
        if tail > budget:
            break
        pair, changes = next(masks)  # all before ``start``: the tail is final
        for i, delta in (_apply(plan, pair, changes, context) if changes else {}).items():
            least[i] += min(delta, 0)
        left -= 1
    read = _by_source(context)
    for i in {i for pair in older[:left] for i in (pair.use[0], *(i for i, _ in pair.results))}:
        message = plan.messages[i]
        found = read.get(id(message.source)) if message.source is not None else None
        if found is None or not (message.changed or found is message):
            plan.messages[:], plan.sizes[:], plan.masked = saved  # the summary would read this one
            return None
    return sum(len(pair.results) for pair in older[:left])


def _all_masked_over(
    plan: _Plan,
    older: Sequence[ToolPair],
    reach: Sequence[int],
    newest: Sequence[ToolPair],
    budget: int,
    counter: TokenCounter,
) -> bool:
    """Whether the messages from some point on count more than ``budget`` with every pair of
    ``older`` and ``newest`` masked, in every order of masking — from counts already made
    (:func:`_removals`: a stub or preview counts at least nothing). Walked newest first like
    :func:`_mask_what_the_summary_keeps`, stopping as soon as it is proven or cannot be."""
    least = list(plan.sizes)
    for rows in _removals(plan, newest, counter):
        for i, tokens in rows:
            least[i] -= tokens
    total = sum(least)
    start, tail, left = len(least), 0, len(older)
    removals = _removals(plan, older[::-1], counter)
    while left:
        final = reach[left - 1] + 1
        tail += sum(least[final:start])
        start = final
        if tail > budget:
            return True
        if total <= budget:
            return False  # no tail can count more than the whole
        for i, tokens in next(removals):  # all before ``start``
            least[i] -= tokens
            total -= tokens
        left -= 1
    return False


def _removals(
    plan: _Plan, pairs: Sequence[ToolPair], counter: TokenCounter
) -> Iterator[list[tuple[int, int]]]:
    """For each of ``pairs``, in order: the tokens masking it could free at the most, by
    message — its results whole, its input when over :data:`INPUT_PREVIEW_OVER` — counted a
    chunk at a time (the counter has seen every block already: cache hits)."""
    for chunk in _chunks(pairs):
        blocks = [plan.messages[i].content[j] for pair in chunk for i, j in (pair.use, *pair.results)]
        counts = iter(block_tokens(blocks, counter))
        for pair in chunk:
            use = next(counts)
            rows = [(i, next(counts)) for i, _ in pair.results]
            yield [*rows, (pair.use[0], use)] if use > INPUT_PREVIEW_OVER else rows


#: One masking pass writes and counts the stubs of this many pairs at a time (two counter
#: calls a chunk, not two a pair); at most this many are written past the pair where it
#: stops (each is applied on its own: where it stops does not depend on the chunks).
MASK_CHUNK = 64

_Stubs = tuple[Block, list[tuple[tuple[int, int], Block]], list[int], list[Block], list[int], int]


def _chunks(pairs: Sequence[ToolPair]) -> Iterator[list[ToolPair]]:
    """``pairs`` in runs of at most :data:`MASK_CHUNK` whose results are all different blocks
    (two uses of one id answered by the same result: the second sees the first's stub)."""
    chunk: list[ToolPair] = []
    seen: set[tuple[int, int]] = set()
    for pair in pairs:
        if len(chunk) == MASK_CHUNK or seen.intersection(pair.results):
            yield chunk
            chunk, seen = [], set()
        chunk.append(pair)
        seen.update(pair.results)
    if chunk:
        yield chunk


def _stubs(plan: _Plan, chunk: Sequence[ToolPair], counter: TokenCounter) -> list[_Stubs]:
    """For each pair of ``chunk``: its use block, its results not masked yet (with their
    positions), their tokens, their stubs, the stubs' tokens and the use's — as the plan holds
    them now (masking a pair changes its own blocks only)."""
    uses = [plan.messages[pair.use[0]].content[pair.use[1]] for pair in chunk]
    found = [
        [
            (pos, block)
            for pos in pair.results
            if not is_stub((block := plan.messages[pos[0]].content[pos[1]]).get("content"))
        ]
        for pair in chunk
    ]
    counts = iter(block_tokens([block for results in found for _, block in results], counter))
    result_tokens = [[next(counts) for _ in results] for results in found]
    stubs = [
        [
            masked_result(block, stub_text(pair.name, use.get("arguments", use.get("input")), block, tokens))
            for (_, block), tokens in zip(results, counted, strict=True)
        ]
        for pair, use, results, counted in zip(chunk, uses, found, result_tokens, strict=True)
    ]
    counts = iter(
        block_tokens(
            [b for pair_stubs, use in zip(stubs, uses, strict=True) for b in (*pair_stubs, use)], counter
        )
    )
    out: list[_Stubs] = []
    for use, results, counted, pair_stubs in zip(uses, found, result_tokens, stubs, strict=True):
        stub_tokens = [next(counts) for _ in pair_stubs]
        out.append((use, results, counted, pair_stubs, stub_tokens, next(counts)))
    return out


def _masks(
    plan: _Plan, candidates: Sequence[ToolPair], counter: TokenCounter
) -> Iterator[tuple[ToolPair, dict[tuple[int, int], tuple[Block, int]]]]:
    """Each pair of ``candidates``, in order, with what masking it changes: each block's
    position, its new block and the tokens that saves (``_stubs``: a chunk's stubs written
    when its first pair is asked for, as the plan holds them then; a preview only for a pair
    asked for)."""
    for chunk in _chunks(candidates):
        for pair, (use, results, result_tokens, stubs, stub_tokens, input_tokens) in zip(
            chunk, _stubs(plan, chunk, counter), strict=True
        ):
            changes: dict[tuple[int, int], tuple[Block, int]] = {
                pos: (stub, new - old)
                for (pos, _), stub, old, new in zip(results, stubs, result_tokens, stub_tokens, strict=True)
                if new < old
            }
            if changes and input_tokens > INPUT_PREVIEW_OVER:
                preview = preview_tool_input(use, input_tokens, INPUT_PREVIEW_TOKENS, counter)
                changes[pair.use] = (preview, block_tokens([preview], counter)[0] - input_tokens)
            yield pair, changes


def _apply(
    plan: _Plan, pair: ToolPair, changes: dict[tuple[int, int], tuple[Block, int]], context: StrategyContext
) -> dict[int, int]:
    """Write one pair's ``changes`` into the plan; each changed message's change in tokens (a
    message's total is the sum of its blocks' plus its overhead, so the new totals follow
    without counting the messages again)."""
    deltas: dict[int, int] = {}
    for i in sorted({i for i, _ in changes}):
        message = plan.messages[i]
        content = [
            changes[(i, j)][0] if (i, j) in changes else block for j, block in enumerate(message.content)
        ]
        delta = sum(d for (k, _), (_, d) in changes.items() if k == i)
        plan.messages[i] = message.with_content(content)
        before = plan.sizes[i]
        plan.sizes[i] = edited_total(plan.messages[i], before, delta, context.counter)
        deltas[i] = plan.sizes[i] - before
    plan.masked += sum(1 for pos in changes if pos != pair.use)
    return deltas


def _summary_floor(budget: int) -> int:
    """The room a summary gets at the least, when there is one: :data:`SUMMARY_SHARE` of the
    budget (so it grows with the budget), never under its minimum words."""
    return max(int(MIN_SUMMARY_WORDS / WORDS_PER_TOKEN), int(budget * SUMMARY_SHARE))


def summarize_oldest(
    messages: Sequence[Message], options: object, context: StrategyContext
) -> StrategyResult:
    """Step 6: summarize the oldest turns — the messages as read, not their stubs — up to the
    first turn boundary after which the (masked) rest fits with room for the summary; the
    summary gets the words that room holds, restored files a share of it (without a target:
    ``full`` with the run's options)."""
    full = context.options_for(FullOptions)
    budget = context.message_target()
    if budget is None:
        return run_full(messages, full, context)
    head = leading_system_count(messages)
    live = max(live_start(messages), head)
    sizes = message_tokens(messages, context.counter)
    pinned = pinned_indices(messages, context.pins)  # the pins alone: no summaries, no loop
    floor = _summary_floor(budget)

    # kept(cut): the rest, and the pins the summary leaves in place — from running totals
    # (a sum per candidate cut made the search quadratic in the turns).
    rest = list(accumulate(reversed(sizes), initial=0))[::-1]  # rest[i] = sum(sizes[i:])
    pins = list(
        accumulate((sizes[i] if i in pinned and i >= head else 0 for i in range(len(sizes))), initial=0)
    )

    def kept(cut: int) -> int:
        return rest[cut] + pins[cut]

    # A turn boundary before the live part (never past the last turn: the agent's last words
    # stay), or the live part itself when there is one.
    starts = {t for t in turn_starts(messages) if head < t < live}
    cuts = sorted(starts | ({live} if live < len(messages) else set()))
    if not cuts:
        return StrategyResult(
            tuple(messages), False, FullSkipped(), ("nothing to summarize before the last turn",)
        )
    cut = next((c for c in cuts if kept(c) + floor <= budget), cuts[-1])
    room = max(budget - kept(cut), 0)
    restore, words = split_room(room, max_restore=full.max_tokens_total, max_words=SUMMARY_WORDS_CAP)
    combined = (*_as_read(messages[:cut], context), *messages[cut:])
    options = replace(full, max_tokens_total=restore, keep_loop=False, keep_recent_tokens=None)
    result = summarize_before(combined, cut, options, context, max_words=words)
    return replace(result, details=SummaryDetails(cut, words, result.details))


def _as_read(messages: Sequence[Message], context: StrategyContext) -> list[Message]:
    """``messages`` as the transcript held them before an earlier step masked them (matched by
    their source records), so a summary is written from the outputs, not their stubs."""
    read = _by_source(context)
    return [read.get(id(m.source), m) if m.changed and m.source is not None else m for m in messages]


def _by_source(context: StrategyContext) -> dict[int, Message]:
    """The transcript's messages as read, by their source records."""
    return {id(m.source): m for m in context.original if m.source is not None}


#: The two steps, named as ``--stats-json`` lists them.
MASK = Strategy("mask", type(None), mask_to_budget)
SUMMARY = Strategy("summary", type(None), summarize_oldest)
#: Mask first; summarize only while still over the target; the task pinned through both.
HYBRID = PipelineOptions((MASK, SUMMARY), stop_under_target=True, pin_first=True)
