"""``compact``'s option groups (and those ``restore-files`` and ``eval`` share with it): the
strategies, what they keep, where files are restored from, a batch of files, and every
strategy's own options, built from their declarations.

Apart from :mod:`ctxcompact.cli.options` because it imports the strategy table: ``count`` and
``check`` never load it (start-up, pinned by ``tests/test_startup.py``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ctxcompact.cli.sizes import SIZE
from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.strategies import STRATEGIES, STRATEGY_NAMES
from ctxcompact.compaction.strategies.base import Flag, flag_of
from ctxcompact.compaction.strategies.options import FullOptions
from ctxcompact.names import OutputFormat

F = TypeVar("F", bound=Callable[..., Any])


def from_flag(kind: type[Any], name: str, **override: Any) -> Any:
    """The Typer option of a strategy option that declares its flag (``kind``'s field
    ``name``); ``override`` changes what another command says about it (its help)."""
    [found] = [f for f in fields(kind) if f.name == name]
    declared = flag_of(found)
    assert declared is not None, f"{kind.__name__}.{name} declares no flag"
    return _option(declared, **override)


def _option(declared: Flag, **override: Any) -> Any:
    settings: dict[str, Any] = {"help": declared.help, "metavar": declared.metavar}
    if declared.size:
        settings["parser"] = SIZE
    return typer.Option(*declared.names, **{**settings, **override})


# --- compaction ------------------------------------------------------------------------------

StrategyList = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        "-s",
        help=f"One or more of {', '.join(STRATEGY_NAMES)}, comma-separated, run in order as one pipeline "
        "(e.g. prune,full).",
        show_default=False,
    ),
]
WorkDir = Annotated[
    Path | None,
    typer.Option(
        "--work-dir",
        help="Files are restored from, and must stay inside, this directory [default: compact and "
        "restore-files: the current directory, or a session's own cwd inside it (see --trust-session-cwd); "
        "eval: an empty directory, nothing restored].",
        show_default=False,
    ),
]
TrustSessionCwd = Annotated[
    bool,
    typer.Option(
        "--trust-session-cwd",
        help="Read a session's files from the folder it recorded (its cwd) even outside the current "
        "directory. Without it a transcript never chooses what is read: only --work-dir or the current directory.",
    ),
]
PathMap = Annotated[
    list[str] | None,
    typer.Option(
        "--path-map",
        help="OLD=NEW (repeatable): a path recorded under OLD is looked up under NEW, to re-root a session "
        "recorded on another machine.",
    ),
]
ReadTools = Annotated[list[str] | None, from_flag(FullOptions, "read_tools")]
MaxFiles = Annotated[int, from_flag(FullOptions, "max_files")]
MaxTokensPerFile = Annotated[int, from_flag(FullOptions, "max_tokens_per_file")]
MaxTokensTotal = Annotated[int, from_flag(FullOptions, "max_tokens_total")]
Pin = Annotated[
    list[str] | None,
    typer.Option(
        "--pin",
        help='Keep every message whose text matches this regex verbatim (repeatable); a record with "ctxcompact_pin": true is pinned too.',
    ),
]
PinFirst = Annotated[
    bool | None,
    typer.Option(
        "--pin-first/--no-pin-first",
        help="Pin the first user message (the task). Default: on, except for full on its own.",
    ),
]
TargetTokens = Annotated[
    int | None,
    typer.Option(
        "--target-tokens",
        parser=SIZE,
        metavar="TOKENS",
        help="The size to aim at (as check measures it) when there is a budget: --auto and the targeted "
        "strategies fill it in priority order [default: --target-ratio of the room under the threshold].",
        show_default=False,
    ),
]
TargetRatio = Annotated[
    float | None,
    typer.Option(
        "--target-ratio",
        help="The share of the room the messages have under the threshold (above the system prompt and "
        "tools) to aim at, above 0 and at most 1 [default: 0.5].",
        show_default=False,
    ),
]
Jobs = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Files worked on in parallel processes [default: the CPU count].",
        show_default=False,
    ),
]


# --- many files (compact's batches) ----------------------------------------------------------

OutDir = Annotated[
    Path | None,
    typer.Option("--out-dir", help="Batch mode: write each input's result here, mirroring the input tree."),
]
InPlace = Annotated[
    bool,
    typer.Option(
        "--in-place",
        "-i",
        help="Rewrite each input file, keeping FILE.bak (a session compaction is appended to the session instead).",
    ),
]
Report = Annotated[
    Path | None, typer.Option("--report", help="Batch mode: write a JSON report of every input here.")
]
LlmConcurrency = Annotated[
    int | None,
    typer.Option(
        "--llm-concurrency", min=1, help="Summary requests in flight at once across all jobs [default: 4]."
    ),
]
FailOver = Annotated[
    float | None,
    typer.Option(
        "--fail-over",
        metavar="RATIO",
        min=0.0,
        help="Exit 1 when any file's tokens after / before stays above RATIO (e.g. 0.5).",
    ),
]
FailOnGrowth = Annotated[
    bool,
    typer.Option(
        "--fail-on-growth", help="Exit 1 when any file has more tokens after compaction than before."
    ),
]
ReportFormat = Annotated[
    OutputFormat,
    typer.Option(
        "--output-format",
        case_sensitive=False,
        help="Batch report: text (the table on stderr), or github (also workflow annotations on stdout "
        "and a Markdown summary appended to $GITHUB_STEP_SUMMARY).",
    ),
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume", help="Skip the files an interrupted run of the same batch finished (see its journal)."
    ),
]


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
class _StrategyFlag:
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

    def parameter(self) -> inspect.Parameter:
        extra = {"case_sensitive": False} if isinstance(self.default, Enum) else {}
        return inspect.Parameter(
            self.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=self.default,
            annotation=Annotated[self.typed, _option(self.flag, **extra)],
        )


def _strategy_flags() -> list[_StrategyFlag]:
    """Every strategy option that declares a flag, and every options type read whole from one
    (``--rules``), in table order."""
    out: list[_StrategyFlag] = []
    for kind in dict.fromkeys(row.options for row in STRATEGIES.values()):
        whole = getattr(kind, "FROM_FILE", None)
        if isinstance(whole, Flag):
            out.append(
                _StrategyFlag(whole.names[0].lstrip("-").replace("-", "_"), kind, whole, whole.typed, None)
            )
        namespace = vars(sys.modules[kind.__module__])
        for option in fields(kind):
            declared = flag_of(option)
            if declared is None:
                continue
            # The field's own type (a string under postponed annotations), unless it types another.
            typed = declared.typed if declared.typed is not None else eval(str(option.type), namespace)
            default = option.default if declared.cli_default is ... else declared.cli_default
            out.append(_StrategyFlag(option.name, kind, declared, typed, default))
    return out


def takes_strategy_options(command: F) -> F:
    """Give ``command`` (which ends in ``**strategy_options``) one option per strategy option
    that declares a flag: its signature is what Typer reads."""
    own = inspect.signature(command, eval_str=True)
    kept = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    added = [found.parameter() for found in _strategy_flags()]
    command.__signature__ = own.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
    return command


def strategy_options(values: dict[str, Any], *, deadline_at: float | None = None) -> tuple[object, ...]:
    """The options objects the command line configured: every strategy option's value (parsed
    from what was typed), grouped by the options type that declares it; the summary's requests
    end by ``deadline_at`` (``--deadline``: the run's clock, not a flag of the strategy's)."""
    objects: dict[type[Any], Any] = {}
    changes: dict[type[Any], dict[str, Any]] = {}
    for found in _strategy_flags():
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
