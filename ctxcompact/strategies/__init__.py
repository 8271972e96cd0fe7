"""Compaction strategies: one module each, found by name in :data:`STRATEGIES`.

Each row is a strategy's name, its options type and its function (the contract is in
:mod:`ctxcompact.strategies.base`). The pipeline (:mod:`ctxcompact.compact`) looks every
``--strategy`` name up here and runs them in order; nothing else names a strategy by hand.
Adding one: a module with its options, details and ``run_<name>`` function, a row below, a
field for its options in :class:`~ctxcompact.compact.CompactOptions`, its CLI options, README
and tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ctxcompact.errors import UsageError
from ctxcompact.strategies.base import Run, StrategyContext, StrategyResult
from ctxcompact.strategies.clean_tools import CleanToolsOptions, run_clean_tools
from ctxcompact.strategies.full import FullOptions, run_full
from ctxcompact.strategies.hybrid import HybridOptions, run_hybrid
from ctxcompact.strategies.key_messages import KeyMessageOptions, run_key_messages
from ctxcompact.strategies.prune import PruneOptions, run_prune
from ctxcompact.strategies.selective import SelectiveOptions, run_selective


@dataclass(frozen=True, slots=True)
class Strategy:
    """One row of the table: ``run(messages, options, context)`` takes an ``options`` object."""

    name: str
    options: type[Any]
    run: Run


STRATEGIES: Mapping[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("full", FullOptions, run_full),
        Strategy("prune", PruneOptions, run_prune),
        Strategy("clean-tools", CleanToolsOptions, run_clean_tools),
        Strategy("selective", SelectiveOptions, run_selective),
        Strategy("key-messages", KeyMessageOptions, run_key_messages),
        Strategy("hybrid", HybridOptions, run_hybrid),
    )
}

#: What ``compact --strategy`` accepts (comma-separated, run in order).
STRATEGY_NAMES = tuple(STRATEGIES)
DEFAULT_STRATEGIES: tuple[str, ...] = ("full",)
#: What ``compact --auto`` runs when no ``--strategy`` is given (issue 10).
AUTO_STRATEGIES: tuple[str, ...] = ("hybrid",)
#: Strategies that aim at a token target: without a budget the run makes one from the
#: transcript's model (or the default window).
TARGETED = frozenset({"selective", "key-messages", "hybrid"})


def check_strategy_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple, or a :class:`UsageError` naming the unknown ones (or none given)."""
    chosen = tuple(names)
    unknown = [s for s in chosen if s not in STRATEGIES]
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
    "Strategy",
    "StrategyContext",
    "StrategyResult",
    "check_strategy_names",
    "option_owners",
]
