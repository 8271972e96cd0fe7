"""What every command shares: input expansion, error reporting, option types (its words go
through :mod:`ctxcompact.cli.streams`).

Commands stay thin: parse options, call one core function, hand the result to
:mod:`ctxcompact.output.rich`. Errors from the core (:class:`CtxcompactError`) become a one-line
message on stderr and the error's exit code; anything else is a bug and says so.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from ctxcompact.cli.sizes import POSITIVE_SIZE, SIZE

if TYPE_CHECKING:
    from ctxcompact.output.terminal import Terminal
    from ctxcompact.transcripts.io import Transcript

from ctxcompact.accounting.tokens import DEFAULT_ENCODING
from ctxcompact.accounting.windows import DEFAULT_RATIO
from ctxcompact.batch.inputs import BatchInput, find_inputs
from ctxcompact.cli.streams import Streams, terminal_of
from ctxcompact.errors import CtxcompactError, InputError, OptionError, UsageError
from ctxcompact.llm.retry import DEFAULT_DEADLINE
from ctxcompact.names import CounterName
from ctxcompact.status import ExitStatus
from ctxcompact.transcripts.dialects import DIALECT_NAMES
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

TRACEBACK_ENV = "CTXCOMPACT_TRACEBACK"

F = TypeVar("F", bound=Callable[..., Any])


if TYPE_CHECKING:

    class Format(StrEnum):
        """A registered dialect's name (members made from the registry at run time)."""

else:
    #: The ``--format`` choices: the registered dialects, in the registry's order.
    Format = StrEnum("Format", [(name, name) for name in DIALECT_NAMES])


def traceback_wanted() -> bool:
    """Whether bugs should keep their traceback (``CTXCOMPACT_TRACEBACK=1``), not become exit 70."""
    return bool(os.environ.get(TRACEBACK_ENV))


def reports_errors(func: F) -> F:
    """Map core errors to messages and exit codes; keep bugs distinguishable from both.

    The command's ``ctx`` parameter (every command takes one) gives the run's terminal."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # The lazily built commands hand click's own Context (typer.Context is a subclass of it).
        ctx: Any = next((a for a in (*args, *kwargs.values()) if isinstance(a, typer._click.Context)), None)
        try:
            return func(*args, **kwargs)
        except OptionError as exc:  # the core names its options; a user typed their flags
            raise error(ctx, exc.naming(lambda option: flag_of(ctx, option)), exc.exit_code) from None
        except CtxcompactError as exc:
            raise error(ctx, str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            raise typer.Exit(ExitStatus.INTERRUPTED) from None
        except BrokenPipeError:
            Streams(terminal_of(ctx)).silence_stdout()
            raise typer.Exit(ExitStatus.SUCCESS) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as exc:
            if traceback_wanted():
                raise
            raise error(
                ctx,
                f"internal error: {type(exc).__name__}: {exc}. This is a bug in ctxcompact; "
                f"rerun with {TRACEBACK_ENV}=1 for the traceback and report it.",
                ExitStatus.INTERNAL_ERROR,
            ) from None

    return wrapper  # type: ignore[return-value]


def flag_of(ctx: typer.Context | None, option: str) -> str:
    """The command-line flag of a core option: the command's parameter of that name (``keep``
    is ``--keep``, ``pin`` is ``--pin``), else the option's name spelled as a flag."""
    for param in ctx.command.params if ctx is not None else ():
        if param.name == option:
            flags = [o for o in param.opts if o.startswith("--")]
            if flags:
                return flags[0]
    return "--" + option.replace("_", "-")


def error(ctx: typer.Context | None, message: str, code: ExitStatus) -> typer.Exit:
    """The error line on the run's stderr, and the exit that ends the run with ``code``."""
    Streams(terminal_of(ctx)).error(message)
    return typer.Exit(code)


def expand_inputs(
    paths: Sequence[Path] | None, terminal: Terminal, *, exclude: Sequence[Path | None] = ()
) -> list[str | None]:
    """Paths as given; a directory stands for the .json/.jsonl files below it (sorted),
    leaving out hidden files and folders (``.ctxcompact/`` archives, editor files) and anything
    under ``exclude`` (a batch's own --out-dir and --report); nothing or ``-`` means stdin,
    which must not be a terminal."""
    return [i.path for i in expand_batch_inputs(paths, terminal, exclude=exclude)]


def expand_batch_inputs(
    paths: Sequence[Path] | None,
    terminal: Terminal,
    *,
    globs: Sequence[str] = (),
    exclude: Sequence[Path | None] = (),
) -> list[BatchInput]:
    """:func:`expand_inputs` with each input's name relative to its root (see batch_inputs)."""
    if not paths:
        if not terminal.stdin_piped:
            raise InputError(
                "no input: give a transcript file, a directory, or pipe one on stdin (see --help)."
            )
        return [BatchInput(None, "stdin.json")]
    return find_inputs([str(p) for p in paths], globs=globs, exclude=exclude)


def refuse_writing_over_inputs(
    inputs: Sequence[str | None], outputs: Sequence[tuple[str, Path | None]], *, hint: str = ""
) -> None:
    """Exit 2 before any work when an output (``-o``, ``--stats-json``, ``--report``) is one of
    the inputs — also through a symlink, ``./../`` or a hard link: writing it would destroy the
    input with no backup. ``hint`` says what to do instead."""
    from ctxcompact.transcripts.fileio import same_file

    for option, target in outputs:
        if target is None or str(target) == "-":
            continue
        for path in inputs:
            if path is not None and same_file(target, path):
                raise UsageError(
                    f"{option} {target} is the input {path} itself; it would be overwritten{hint}."
                )


def ensure_writable_dir(path: Path | None, option: str) -> None:
    """Refuse up front (exit 2) an output whose directory is missing or not writable, so a run
    never does its work — or rewrites an input — and then fails to write its report."""
    if path is None or str(path) == "-":
        return
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{option} {path}: directory {directory} does not exist.")
    if not os.access(directory, os.W_OK):
        raise InputError(f"{option} {path}: directory {directory} is not writable.")


@dataclass(slots=True)
class Loaded:
    """The transcripts an inspection command could read, and whether any input could not be."""

    transcripts: list[Transcript]
    failed: int = 0


def load_all(
    paths: Sequence[Path] | None,
    fmt: Format | None,
    *,
    max_bytes: int,
    streams: Streams,
    plain_text: bool = False,
) -> Loaded:
    """Every input read. With one input a bad one is the command's error; with several each
    bad one is reported on stderr and the others are still read (exit 2 at the end). With
    ``plain_text`` (``count``), stdin that is no JSON is counted as text, said on stderr."""
    from ctxcompact.transcripts.io import load_transcript

    inputs = expand_inputs(paths, streams.terminal)
    loaded = Loaded([])
    for path in inputs:
        try:
            if plain_text and fmt is None and (path is None or str(path) == "-"):
                loaded.transcripts.append(_stdin_or_text(max_bytes, streams))
                continue
            loaded.transcripts.append(
                load_transcript(path, dialect=fmt.value if fmt else None, max_bytes=max_bytes)
            )
        except InputError as exc:
            if len(inputs) == 1:
                raise
            streams.error(str(exc))
            loaded.failed += 1
    if not loaded.transcripts:
        raise InputError(f"none of the {len(inputs)} inputs could be read (see above).")
    return loaded


def _stdin_or_text(max_bytes: int, streams: Streams) -> Transcript:
    """Stdin as a transcript, or — when it is no JSON — as plain text (one user message)."""
    from ctxcompact.transcripts.fileio import read_bytes
    from ctxcompact.transcripts.io import load_transcript, text_transcript

    name, raw = read_bytes(None, max_bytes=max_bytes)
    try:
        return load_transcript(data=raw, name=name)
    except InputError:
        text = text_transcript(raw, name=name)
        if text is None:
            raise
        streams.note(f"{name}: not JSON: counted as plain text (one user message)")
        return text


# Shared option declarations, so every command spells them the same way.
FILES_ARG = typer.Argument(
    None, help="Transcript files or directories; '-' or nothing reads stdin.", show_default=False
)
FORMAT_OPT = typer.Option(
    None, "--format", "-f", help="Force the dialect instead of detecting it.", case_sensitive=False
)
MAX_INPUT_BYTES_OPT = typer.Option(
    DEFAULT_MAX_INPUT_BYTES,
    "--max-input-bytes",
    parser=POSITIVE_SIZE,
    show_default=False,
    help="Refuse an input larger than this (bytes; 1MiB, 500k also) without reading it all [default: 512 MiB].",
)
COUNTER_OPT = typer.Option(
    CounterName.tiktoken,
    "--counter",
    help="tiktoken (offline, default), estimate (seed formula, fastest) or anthropic (exact, needs ANTHROPIC_API_KEY).",
    case_sensitive=False,
)
ENCODING_OPT = typer.Option(
    DEFAULT_ENCODING,
    "--encoding",
    help="tiktoken encoding; cl100k_base is bundled, others only from tiktoken's cache.",
)
JSON_OPT = typer.Option(False, "--json", help="Print JSON instead of tables.")
MODEL_OPT = typer.Option(
    None,
    "--model",
    "-m",
    help="Model id, for its context window (default: the transcript's own model, if it names one).",
)

OUTPUT_OPT = typer.Option(
    None, "--output", "-o", help="Write the result here (atomically) instead of stdout."
)
STATS_JSON_OPT = typer.Option(None, "--stats-json", help="Write the stats as JSON to this file.")
QUIET_OPT = typer.Option(False, "--quiet", "-q", help="No stats on stderr.")

# The budget, shared by check and compact --auto (threshold = (window − reserve) × ratio).
CONTEXT_WINDOW_OPT = typer.Option(
    None,
    "--context-window",
    "-w",
    parser=POSITIVE_SIZE,
    help="Override the model's context window (tokens; 200k, 1M also).",
)
OUTPUT_RESERVE_OPT = typer.Option(
    None,
    "--output-reserve",
    parser=SIZE,
    help="Tokens kept free for the reply [default: 32000; a quarter of the window under 64K].",
)
THRESHOLD_OPT = typer.Option(
    DEFAULT_RATIO,
    "--threshold",
    "-t",
    help="Compact at this share of (window − reserve): 0.4–0.9. ≤0.6 cost-first, ≤0.75 balanced, else retention.",
)
SYSTEM_TOKENS_OPT = typer.Option(
    None,
    "--system-tokens",
    parser=SIZE,
    help="Tokens the system prompt and tool definitions add when no usage is recorded "
    "[default: 24000 for a Claude Code session on a Claude model, else 0].",
)
DEADLINE_OPT = typer.Option(
    DEFAULT_DEADLINE,
    "--deadline",
    min=0.0,
    metavar="SECONDS",
    help="Stop using the Anthropic API after this many seconds in all: no request starts and no wait "
    "(a retry, a Message Batch still in progress) goes past it [default: 93600, 26 h: a batch ends within 24 h].",
    show_default=False,
)
MODELS_FILE_OPT = typer.Option(
    None,
    "--models-file",
    help="Extra models: JSON/TOML of id → context window.",
)
