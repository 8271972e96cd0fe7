"""What the declared options become at run time, without typer: the counter ``--counter``
names, and option groups (several options filling one parameter).

The commands' modules import these at run time and the Typer declarations
(:mod:`ctxcompact.cli.options`) only for type checking: their annotations are evaluated when
the Typer app builds a command (:func:`ctxcompact.cli.options.typer_signature`), so the fast
path (:mod:`ctxcompact.cli.fast`) runs the same functions without loading typer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ctxcompact.accounting.tokens import DEFAULT_ENCODING
from ctxcompact.accounting.windows import DEFAULT_RATIO
from ctxcompact.names import CounterName, LocalCounterName

if TYPE_CHECKING:
    from ctxcompact.accounting.check import BudgetSpec
    from ctxcompact.accounting.tokens import TokenCounter
    from ctxcompact.cli.options import ContextWindow, Model, ModelsFile, OutputReserve, Threshold

F = TypeVar("F", bound=Callable[..., Any])


def counter_for(
    name: CounterName | LocalCounterName,
    *,
    encoding: str = DEFAULT_ENCODING,
    model: str | None = None,
    deadline_at: float | None = None,
) -> TokenCounter:
    """The counter ``--counter`` names (``anthropic``: the API's exact count for ``model``,
    within ``--deadline``)."""
    from ctxcompact.accounting.tokens import make_counter

    if name is CounterName.anthropic:
        from ctxcompact.llm.anthropic_api import DEFAULT_COUNT_MODEL, AnthropicTotalCounter
        from ctxcompact.llm.retry import RequestLimits

        limits = RequestLimits(deadline_at=deadline_at)
        return AnthropicTotalCounter(model=model or DEFAULT_COUNT_MODEL, limits=limits)  # type: ignore[return-value]
    return make_counter(name.value, encoding=encoding)


# --- the budget (check, compact --auto, sessions): threshold = (window − reserve) × ratio ----


def budget_options(
    model: Model = None,
    context_window: ContextWindow = None,
    output_reserve: OutputReserve = None,
    threshold: Threshold = DEFAULT_RATIO,
    models_file: ModelsFile = None,
) -> BudgetSpec:
    """The budget options (``check``, ``compact``, ``sessions``) as one checked value: a bad
    one fails before any file is read."""
    from ctxcompact.accounting.check import BudgetSpec
    from ctxcompact.accounting.windows import load_registry

    return BudgetSpec(model, context_window, output_reserve, threshold, load_registry(models_file))


def option_groups(**builders: Callable[..., Any]) -> Callable[[F], F]:
    """Fill each named parameter of a command from a group of options: the builder's own
    parameters (``Annotated`` options) become the command's, and what it returns is the
    parameter's value — FastAPI's dependencies, for option groups. ``@option_groups(budget=
    budget_options)`` gives a command ``--model``, ``--context-window``… and one
    :class:`~ctxcompact.accounting.check.BudgetSpec` as ``budget``. The signature Typer reads
    is made when it builds the command (``OPTION_GROUPS`` names the builders)."""

    def decorate(command: F) -> F:
        taken = {
            name: [p for p in builder.__annotations__ if p != "return"] for name, builder in builders.items()
        }

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            for name, builder in builders.items():
                kwargs[name] = builder(**{option: kwargs.pop(option) for option in taken[name]})
            return command(*args, **kwargs)

        run.OPTION_GROUPS = builders  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate
