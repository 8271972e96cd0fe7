"""``compact``: the transcript on stdout (or files), stats on stderr; a batch renders its report."""

from __future__ import annotations

from pathlib import Path

import typer

from ctxcompact.accounting.windows import validate_ratio
from ctxcompact.batch.results import Gates
from ctxcompact.cli.batch import (
    ARCHIVE_IN_OUT_DIR,
    FAIL_ON_GROWTH_OPT,
    FAIL_OVER_OPT,
    FROM_OPT,
    GLOB_OPT,
    JOBS_OPT,
    LLM_CONCURRENCY_OPT,
    OUTPUT_FORMAT_OPT,
    RESUME_OPT,
    SHARD_OPT,
    batch_inputs,
    is_batch,
    run_batch,
)
from ctxcompact.cli.common import (
    CONTEXT_WINDOW_OPT,
    DEADLINE_OPT,
    FILES_ARG,
    FORMAT_OPT,
    MAX_INPUT_BYTES_OPT,
    MODEL_OPT,
    MODELS_FILE_OPT,
    OUTPUT_OPT,
    OUTPUT_RESERVE_OPT,
    QUIET_OPT,
    STATS_JSON_OPT,
    SYSTEM_TOKENS_OPT,
    THRESHOLD_OPT,
    Format,
    ensure_writable_dir,
    refuse_writing_over_inputs,
    reports_errors,
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
)
from ctxcompact.cli.restore import (
    MAX_FILES_OPT,
    MAX_TOKENS_PER_FILE_OPT,
    MAX_TOKENS_TOTAL_OPT,
    PATH_MAP_OPT,
    READ_TOOL_OPT,
    WORK_DIR_OPT,
)
from ctxcompact.cli.sizes import SIZE
from ctxcompact.cli.streams import streams_for
from ctxcompact.compaction.strategies import AUTO_STRATEGIES, DEFAULT_STRATEGIES, STRATEGY_NAMES
from ctxcompact.compaction.strategies.options import (
    DEFAULT_CLEAR_AT_LEAST,
    DEFAULT_KEEP,
    DEFAULT_ROUNDS,
    DEFAULT_SUMMARY_MAX_WORDS,
)
from ctxcompact.compaction.summarize.limits import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ctxcompact.errors import UsageError
from ctxcompact.names import LocalCounterName, OnFailure, OutputFormat, SummarizerName


@reports_errors
def compact(
    ctx: typer.Context,
    files: list[Path] | None = FILES_ARG,
    strategy: str | None = typer.Option(
        None,
        "--strategy",
        "-s",
        help=f"One or more of {', '.join(STRATEGY_NAMES)}, comma-separated, run in order (e.g. prune,full). "
        f"Default {','.join(DEFAULT_STRATEGIES)}; with --auto {','.join(AUTO_STRATEGIES)}.",
    ),
    output: Path | None = OUTPUT_OPT,
    out_dir: Path | None = typer.Option(
        None, "--out-dir", help="Batch mode: write each input's result here, mirroring the input tree."
    ),
    in_place: bool = typer.Option(
        False,
        "--in-place",
        "-i",
        help="Rewrite each input file, keeping FILE.bak (a session compaction is appended to the session instead).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="With --in-place: rewrite a session even while it looks live (just modified, a half-written last line, or open for writing).",
    ),
    append: bool = typer.Option(
        False,
        "--append",
        help="Keep every original message and append the summary as a compaction point (see `ctxcompact export`); Claude Code sessions always append.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Show the plan and before/after figures; write nothing (the summarizer still runs).",
    ),
    report: Path | None = typer.Option(
        None, "--report", help="Batch mode: write a JSON report of every input here."
    ),
    globs: list[str] | None = GLOB_OPT,
    from_list: str | None = FROM_OPT,
    jobs: int | None = JOBS_OPT,
    llm_concurrency: int | None = LLM_CONCURRENCY_OPT,
    fail_over: float | None = FAIL_OVER_OPT,
    fail_on_growth: bool = FAIL_ON_GROWTH_OPT,
    output_format: OutputFormat = OUTPUT_FORMAT_OPT,
    resume: bool = RESUME_OPT,
    shard: str | None = SHARD_OPT,
    stats_json: Path | None = STATS_JSON_OPT,
    quiet: bool = QUIET_OPT,
    fmt: Format | None = FORMAT_OPT,
    max_input_bytes: int = MAX_INPUT_BYTES_OPT,
    auto: bool = typer.Option(
        False,
        "--auto",
        help="Compact only when check says it is due; otherwise pass the input through unchanged.",
    ),
    model: str | None = MODEL_OPT,
    context_window: int | None = CONTEXT_WINDOW_OPT,
    output_reserve: int | None = OUTPUT_RESERVE_OPT,
    threshold: float = THRESHOLD_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    system_tokens: int | None = SYSTEM_TOKENS_OPT,
    counter_name: LocalCounterName = typer.Option(
        LocalCounterName.tiktoken,
        "--counter",
        case_sensitive=False,
        help="Token counter for the figures: tiktoken or estimate.",
    ),
    summarizer: SummarizerName = typer.Option(
        SummarizerName.auto,
        "--summarizer",
        case_sensitive=False,
        help="auto (anthropic when ANTHROPIC_API_KEY is set, else extractive), anthropic, anthropic-batch (a batch's summaries through the Message Batches API, half the price; needs --out-dir or --in-place), or extractive (offline, deterministic).",
    ),
    summary_model: str | None = typer.Option(
        None, "--summary-model", help="Model that writes the summary [default: a fast Claude model]."
    ),
    summary_max_words: int = typer.Option(
        DEFAULT_SUMMARY_MAX_WORDS, "--summary-max-words", help="Word limit for the summary."
    ),
    instructions: str | None = typer.Option(
        None, "--instructions", help="Extra focus for the summary, like /compact's argument."
    ),
    on_failure: OnFailure = typer.Option(
        OnFailure.fallback,
        "--on-failure",
        case_sensitive=False,
        help="When the LLM fails after retries: fallback (extractive), skip (output = input), error (exit 3).",
    ),
    timeout: float = typer.Option(DEFAULT_TIMEOUT, "--timeout", help="Seconds per summary request."),
    deadline: float = DEADLINE_OPT,
    max_retries: int = typer.Option(
        DEFAULT_MAX_RETRIES,
        "--max-retries",
        help="Retries on 429/5xx/overloaded/connection errors, with backoff.",
    ),
    keep_loop: bool = typer.Option(
        False,
        "--keep-loop",
        help="Keep the last user request and its tool loop verbatim after the summary, so the result is a request you can send.",
    ),
    archive_dir: Path | None = typer.Option(
        None,
        "--archive-dir",
        help="Where replaced messages are archived [default: $XDG_STATE_HOME/ctxcompact/archive; OUT_DIR/.ctxcompact-archive in a batch].",
    ),
    restore: bool = typer.Option(
        True, "--restore/--no-restore", help="Re-read the files the agent read most recently."
    ),
    work_dir: Path | None = WORK_DIR_OPT,
    path_map: list[str] | None = PATH_MAP_OPT,
    read_tool: list[str] | None = READ_TOOL_OPT,
    max_files: int = MAX_FILES_OPT,
    max_tokens_per_file: int = MAX_TOKENS_PER_FILE_OPT,
    max_tokens_total: int = MAX_TOKENS_TOTAL_OPT,
    keep: int = typer.Option(DEFAULT_KEEP, "--keep", help="Keep the N most recent tool uses untouched."),
    clear_at_least: int = typer.Option(
        DEFAULT_CLEAR_AT_LEAST,
        "--clear-at-least",
        parser=SIZE,
        help="Change nothing unless at least this many tokens can be freed.",
    ),
    exclude_tools: str | None = typer.Option(
        None, "--exclude-tools", help="Comma-separated tool names never cleared."
    ),
    clear_tool_inputs: bool = typer.Option(
        False, "--clear-tool-inputs", help="Also blank the inputs of cleared tool uses."
    ),
    keep_thinking: str = typer.Option(
        "all", "--keep-thinking", help="Keep thinking of the last N assistant turns, or 'all'."
    ),
    rounds: int = typer.Option(DEFAULT_ROUNDS, "--rounds", help="Keep tool calls of the last N rounds."),
    include_loop: bool = typer.Option(
        False,
        "--include-loop",
        help="Let prune clear inside the current tool loop too (as the API's own edit does).",
    ),
    rules: Path | None = RULES_OPT,
    target_usage: float = TARGET_USAGE_OPT,
    min_recent: int = MIN_RECENT_OPT,
    fallback_rounds: int = FALLBACK_ROUNDS_OPT,
    pin: list[str] | None = PIN_OPT,
    pin_first: bool | None = PIN_FIRST_OPT,
    keep_recent_tokens: int | None = KEEP_RECENT_TOKENS_OPT,
    keep_user_tokens: int | None = KEEP_USER_TOKENS_OPT,
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
      ctxcompact compact sessions/ --out-dir out/ --jobs 4 --shard 1/2 --fail-over 0.5
    """
    params = dict(locals())  # every option as the command received it, by parameter name
    from ctxcompact.cli.compact_run import file_options, run_one

    streams = streams_for(ctx, quiet=quiet)
    validate_ratio(threshold)
    if archive_dir is None and out_dir is not None:
        archive_dir = out_dir / ARCHIVE_IN_OUT_DIR
    files_options = file_options(params, archive_dir=archive_dir)
    exclude = (out_dir, report, stats_json, archive_dir)
    found = batch_inputs(
        files, streams.terminal, from_list=from_list, globs=globs, shard=shard, exclude=exclude
    )
    inputs = [i.path for i in found]
    batch = is_batch(inputs, output=output, out_dir=out_dir, in_place=in_place, dry_run=dry_run, shard=shard)
    if summarizer == SummarizerName.anthropic_batch and not batch:
        if not in_place:
            raise UsageError(
                "--summarizer anthropic-batch summarizes a batch of files: give --out-dir DIR or --in-place."
            )
        batch = True  # one file rewritten in place: a batch of its own requests
    if output_format == OutputFormat.github and not batch:
        if not in_place:
            raise UsageError("--output-format github reports a batch: give --out-dir DIR or --in-place.")
        batch = True  # one file rewritten in place, reported as a batch of one
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out-dir {out_dir} is a file, not a directory.")
    for option, target in (("--stats-json", stats_json), ("--report", report)):
        ensure_writable_dir(target, option)
    refuse_writing_over_inputs(
        inputs,
        [("-o", output), ("--stats-json", stats_json), ("--report", report)],
        hint=" with no backup (--in-place rewrites an input and keeps FILE.bak)",
    )
    if not batch:
        run_one(
            inputs[0],
            files_options,
            output=output,
            in_place=in_place,
            verbose=verbose,
            stats_json=stats_json,
            report=report,
            streams=streams,
        )
        return
    run_batch(
        found,
        options=files_options,
        out_dir=out_dir,
        in_place=in_place,
        report=report,
        stats_json=stats_json,
        jobs=jobs,
        llm_concurrency=llm_concurrency,
        gates=Gates(fail_over, fail_on_growth),
        resume=resume,
        streams=streams,
        output_format=output_format,
    )
