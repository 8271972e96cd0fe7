"""``compact`` and ``restore-files``: transcripts on stdout (or files), stats on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ctxcompact.cli.common import (
    CONTEXT_WINDOW_OPT,
    FILES_ARG,
    FORMAT_OPT,
    MODEL_OPT,
    MODELS_FILE_OPT,
    OUTPUT_OPT,
    OUTPUT_RESERVE_OPT,
    QUIET_OPT,
    STATS_JSON_OPT,
    THRESHOLD_OPT,
    Format,
    LocalCounterName,
    OnFailure,
    Streams,
    SummarizerName,
    ensure_writable_dir,
    expand_inputs,
    reports_errors,
    write_json_file,
    write_output,
)
from ctxcompact.cli.compact_flags import (
    ARCHIVE_DIR_OPT,
    AUTO_OPT,
    CLEAR_AT_LEAST_OPT,
    CLEAR_TOOL_INPUTS_OPT,
    COUNTER_NAME_OPT,
    DRY_RUN_OPT,
    EXCLUDE_TOOLS_OPT,
    IN_PLACE_OPT,
    INCLUDE_LOOP_OPT,
    INSTRUCTIONS_OPT,
    KEEP_LOOP_OPT,
    KEEP_OPT,
    KEEP_THINKING_OPT,
    MAX_FILES_OPT,
    MAX_RETRIES_OPT,
    MAX_TOKENS_PER_FILE_OPT,
    MAX_TOKENS_TOTAL_OPT,
    ON_FAILURE_OPT,
    OUT_DIR_OPT,
    READ_TOOL_OPT,
    REPORT_OPT,
    RESTORE_OPT,
    ROUNDS_OPT,
    STRATEGY_OPT,
    SUMMARIZER_OPT,
    SUMMARY_MAX_WORDS_OPT,
    SUMMARY_MODEL_OPT,
    TIMEOUT_OPT,
    WORK_DIR_OPT,
)
from ctxcompact.cli.compact_io import (
    compact_transcript,
    non_negative_int,
    read_tools,
    replace_in_place,
    run_batch,
)
from ctxcompact.cli.local_options import (
    FALLBACK_ROUNDS_OPT,
    KEEP_RECENT_TOKENS_OPT,
    KEEP_USER_TOKENS_OPT,
    MIN_RECENT_OPT,
    PIN_FIRST_OPT,
    PIN_OPT,
    RULES_OPT,
    TARGET_USAGE_OPT,
    VERBOSE_OPT,
    local_strategy_options,
    pin_options,
    render_lines,
    timeline,
)
from ctxcompact.errors import UsageError
from ctxcompact.models import load_registry, validate_ratio
from ctxcompact.strategies import AUTO_STRATEGIES, DEFAULT_STRATEGIES, check_strategy_names
from ctxcompact.strategies.clean_tools import CleanToolsOptions
from ctxcompact.strategies.full import FullOptions
from ctxcompact.strategies.prune import PruneOptions

if TYPE_CHECKING:
    from ctxcompact.compact import CompactResult


@reports_errors
def compact(
    files: list[Path] | None = FILES_ARG,
    strategy: str | None = STRATEGY_OPT,
    output: Path | None = OUTPUT_OPT,
    out_dir: Path | None = OUT_DIR_OPT,
    in_place: bool = IN_PLACE_OPT,
    dry_run: bool = DRY_RUN_OPT,
    report: Path | None = REPORT_OPT,
    stats_json: Path | None = STATS_JSON_OPT,
    quiet: bool = QUIET_OPT,
    fmt: Format | None = FORMAT_OPT,
    auto: bool = AUTO_OPT,
    model: str | None = MODEL_OPT,
    context_window: int | None = CONTEXT_WINDOW_OPT,
    output_reserve: int | None = OUTPUT_RESERVE_OPT,
    threshold: float = THRESHOLD_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    counter_name: LocalCounterName = COUNTER_NAME_OPT,
    summarizer: SummarizerName = SUMMARIZER_OPT,
    summary_model: str | None = SUMMARY_MODEL_OPT,
    summary_max_words: int = SUMMARY_MAX_WORDS_OPT,
    instructions: str | None = INSTRUCTIONS_OPT,
    on_failure: OnFailure = ON_FAILURE_OPT,
    timeout: float = TIMEOUT_OPT,
    max_retries: int = MAX_RETRIES_OPT,
    keep_loop: bool = KEEP_LOOP_OPT,
    archive_dir: Path | None = ARCHIVE_DIR_OPT,
    restore: bool = RESTORE_OPT,
    work_dir: Path = WORK_DIR_OPT,
    read_tool: list[str] | None = READ_TOOL_OPT,
    max_files: int = MAX_FILES_OPT,
    max_tokens_per_file: int = MAX_TOKENS_PER_FILE_OPT,
    max_tokens_total: int = MAX_TOKENS_TOTAL_OPT,
    keep: int = KEEP_OPT,
    clear_at_least: int = CLEAR_AT_LEAST_OPT,
    exclude_tools: str | None = EXCLUDE_TOOLS_OPT,
    clear_tool_inputs: bool = CLEAR_TOOL_INPUTS_OPT,
    keep_thinking: str = KEEP_THINKING_OPT,
    rounds: int = ROUNDS_OPT,
    include_loop: bool = INCLUDE_LOOP_OPT,
    rules: Path | None = RULES_OPT,
    target_usage: float = TARGET_USAGE_OPT,
    min_recent: int = MIN_RECENT_OPT,
    fallback_rounds: int = FALLBACK_ROUNDS_OPT,
    pin: list[str] | None = PIN_OPT,
    pin_first: bool | None = PIN_FIRST_OPT,
    keep_recent_tokens: int | None = KEEP_RECENT_TOKENS_OPT,
    keep_user_tokens: int = KEEP_USER_TOKENS_OPT,
    verbose: bool = VERBOSE_OPT,
) -> None:
    """Rewrite a transcript to fit: summarize history and restore recent files, or prune locally.

    The default strategy (full) replaces everything after the system prompt with a structured
    summary followed by the files the agent read most recently, re-read from disk. The
    messages it replaces are archived first. Without ANTHROPIC_API_KEY the offline extractive
    summarizer writes the summary: no network, same input → same output.

    \b
    Examples:
      ctxcompact compact t.json -o small.json
      cat t.json | ctxcompact compact --auto --model gpt-4o > next.json
      ctxcompact compact t.json --summarizer extractive --work-dir ~/project
      ctxcompact compact session.jsonl --strategy prune,full --read-tool Read:file_path
      ctxcompact compact sessions/ --out-dir compacted/ --report report.json
    """
    from ctxcompact.compact import CompactOptions, compact_conversation
    from ctxcompact.render import render_batch, render_compact_stats, render_warnings
    from ctxcompact.tokens import make_counter
    from ctxcompact.transcript import dump_transcript, load_transcript
    from ctxcompact.usage import budget_for, unknown_model_warning

    streams = Streams(quiet=quiet)
    validate_ratio(threshold)
    thinking = (
        None if keep_thinking.strip().lower() == "all" else non_negative_int(keep_thinking, "--keep-thinking")
    )
    selective, key_messages = local_strategy_options(
        rules=rules, target_usage=target_usage, min_recent=min_recent, fallback_rounds=fallback_rounds
    )
    chosen = (
        strategy.split(",") if strategy is not None else (AUTO_STRATEGIES if auto else DEFAULT_STRATEGIES)
    )
    options = CompactOptions(
        strategies=check_strategy_names(s.strip() for s in chosen if s.strip()),
        work_dir=work_dir,
        archive_dir=archive_dir,
        full=FullOptions(
            summarizer=summarizer.value,
            summary_model=summary_model,
            summary_max_words=summary_max_words,
            instructions=instructions,
            on_failure=on_failure.value,
            timeout=timeout,
            max_retries=max_retries,
            restore=restore,
            keep_loop=keep_loop,
            read_tools=read_tools(read_tool),
            max_files=max_files,
            max_tokens_per_file=max_tokens_per_file,
            max_tokens_total=max_tokens_total,
            keep_recent_tokens=keep_recent_tokens,
            keep_user_tokens=keep_user_tokens,
        ),
        prune=PruneOptions(
            keep=keep,
            clear_at_least=clear_at_least,
            exclude_tools=tuple(t.strip() for t in (exclude_tools or "").split(",") if t.strip()),
            clear_tool_inputs=clear_tool_inputs,
            keep_thinking=thinking,
            include_loop=include_loop,
        ),
        clean_tools=CleanToolsOptions(rounds=rounds),
        selective=selective,
        key_messages=key_messages,
        pins=pin_options(pin, pin_first),
    )
    registry = load_registry(models_file)
    counter = make_counter(counter_name.value)
    inputs = expand_inputs(files, exclude=(out_dir, report, stats_json, archive_dir))
    if output is not None and out_dir is not None:
        raise UsageError(
            "-o/--output names one output file and --out-dir a directory for several: give one of them."
        )
    if output is not None and in_place:
        raise UsageError("--in-place rewrites each input file: it does not combine with -o/--output.")
    batch = len(inputs) > 1 or out_dir is not None
    if batch and out_dir is None and not in_place and not dry_run:
        raise UsageError("several inputs: give --out-dir DIR (or --in-place) so each result has a file.")
    if output is not None and batch:
        raise UsageError("-o/--output takes one input; use --out-dir for several.")
    if in_place and None in inputs:
        raise UsageError("--in-place needs files, not stdin.")
    for option, target in (("--stats-json", stats_json), ("--report", report)):
        ensure_writable_dir(target, option)
    warnings: list[str] = []

    def run(conv: Any) -> CompactResult:
        budget = None
        if auto or model or context_window:
            budget = budget_for(
                conv,
                model=model,
                context_window=context_window,
                output_reserve=output_reserve,
                ratio=threshold,
                registry=registry,
            )
            warning = unknown_model_warning(budget)
            if warning:
                warnings.append(warning)
        return compact_conversation(
            conv, options=options, budget=budget, auto=auto, dry_run=dry_run, counter=counter
        )

    if not batch:
        path = inputs[0]
        transcript = load_transcript(path, dialect=fmt.value if fmt else None)
        new, results = compact_transcript(transcript, run)
        render_warnings(list(dict.fromkeys(warnings)), streams.err)
        # The transcript first: stats that say "compacted" only once the output exists.
        if not dry_run:
            data = dump_transcript(new)
            if in_place and path is not None:
                replace_in_place(Path(path), data)
            else:
                write_output(data, output)
        for r in results:
            render_compact_stats(
                r.stats, streams.err, label=r.conversation.label if len(results) > 1 else None
            )
            if verbose or dry_run:
                render_lines(timeline(r.stats.steps), streams.err)
        stats_payload = [r.stats.to_dict() for r in results]
        write_json_file(stats_json, stats_payload[0] if len(stats_payload) == 1 else stats_payload)
        if report is not None:
            row: dict[str, Any] = {
                "input": path or "<stdin>",
                "status": "compacted" if any(r.compacted for r in results) else "unchanged",
            }
            row["output"] = path if in_place else (str(output) if output else None)
            row["stats"] = stats_payload
            write_json_file(
                report, {"inputs": [row], "compacted": int(row["status"] == "compacted"), "failed": 0}
            )
        return

    rows = run_batch(inputs, fmt, run, out_dir, in_place, dry_run, streams)
    render_warnings(list(dict.fromkeys(warnings)), streams.err)
    render_batch(rows, streams.err)
    payload = {
        "inputs": rows,
        "compacted": sum(r["status"] == "compacted" for r in rows),
        "failed": sum(r["status"] == "failed" for r in rows),
    }
    write_json_file(report, payload)
    write_json_file(stats_json, payload)
    codes = [r["exit_code"] for r in rows if r["status"] == "failed"]
    if codes:
        raise typer.Exit(max(codes))
