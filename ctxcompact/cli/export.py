"""``export``: the request-ready context from the latest compaction point, on stdout."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxcompact.cli.common import refuse_writing_over_inputs, reports_errors
from ctxcompact.cli.options import FormatOption, MaxInputBytes, OneFile, Output, Quiet
from ctxcompact.cli.streams import streams_for
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES


@reports_errors
def export(
    ctx: typer.Context,
    file: OneFile = None,
    points: Annotated[
        bool, typer.Option("--points", help="Print the compaction points (JSON) instead of the context.")
    ] = False,
    output: Output = None,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    quiet: Quiet = False,
) -> None:
    """Build the context to send from the latest compaction point: summary + what came after.

    A transcript compacted with `compact --append` (or a Claude Code session compacted by
    ctxcompact or by Claude Code itself) keeps its whole history; export prints only the live
    context, ready for the API: the leading system messages, the latest summary and the
    messages after its boundary, without ctxcompact's bookkeeping field. A Claude Code session
    becomes a JSON array of Anthropic messages. A transcript without points is printed whole.

    \b
    Examples:
      ctxcompact compact t.json --append -o t.json.new && ctxcompact export t.json.new > request.json
      ctxcompact export ~/.claude/projects/-home-me-app/SESSION.jsonl --points
    """
    import orjson

    from ctxcompact.transcripts.io import load_transcript
    from ctxcompact.transcripts.points.export import export_transcript

    streams = streams_for(ctx, quiet=quiet)
    refuse_writing_over_inputs(
        [None if file is None else str(file)], [("-o", output)], hint=" with no backup: write elsewhere"
    )
    transcript = load_transcript(file, dialect=fmt.value if fmt else None, max_bytes=max_input_bytes)
    data, done = export_transcript(transcript)
    if points:
        from ctxcompact.output.json import points_json

        data = orjson.dumps(points_json(done), option=orjson.OPT_INDENT_2) + b"\n"
    streams.write_output(data, output)
    for d in done:
        where = (
            f"the context after the latest of {len(d.points)} compaction point(s)"
            if d.points
            else "no compaction point: the whole conversation"
        )
        streams.note(f"{d.label}: {len(d.records)} records, {where}")
