"""Every command-line option, declared once (Typer), and the signature Typer reads.

An option several commands take is one ``Annotated`` alias (``model: Model = None``), so it is
spelled, typed and explained the same everywhere (pipx's ``add_pip_venv_args``). A group of
options becomes one core value through a small builder (:mod:`ctxcompact.cli.groups`: the
budget options a :class:`~ctxcompact.accounting.check.BudgetSpec`; :mod:`ctxcompact.cli.strategies`:
the pins a :class:`~ctxcompact.compaction.pins.PinOptions`, the strategies' own options their
options objects). This module holds what every command shares;
:mod:`ctxcompact.cli.options.compaction` ``compact``'s, where a strategy's options come from its
own declaration (:func:`ctxcompact.compaction.strategies.base.flag`), so adding a strategy adds
its options without touching the command line.

The commands import these aliases for type checking only, so that the fast path
(:mod:`ctxcompact.cli.fast`) runs them without typer: :func:`typer_signature` evaluates their
annotations here when the Typer app builds a command.

Old spellings kept for scripts (hidden from ``--help``, listed in the README): ``eval
--strategies`` (now ``--strategy``), ``offload --restore`` (now ``--undo``: ``--restore`` is
``compact``'s re-reading of files).
"""

from __future__ import annotations

import builtins
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ctxcompact.accounting.check import BudgetSpec as BudgetSpec  # an option group's parameter type
from ctxcompact.cli.formats import Format
from ctxcompact.cli.sizes import POSITIVE_SIZE, SIZE
from ctxcompact.names import CounterName, LocalCounterName

F = TypeVar("F", bound=Callable[..., Any])

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


def typer_signature(callback: F) -> F:
    """``callback`` (a command) given the signature Typer reads: its annotations evaluated
    (a command imports its options for type checking only, so that the fast path runs it
    without typer: :mod:`ctxcompact.cli.groups`), the strategies' own options in place of
    ``**strategy_values`` (``takes_strategy_options``), and each option group's options in
    place of the group's parameter (``option_groups``)."""
    own = _evaluated(inspect.unwrap(callback))
    parameters = list(own.parameters.values())
    if getattr(callback, "STRATEGY_OPTIONS", False):
        from ctxcompact.cli.options.compaction import strategy_parameters

        kept = [p for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD]
        parameters = [*kept, *strategy_parameters()]
    groups: dict[str, Callable[..., Any]] = getattr(callback, "OPTION_GROUPS", {})
    parameters = [
        q
        for p in parameters
        for q in (_evaluated(groups[p.name]).parameters.values() if p.name in groups else (p,))
    ]
    callback.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    callback.__annotations__ = {p.name: p.annotation for p in parameters}
    return callback


#: Where the names in the commands' annotations are declared, in the order they are looked up
#: after the command's own module.
_DECLARATIONS = ("ctxcompact.cli.options", "ctxcompact.cli.options.compaction")


class _Declared(dict[str, Any]):
    """The names a function's annotations use: its own module's, else the declarations'
    (the strategies' options module is imported only when a name is found there)."""

    def __init__(self, own: dict[str, Any]) -> None:
        super().__init__()
        self.own = own

    def __missing__(self, name: str) -> Any:
        if name in self.own:
            return self.own[name]
        if hasattr(builtins, name):
            raise KeyError(name)  # eval finds it there
        for module in _DECLARATIONS:
            names = vars(importlib.import_module(module))
            if name in names:
                return names[name]
        raise KeyError(name)


def _evaluated(function: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(function, eval_str=True, locals=_Declared(function.__globals__))
