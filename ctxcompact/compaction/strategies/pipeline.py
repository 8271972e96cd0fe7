"""A pipeline of strategies is itself a strategy.

:func:`run_pipeline` runs its steps in order, each on the previous one's output, with its own
options from the run and the run's shared context — the shape of OpenHands' condenser pipeline
and pydantic-ai's history processors. ``compact --strategy prune,full`` is a pipeline of two
steps; ``hybrid`` is the pipeline ``prune`` → ``full`` that stops as soon as the messages are
under the run's target (:mod:`ctxcompact.compaction.strategies.hybrid`). A step is a table name,
a :class:`~ctxcompact.compaction.strategies.Strategy` row, or a plain function
``(messages, options, context) -> StrategyResult`` (it is given ``None`` as its options).

The pipeline's own result carries the last figure any step reported (a later step's replaces
an earlier one's; None when no step reported it, so the run derives it), every step's warnings,
and its steps as ``--stats-json`` shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from ctxcompact.compaction.pins import PinOptions, message_tokens
from ctxcompact.compaction.strategies import StrategyRef, strategy_for
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyResult
from ctxcompact.ir import Message

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    """``steps``: what runs, in order. ``stop_under_target``: run a later step only while the
    messages are over the run's target (no target: every step runs). ``pin_first``: whether
    the steps pin the task when ``--pin-first`` is not given (None: each step's own default)."""

    steps: tuple[StrategyRef, ...] = ()
    stop_under_target: bool = False
    pin_first: bool | None = None


@dataclass(frozen=True, slots=True)
class PipelineDetails:
    """Every step that ran, as ``--stats-json`` shows it: its name, whether it changed
    anything, its own details and the tokens before and after it."""

    steps: tuple[dict[str, Any], ...]
    #: The steps left out because an earlier one got under the target.
    skipped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [dict(s) for s in self.steps], "skipped": list(self.skipped)}


#: The figures a step may report, merged as "the last one reported".
_REPORTED = tuple(
    f.name for f in fields(StrategyResult) if f.name not in ("messages", "changed", "details", "warnings")
)


def run_pipeline(
    messages: Sequence[Message], options: PipelineOptions, context: StrategyContext
) -> StrategyResult:
    """Run ``options.steps`` in order (see the module docstring). Never mutates ``messages``."""
    if options.pin_first is not None and context.pins.pin_first is None:
        context = replace(context, pins=PinOptions(context.pins.patterns, options.pin_first))
    current = tuple(messages)
    results: list[StrategyResult] = []
    steps: list[dict[str, Any]] = []
    chosen = [strategy_for(step) for step in options.steps]
    for i, strategy in enumerate(chosen):
        before = sum(message_tokens(current, context.counter))
        result = strategy.run(current, context.options_for(strategy.options), context)
        after = sum(message_tokens(result.messages, context.counter))
        steps.append(
            {
                "strategy": strategy.name,
                "changed": result.changed,
                **result.details.to_dict(),
                "tokens": {"before": context.fixed_tokens + before, "after": context.fixed_tokens + after},
            }
        )
        results.append(result)
        current = result.messages
        target = context.message_target()
        if options.stop_under_target and target is not None and after <= target:
            skipped = tuple(s.name for s in chosen[i + 1 :])
            return _combined(current, results, PipelineDetails(tuple(steps), skipped))
    return _combined(current, results, PipelineDetails(tuple(steps)))


def _combined(
    messages: tuple[Message, ...], results: Sequence[StrategyResult], details: PipelineDetails
) -> StrategyResult:
    reported = {name: _last_reported(getattr(r, name) for r in results) for name in _REPORTED}
    return StrategyResult(
        messages,
        any(r.changed for r in results),
        details,
        warnings=tuple(w for r in results for w in r.warnings),
        **reported,
    )


def _last_reported(values: Iterable[T | None]) -> T | None:
    """The last figure a step reported (a later step's replaces an earlier one's)."""
    found: T | None = None
    for value in values:
        if value is not None:
            found = value
    return found
