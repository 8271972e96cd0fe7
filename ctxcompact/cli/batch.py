"""``compact``'s batch options (inputs, parallelism, gates, resume, shards) and its batch run.

Declared here so ``cli/compact.py`` stays a thin list of compaction options; the rules live
in :mod:`ctxcompact.batch.files`, :mod:`ctxcompact.batch.inputs` and :mod:`ctxcompact.batch.journal`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ctxcompact.batch.inputs import BatchInput, parse_shard, read_path_list, select_shard
from ctxcompact.cli.common import expand_batch_inputs, traceback_wanted
from ctxcompact.cli.streams import Streams
from ctxcompact.errors import InputError, UsageError
from ctxcompact.names import OutputFormat, SummarizerName

if TYPE_CHECKING:
    from ctxcompact.batch.files import FileOptions
    from ctxcompact.batch.journal import BatchJournal
    from ctxcompact.batch.results import BatchResult, Gates
    from ctxcompact.llm.anthropic_api import AnthropicBatches
    from ctxcompact.llm.transport import BatchPoll
    from ctxcompact.output.terminal import Terminal

#: Where a batch with ``--out-dir`` archives what its rewrites replaced (hidden: never an input).
ARCHIVE_IN_OUT_DIR = ".ctxcompact-archive"

GLOB_OPT = typer.Option(
    None,
    "--glob",
    metavar="PATTERN",
    help="In input directories, take the files matching PATTERN (repeatable) instead of *.json/*.jsonl.",
)
FROM_OPT = typer.Option(
    None,
    "--from",
    metavar="FILE",
    help="Also take the paths listed in FILE (one a line, or JSON); '-' reads the list from stdin.",
)
JOBS_OPT = typer.Option(
    None, "--jobs", "-j", min=1, help="Files compacted in parallel processes [default: the CPU count]."
)
LLM_CONCURRENCY_OPT = typer.Option(
    None,
    "--llm-concurrency",
    min=1,
    help="Summary requests in flight at once across all jobs [default: 4].",
)
FAIL_OVER_OPT = typer.Option(
    None,
    "--fail-over",
    metavar="RATIO",
    min=0.0,
    help="Exit 1 when any file's tokens after / before stays above RATIO (e.g. 0.5).",
)
FAIL_ON_GROWTH_OPT = typer.Option(
    False,
    "--fail-on-growth",
    help="Exit 1 when any file has more tokens after compaction than before.",
)
OUTPUT_FORMAT_OPT = typer.Option(
    OutputFormat.text,
    "--output-format",
    case_sensitive=False,
    help="Batch report: text (the table on stderr), or github (also workflow annotations on stdout "
    "and a Markdown summary appended to $GITHUB_STEP_SUMMARY).",
)
RESUME_OPT = typer.Option(
    False,
    "--resume",
    help="Skip the files an interrupted run of the same batch finished (see its journal).",
)
SHARD_OPT = typer.Option(
    None,
    "--shard",
    metavar="I/N",
    help="Work on shard I of N only (stable hash of each file's relative path): for CI matrices.",
)


def batch_inputs(
    files: list[Path] | None,
    terminal: Terminal,
    *,
    from_list: str | None,
    globs: list[str] | None,
    shard: str | None,
    exclude: tuple[Path | None, ...],
) -> list[BatchInput]:
    """The inputs of a run: the paths given, those of ``--from``, directories expanded,
    then the ``--shard`` selected."""
    listed: list[Path] = []
    if from_list is not None:
        from ctxcompact.transcripts.optionfile import read_option_text

        source = "stdin" if from_list == "-" else from_list
        if from_list != "-":
            text = read_option_text(from_list, option="from_list")
        elif terminal.stdin is None:
            text = ""
        else:  # bounded and binary, as a transcript on stdin is read
            text = read_option_text(None, option="from_list", stdin=getattr(terminal.stdin, "buffer", None))
        listed = [Path(p) for p in read_path_list(text, source=source)]
        if not listed and not files:
            raise InputError(f"--from {source}: the path list is empty.")
    if from_list == "-" and files and any(str(f) == "-" for f in files):
        raise UsageError("--from - reads the path list from stdin: no transcript can come from stdin too.")
    inputs = expand_batch_inputs([*(files or []), *listed], terminal, globs=globs or (), exclude=exclude)
    if shard is not None:
        inputs = select_shard(inputs, *parse_shard(shard))
    return inputs


def is_batch(
    inputs: list[str | None],
    *,
    output: Path | None,
    out_dir: Path | None,
    in_place: bool,
    dry_run: bool,
    shard: str | None = None,
) -> bool:
    """Whether this run is a batch (several inputs, --out-dir or --shard); refuses outputs that
    contradict each other or leave some result without a file."""
    if output is not None and out_dir is not None:
        raise UsageError(
            "-o/--output names one output file and --out-dir a directory for several: give one of them."
        )
    if output is not None and in_place:
        raise UsageError("--in-place rewrites each input file: it does not combine with -o/--output.")
    batch = len(inputs) > 1 or out_dir is not None or shard is not None
    if batch and out_dir is None and not in_place and not dry_run:
        raise UsageError("several inputs: give --out-dir DIR (or --in-place) so each result has a file.")
    if output is not None and batch:
        raise UsageError("-o/--output takes one input; use --out-dir for several.")
    if in_place and None in inputs:
        raise UsageError("--in-place needs files, not stdin.")
    return batch


def journal_path(*, out_dir: Path | None, in_place: bool, report: Path | None, dry_run: bool) -> Path | None:
    """Where a batch keeps its journal: in ``--out-dir``; with ``--in-place``, beside the
    report (``REPORT.journal``); none for a dry run."""
    from ctxcompact.batch.journal import JOURNAL_NAME

    if dry_run:
        return None
    if out_dir is not None and not in_place:
        return out_dir / JOURNAL_NAME
    if report is not None and str(report) != "-":
        return Path(f"{report}.journal")
    return None


def run_batch(
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
    output_format: OutputFormat = OutputFormat.text,
) -> None:
    """Run the batch, render its progress and table, write its report; exit with its gate."""
    from ctxcompact.batch.files import compact_files
    from ctxcompact.batch.journal import BatchJournal
    from ctxcompact.batch.workers import DEFAULT_LLM_CONCURRENCY, default_jobs
    from ctxcompact.output.json import batch_report_json
    from ctxcompact.output.rich.batch import batch_progress

    batches = None
    if options.compact.full.summarizer == SummarizerName.anthropic_batch:
        from ctxcompact.llm.anthropic_api import AnthropicBatches
        from ctxcompact.llm.retry import RequestLimits

        full = options.compact.full
        limits = RequestLimits(
            timeout=full.timeout, max_retries=full.max_retries, deadline_at=full.deadline_at
        )
        batches = AnthropicBatches(limits=limits)  # no key: exit 2 before any file or folder is touched
    where = journal_path(out_dir=out_dir, in_place=in_place, report=report, dry_run=options.dry_run)
    if resume and where is None:
        raise UsageError("--resume needs a journal: give --out-dir, or --report with --in-place.")
    journal = BatchJournal.open(where, options=options, resume=resume) if where is not None else None
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
        with batch_progress(streams.err, len(inputs)) as progress:
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
        raise typer.Exit(status)


#: Where GitHub Actions reads a step's Markdown summary from.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


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
    from ctxcompact.batch.summaries import compact_files_in_batches
    from ctxcompact.output.rich.batch import batch_progress

    def on_poll(poll: BatchPoll) -> None:
        streams.note(poll.describe())

    with batch_progress(streams.err, len(inputs)) as progress:
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
            on_poll=on_poll,
        )
