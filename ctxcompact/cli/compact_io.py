"""``compact``'s file handling: running each conversation of a transcript, batches of inputs,
in-place rewrites with backups; and the parsing of a few option values."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxcompact.cli.common import EXIT_INTERNAL, Format, Streams, write_output
from ctxcompact.errors import CtxcompactError, InputError, UsageError
from ctxcompact.fileio import write_new_file

if TYPE_CHECKING:
    from ctxcompact.compact import CompactResult
    from ctxcompact.restore import ReadTool
    from ctxcompact.transcript import Transcript


def read_tools(specs: list[str] | None) -> tuple[ReadTool, ...] | None:
    """The user's --read-tool specs, or None: the core then picks by dialect."""
    from ctxcompact.restore import parse_read_tool

    return tuple(parse_read_tool(s) for s in specs) if specs else None


def compact_transcript(transcript: Transcript, run: Any) -> tuple[Transcript, list[CompactResult]]:
    try:
        results = [run(conv) for conv in transcript.conversations]
    except CtxcompactError as exc:
        if str(exc).startswith(transcript.name):
            raise
        # Name the file: in a batch or a script, "summary failed" alone does not say which.
        named = CtxcompactError(f"{transcript.name}: {exc}")
        named.exit_code = exc.exit_code
        raise named from None
    return transcript.with_conversations([r.conversation for r in results]), results


def non_negative_int(value: str, option: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{option} takes a whole number or 'all', got {value!r}.") from None
    if n < 0:
        raise UsageError(f"{option} must not be negative.")
    return n


def replace_in_place(path: Path, data: bytes) -> None:
    """Rewrite ``path`` atomically after saving its current bytes as ``FILE.bak`` — or, when
    that exists from an earlier run, ``FILE.bak.1``, ``.bak.2``…: a backup is never replaced."""
    path = Path(os.path.realpath(path))  # a symlinked input: back up and rewrite its target
    backup = path.with_name(path.name + ".bak")
    n = 0
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.bak.{n}")
    try:
        write_new_file(backup, path.read_bytes(), mode_of=path)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot keep a backup at {backup} ({exc.strerror or exc}); file left unchanged."
        ) from None
    write_output(data, path)


def run_batch(
    inputs: list[str | None],
    fmt: Format | None,
    run: Any,
    out_dir: Path | None,
    in_place: bool,
    dry_run: bool,
    streams: Streams,
) -> list[dict[str, Any]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ctxcompact.transcript import dump_transcript, load_transcript

    rows: list[dict[str, Any]] = []
    used_names: set[str] = set()
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=streams.err,
        transient=True,
    ) as progress:
        task = progress.add_task("compacting", total=len(inputs))
        for path in inputs:
            name = path or "<stdin>"
            progress.update(task, description=f"compacting {Path(name).name}")
            row: dict[str, Any] = {"input": name}
            try:
                target = None
                if out_dir is not None and not in_place and not dry_run:
                    # Decided before any work: nothing is summarized or archived for an input
                    # whose result could not be written.
                    target = _batch_target(out_dir, name, used_names)
                    if path is not None and target.resolve() == Path(path).resolve():
                        raise UsageError(f"{target} is the input itself; use --in-place to overwrite inputs.")
                transcript = load_transcript(path, dialect=fmt.value if fmt else None)
                new, results = compact_transcript(transcript, run)
                before = sum(r.stats.original_tokens for r in results)
                after = sum(r.stats.compacted_tokens for r in results)
                row.update(
                    status="compacted" if any(r.compacted for r in results) else "unchanged",
                    before=before,
                    after=after,
                    ratio=after / before if before else None,
                    stats=[r.stats.to_dict() for r in results],
                )
                if not dry_run:
                    data = dump_transcript(new)
                    if in_place and path is not None:
                        replace_in_place(Path(path), data)
                        row["output"] = path
                    elif target is not None:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        write_output(data, target)
                        row["output"] = str(target)
            except CtxcompactError as exc:
                row.update(status="failed", error=str(exc), exit_code=exc.exit_code)
            except Exception as exc:  # a bug on one input must not cost the others their results
                row.update(
                    status="failed",
                    error=f"internal error: {type(exc).__name__}: {exc} (a bug in ctxcompact; please report it)",
                    exit_code=EXIT_INTERNAL,
                )
            rows.append(row)
            progress.advance(task)
    return rows


def _batch_target(out_dir: Path, name: str, used: set[str]) -> Path:
    base = Path(name).name if name != "<stdin>" else "stdin.json"
    candidate = base
    n = 1
    while candidate in used:
        stem, dot, suffix = base.partition(".")
        candidate = f"{stem}-{n}{dot}{suffix}"
        n += 1
    used.add(candidate)
    return out_dir / candidate
