"""What a compaction run is told: which strategies, where, and each strategy's own options.

:class:`CompactOptions` composes the settings every run shares (the strategies to run, the work
and archive directories) with the options objects of the strategies the caller configured (any
other runs with its defaults: a new strategy needs no field here).
:meth:`CompactOptions.from_keywords` builds it from the flat keywords the library's
``compact_messages`` takes (and the command line's strategy options), routing each to its owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from ctxcompact.compaction.archive import default_archive_dir
from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.strategies import (
    DEFAULT_STRATEGIES,
    STRATEGIES,
    StrategyRef,
    check_strategy_names,
    option_owners,
)
from ctxcompact.compaction.strategies.base import find_options
from ctxcompact.compaction.strategies.options import FullOptions
from ctxcompact.errors import OptionError, UsageError

OptionsT = TypeVar("OptionsT")

#: The share of the room the messages have under the threshold (the threshold less the system
#: prompt and tools) a compaction with a budget aims at (``--target-ratio``): what ``--auto``
#: and the targeted strategies fill in priority order (README "The budget"). Measured on the
#: corpus (``bench/bench_budget.py``): see the README for the figures.
DEFAULT_TARGET_RATIO = 0.5


@dataclass(frozen=True, slots=True)
class CompactOptions:
    """What to run and where, plus each strategy's own options (their defaults are the
    seeds'). Zero configuration works. ``work_dir``: where the files to restore are read;
    ``archive_dir``: where the replaced messages are archived (default: the user's
    :func:`~ctxcompact.compaction.archive.default_archive_dir`, never the work dir)."""

    #: The steps, in order: table names, or a library caller's own strategies (a
    #: :class:`~ctxcompact.compaction.strategies.Strategy` row, or a plain function).
    strategies: tuple[StrategyRef, ...] = DEFAULT_STRATEGIES
    #: None: a session's own ``cwd`` when that folder exists and may be read (inside the
    #: current directory, re-rooted by ``path_map``, or ``trust_session_cwd``), else the current
    #: directory.
    work_dir: Path | None = None
    archive_dir: Path | None = None  # default: $XDG_STATE_HOME/ctxcompact/archive
    #: Write a summary compaction as a compaction point (history kept, context appended).
    append: bool = False
    #: ``(OLD, NEW)`` prefixes: a path recorded under OLD is looked up under NEW.
    path_map: tuple[tuple[str, str], ...] = ()
    #: Read a session's files from its recorded ``cwd`` even outside the current directory.
    trust_session_cwd: bool = False
    #: What every strategy keeps verbatim (``--pin``, ``--pin-first``).
    pins: PinOptions = field(default_factory=PinOptions)
    #: Strategies' options objects (``FullOptions(...)``, ``PruneOptions(...)``, one of a
    #: type); a strategy with none here runs with its defaults.
    configured: tuple[object, ...] = ()
    #: The size a run with a budget aims at (as ``check`` measures it): ``target_tokens``, else
    #: ``target_ratio`` of the room the messages have under the threshold (:meth:`aim`;
    #: default :data:`DEFAULT_TARGET_RATIO`).
    target_tokens: int | None = None
    target_ratio: float | None = None
    #: Check what the result kept of the replaced messages (``stats.retention``: paths, error
    #: lines, instructions, the last request; a warning when the last request is gone). False
    #: for a caller that scores the result itself, as ``eval`` does.
    check_retention: bool = True

    def __post_init__(self) -> None:
        check_strategy_names(self.strategies)
        kinds = [type(o) for o in self.configured]
        if len(kinds) != len(set(kinds)):
            raise UsageError("configured: one options object per strategy options type.")
        if self.target_tokens is not None and self.target_tokens < 1:
            raise OptionError.about("target_tokens", "must be at least 1.")
        if self.target_ratio is not None and not 0 < self.target_ratio <= 1:
            raise OptionError.about(
                "target_ratio", "must be above 0 and at most 1, got {value}.", value=self.target_ratio
            )

    def aim(self, threshold: int, *, fixed: int = 0) -> int:
        """The size this run aims at under ``threshold``, never above it: ``target_tokens``, or
        ``fixed`` (what no compaction of the messages changes: the system prompt and tools) plus
        ``target_ratio`` of the room the messages have above it."""
        if self.target_tokens is not None:
            return min(self.target_tokens, threshold)
        ratio = DEFAULT_TARGET_RATIO if self.target_ratio is None else self.target_ratio
        fixed = min(max(fixed, 0), threshold)
        return int(fixed + (threshold - fixed) * ratio)

    @classmethod
    def from_keywords(cls, **flat: Any) -> CompactOptions:
        """Options from flat keywords (``strategies=``, ``work_dir=``, ``keep=``, ``max_files=``
        ...), as ``compact_messages(**options)`` takes them: each goes to the options type that
        owns it; an options object of a strategy (``full=FullOptions(...)``) is taken whole,
        flat keywords of its type then change it; an unknown keyword is a
        :class:`UsageError` naming it."""
        owners = option_owners()
        slots = {_slot(kind): kind for kind in {s.options for s in STRATEGIES.values()}}
        top: dict[str, Any] = {}
        whole: dict[type[Any], Any] = {}
        grouped: dict[type[Any], dict[str, Any]] = {}
        for name, value in flat.items():
            if name in owners:
                grouped.setdefault(owners[name], {})[name] = value
            elif name in slots and isinstance(value, slots[name]):
                whole[slots[name]] = value
            elif name in {f.name for f in fields(cls)} - {"configured"}:
                top[name] = value
            else:
                raise UsageError(f"unknown compaction option {name!r}.")
        if "strategies" in top:  # checked first, as on the command line
            top["strategies"] = check_strategy_names(top["strategies"])
        configured = {
            kind: replace(whole[kind], **grouped.get(kind, {})) if kind in whole else kind(**grouped[kind])
            for kind in (*whole, *grouped)
        }
        return cls(**top, configured=tuple(configured.values()))

    def options_for(self, kind: type[OptionsT]) -> OptionsT:
        """The options of type ``kind`` (a strategy's), or its defaults."""
        return find_options(self.configured, kind)

    def with_options(self, *options: object) -> CompactOptions:
        """These options, each replacing the configured one of its type."""
        kinds = {type(o) for o in options}
        return replace(self, configured=(*(o for o in self.configured if type(o) not in kinds), *options))

    @property
    def full(self) -> FullOptions:
        return self.options_for(FullOptions)

    @property
    def strategy_options(self) -> tuple[object, ...]:
        """Each strategy's options object, as a run's :class:`StrategyContext` carries them."""
        return self.configured

    @property
    def resolved_archive_dir(self) -> Path:
        return self.archive_dir if self.archive_dir is not None else default_archive_dir()


def _slot(kind: type[Any]) -> str:
    """The keyword a strategy's whole options object goes by: ``FullOptions`` -> ``full``,
    ``KeyMessageOptions`` -> ``key_messages`` (a table name, spelled as a keyword)."""
    for row in STRATEGIES.values():
        if row.options is kind:
            return row.name.replace("-", "_")
    raise KeyError(kind)
