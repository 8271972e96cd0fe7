"""What a compaction run is told: which strategies, where, and each strategy's own options.

:class:`CompactOptions` composes the settings every run shares (the strategies to run, the work
and archive directories) with one options object per strategy of the table
(:data:`ctxcompact.compaction.strategies.STRATEGIES`). :meth:`CompactOptions.from_keywords` builds it from
the flat keywords the library's ``compact_messages`` takes, routing each to its owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
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
from ctxcompact.compaction.strategies.options import (
    CleanToolsOptions,
    FullOptions,
    HybridOptions,
    KeyMessageOptions,
    PruneOptions,
    SelectiveOptions,
)
from ctxcompact.errors import UsageError

OptionsT = TypeVar("OptionsT")


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
    full: FullOptions = field(default_factory=FullOptions)
    prune: PruneOptions = field(default_factory=PruneOptions)
    clean_tools: CleanToolsOptions = field(default_factory=CleanToolsOptions)
    selective: SelectiveOptions = field(default_factory=SelectiveOptions)
    key_messages: KeyMessageOptions = field(default_factory=KeyMessageOptions)
    hybrid: HybridOptions = field(default_factory=HybridOptions)
    #: What every strategy keeps verbatim (``--pin``, ``--pin-first``; issue 10).
    pins: PinOptions = field(default_factory=PinOptions)

    def __post_init__(self) -> None:
        check_strategy_names(self.strategies)

    @classmethod
    def from_keywords(cls, **flat: Any) -> CompactOptions:
        """Options from flat keywords (``strategies=``, ``work_dir=``, ``keep=``, ``max_files=``
        ...), as ``compact_messages(**options)`` takes them: each goes to the options type that
        owns it; an unknown one is a :class:`UsageError` naming it."""
        slots = _strategy_slots()
        owners = option_owners()
        top: dict[str, Any] = {}
        grouped: dict[type[Any], dict[str, Any]] = {}
        for name, value in flat.items():
            if name in owners:
                grouped.setdefault(owners[name], {})[name] = value
            elif name in {f.name for f in fields(cls)} - set(slots.values()):
                top[name] = value
            else:
                raise UsageError(f"unknown compaction option {name!r}.")
        if "strategies" in top:  # checked first, as on the command line
            top["strategies"] = check_strategy_names(top["strategies"])
        for kind, values in grouped.items():
            top[slots[kind]] = kind(**values)
        return cls(**top)

    @property
    def strategy_options(self) -> tuple[object, ...]:
        """Each strategy's options object, as a run's :class:`StrategyContext` carries them."""
        return tuple(getattr(self, name) for name in _strategy_slots().values())

    def options_for(self, kind: type[OptionsT]) -> OptionsT:
        """The options of type ``kind`` (a strategy's), or its defaults."""
        return find_options(self.strategy_options, kind)

    @property
    def resolved_archive_dir(self) -> Path:
        if self.archive_dir is not None:
            return self.archive_dir
        return self.archive_dir if self.archive_dir is not None else default_archive_dir()


def _strategy_slots() -> dict[type[Any], str]:
    """Each table strategy's options type -> the :class:`CompactOptions` field holding it."""
    kinds = {s.options for s in STRATEGIES.values()}
    return {
        f.default_factory: f.name  # type: ignore[misc]
        for f in fields(CompactOptions)
        if f.default_factory in kinds
    }
