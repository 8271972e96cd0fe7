"""``restore-files``: the restored-file message pairs (or the whole transcript) on stdout."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxcompact.cli.common import refuse_writing_over_inputs, reports_errors
from ctxcompact.cli.options import FormatOption, MaxInputBytes, OneFile, Output, Quiet, StatsJson
from ctxcompact.cli.options.compaction import (
    MaxFiles,
    MaxTokensPerFile,
    MaxTokensTotal,
    PathMap,
    ReadTools,
    TrustSessionCwd,
    WorkDir,
)
from ctxcompact.cli.strategies import path_map_of
from ctxcompact.cli.streams import streams_for
from ctxcompact.compaction.restore import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS_PER_FILE,
    DEFAULT_MAX_TOKENS_TOTAL,
)
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES


@reports_errors
def restore_files(
    ctx: typer.Context,
    file: OneFile = None,
    work_dir: WorkDir = None,
    path_map: PathMap = None,
    trust_session_cwd: TrustSessionCwd = False,
    read_tools: ReadTools = None,
    max_files: MaxFiles = DEFAULT_MAX_FILES,
    max_tokens_per_file: MaxTokensPerFile = DEFAULT_MAX_TOKENS_PER_FILE,
    max_tokens_total: MaxTokensTotal = DEFAULT_MAX_TOKENS_TOTAL,
    append: Annotated[
        bool,
        typer.Option("--append", help="Print the whole transcript with the restored-file messages appended."),
    ] = False,
    output: Output = None,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    stats_json: StatsJson = None,
    quiet: Quiet = False,
) -> None:
    """Re-read the files the agent read last and emit them as message pairs.

    Scans the assistant's read calls (read_file:path by default), newest first, last access
    wins; takes the newest --max-files paths, then skips missing, binary, non-UTF-8, too large
    or outside --work-dir ones (symlinks resolved). Prints the restored-file message pairs in the
    transcript's dialect, or the whole transcript with --append.

    \b
    Examples:
      ctxcompact restore-files t.json --work-dir ~/project
      ctxcompact restore-files session.jsonl --read-tool Read:file_path --append -o t2.jsonl
    """
    from ctxcompact.compaction.restore_files import appended_transcript, dump_pairs
    from ctxcompact.compaction.restore_files import restore_files as restore
    from ctxcompact.compaction.strategies.options import parse_read_tools
    from ctxcompact.output.json import restore_files_stats_json
    from ctxcompact.output.text import restore_report
    from ctxcompact.transcripts.io import dump_transcript, load_transcript

    streams = streams_for(ctx, quiet=quiet)
    refuse_writing_over_inputs(
        [None if file is None else str(file)],
        [("-o", output), ("--stats-json", stats_json)],
        hint=" with no backup: write elsewhere",
    )
    transcript = load_transcript(file, dialect=fmt.value if fmt else None, max_bytes=max_input_bytes)
    result = restore(
        transcript,
        work_dir=work_dir,
        path_map=path_map_of(path_map),
        trust_session_cwd=trust_session_cwd,
        read_tools=parse_read_tools(read_tools),
        max_files=max_files,
        max_tokens_per_file=max_tokens_per_file,
        max_tokens_total=max_tokens_total,
    )
    if not quiet:
        streams.report(restore_report(result.restore), to_stderr=True)
    streams.warnings(result.warnings)
    streams.write_json_file(stats_json, restore_files_stats_json(result.restore))
    if append:
        streams.write_output(dump_transcript(appended_transcript(result)), output)
    else:
        streams.write_output(dump_pairs(result), output)
