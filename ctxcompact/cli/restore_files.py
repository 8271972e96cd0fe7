"""``restore-files``: re-read the files the agent read last, as message pairs on stdout."""

from __future__ import annotations

from pathlib import Path

import typer

from ctxcompact.cli.common import (
    FORMAT_OPT,
    OUTPUT_OPT,
    QUIET_OPT,
    STATS_JSON_OPT,
    Format,
    Streams,
    reports_errors,
    write_json_file,
    write_output,
)
from ctxcompact.cli.compact_flags import (
    MAX_FILES_OPT,
    MAX_TOKENS_PER_FILE_OPT,
    MAX_TOKENS_TOTAL_OPT,
    READ_TOOL_OPT,
    WORK_DIR_OPT,
)
from ctxcompact.cli.compact_io import read_tools
from ctxcompact.errors import InputError, UsageError


@reports_errors
def restore_files(
    file: Path | None = typer.Argument(
        None, help="The transcript; '-' or nothing reads stdin.", show_default=False
    ),
    work_dir: Path = WORK_DIR_OPT,
    read_tool: list[str] | None = READ_TOOL_OPT,
    max_files: int = MAX_FILES_OPT,
    max_tokens_per_file: int = MAX_TOKENS_PER_FILE_OPT,
    max_tokens_total: int = MAX_TOKENS_TOTAL_OPT,
    append: bool = typer.Option(
        False, "--append", help="Print the whole transcript with the restored-file messages appended."
    ),
    output: Path | None = OUTPUT_OPT,
    fmt: Format | None = FORMAT_OPT,
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
    import orjson

    from ctxcompact.dialects import DIALECTS
    from ctxcompact.render import render_restore
    from ctxcompact.restore import read_tools_for, restore_recent_files
    from ctxcompact.strategies.full import restored_pairs
    from ctxcompact.transcript import dump_records, dump_transcript, load_transcript

    streams = Streams(quiet=quiet)
    for name, value in (
        ("--max-files", max_files),
        ("--max-tokens-per-file", max_tokens_per_file),
        ("--max-tokens-total", max_tokens_total),
    ):
        if value < 0:
            raise UsageError(f"{name} must not be negative.")
    transcript = load_transcript(file, dialect=fmt.value if fmt else None)
    if len(transcript.conversations) != 1:
        raise InputError(
            f"{transcript.name} holds {len(transcript.conversations)} conversations; restore-files takes one."
        )
    conv = transcript.conversations[0]
    result = restore_recent_files(
        conv.messages,
        work_dir=work_dir,
        max_files=max_files,
        max_tokens_per_file=max_tokens_per_file,
        max_tokens_total=max_tokens_total,
        tools=read_tools(read_tool) or read_tools_for(conv.dialect),
    )
    render_restore(result, streams.err)
    write_json_file(
        stats_json,
        {
            "restoredFileCount": len(result.files),
            "restoredTokenCount": result.tokens,
            "files": [
                {"path": f.path, "resolved": str(f.resolved), "tokens": f.tokens} for f in result.files
            ],
            "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
        },
    )
    pairs = restored_pairs(result)
    if append:
        last = conv.messages[-1] if conv.messages else None
        if (
            last is not None
            and last.role == "assistant"
            and any(b.get("type") == "tool_use" for b in last.content)
        ):
            raise InputError(
                f"{transcript.name}: the last message is a tool call still waiting for its result; "
                "appending after it would orphan the call. Append once the results are in."
            )
        new = transcript.with_conversations([conv.with_messages([*conv.messages, *pairs])])
        write_output(dump_transcript(new), output)
        return
    render = DIALECTS[conv.dialect].render_message
    records = [r for m in pairs for r in render(m)]
    if transcript.container in ("jsonl", "claude-code"):  # in the transcript's own form
        write_output(dump_records(records), output)
    else:
        write_output(orjson.dumps(records, option=orjson.OPT_INDENT_2) + b"\n", output)
