"""The contract every compaction strategy keeps.

A strategy is a frozen options dataclass (its knobs, defaults as named constants, validated in
``__post_init__``; in :mod:`ctxcompact.compaction.strategies.options`, which every strategy module
re-exports its own from) and one module with a frozen *details* dataclass (what it did, for
``--stats-json``) and a pure function::

    run_<name>(messages, options, context) -> StrategyResult

``messages`` is the list to rewrite (in a pipeline, the previous step's output), ``options``
its own options object, ``context`` a :class:`StrategyContext` with what the run shares: the
target budget, the summarizer, the token counter, the file reader, the transcript as read and
its dialect. The function returns the very same :class:`~ctxcompact.ir.Message` objects for
what it keeps, changed copies (built with ``Message.with_content``) for what it rewrites, and
never mutates its input. Every output must pass :func:`ctxcompact.transcripts.validate.validate_messages`
with no new errors; the current tool loop (:func:`ctxcompact.ir.current_loop_start` onward) is
never touched by local strategies.

:mod:`ctxcompact.compaction.strategies` maps each name to its options type and function (imported on
its first run); adding a strategy is its options, one module and one row there (plus its CLI
options, README and tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.compaction.pins import DEFAULT_PINS, PinOptions
from ctxcompact.ir import Message

if TYPE_CHECKING:
    from ctxcompact.accounting.windows import Budget
    from ctxcompact.compaction.restore import FileReader
    from ctxcompact.compaction.summarize import Summarizer

OptionsT = TypeVar("OptionsT")

#: The key of a :class:`Flag` in a strategy option's field metadata.
FLAG = "ctxcompact.flag"


@dataclass(frozen=True, slots=True)
class Flag:
    """How a strategy's option is spelled on the command line: the strategy declares it next to
    the option (:func:`flag`), the CLI builds ``compact``'s option from it (nothing here imports
    typer). ``names``: ``--keep``, or ``--restore/--no-restore``. ``typed``: what is typed when
    it differs from the option's own type (``--keep-thinking`` takes ``all`` or a number);
    ``parse`` turns that into the option's value; ``cli_default``: the CLI's default when it is
    not the option's (``...``: the option's). ``hidden``: old spellings still accepted."""

    names: tuple[str, ...]
    help: str
    typed: Any = None
    parse: Callable[[Any], Any] | None = None
    cli_default: Any = ...
    metavar: str | None = None
    #: A size: the command line takes units too (``500k``, ``1.5M``).
    size: bool = False
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LazyCall:
    """``module.attribute``, imported when first called: a flag's ``parse`` that needs code
    the light options module must not load (the TOML reader of ``--rules``)."""

    module: str
    attribute: str

    def __call__(self, *args: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(self.module), self.attribute)(*args)


def flag(value: Any, *names: str, help: str, **how: Any) -> Any:
    """A strategy option's dataclass field (default ``value``) with its command-line spelling
    (:class:`Flag`)."""
    return field(default=value, metadata={FLAG: Flag(names, help, **how)})


def flag_of(option: Field[Any]) -> Flag | None:
    """The :class:`Flag` an option declares, or None (the option is the library's only)."""
    found = option.metadata.get(FLAG)
    return found if isinstance(found, Flag) else None


class StrategyDetails(Protocol):
    """A strategy's own record of what it did. ``to_dict`` is its ``--stats-json`` step entry
    (after ``strategy`` and ``changed``): snake_case keys in a fixed order, JSON values."""

    def to_dict(self) -> dict[str, Any]: ...


def _auto_summarizer() -> Summarizer:
    from ctxcompact.compaction.summarize import make_summarizer

    return make_summarizer()


@dataclass(frozen=True, slots=True)
class StrategyContext:
    """What every strategy of one run shares.

    ``target_tokens``: the count the result aims at (the run's target size — ``--target-tokens``
    or ``--target-ratio`` × the threshold — in our count), None when no budget is known;
    ``limit_tokens``: the count it must end below (the threshold), which the fallback ladder
    enforces; ``budget`` the whole budget when there is one. ``summarizer``: a
    factory, called only by a strategy that writes a summary (building an API client is not
    free, and ``anthropic`` without a key fails only then). ``original``: the conversation as
    read, for scans an earlier step may have blanked (the recently read files). ``configured``:
    the options of every strategy of the run, so a strategy that chains others (a fallback
    ladder) runs them as the user set them up — see :meth:`options_for`.
    """

    counter: TokenCounter
    summarizer: Callable[[], Summarizer] = _auto_summarizer
    target_tokens: int | None = None
    limit_tokens: int | None = None
    budget: Budget | None = None
    reader: FileReader | None = None
    original: tuple[Message, ...] = ()
    dialect: str = "anthropic"
    work_dir: Path = Path(".")
    configured: tuple[object, ...] = ()
    #: ``--path-map`` prefixes re-rooting the paths a session recorded.
    path_map: tuple[tuple[str, str], ...] = ()
    #: For a session: where its files were looked for (said when none could be restored).
    work_dir_note: str | None = None
    #: A session's own folder, not read because it was not trusted (``--trust-session-cwd``).
    session_dir_refused: Path | None = None
    #: Tokens of the system prompt and tool definitions outside the message list: a strategy
    #: that aims at ``target_tokens`` aims its messages at ``target_tokens - fixed_tokens``.
    fixed_tokens: int = 0
    #: What every strategy keeps verbatim besides the head and the live loop.
    pins: PinOptions = DEFAULT_PINS
    #: ``--include-loop``: the local strategies work inside the current tool loop too, all but
    #: its live part (:func:`~ctxcompact.compaction.pins.protected_part`).
    include_loop: bool = False

    def message_target(self) -> int | None:
        """The tokens the message list may count so the whole ends below ``target_tokens``."""
        if self.target_tokens is None:
            return None
        return max(self.target_tokens - self.fixed_tokens - 1, 0)

    def message_limit(self) -> int | None:
        """The tokens the message list may count so the whole ends below ``limit_tokens``
        (the threshold; ``target_tokens`` when no limit is set)."""
        limit = self.target_tokens if self.limit_tokens is None else self.limit_tokens
        return None if limit is None else max(limit - self.fixed_tokens - 1, 0)

    def options_for(self, kind: type[OptionsT]) -> OptionsT:
        """The run's options of type ``kind``, or its defaults when the run has none."""
        return find_options(self.configured, kind)


def find_options(configured: Sequence[object], kind: type[OptionsT]) -> OptionsT:
    for options in configured:
        if isinstance(options, kind):
            return options
    return kind()


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """``messages``: the rewritten list. ``changed``: whether anything differs from the input.
    ``details``: the strategy's own record (its ``--stats-json`` step); ``warnings`` are
    sentences for the user ("could not free 5,000 tokens; nothing changed").

    The counters the pipeline reports for the whole run are typed fields; ``None`` means the
    strategy does not report that figure (the pipeline then keeps an earlier step's, or derives
    it). ``summary`` is the text a summarizing strategy wrote.
    """

    messages: tuple[Message, ...]
    changed: bool
    details: StrategyDetails
    warnings: tuple[str, ...] = ()
    compacted_message_count: int | None = None
    retained_message_count: int | None = None
    kept_loop_message_count: int | None = None
    restored_file_count: int | None = None
    restored_token_count: int | None = None
    summarizer: str | None = None
    attempts: int | None = None
    summary: str | None = None

    @property
    def stats(self) -> dict[str, Any]:
        """The details as their ``--stats-json`` mapping (a read-only view)."""
        return self.details.to_dict()


Run = Callable[[Sequence[Message], Any, StrategyContext], StrategyResult]
