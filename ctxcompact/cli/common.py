"""What every command shares: streams, input expansion, error reporting, option types.

Commands stay thin: parse options, call one core function, hand the result to
:mod:`ctxcompact.output.rich`. Errors from the core (:class:`CtxcompactError`) become a one-line
message on stderr and the error's exit code; anything else is a bug and says so.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from ctxcompact.output.table import Block
    from ctxcompact.transcripts.io import Transcript

from ctxcompact.accounting.tokens import DEFAULT_ENCODING
from ctxcompact.accounting.windows import DEFAULT_RATIO
from ctxcompact.batch.inputs import BatchInput, find_inputs
from ctxcompact.errors import CtxcompactError, InputError, UsageError
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


class Streams:
    """stdout for what a command produces, stderr for everything said about it.

    The Rich consoles are made on first use, so a ``--json`` run that has nothing to say
    never imports rich at all.
    """

    def __init__(self, *, quiet: bool = False) -> None:
        self._quiet = quiet
        self._out: Console | None = None
        self._err: Console | None = None

    @property
    def quiet(self) -> bool:
        return self._quiet

    @property
    def out(self) -> Console:
        if self._out is None:
            from ctxcompact.output.rich import make_console

            self._out = make_console(sys.stdout)
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            from ctxcompact.output.rich import make_console

            self._err = make_console(sys.stderr)
            self._err.quiet = self._quiet
        return self._err


def error_line(message: str) -> None:
    """``ctxcompact: error: …`` on stderr, on one line (soft_wrap: whole for grep and people);
    plain text, without importing rich, when stderr is not a terminal."""
    if not sys.stderr.isatty():
        write_stderr(f"ctxcompact: error: {message}\n")
        return
    from ctxcompact.output.rich import make_console

    make_console(sys.stderr).print(
        f"ctxcompact: error: {message}", markup=False, highlight=False, soft_wrap=True
    )


def error(message: str, code: ExitStatus) -> typer.Exit:
    error_line(message)
    return typer.Exit(code)


def write_stdout(text: str) -> None:
    """Print a command's product (JSON) on stdout. A reader that went away (``| head``) is
    not an error: the rest is dropped and the command still exits with its own status."""
    from ctxcompact.transcripts.fileio import write_stream

    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    data = (text + "\n").encode(encoding, getattr(sys.stdout, "errors", None) or "strict")
    try:
        write_stream(sys.stdout, data)
    except BrokenPipeError:
        _silence_stdout()


def print_report(blocks: Sequence[Block], streams: Streams, *, to_stderr: bool = False) -> None:
    """A report on stdout (``count``, ``check``, ``sessions``, ``config``) or, with
    ``to_stderr``, one about the work (``restore-files``' table): Rich tables on a terminal;
    plain aligned text on a pipe or a log (one line per row for grep and awk; rich is never
    imported)."""
    plain = stderr_takes_plain() if to_stderr else not sys.stdout.isatty()
    if plain:
        from ctxcompact.output.table import plain_text

        if to_stderr:
            write_stderr(plain_text(blocks) + "\n")
        else:
            write_stdout(plain_text(blocks))
        return
    from ctxcompact.output.rich import print_blocks

    print_blocks(blocks, streams.err if to_stderr else streams.out)


def print_panels(panels: Sequence[str | None], draw: Callable[[], None]) -> None:
    """Stats panels on stderr: on a pipe their plain copies (:func:`ctxcompact.output.panel.plain_panel`,
    Rich's very bytes, no rich imported) when every one has one; else ``draw()`` with Rich."""
    if panels and all(panel is not None for panel in panels) and stderr_takes_plain():
        write_stderr("".join(panel or "" for panel in panels))
    else:
        draw()


def print_warnings(warnings: Sequence[str], streams: Streams) -> None:
    """``warning: …`` lines on stderr, each once: yellow on a terminal, plain text otherwise."""
    unique = list(dict.fromkeys(warnings))
    if streams.quiet or not unique:
        return
    if stderr_takes_plain() and all(w.isprintable() for w in unique):
        write_stderr("".join(f"warning: {w}\n" for w in unique))
    else:
        from ctxcompact.output.rich import render_warnings

        render_warnings(unique, streams.err)


def stderr_takes_plain() -> bool:
    """Whether stderr takes plain copies of Rich's output (written without importing rich):
    not a terminal, and UTF-8 (on another encoding Rich draws ASCII boxes)."""
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    return not sys.stderr.isatty() and encoding.lower().startswith("utf")


def write_stderr(text: str) -> None:
    """Plain text on stderr; a reader that went away is no reason to fail (as Rich's console)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def traceback_wanted() -> bool:
    """Whether bugs should keep their traceback (``CTXCOMPACT_TRACEBACK=1``), not become exit 70."""
    return bool(os.environ.get(TRACEBACK_ENV))


def reports_errors(func: F) -> F:
    """Map core errors to messages and exit codes; keep bugs distinguishable from both."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CtxcompactError as exc:
            raise error(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            raise typer.Exit(ExitStatus.INTERRUPTED) from None
        except BrokenPipeError:
            _silence_stdout()
            raise typer.Exit(ExitStatus.SUCCESS) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as exc:
            if traceback_wanted():
                raise
            raise error(
                f"internal error: {type(exc).__name__}: {exc}. This is a bug in ctxcompact; "
                f"rerun with {TRACEBACK_ENV}=1 for the traceback and report it.",
                ExitStatus.INTERNAL_ERROR,
            ) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    # After a closed pipe, Python's final flush would raise again: point stdout at devnull.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def expand_inputs(paths: Sequence[Path] | None, *, exclude: Sequence[Path | None] = ()) -> list[str | None]:
    """Paths as given; a directory stands for the .json/.jsonl files below it (sorted),
    leaving out hidden files and folders (``.ctxcompact/`` archives, editor files) and anything
    under ``exclude`` (a batch's own --out-dir and --report); nothing or ``-`` means stdin,
    which must not be a terminal."""
    return [i.path for i in expand_batch_inputs(paths, exclude=exclude)]


def expand_batch_inputs(
    paths: Sequence[Path] | None, *, globs: Sequence[str] = (), exclude: Sequence[Path | None] = ()
) -> list[BatchInput]:
    """:func:`expand_inputs` with each input's name relative to its root (see batch_inputs)."""
    if not paths:
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError(
                "no input: give a transcript file, a directory, or pipe one on stdin (see --help)."
            )
        return [BatchInput(None, "stdin.json")]
    return find_inputs([str(p) for p in paths], globs=globs, exclude=exclude)


def write_output(data: bytes, output: Path | None) -> None:
    """``data`` to ``output`` atomically, or to stdout for None / ``-``.

    A failed write is exit 3 (the work could not be done); the old file, if any, is intact,
    and on stdout what was written of it is taken back when it is a regular file.
    """
    from ctxcompact.transcripts.fileio import write_file, write_stream

    if output is None or str(output) == "-":
        write_stream(sys.stdout, data)
        return
    write_file(output, data)


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


def write_json_file(path: Path | None, payload: Any) -> None:
    """``--stats-json`` / ``--report``: pretty JSON to ``path`` when one was given."""
    import orjson

    if path is not None:
        write_output(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n", path)


@dataclass(slots=True)
class Loaded:
    """The transcripts an inspection command could read, and whether any input could not be."""

    transcripts: list[Transcript]
    failed: int = 0


def load_all(paths: Sequence[Path] | None, fmt: Format | None, *, max_bytes: int) -> Loaded:
    """Every input read. With one input a bad one is the command's error; with several each
    bad one is reported on stderr and the others are still read (exit 2 at the end)."""
    from ctxcompact.transcripts.io import load_transcript

    inputs = expand_inputs(paths)
    loaded = Loaded([])
    for path in inputs:
        try:
            loaded.transcripts.append(
                load_transcript(path, dialect=fmt.value if fmt else None, max_bytes=max_bytes)
            )
        except InputError as exc:
            if len(inputs) == 1:
                raise
            error_line(str(exc))
            loaded.failed += 1
    if not loaded.transcripts:
        raise InputError(f"none of the {len(inputs)} inputs could be read (see above).")
    return loaded


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
    min=1,
    show_default=False,
    help="Refuse an input larger than this (bytes) without reading it all [default: 512 MiB].",
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
    help="Override the model's context window (tokens).",
)
OUTPUT_RESERVE_OPT = typer.Option(
    None,
    "--output-reserve",
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
    min=0,
    help="Tokens the system prompt and tool definitions add when no usage is recorded "
    "[default: 24000 for a Claude Code session on a Claude model, else 0].",
)
MODELS_FILE_OPT = typer.Option(
    None,
    "--models-file",
    help="Extra models: JSON/TOML of id → context window.",
)
