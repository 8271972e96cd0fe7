"""``restore-files``: the restored-file message pairs (or the whole transcript) on stdout.

Also the file-restoration options ``compact`` shares with it, so both spell them the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ctxcompact.cli.common import (
    FORMAT_OPT,
    MAX_INPUT_BYTES_OPT,
    OUTPUT_OPT,
    QUIET_OPT,
    STATS_JSON_OPT,
    Format,
    refuse_writing_over_inputs,
    reports_errors,
)
from ctxcompact.cli.sizes import SIZE
from ctxcompact.cli.streams import streams_for
from ctxcompact.compaction.restore import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS_PER_FILE,
    DEFAULT_MAX_TOKENS_TOTAL,
)

if TYPE_CHECKING:
    from ctxcompact.compaction.restore import ReadTool

WORK_DIR_OPT = typer.Option(
    None,
    "--work-dir",
    help="Files are resolved in, and must stay inside, this directory [default: a session's own cwd when it exists, else the current directory].",
    show_default=False,
)
PATH_MAP_OPT = typer.Option(
    None,
    "--path-map",
    help="OLD=NEW (repeatable): a path recorded under OLD is looked up under NEW, to re-root a session recorded on another machine.",
)
READ_TOOL_OPT = typer.Option(
    None,
    "--read-tool",
    help="TOOL:FIELD that reads a file (repeatable) [default: read_file:path, plus Read:file_path for Claude Code sessions].",
)
MAX_FILES_OPT = typer.Option(DEFAULT_MAX_FILES, "--max-files", help="Restore at most this many files.")
MAX_TOKENS_PER_FILE_OPT = typer.Option(
    DEFAULT_MAX_TOKENS_PER_FILE,
    "--max-tokens-per-file",
    parser=SIZE,
    help="Skip files larger than this (tokens).",
)
MAX_TOKENS_TOTAL_OPT = typer.Option(
    DEFAULT_MAX_TOKENS_TOTAL,
    "--max-tokens-total",
    parser=SIZE,
    help="Stop restoring past this total (tokens).",
)


def read_tools(specs: list[str] | None) -> tuple[ReadTool, ...] | None:
    """The user's --read-tool specs, or None: the core then picks by dialect."""
    from ctxcompact.compaction.restore import parse_read_tool

    return tuple(parse_read_tool(s) for s in specs) if specs else None


@reports_errors
def restore_files(
    ctx: typer.Context,
    file: Path | None = typer.Argument(
        None, help="The transcript; '-' or nothing reads stdin.", show_default=False
    ),
    work_dir: Path | None = WORK_DIR_OPT,
    path_map: list[str] | None = PATH_MAP_OPT,
    read_tool: list[str] | None = READ_TOOL_OPT,
    max_files: int = MAX_FILES_OPT,
    max_tokens_per_file: int = MAX_TOKENS_PER_FILE_OPT,
    max_tokens_total: int = MAX_TOKENS_TOTAL_OPT,
    append: bool = typer.Option(
        False, "--append", help="Print the whole transcript with the restored-file messages appended."
    ),
    output: Path | None = OUTPUT_OPT,
    fmt: Format | None = FORMAT_OPT,
    max_input_bytes: int = MAX_INPUT_BYTES_OPT,
    stats_json: Path | None = STATS_JSON_OPT,
    quiet: bool = QUIET_OPT,
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
    from ctxcompact.compaction.restore import parse_path_map
    from ctxcompact.compaction.restore_files import appended_transcript, dump_pairs
    from ctxcompact.compaction.restore_files import restore_files as restore
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
        path_map=parse_path_map(path_map or ()),
        read_tools=read_tools(read_tool),
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
