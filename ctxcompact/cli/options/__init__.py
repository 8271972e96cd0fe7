"""Every command-line option, declared once, and the builders that turn a group of them into
one frozen core value.

An option several commands take is one ``Annotated`` alias (``model: Model = None``), so it is
spelled, typed and explained the same everywhere (pipx's ``add_pip_venv_args``). A group of
options becomes one core value through a small builder: the budget options a
:class:`~ctxcompact.accounting.check.BudgetSpec` (:func:`budget_spec`), the pins a
:class:`~ctxcompact.compaction.pins.PinOptions`, the strategies' own options their options
objects. This module holds what every command shares; :mod:`ctxcompact.cli.options.compaction`
``compact``'s groups, where a strategy's options come from its own declaration
(:func:`ctxcompact.compaction.strategies.base.flag`), so adding a strategy adds its options
without touching the command line.

Old spellings kept for scripts (hidden from ``--help``, listed in the README): ``eval
--strategies`` (now ``--strategy``), ``offload --restore`` (now ``--undo``: ``--restore`` is
``compact``'s re-reading of files).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from ctxcompact.accounting.tokens import DEFAULT_ENCODING
from ctxcompact.accounting.windows import DEFAULT_RATIO
from ctxcompact.cli.sizes import POSITIVE_SIZE, SIZE
from ctxcompact.names import CounterName, LocalCounterName
from ctxcompact.transcripts.dialects import DIALECT_NAMES

if TYPE_CHECKING:
    from ctxcompact.accounting.check import BudgetSpec
    from ctxcompact.accounting.tokens import TokenCounter

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:

    class Format(StrEnum):
        """A registered dialect's name (members made from the registry at run time)."""

else:
    #: The ``--format`` choices: the registered dialects, in the registry's order.
    Format = StrEnum("Format", [(name, name) for name in DIALECT_NAMES])


# --- inputs ----------------------------------------------------------------------------------

Files = Annotated[
    list[Path] | None,
    typer.Argument(help="Transcript files or directories; '-' or nothing reads stdin.", show_default=False),
]
OneFile = Annotated[
    Path | None, typer.Argument(help="The transcript; '-' or nothing reads stdin.", show_default=False)
]
FormatOption = Annotated[
    Format | None,
    typer.Option("--format", "-f", help="Force the dialect instead of detecting it.", case_sensitive=False),
]
MaxInputBytes = Annotated[
    int,
    typer.Option(
        "--max-input-bytes",
        parser=POSITIVE_SIZE,
        show_default=False,
        help="Refuse an input larger than this (bytes; 1MiB, 500k also) without reading it all [default: 512 MiB].",
    ),
]
Globs = Annotated[
    list[str] | None,
    typer.Option(
        "--glob",
        metavar="PATTERN",
        help="In input directories, take the files matching PATTERN (repeatable) instead of *.json/*.jsonl.",
    ),
]
FromList = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="FILE",
        help="Also take the paths listed in FILE (one a line, or JSON); '-' reads the list from stdin.",
    ),
]
Shard = Annotated[
    str | None,
    typer.Option(
        "--shard",
        metavar="I/N",
        help="Work on shard I of N only (stable hash of each file's relative path): for CI matrices.",
    ),
]

# --- outputs ---------------------------------------------------------------------------------

Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Change a session even while it looks live (just modified, a half-written last line, or "
        "open for writing); compact: with --in-place.",
    ),
]

ArchiveDir = Annotated[
    Path | None,
    typer.Option(
        "--archive-dir",
        help="The archive: what compact replaced, hook's backups and compaction records [default: "
        "$XDG_STATE_HOME/ctxcompact/archive; a compact batch with --out-dir: OUT_DIR/.ctxcompact-archive].",
    ),
]

Output = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the result here (atomically) instead of stdout.")
]
StatsJson = Annotated[Path | None, typer.Option("--stats-json", help="Write the stats as JSON to this file.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No stats on stderr.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Html = Annotated[
    Path | None, typer.Option("--html", help="Also write a self-contained HTML page (charts, tables) here.")
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Print the phase timeline (each step and rule, tokens before → after)."
    ),
]

# --- counting --------------------------------------------------------------------------------

Counter = Annotated[
    CounterName,
    typer.Option(
        "--counter",
        help="tiktoken (offline, default), estimate (seed formula, fastest) or anthropic (exact, needs "
        "ANTHROPIC_API_KEY).",
        case_sensitive=False,
    ),
]
LocalCounter = Annotated[
    LocalCounterName,
    typer.Option(
        "--counter", help="Token counter for the figures: tiktoken or estimate.", case_sensitive=False
    ),
]
Encoding = Annotated[
    str,
    typer.Option(
        "--encoding", help="tiktoken encoding; cl100k_base is bundled, others only from tiktoken's cache."
    ),
]


Deadline = Annotated[
    float,
    typer.Option(
        "--deadline",
        min=0.0,
        metavar="SECONDS",
        help="Stop using the Anthropic API after this many seconds in all: no request starts and no wait "
        "(a retry, a Message Batch still in progress) goes past it [default: 93600, 26 h: a batch ends "
        "within 24 h].",
        show_default=False,
    ),
]


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

Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model id, for its context window (default: the transcript's own model, if it names one).",
    ),
]
ContextWindow = Annotated[
    int | None,
    typer.Option(
        "--context-window",
        "-w",
        parser=POSITIVE_SIZE,
        help="Override the model's context window (tokens; 200k, 1M also).",
    ),
]
OutputReserve = Annotated[
    int | None,
    typer.Option(
        "--output-reserve",
        parser=SIZE,
        help="Tokens kept free for the reply [default: 32000; a quarter of the window under 64K].",
    ),
]
Threshold = Annotated[
    float,
    typer.Option(
        "--threshold",
        "-t",
        help="Compact at this share of (window − reserve): 0.4–0.9. ≤0.6 cost-first, ≤0.75 balanced, else retention.",
    ),
]
ModelsFile = Annotated[
    Path | None, typer.Option("--models-file", help="Extra models: JSON/TOML of id → context window.")
]
SystemTokens = Annotated[
    int | None,
    typer.Option(
        "--system-tokens",
        parser=SIZE,
        help="Tokens the system prompt and tool definitions add when no usage is recorded "
        "[default: 24000 for a Claude Code session on a Claude model, else 0].",
    ),
]


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
    :class:`~ctxcompact.accounting.check.BudgetSpec` as ``budget``."""

    def decorate(command: F) -> F:
        own = inspect.signature(command, eval_str=True)
        taken = {name: _parameters(builder) for name, builder in builders.items()}
        parameters = [
            q for p in own.parameters.values() for q in (taken[p.name].values() if p.name in taken else (p,))
        ]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            for name, builder in builders.items():
                kwargs[name] = builder(**{option: kwargs.pop(option) for option in taken[name]})
            return command(*args, **kwargs)

        run.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate


def _parameters(builder: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """A builder's parameters, their annotations evaluated (its return type may be imported
    for type checking only: start-up)."""
    namespace = builder.__globals__
    return {
        p.name: p.replace(
            annotation=eval(p.annotation, namespace) if isinstance(p.annotation, str) else p.annotation
        )
        for p in inspect.signature(builder).parameters.values()
    }
