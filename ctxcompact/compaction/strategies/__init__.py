"""Compaction strategies: one module each, found by name in :data:`STRATEGIES`.

Each row is a strategy's name, its options type and its function (the contract is in
:mod:`ctxcompact.compaction.strategies.base`). A run's steps are a pipeline
(:mod:`ctxcompact.compaction.strategies.pipeline`, itself a strategy) of table names, rows or plain
functions (:data:`StrategyRef`, resolved by :func:`strategy_for`); nothing else names a strategy
by hand.
Adding one: its options in :mod:`ctxcompact.compaction.strategies.options`, a module with its details and
``run_<name>`` function, a row below, a field for its options in
:class:`~ctxcompact.compaction.pipeline.CompactOptions`, its CLI options, README and tests.

A row names its run function by module and attribute (:class:`LazyRun`), imported on the first
call: a compaction imports only the strategies it runs (start-up stays lean), while every
options type is at hand for the CLI and :class:`~ctxcompact.compaction.pipeline.CompactOptions`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

from ctxcompact.compaction.strategies.base import Run, StrategyContext, StrategyResult
from ctxcompact.compaction.strategies.options import (
    CleanToolsOptions,
    FullOptions,
    HybridOptions,
    KeyMessageOptions,
    PruneOptions,
    SelectiveOptions,
)
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message


@dataclass(frozen=True, slots=True)
class LazyRun:
    """A strategy's run function, ``module.attribute``, imported when first called."""

    module: str
    attribute: str

    def __call__(self, messages: Sequence[Message], options: Any, context: StrategyContext) -> StrategyResult:
        return self.load()(messages, options, context)

    def load(self) -> Run:
        """The function itself (importing its module once; later calls find it loaded)."""
        return cast(Run, getattr(importlib.import_module(self.module), self.attribute))


def _lazy(module: str, attribute: str) -> LazyRun:
    return LazyRun(f"ctxcompact.compaction.strategies.{module}", attribute)


@dataclass(frozen=True, slots=True)
class Strategy:
    """One row of the table: ``run(messages, options, context)`` takes an ``options`` object
    (a plain function, or a :class:`LazyRun` naming one). ``unread_with_target``: options (of
    any strategy's type, by field name) the run never reads when the run has a target
    (:meth:`StrategyContext.message_target`) — a memo of runs
    (:func:`ctxcompact.compaction.pipeline.shared_runs`) may then serve one run for another
    that differs in them only; ``tests/test_strategies.py`` runs each declared option at other
    values and asserts the same result."""

    name: str
    options: type[Any]
    run: Run
    unread_with_target: frozenset[str] = frozenset()


STRATEGIES: Mapping[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("full", FullOptions, _lazy("full", "run_full")),
        Strategy("prune", PruneOptions, _lazy("prune", "run_prune")),
        Strategy("clean-tools", CleanToolsOptions, _lazy("clean_tools", "run_clean_tools")),
        Strategy("selective", SelectiveOptions, _lazy("selective", "run_selective")),
        Strategy("key-messages", KeyMessageOptions, _lazy("key_messages", "run_key_messages")),
        # With a target, hybrid's summary keeps no recent tail of its own (its cut decides).
        Strategy("hybrid", HybridOptions, _lazy("hybrid", "run_hybrid"), frozenset({"keep_recent_tokens"})),
    )
}

#: What ``compact --strategy`` accepts (comma-separated, run in order).
STRATEGY_NAMES = tuple(STRATEGIES)
DEFAULT_STRATEGIES: tuple[str, ...] = ("full",)
#: What ``compact --auto`` runs when no ``--strategy`` is given.
AUTO_STRATEGIES: tuple[str, ...] = ("hybrid",)
#: Strategies that aim at a token target: without a budget the run makes one from the
#: transcript's model (or the default window).
TARGETED = frozenset({"selective", "key-messages", "hybrid"})


#: What a run may name as a step: a table name, a row, or a plain function
#: ``(messages, options, context) -> StrategyResult`` (given ``None`` as its options).
StrategyRef = str | Strategy | Run


def strategy_for(step: StrategyRef) -> Strategy:
    """The row a step stands for: the table's row of a name, the row itself, or a function
    wrapped in a row of its own (named after it, with no options: ``None``)."""
    if isinstance(step, Strategy):
        return step
    if isinstance(step, str):
        check_strategy_names((step,))
        return STRATEGIES[step]
    if callable(step):
        return Strategy(getattr(step, "__name__", "custom"), type(None), step)
    raise UsageError(f"a strategy is a name, a Strategy or a function, got {type(step).__name__}.")


def strategy_name(step: StrategyRef) -> str:
    return step if isinstance(step, str) else strategy_for(step).name


def check_strategy_names(names: Iterable[StrategyRef]) -> tuple[StrategyRef, ...]:
    """``names`` as a tuple, or a :class:`UsageError` naming the unknown ones (or none given).
    A row or a function stands for itself."""
    chosen = tuple(names)
    unknown = [s for s in chosen if isinstance(s, str) and s not in STRATEGIES]
    if unknown or not chosen:
        raise UsageError(
            f"unknown strategy {', '.join(unknown) or '(none)'}; expected one or more of "
            f"{', '.join(STRATEGY_NAMES)} (comma-separated)."
        )
    return chosen


def option_owners() -> dict[str, type[Any]]:
    """Every strategy option's name -> the options type that owns it (names are unique)."""
    return {f.name: s.options for s in STRATEGIES.values() for f in fields(s.options)}


__all__ = [
    "AUTO_STRATEGIES",
    "DEFAULT_STRATEGIES",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "TARGETED",
    "LazyRun",
    "Strategy",
    "StrategyContext",
    "StrategyRef",
    "StrategyResult",
    "check_strategy_names",
    "option_owners",
    "strategy_for",
    "strategy_name",
]
