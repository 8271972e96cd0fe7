"""``offload`` and ``offload --undo``: the transcript on stdout (or ``-o``), stats on stderr."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ctxcompact.cli.common import expand_inputs, refuse_writing_over_inputs, reports_errors
from ctxcompact.cli.options import (
    Files,
    FormatOption,
    LocalCounter,
    MaxInputBytes,
    Output,
    Quiet,
    StatsJson,
)
from ctxcompact.cli.sizes import SIZE
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.errors import UsageError
from ctxcompact.names import LocalCounterName
from ctxcompact.offload.tool_results import DEFAULT_MIN_CHARS, DEFAULT_OUT_DIR
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

if TYPE_CHECKING:
    from ctxcompact.offload.tool_results import OffloadResult
    from ctxcompact.transcripts.io import Transcript


@reports_errors
def offload(
    ctx: typer.Context,
    files: Files = None,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out-dir",
            "-d",
            help="Directory for the offloaded files and offload-manifest.json (created if missing).",
        ),
    ] = DEFAULT_OUT_DIR,
    min_chars: Annotated[
        int,
        typer.Option(
            "--min-chars",
            parser=SIZE,
            help="Offload tool results of at least this many characters (string length; JSON of a block list).",
        ),
    ] = DEFAULT_MIN_CHARS,
    keep_recent: Annotated[
        int, typer.Option("--keep-recent", min=0, help="Leave the newest N tool results in place.")
    ] = 0,
    preview: Annotated[
        int,
        typer.Option(
            "--preview",
            min=0,
            help="Keep the first N characters after the reference, so the model sees what it was.",
        ),
    ] = 0,
    protect_loop: Annotated[
        bool,
        typer.Option(
            "--protect-loop", help="Leave the current tool loop (after the last user text) in place."
        ),
    ] = False,
    undo: Annotated[
        bool,
        typer.Option(
            "--undo",
            help="Put offloaded contents back from --out-dir (refuses if a file is missing or changed).",
        ),
    ] = False,
    undo_old_spelling: Annotated[bool, typer.Option("--restore", hidden=True)] = False,
    clean_orphans: Annotated[
        bool,
        typer.Option(
            "--clean-orphans",
            help="Remove tool-result-*.md files in --out-dir that the manifest does not name (what an "
            "interrupted run leaves); nothing else. Takes no transcript.",
        ),
    ] = False,
    output: Output = None,
    stats_json: StatsJson = None,
    quiet: Quiet = False,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    counter: LocalCounter = LocalCounterName.tiktoken,
) -> None:
    """Move large tool results to files and leave a path reference; --undo puts them back.

    Each tool_result of --min-chars characters or more is written to
    OUT_DIR/tool-result-{tool_use_id}.md and replaced by
    "[Content offloaded to: ./tool-result-{tool_use_id}.md]". OpenAI tool messages likewise.
    Files are never overwritten (a different file of the same name gets a -1, -2… suffix),
    and running offload on its own output changes nothing. offload-manifest.json records a
    sha256 of each file, so --undo gives the exact original content back or refuses.
    One transcript per run; the result goes to stdout or -o, the stats to stderr.
    Runs sharing an --out-dir take turns (a lock), so each one stays undoable.
    --clean-orphans removes the files of a run that was killed before it wrote the manifest.

    \b
    Examples:
      ctxcompact offload t.json --out-dir .ctx/offload -o lean.json
      ctxcompact offload --undo lean.json --out-dir .ctx/offload -o t.json
      cat t.json | ctxcompact offload --min-chars 2000 --keep-recent 3 | ctxcompact count
      ctxcompact offload session.jsonl --preview 200 --protect-loop -q > lean.jsonl
      ctxcompact offload --clean-orphans --out-dir .ctx/offload
    """
    from ctxcompact.accounting.check import carry_size
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.offload.session import offload_duplicates, reference_dir_for
    from ctxcompact.offload.tool_results import discard_offload, offload_tool_results
    from ctxcompact.output.json import offload_stats_json
    from ctxcompact.transcripts.io import dump_transcript, load_transcript

    streams = streams_for(ctx, quiet=quiet)
    undo = undo or undo_old_spelling  # --restore: offload's old name for --undo
    if clean_orphans:
        _clean_orphans(files, out_dir=out_dir, undo=undo, stats_json=stats_json, streams=streams)
        return
    inputs = expand_inputs(files, streams.terminal)
    if len(inputs) != 1:
        raise UsageError(
            f"offload rewrites one transcript per run, got {len(inputs)} inputs; run it once per file "
            '(e.g. for f in sessions/*.jsonl; do ctxcompact offload "$f" -o "lean/${f##*/}"; done).'
        )
    refuse_writing_over_inputs(
        inputs, [("-o", output), ("--stats-json", stats_json)], hint=" with no backup: write elsewhere"
    )
    transcript = load_transcript(inputs[0], dialect=fmt.value if fmt else None, max_bytes=max_input_bytes)

    if undo:
        _undo(transcript, out_dir=out_dir, output=output, stats_json=stats_json, streams=streams)
        return

    chosen = make_counter(counter.value)
    # "Tokens freed" costs a tokenizer pass over every offloaded content: only when shown.
    measure = not quiet or stats_json is not None
    results: list[OffloadResult] = []
    duplicates: list[OffloadResult] = []
    convs = []
    try:
        for conv in transcript.conversations:
            where = reference_dir_for(conv, out_dir)
            result = offload_tool_results(
                conv.messages,
                out_dir=out_dir,
                min_chars=min_chars,
                keep_recent=keep_recent,
                preview=preview,
                protect_loop=protect_loop,
                counter=chosen,
                reference_dir=where,
                measure_tokens=measure,
            )
            results.append(result)
            # A session's toolUseResult copies of the offloaded results move too.
            messages, moved = offload_duplicates(
                result.messages, result, out_dir=out_dir, reference_dir=where
            )
            duplicates.append(moved)
            rewritten = conv.with_messages(messages)
            convs.append(carry_size(conv, rewritten, chosen) if result.changed else conv)
        streams.write_output(dump_transcript(transcript.with_conversations(convs)), output)
    except BaseException:
        # Nothing emitted: take back the files this run wrote, so a failure leaves no trace.
        discard_offload([*results, *duplicates])
        raise
    if not quiet:
        _print_stats(transcript.name, results, streams, min_chars=min_chars)
    streams.write_json_file(stats_json, offload_stats_json(transcript.name, results))


def _print_stats(label: str, results: list[OffloadResult], streams: Streams, *, min_chars: int) -> None:
    """The stats panel: Rich's on a terminal, the same bytes without rich on a pipe."""
    from ctxcompact.output.json import offload_stats_json
    from ctxcompact.output.offload_panel import offload_stats_lines, offload_stats_title
    from ctxcompact.output.panel import plain_panel

    lines = offload_stats_lines(offload_stats_json(label, results), min_chars=min_chars)
    panel = plain_panel(
        offload_stats_title(label), [line.text for line in lines], width=streams.terminal.stderr.width
    )
    streams.panels([panel], lambda: _render_stats(label, results, streams, min_chars=min_chars))


def _render_stats(label: str, results: list[OffloadResult], streams: Streams, *, min_chars: int) -> None:
    from ctxcompact.output.rich.offload import render_offload_stats

    render_offload_stats(label, results, streams.err, min_chars=min_chars)


def _undo(
    transcript: Transcript, *, out_dir: Path, output: Path | None, stats_json: Path | None, streams: Streams
) -> None:
    """``--undo``: every conversation's offloaded contents put back, or nothing (exit 3)."""
    from ctxcompact.offload.session import undo_duplicates
    from ctxcompact.offload.tool_results import undo_offload
    from ctxcompact.output.json import undo_stats_json
    from ctxcompact.output.rich.offload import render_undo_stats
    from ctxcompact.transcripts.io import dump_transcript

    undone = [undo_offload(conv.messages, out_dir=out_dir) for conv in transcript.conversations]
    convs = []
    for conv, result in zip(transcript.conversations, undone, strict=True):
        messages, copies = undo_duplicates(result.messages, out_dir=out_dir)  # a session's toolUseResult
        # The records go back as they were read before the offload: without its size note.
        undone_conv = replace(conv.with_messages(messages), unnote=True)
        convs.append(undone_conv if result.changed or copies.changed else conv)
    streams.write_output(dump_transcript(transcript.with_conversations(convs)), output)
    streams.warnings([note for result in undone for note in result.left])
    render_undo_stats(transcript.name, undone, streams.err)
    streams.write_json_file(stats_json, undo_stats_json(transcript.name, undone))


def _clean_orphans(
    files: list[Path] | None, *, out_dir: Path, undo: bool, stats_json: Path | None, streams: Streams
) -> None:
    """``offload --clean-orphans``: the removed names on stderr (and in --stats-json)."""
    from ctxcompact.offload.store import clean_orphans
    from ctxcompact.output.json import orphan_cleanup_stats_json
    from ctxcompact.output.rich.offload import render_orphan_cleanup

    if files or undo:
        raise UsageError("--clean-orphans works on --out-dir alone: give it no transcript and no --undo.")
    result = clean_orphans(out_dir)
    render_orphan_cleanup(result, streams.err)
    streams.write_json_file(stats_json, orphan_cleanup_stats_json(result))
