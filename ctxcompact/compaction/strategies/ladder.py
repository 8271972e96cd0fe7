"""The fallback ladder: when a compaction leaves the transcript over its target.

Steps, in order, each only while the list is still over the target and each kept only when it
made the list smaller (so the output is never larger than the input):

1. ``prune``: old tool output cleared in place (:func:`~ctxcompact.compaction.strategies.prune.prune_tool_outputs`
   with its defaults: the 3 most recent tool uses kept);
2. ``key-messages``: scored selection to the target, with its own fallbacks (previews, clipping);
3. ``last-rounds``: only the last K=4 rounds, besides the protected part.

None of them touches the protected part (:mod:`ctxcompact.compaction.pins`; the ladder works
inside the current tool loop too, all but its live part — a single-task run is all loop): when
that alone is over the target the ladder cannot get there, and its ``reason`` says so with the
figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.compaction.pins import DEFAULT_PINS, PinOptions, Protected, message_tokens, protected_part
from ctxcompact.compaction.strategies.options import DEFAULT_FALLBACK_ROUNDS
from ctxcompact.ir import Message


@dataclass(frozen=True, slots=True)
class LadderStep:
    """One rung of the ladder: its tokens before and after, and whether its result was kept."""

    step: str
    tokens_before: int
    tokens_after: int
    kept: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "kept": self.kept,
        }


@dataclass(frozen=True, slots=True)
class LadderResult:
    """The list after the ladder, the steps that ran, and why the target was missed (or "")."""

    messages: tuple[Message, ...]
    steps: tuple[LadderStep, ...]
    tokens: int
    target_tokens: int
    reason: str = ""
    #: The pins alone are over the target: ``--on-failure error`` makes that exit 3.
    pins_over: bool = False

    @property
    def target_met(self) -> bool:
        return self.tokens <= self.target_tokens


def fallback_ladder(
    messages: Sequence[Message],
    *,
    target_tokens: int,
    counter: TokenCounter,
    pins: PinOptions = DEFAULT_PINS,
    rounds: int = DEFAULT_FALLBACK_ROUNDS,
) -> LadderResult:
    """Run the ladder on ``messages`` until they count at most ``target_tokens``."""
    # Imported here: the ladder runs only when a compaction missed its target (start-up).
    from ctxcompact.compaction.strategies.key_messages import keep_last_rounds, key_message_extraction
    from ctxcompact.compaction.strategies.prune import prune_tool_outputs

    def total(ms: Sequence[Message]) -> int:
        return sum(message_tokens(ms, counter))

    rungs: tuple[tuple[str, Callable[[tuple[Message, ...], Protected], tuple[Message, ...]]], ...] = (
        ("prune", lambda ms, _: prune_tool_outputs(ms, counter=counter, protect_loop=False).messages),
        (
            "key-messages",
            lambda ms, guard: (
                key_message_extraction(
                    ms, target_tokens=target_tokens, counter=counter, protected=guard
                ).messages
            ),
        ),
        (f"last-{rounds}-rounds", lambda ms, guard: keep_last_rounds(ms, rounds, protected=guard)),
    )
    current = tuple(messages)
    tokens = total(current)
    steps: list[LadderStep] = []
    for name, rung in rungs:
        if tokens <= target_tokens:
            break
        candidate = rung(current, protected_part(current, pins, include_loop=True))
        after = total(candidate)
        kept = after < tokens
        steps.append(LadderStep(name, tokens, after, kept))
        if kept:
            current, tokens = candidate, after
    reason = ""
    pinned = 0
    if tokens > target_tokens:
        guard = protected_part(current, pins, include_loop=True)
        floor = total([m for i, m in enumerate(current) if i in guard])
        pinned = total([m for i, m in enumerate(current) if i in guard.pins])
        reason = (
            f"the pinned messages alone count {pinned:,} tokens, over the target of {target_tokens:,}"
            if pinned > target_tokens
            else f"the protected part alone (system prompt, pins, earlier summaries, and what the model "
            f"has not seen yet: the last request or the newest tool results) counts {floor:,} tokens, "
            f"over the target of {target_tokens:,}"
            if floor > target_tokens
            else f"the fallback ladder stopped at {tokens:,} tokens, over the target of {target_tokens:,}"
        )
    return LadderResult(current, tuple(steps), tokens, target_tokens, reason, pinned > target_tokens)


#: ``--auto`` keeps this share of the threshold verbatim after a ``full`` summary when
#: ``--keep-recent-tokens`` is not given: the last turns survive, and the summary plus the tail
#: still land well under the threshold (a summary is ~1-2K tokens; 20 % leaves the rest free).
AUTO_RECENT_SHARE = 0.2


def auto_recent_tokens(threshold: int) -> int:
    return int(threshold * AUTO_RECENT_SHARE)


def ladder_if_over(
    messages: tuple[Message, ...],
    *,
    target_tokens: int | None,
    counter: TokenCounter,
    pins: PinOptions,
) -> tuple[tuple[Message, ...], dict[str, Any] | None, str | None]:
    """The pipeline's last step: the ladder when ``messages`` count more than
    ``target_tokens`` (None: no budget, nothing to do). Returns the messages, the step as
    ``--stats-json`` shows it (None when the ladder did not run) and a warning when the target
    was still missed."""
    if target_tokens is None or sum(message_tokens(messages, counter)) <= target_tokens:
        return messages, None, None
    resolved = PinOptions(pins.patterns, pins.first_pinned(True))
    result = fallback_ladder(messages, target_tokens=target_tokens, counter=counter, pins=resolved)
    step = {
        "strategy": "ladder",
        "changed": any(s.kept for s in result.steps),
        "ladder": [s.to_dict() for s in result.steps],
        "target_tokens": target_tokens,
        "target_met": result.target_met,
        "pins_over_target": result.pins_over,
        "reason": result.reason,
    }
    warning = (
        None if result.target_met else f"the fallback ladder could not reach the target: {result.reason}"
    )
    return result.messages, step, warning
