"""How ``compact``'s parsed options become core options, and the one-input run.

The command (:mod:`ctxcompact.cli.compact`) declares the options; this module turns Typer's
parsed values (the command's parameters by name) into the frozen
:class:`~ctxcompact.batch.files.FileOptions` the core takes, and renders a single input's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxcompact.accounting.windows import load_registry
from ctxcompact.batch.files import FileCompaction, FileOptions
from ctxcompact.cli.local_options import local_strategy_options, pin_options, render_lines, timeline
from ctxcompact.cli.restore import read_tools
from ctxcompact.cli.streams import Streams
from ctxcompact.compaction.options import CompactOptions
from ctxcompact.compaction.restore import parse_path_map
from ctxcompact.compaction.strategies import (
    AUTO_STRATEGIES,
    DEFAULT_STRATEGIES,
    StrategyRef,
    check_strategy_names,
)
from ctxcompact.compaction.strategies.options import CleanToolsOptions, FullOptions, PruneOptions
from ctxcompact.errors import UsageError
from ctxcompact.llm.retry import deadline_in


def file_options(p: Mapping[str, Any], *, archive_dir: Path | None) -> FileOptions:
    """The core options for ``compact``'s parsed parameters ``p``."""
    selective, key_messages = local_strategy_options(
        rules=p["rules"],
        target_usage=p["target_usage"],
        min_recent=p["min_recent"],
        fallback_rounds=p["fallback_rounds"],
    )
    options = CompactOptions(
        strategies=_strategies(p["strategy"], auto=p["auto"]),
        work_dir=p["work_dir"],
        archive_dir=archive_dir,
        append=p["append"],
        path_map=parse_path_map(p["path_map"] or ()),
        full=FullOptions(
            summarizer=p["summarizer"],
            summary_model=p["summary_model"],
            summary_max_words=p["summary_max_words"],
            instructions=p["instructions"],
            on_failure=p["on_failure"],
            timeout=p["timeout"],
            deadline_at=deadline_in(p["deadline"]),
            max_retries=p["max_retries"],
            restore=p["restore"],
            keep_loop=p["keep_loop"],
            read_tools=read_tools(p["read_tool"]),
            max_files=p["max_files"],
            max_tokens_per_file=p["max_tokens_per_file"],
            max_tokens_total=p["max_tokens_total"],
            keep_recent_tokens=p["keep_recent_tokens"],
            keep_user_tokens=p["keep_user_tokens"],
        ),
        prune=_prune_options(
            keep=p["keep"],
            clear_at_least=p["clear_at_least"],
            exclude_tools=p["exclude_tools"],
            clear_tool_inputs=p["clear_tool_inputs"],
            keep_thinking=p["keep_thinking"],
            include_loop=p["include_loop"],
        ),
        clean_tools=CleanToolsOptions(rounds=p["rounds"]),
        selective=selective,
        key_messages=key_messages,
        pins=pin_options(p["pin"], p["pin_first"]),
    )
    files_options = FileOptions(
        compact=options,
        dialect=p["fmt"].value if p["fmt"] else None,
        max_input_bytes=p["max_input_bytes"],
        auto=p["auto"],
        dry_run=p["dry_run"],
        model=p["model"],
        context_window=p["context_window"],
        output_reserve=p["output_reserve"],
        ratio=p["threshold"],
        registry=load_registry(p["models_file"]),
        counter=p["counter_name"],
        system_tokens=p["system_tokens"],
        force=p["force"],
    )
    return files_options


def _strategies(strategy: str | None, *, auto: bool) -> tuple[StrategyRef, ...]:
    """The --strategy list, or the default: full, or hybrid under --auto."""
    chosen = (
        strategy.split(",") if strategy is not None else (AUTO_STRATEGIES if auto else DEFAULT_STRATEGIES)
    )
    return check_strategy_names(s.strip() for s in chosen if s.strip())


def _prune_options(
    *,
    keep: int,
    clear_at_least: int,
    exclude_tools: str | None,
    clear_tool_inputs: bool,
    keep_thinking: str,
    include_loop: bool,
) -> PruneOptions:
    thinking = (
        None
        if keep_thinking.strip().lower() == "all"
        else _non_negative_int(keep_thinking, "--keep-thinking")
    )
    return PruneOptions(
        keep=keep,
        clear_at_least=clear_at_least,
        exclude_tools=tuple(t.strip() for t in (exclude_tools or "").split(",") if t.strip()),
        clear_tool_inputs=clear_tool_inputs,
        keep_thinking=thinking,
        include_loop=include_loop,
    )


def run_one(
    path: str | None,
    options: FileOptions,
    *,
    output: Path | None,
    in_place: bool,
    verbose: bool,
    stats_json: Path | None,
    report: Path | None,
    streams: Streams,
) -> None:
    """One input: the transcript to stdout, -o or the file itself; stats to stderr."""
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.batch.files import compact_file, compact_in_place
    from ctxcompact.transcripts.io import dump_transcript

    counter = make_counter(options.counter.value)
    # The transcript first: stats that say "compacted" only once the output exists.
    if in_place and path is not None and not options.dry_run:
        done = compact_in_place(path, options=options, counter=counter)
        streams.warnings(done.warnings)
    else:
        done = compact_file(path, options=options, counter=counter)
        streams.warnings(done.warnings)
        if not options.dry_run:
            streams.write_output(dump_transcript(done.transcript), output)
    _print_stats(done, streams)
    if verbose or options.dry_run:
        for r in done.results:
            render_lines(timeline(r.stats.steps), streams.err)
    if stats_json is None and report is None:
        return
    from ctxcompact.output.json import file_report_json, file_stats_json

    streams.write_json_file(stats_json, file_stats_json(done))
    if report is not None:
        shown = path if in_place else (str(output) if output else None)
        streams.write_json_file(report, file_report_json(done, output=shown))


def _print_stats(done: FileCompaction, streams: Streams) -> None:
    """The stats panel of each conversation: Rich's, or on a pipe the same bytes without
    importing rich (:func:`~ctxcompact.output.panel.plain_panel`, ASCII panels)."""
    if streams.quiet:
        return
    from ctxcompact.output.compact_panel import compact_stats_lines, compact_stats_title
    from ctxcompact.output.panel import plain_panel

    several = len(done.results) > 1
    panels = [
        plain_panel(
            compact_stats_title(r.stats, r.conversation.label if several else None),
            [line.text for line in compact_stats_lines(r.stats)],
            width=streams.terminal.stderr.width,
        )
        for r in done.results
    ]
    streams.panels(panels, lambda: _render_file_stats(done, streams))


def _render_file_stats(done: FileCompaction, streams: Streams) -> None:
    from ctxcompact.output.rich import render_file_stats

    render_file_stats(done, streams.err)


def _non_negative_int(value: str, option: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{option} takes a whole number or 'all', got {value!r}.") from None
    if n < 0:
        raise UsageError(f"{option} must not be negative.")
    return n
