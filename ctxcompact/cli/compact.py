"""``compact``: the transcript on stdout (or files), stats on stderr; a batch renders its report.

The options are :mod:`ctxcompact.cli.options`' (the strategies' own come from their
declarations); the body builds the core options, runs one input or a batch
(:mod:`ctxcompact.batch.files`), and renders.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from ctxcompact.cli.common import (
    ensure_writable_dir,
    gather_inputs,
    refuse_writing_over_inputs,
    reports_errors,
    traceback_wanted,
)
from ctxcompact.cli.groups import budget_options, option_groups
from ctxcompact.cli.strategies import (
    path_map_of,
    pin_options,
    strategy_options,
    strategy_steps,
    takes_strategy_options,
)
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.llm.deadline import DEFAULT_DEADLINE, deadline_in
from ctxcompact.names import LocalCounterName, OutputFormat, SummarizerName
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

if TYPE_CHECKING:
    import typer

    from ctxcompact.accounting.check import BudgetSpec
    from ctxcompact.batch.files import FileCompaction, FileOptions
    from ctxcompact.batch.inputs import BatchInput
    from ctxcompact.batch.journal import BatchJournal
    from ctxcompact.batch.results import BatchResult, Gates
    from ctxcompact.cli.options import (
        ArchiveDir,
        Deadline,
        Files,
        Force,
        FormatOption,
        FromList,
        Globs,
        LocalCounter,
        MaxInputBytes,
        Output,
        Quiet,
        Shard,
        StatsJson,
        SystemTokens,
        Verbose,
    )
    from ctxcompact.cli.options.compaction import (
        FailOnGrowth,
        FailOver,
        InPlace,
        Jobs,
        LlmConcurrency,
        OutDir,
        PathMap,
        Pin,
        PinFirst,
        Report,
        ReportFormat,
        Resume,
        StrategyList,
        TargetRatio,
        TargetTokens,
        TrustSessionCwd,
        WorkDir,
    )
    from ctxcompact.llm.anthropic_api import AnthropicBatches

#: Where a batch with ``--out-dir`` archives what its rewrites replaced (hidden: never an input).
ARCHIVE_IN_OUT_DIR = ".ctxcompact-archive"
#: Where GitHub Actions reads a step's Markdown summary from.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


@reports_errors
@option_groups(budget=budget_options)
@takes_strategy_options
def compact(
    ctx: typer.Context,
    budget: BudgetSpec,  # --model, --context-window, --output-reserve, --threshold, --models-file
    files: Files = None,
    strategy: StrategyList = None,
    output: Output = None,
    out_dir: OutDir = None,
    in_place: InPlace = False,
    force: Force = False,
    append: Annotated[
        bool,
        typer.Option(
            "--append",
            help="Keep every original message and append the summary as a compaction point (see "
            "`ctxcompact export`); Claude Code sessions always append.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Show the plan and before/after figures; write nothing (the summarizer still runs).",
        ),
    ] = False,
    report: Report = None,
    globs: Globs = None,
    from_list: FromList = None,
    jobs: Jobs = None,
    llm_concurrency: LlmConcurrency = None,
    fail_over: FailOver = None,
    fail_on_growth: FailOnGrowth = False,
    output_format: ReportFormat = OutputFormat.text,
    resume: Resume = False,
    shard: Shard = None,
    stats_json: StatsJson = None,
    quiet: Quiet = False,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    auto: Annotated[
        bool,
        typer.Option(
            "--auto",
            help="Compact only when check says it is due; otherwise pass the input through unchanged.",
        ),
    ] = False,
    system_tokens: SystemTokens = None,
    counter: LocalCounter = LocalCounterName.tiktoken,
    deadline: Deadline = DEFAULT_DEADLINE,
    archive_dir: ArchiveDir = None,
    work_dir: WorkDir = None,
    path_map: PathMap = None,
    trust_session_cwd: TrustSessionCwd = False,
    pin: Pin = None,
    pin_first: PinFirst = None,
    target_tokens: TargetTokens = None,
    target_ratio: TargetRatio = None,
    verbose: Verbose = False,
    **strategy_values: Any,
) -> None:
    """Rewrite a transcript to fit: summarize history and restore recent files, or prune locally.

    The default strategy (full) replaces everything after the system prompt with a structured
    summary followed by the files the agent read most recently, re-read from disk. The
    messages it replaces are archived first. Without ANTHROPIC_API_KEY the offline extractive
    summarizer writes the summary: no network, same input → same output. With --auto the
    default strategy is hybrid.

    \b
    Examples:
      ctxcompact compact t.json -o small.json
      cat t.json | ctxcompact compact --auto --model gpt-4o > next.json
      ctxcompact compact t.json --summarizer extractive --work-dir ~/project
      ctxcompact compact session.jsonl --strategy prune,full --read-tool Read:file_path
      ctxcompact compact sessions/ --out-dir compacted/ --report report.json
      ctxcompact compact sessions/ --out-dir out/ --jobs 4 --shard 1/2 --fail-over 0.5
    """
    from ctxcompact.batch.files import FileOptions
    from ctxcompact.batch.results import Gates
    from ctxcompact.compaction.options import CompactOptions
    from ctxcompact.compaction.strategies import AUTO_STRATEGIES, DEFAULT_STRATEGIES

    streams = streams_for(ctx, quiet=quiet)
    if archive_dir is None and out_dir is not None:
        archive_dir = out_dir / ARCHIVE_IN_OUT_DIR
    options = FileOptions(
        compact=CompactOptions(
            strategies=strategy_steps(strategy, default=AUTO_STRATEGIES if auto else DEFAULT_STRATEGIES),
            work_dir=work_dir,
            archive_dir=archive_dir,
            append=append,
            path_map=path_map_of(path_map),
            trust_session_cwd=trust_session_cwd,
            pins=pin_options(pin, pin_first),
            configured=strategy_options(strategy_values, deadline_at=deadline_in(deadline)),
            target_tokens=target_tokens,
            target_ratio=target_ratio,
        ),
        dialect=fmt.value if fmt else None,
        max_input_bytes=max_input_bytes,
        auto=auto,
        dry_run=dry_run,
        budget=budget,
        counter=counter,
        system_tokens=system_tokens,
        force=force,
    )
    exclude = (out_dir, report, stats_json, archive_dir)
    found = gather_inputs(
        files, streams.terminal, from_list=from_list, globs=globs, shard=shard, exclude=exclude
    )
    inputs = [i.path for i in found]
    batch = _is_batch(inputs, options, output=output, out_dir=out_dir, in_place=in_place, shard=shard)
    batch = batch or _batch_of_one(options, output_format, in_place=in_place)
    _refuse_bad_outputs(inputs, output=output, out_dir=out_dir, stats_json=stats_json, report=report)
    if not batch:
        done = _run_one(
            inputs[0], options, output=output, in_place=in_place, verbose=verbose, streams=streams
        )
        shown = inputs[0] if in_place else (str(output) if output else None)
        _write_one_report(done, stats_json=stats_json, report=report, output=shown, streams=streams)
        return
    _run_batch(
        found,
        options=options,
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


# --- what a run writes, checked before any work ------------------------------------------------


def _is_batch(
    inputs: list[str | None],
    options: FileOptions,
    *,
    output: Path | None,
    out_dir: Path | None,
    in_place: bool,
    shard: str | None,
) -> bool:
    """Whether this run is a batch (several inputs, --out-dir or --shard); refuses outputs that
    contradict each other or leave some result without a file."""
    from ctxcompact.errors import UsageError

    if output is not None and out_dir is not None:
        raise UsageError(
            "-o/--output names one output file and --out-dir a directory for several: give one of them."
        )
    if output is not None and in_place:
        raise UsageError("--in-place rewrites each input file: it does not combine with -o/--output.")
    batch = len(inputs) > 1 or out_dir is not None or shard is not None
    if batch and out_dir is None and not in_place and not options.dry_run:
        raise UsageError("several inputs: give --out-dir DIR (or --in-place) so each result has a file.")
    if output is not None and batch:
        raise UsageError("-o/--output takes one input; use --out-dir for several.")
    if in_place and None in inputs:
        raise UsageError("--in-place needs files, not stdin.")
    return batch


def _batch_of_one(options: FileOptions, output_format: OutputFormat, *, in_place: bool) -> bool:
    """One file that still runs as a batch: its summary through Message Batches, or a report
    for GitHub; both need a file to write (``--in-place``)."""
    from ctxcompact.errors import UsageError

    if options.compact.full.summarizer == SummarizerName.anthropic_batch:
        if not in_place:
            raise UsageError(
                "--summarizer anthropic-batch summarizes a batch of files: give --out-dir DIR or --in-place."
            )
        return True
    if output_format == OutputFormat.github:
        if not in_place:
            raise UsageError("--output-format github reports a batch: give --out-dir DIR or --in-place.")
        return True
    return False


def _refuse_bad_outputs(
    inputs: list[str | None],
    *,
    output: Path | None,
    out_dir: Path | None,
    stats_json: Path | None,
    report: Path | None,
) -> None:
    from ctxcompact.errors import UsageError

    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out-dir {out_dir} is a file, not a directory.")
    for option, target in (("--stats-json", stats_json), ("--report", report)):
        ensure_writable_dir(target, option)
    refuse_writing_over_inputs(
        inputs,
        [("-o", output), ("--stats-json", stats_json), ("--report", report)],
        hint=" with no backup (--in-place rewrites an input and keeps FILE.bak)",
    )


# --- one input -----------------------------------------------------------------------------------


def _run_one(
    path: str | None,
    options: FileOptions,
    *,
    output: Path | None,
    in_place: bool,
    verbose: bool,
    streams: Streams,
) -> FileCompaction:
    """One input: the transcript to stdout, -o or the file itself; stats to stderr."""
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.batch.files import compact_file, compact_in_place
    from ctxcompact.output.compact_panel import step_timeline
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
            for line in step_timeline(r.stats.steps):
                streams.note(line)
    return done


def _write_one_report(
    done: FileCompaction,
    *,
    stats_json: Path | None,
    report: Path | None,
    output: str | None,
    streams: Streams,
) -> None:
    """``--stats-json`` and ``--report`` of one input (``output``: where its result went)."""
    if stats_json is None and report is None:
        return
    from ctxcompact.output.json import file_report_json, file_stats_json

    streams.write_json_file(stats_json, file_stats_json(done))
    streams.write_json_file(report, file_report_json(done, output=output))


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


# --- a batch -----------------------------------------------------------------------------------


def _run_batch(
    inputs: list[BatchInput],
    *,
    options: FileOptions,
    out_dir: Path | None,
    in_place: bool,
    report: Path | None,
    stats_json: Path | None,
    jobs: int | None,
    llm_concurrency: int | None,
    gates: Gates,
    resume: bool,
    streams: Streams,
    output_format: OutputFormat,
) -> None:
    """Run the batch, render its progress and table, write its report; exit with its gate."""
    from ctxcompact.batch.files import compact_files
    from ctxcompact.batch.journal import open_journal
    from ctxcompact.batch.workers import DEFAULT_LLM_CONCURRENCY, default_jobs
    from ctxcompact.output.json import batch_report_json

    batches = None
    if options.compact.full.summarizer == SummarizerName.anthropic_batch:
        from ctxcompact.llm.anthropic_api import AnthropicBatches
        from ctxcompact.llm.retry import RequestLimits

        full = options.compact.full
        limits = RequestLimits(
            timeout=full.timeout, max_retries=full.max_retries, deadline_at=full.deadline_at
        )
        batches = AnthropicBatches(limits=limits)  # no key: exit 2 before any file or folder is touched
    journal = open_journal(options, out_dir=out_dir, in_place=in_place, report=report, resume=resume)
    if batches is not None:
        result = _run_message_batches(
            inputs,
            batches,
            options=options,
            out_dir=out_dir,
            in_place=in_place,
            journal=journal,
            streams=streams,
        )
    else:
        with streams.batch_progress(len(inputs)) as progress:
            result = compact_files(
                [i.path for i in inputs],
                names=[i.name for i in inputs],
                options=options,
                out_dir=out_dir,
                in_place=in_place,
                progress=progress,
                raise_bugs=traceback_wanted(),
                jobs=jobs or default_jobs(),
                llm_concurrency=llm_concurrency or DEFAULT_LLM_CONCURRENCY,
                journal=journal,
            )
    streams.warnings(result.warnings)
    status = gates.exit_code(result)
    _report(result, gates, streams, output_format=output_format, exit_code=status)
    payload = batch_report_json(result, fail_over=gates.fail_over, fail_on_growth=gates.fail_on_growth)
    streams.write_json_file(report, payload)
    streams.write_json_file(stats_json, payload)
    if status:
        raise SystemExit(status)


def _report(
    result: BatchResult, gates: Gates, streams: Streams, *, output_format: OutputFormat, exit_code: int
) -> None:
    """The final table on stderr (unless ``-q``); for ``github``, the annotations on stdout and
    the summary appended to ``$GITHUB_STEP_SUMMARY`` when the variable names a file."""
    from ctxcompact.output.batch_table import batch_blocks, github_annotations, step_summary

    if not streams.quiet:
        streams.report(batch_blocks(result, gates), to_stderr=True)
    if output_format != OutputFormat.github:
        return
    lines = github_annotations(result, gates)
    if lines:
        streams.write_text("\n".join(lines))
    summary = os.environ.get(STEP_SUMMARY_ENV)
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as file:
                file.write(step_summary(result, gates, exit_code=exit_code) + "\n")
        except OSError as exc:
            streams.warnings(
                [f"${STEP_SUMMARY_ENV} {summary}: cannot append the summary ({exc.strerror or exc})."]
            )


def _run_message_batches(
    inputs: list[BatchInput],
    backend: AnthropicBatches,
    *,
    options: FileOptions,
    out_dir: Path | None,
    in_place: bool,
    journal: BatchJournal | None,
    streams: Streams,
) -> BatchResult:
    """``--summarizer anthropic-batch``: the summaries through Message Batches, one progress
    line on stderr per look at a batch, then the files one after the other."""
    from ctxcompact.batch.message_batches import compact_files_in_batches

    with streams.batch_progress(len(inputs)) as progress:
        return compact_files_in_batches(
            [i.path for i in inputs],
            names=[i.name for i in inputs],
            options=options,
            backend=backend,
            out_dir=out_dir,
            in_place=in_place,
            progress=progress,
            raise_bugs=traceback_wanted(),
            journal=journal,
            on_poll=lambda poll: streams.note(poll.describe()),
        )
