"""``compact``'s option groups (and those ``restore-files`` and ``eval`` share with it): the
strategies, what they keep, where files are restored from, a batch of files, and every
strategy's own options, built from their declarations.

Apart from :mod:`ctxcompact.cli.options` because it imports the strategy table: ``count`` and
``check`` never load it (start-up, pinned by ``tests/test_startup.py``).
"""

from __future__ import annotations

import inspect
from dataclasses import fields
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ctxcompact.cli.sizes import SIZE
from ctxcompact.cli.strategies import strategy_flags
from ctxcompact.compaction.strategies import STRATEGY_NAMES
from ctxcompact.compaction.strategies.base import Flag, flag_of
from ctxcompact.compaction.strategies.options import FullOptions
from ctxcompact.names import OutputFormat


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
#: ``eval``'s: the processes share out files, or one file's strategies.
EvalJobs = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Files evaluated in parallel processes; one file has its strategies shared out over "
        "them instead (at most one per core) [default: the CPU count].",
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


def strategy_parameters() -> list[inspect.Parameter]:
    """One keyword parameter per strategy option that declares a flag, typed for Typer: what
    ``compact``'s ``**strategy_values`` stands for (:func:`~ctxcompact.cli.strategies.takes_strategy_options`)."""
    out = []
    for found in strategy_flags():
        extra = {"case_sensitive": False} if isinstance(found.default, Enum) else {}
        out.append(
            inspect.Parameter(
                found.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=found.default,
                annotation=Annotated[found.typed, _option(found.flag, **extra)],
            )
        )
    return out
