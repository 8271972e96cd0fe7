"""``compact``'s option values at run time, without typer: the strategy list, the pins, the
path map, and every strategy's own options (declared next to the options themselves:
:func:`ctxcompact.compaction.strategies.base.flag`), grouped into their options objects.

The Typer declarations of these options are :mod:`ctxcompact.cli.options.compaction`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.strategies import STRATEGIES
from ctxcompact.compaction.strategies.base import Flag, flag_of
from ctxcompact.compaction.strategies.options import FullOptions

F = TypeVar("F", bound=Callable[..., Any])


def strategy_steps(text: str | None, *, default: Sequence[str]) -> tuple[str, ...]:
    """``--strategy a,b``: the names given, in order (checked), else ``default``."""
    from ctxcompact.compaction.strategies import check_strategy_names

    chosen = text.split(",") if text is not None else default
    return tuple(str(s) for s in check_strategy_names(s.strip() for s in chosen if s.strip()))


def pin_options(pin: Sequence[str] | None, pin_first: bool | None) -> PinOptions:
    return PinOptions(patterns=tuple(pin or ()), pin_first=pin_first)


def path_map_of(specs: Sequence[str] | None) -> tuple[tuple[str, str], ...]:
    from ctxcompact.compaction.restore import parse_path_map

    return parse_path_map(specs or ())


# --- the strategies' own options, from their declarations -----------------------------------


@dataclass(frozen=True, slots=True)
class StrategyFlag:
    """One ``compact`` option a strategy declares: its parameter name, the options type that
    owns it, its flag, the type typed and the CLI's default."""

    name: str
    owner: type[Any]
    flag: Flag
    typed: Any
    default: Any

    @property
    def whole(self) -> bool:
        """Whether it gives the whole options object (``--rules FILE``), not one field."""
        return getattr(self.owner, "FROM_FILE", None) is self.flag


def strategy_flags() -> list[StrategyFlag]:
    """Every strategy option that declares a flag, and every options type read whole from one
    (``--rules``), in table order."""
    out: list[StrategyFlag] = []
    for kind in dict.fromkeys(row.options for row in STRATEGIES.values()):
        whole = getattr(kind, "FROM_FILE", None)
        if isinstance(whole, Flag):
            out.append(
                StrategyFlag(whole.names[0].lstrip("-").replace("-", "_"), kind, whole, whole.typed, None)
            )
        namespace = vars(sys.modules[kind.__module__])
        for option in fields(kind):
            declared = flag_of(option)
            if declared is None:
                continue
            # The field's own type (a string under postponed annotations), unless it types another.
            typed = declared.typed if declared.typed is not None else eval(str(option.type), namespace)
            default = option.default if declared.cli_default is ... else declared.cli_default
            out.append(StrategyFlag(option.name, kind, declared, typed, default))
    return out


def takes_strategy_options(command: F) -> F:
    """Mark ``command`` (which ends in ``**strategy_values``) as taking one option per strategy
    option that declares a flag: the Typer app gives it those parameters when it builds the
    command (:func:`ctxcompact.cli.options.typer_signature`)."""
    command.STRATEGY_OPTIONS = True  # type: ignore[attr-defined]
    return command


def strategy_options(values: dict[str, Any], *, deadline_at: float | None = None) -> tuple[object, ...]:
    """The options objects the command line configured: every strategy option's value (parsed
    from what was typed), grouped by the options type that declares it; the summary's requests
    end by ``deadline_at`` (``--deadline``: the run's clock, not a flag of the strategy's)."""
    objects: dict[type[Any], Any] = {}
    changes: dict[type[Any], dict[str, Any]] = {}
    for found in strategy_flags():
        value = values[found.name]
        if found.whole and value is None:
            continue  # no --rules: its reader is never loaded
        parsed = found.flag.parse(value) if found.flag.parse is not None else value
        if found.whole:
            objects[found.owner] = parsed
        else:
            changes.setdefault(found.owner, {})[found.name] = parsed
    changes.setdefault(FullOptions, {})["deadline_at"] = deadline_at
    for kind, given in changes.items():
        objects[kind] = replace(objects[kind], **given) if kind in objects else kind(**given)
    return tuple(objects.values())
