"""What every command shares: input expansion and error reporting (options are
:mod:`ctxcompact.cli.options`', words go through :mod:`ctxcompact.cli.streams`).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import typer

    from ctxcompact.cli.formats import Format
    from ctxcompact.output.terminal import Terminal
    from ctxcompact.transcripts.io import Transcript

from ctxcompact.batch.inputs import BatchInput, find_inputs
from ctxcompact.cli.streams import Streams, terminal_of
from ctxcompact.errors import CtxcompactError, InputError, OptionError, UsageError
from ctxcompact.status import ExitStatus

TRACEBACK_ENV = "CTXCOMPACT_TRACEBACK"

F = TypeVar("F", bound=Callable[..., Any])


def traceback_wanted() -> bool:
    """Whether bugs should keep their traceback (``CTXCOMPACT_TRACEBACK=1``), not become exit 70."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in _OFF


#: What turns ``CTXCOMPACT_TRACEBACK`` off, as environment switches are read (``0`` included).
_OFF = frozenset({"", "0", "false", "no", "off"})


def reports_errors(func: F) -> F:
    """Map core errors to messages and exit codes; keep bugs distinguishable from both.

    The command's ``ctx`` parameter (every command takes one: click's context, or the fast
    path's :class:`~ctxcompact.cli.fast.Invocation`) gives the run's terminal."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx: Any = kwargs.get("ctx", args[0] if args else None)
        try:
            return func(*args, **kwargs)
        except OptionError as exc:  # the core names its options; a user typed their flags
            raise error(ctx, exc.naming(lambda option: flag_of(ctx, option)), exc.exit_code) from None
        except CtxcompactError as exc:
            raise error(ctx, str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            raise SystemExit(ExitStatus.INTERRUPTED) from None
        except BrokenPipeError:
            Streams(terminal_of(ctx)).silence_stdout()
            raise SystemExit(ExitStatus.SUCCESS) from None
        except Exception as exc:
            if traceback_wanted() or _click_signal(exc):
                raise
            raise error(
                ctx,
                f"internal error: {type(exc).__name__}: {exc}. This is a bug in ctxcompact; "
                f"rerun with {TRACEBACK_ENV}=1 for the traceback and report it.",
                ExitStatus.INTERNAL_ERROR,
            ) from None

    return wrapper  # type: ignore[return-value]


def _click_signal(exc: Exception) -> bool:
    """Whether ``exc`` is click's own exit or abort (``typer.confirm`` refused), to pass on:
    only possible once typer is loaded."""
    typer = sys.modules.get("typer")
    return typer is not None and isinstance(exc, (typer.Exit, typer.Abort))


def flag_of(ctx: typer.Context | None, option: str) -> str:
    """The command-line flag of a core option: the command's parameter of that name (``keep``
    is ``--keep``, ``pin`` is ``--pin``), else the option's name spelled as a flag."""
    for param in ctx.command.params if ctx is not None else ():
        if param.name == option:
            flags = [o for o in param.opts if o.startswith("--")]
            if flags:
                return flags[0]
    return "--" + option.replace("_", "-")


def error(ctx: typer.Context | None, message: str, code: ExitStatus) -> SystemExit:
    """The error line on the run's stderr, and the exit that ends the run with ``code``."""
    Streams(terminal_of(ctx)).error(message)
    return SystemExit(code)


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


def gather_inputs(
    files: Sequence[Path] | None,
    terminal: Terminal,
    *,
    from_list: str | None = None,
    globs: Sequence[str] | None = None,
    shard: str | None = None,
    exclude: Sequence[Path | None] = (),
) -> list[BatchInput]:
    """The inputs of a run: the paths given, those listed in ``--from`` (``-``: stdin),
    directories expanded (``--glob``), then the ``--shard`` selected."""
    from ctxcompact.batch.inputs import parse_shard, read_path_list, select_shard

    listed: list[Path] = []
    if from_list is not None:
        from ctxcompact.transcripts.optionfile import read_option_text

        source = "stdin" if from_list == "-" else from_list
        if from_list != "-":
            text = read_option_text(from_list, option="from_list")
        elif terminal.stdin is None:
            text = ""
        else:  # bounded and binary, as a transcript on stdin is read
            text = read_option_text(None, option="from_list", stdin=getattr(terminal.stdin, "buffer", None))
        listed = [Path(p) for p in read_path_list(text, source=source)]
        if not listed and not files:
            raise InputError(f"--from {source}: the path list is empty.")
    if from_list == "-" and files and any(str(f) == "-" for f in files):
        raise UsageError("--from - reads the path list from stdin: no transcript can come from stdin too.")
    inputs = expand_batch_inputs([*(files or []), *listed], terminal, globs=globs or (), exclude=exclude)
    if shard is not None:
        inputs = select_shard(inputs, *parse_shard(shard))
    return inputs


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
