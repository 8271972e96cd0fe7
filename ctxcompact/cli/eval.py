"""``eval``: what each strategy costs and what each keeps, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ctxcompact.cli.batch import GLOB_OPT
from ctxcompact.cli.common import (
    CONTEXT_WINDOW_OPT,
    DEADLINE_OPT,
    FILES_ARG,
    FORMAT_OPT,
    JSON_OPT,
    MAX_INPUT_BYTES_OPT,
    MODEL_OPT,
    MODELS_FILE_OPT,
    OUTPUT_RESERVE_OPT,
    THRESHOLD_OPT,
    Format,
    ensure_writable_dir,
    expand_batch_inputs,
    reports_errors,
)
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.evaluation.judge import DEFAULT_JUDGE_MODEL, DEFAULT_QUESTIONS_PER_KIND
from ctxcompact.evaluation.run import DEFAULT_CONVERSATIONS, default_strategies
from ctxcompact.names import JudgeName
from ctxcompact.status import ExitStatus

if TYPE_CHECKING:
    from ctxcompact.evaluation.judge.result import JudgeResult
    from ctxcompact.evaluation.run import EvalResult


@reports_errors
def eval_command(
    ctx: typer.Context,
    files: list[Path] | None = FILES_ARG,
    strategies: str | None = typer.Option(
        None,
        "--strategies",
        "-s",
        help=f"Comma-separated strategies to compare [default: all that need no API key: {','.join(default_strategies())}].",
        show_default=False,
    ),
    summarizer: str = typer.Option(
        "extractive",
        "--summarizer",
        help="Summarizer for strategies that summarize: extractive (offline) or anthropic.",
    ),
    show_lost: int = typer.Option(0, "--show-lost", min=0, help="List up to N lost probes per strategy."),
    as_json: bool = JSON_OPT,
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Also write a self-contained HTML page (table, tokens-vs-retention scatter, lost probes).",
    ),
    conversations: int = typer.Option(
        DEFAULT_CONVERSATIONS,
        "--conversations",
        min=1,
        help="Evaluate at most this many conversations of a file that holds several.",
    ),
    work_dir: Path | None = typer.Option(
        None,
        "--work-dir",
        help="Where `full` restores files from [default: an empty temporary directory: nothing restored].",
        show_default=False,
    ),
    globs: list[str] | None = GLOB_OPT,
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        help="Files evaluated in parallel processes [default: the CPU count].",
        show_default=False,
    ),
    fmt: Format | None = FORMAT_OPT,
    max_input_bytes: int = MAX_INPUT_BYTES_OPT,
    model: str | None = MODEL_OPT,
    context_window: int | None = CONTEXT_WINDOW_OPT,
    output_reserve: int | None = OUTPUT_RESERVE_OPT,
    threshold: float = THRESHOLD_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    judge: JudgeName | None = typer.Option(
        None,
        "--judge",
        help="Also have an LLM judge the compactions (needs ANTHROPIC_API_KEY; costs money, asked first): anthropic (Messages API) or anthropic-batch (Message Batches API, half the price).",
        show_default=False,
    ),
    judge_model: str = typer.Option(
        DEFAULT_JUDGE_MODEL,
        "--judge-model",
        help="The model that writes, answers and scores the judge's questions.",
    ),
    questions: int = typer.Option(
        DEFAULT_QUESTIONS_PER_KIND,
        "--questions",
        min=1,
        max=10,
        help="Judge questions per kind (recall, artifact, continuation, decision) per conversation.",
    ),
    deadline: float = DEADLINE_OPT,
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Start the judge without asking (for CI): the cost is still printed."
    ),
    judge_cache: Path | None = typer.Option(
        None,
        "--judge-cache",
        help="Where judge replies are cached by content hash [default: ~/.cache/ctxcompact/judge].",
        show_default=False,
    ),
) -> None:
    """How much does each strategy save, and what does it lose? Runs every strategy on the
    transcripts (with the budget -m/-w/-t gives, as compact would) and scores the probes taken
    from the compacted-away part: the task, user instructions and last request; files changed
    and their changes; the next step and test status; the agent's decisions; errors,
    identifiers, numbers and URLs.

    \b
    Examples:
      ctxcompact eval session.jsonl
      ctxcompact eval session.jsonl -w 50000
      ctxcompact eval sessions/ --strategies full,prune --show-lost 5
      ctxcompact eval sessions/ --json | jq '.strategies[] | {strategy, ratio}'
      ctxcompact eval sessions/ --html eval.html
      ctxcompact eval ~/.claude/projects/ --glob '*.jsonl' --jobs 4
      ctxcompact eval session.jsonl --judge anthropic-batch --yes
    """
    from ctxcompact.accounting.check import BudgetOptions
    from ctxcompact.accounting.windows import load_registry, validate_ratio
    from ctxcompact.batch.workers import default_jobs
    from ctxcompact.evaluation.files import EvalSettings, evaluate_inputs
    from ctxcompact.llm.retry import deadline_in
    from ctxcompact.output.rich.batch import files_progress

    deadline_at = deadline_in(deadline)
    ensure_writable_dir(html, "--html")
    validate_ratio(threshold)
    budget = BudgetOptions(model, context_window, output_reserve, threshold, load_registry(models_file))
    names = [s.strip() for s in strategies.split(",") if s.strip()] if strategies is not None else None
    settings = EvalSettings(
        tuple(names) if names is not None else default_strategies(),
        summarizer=summarizer,
        work_dir=work_dir,
        max_conversations=conversations,
        dialect=fmt.value if fmt else None,
        max_bytes=max_input_bytes,
        keep_context=judge is not None,
        deadline_at=deadline_at,
        budget=budget,
    )
    if judge is not None:
        from ctxcompact.cli.eval_judge import check_judge_key

        check_judge_key(judge)  # exit 2 before any work
    streams = streams_for(ctx)
    paths = [i.path for i in expand_batch_inputs(files, streams.terminal, globs=globs or ())]
    with files_progress(streams.err, len(paths), "evaluating") as advance:
        batch = evaluate_inputs(
            paths,
            settings,
            jobs=jobs or default_jobs(),
            on_done=lambda index, _outcome: advance(paths[index] or "stdin"),
        )
    if len(paths) > 1:
        for error in batch.errors:
            streams.error(error)
    fatal = batch.fatal_error()
    if fatal is not None:
        raise fatal
    result = batch.result
    judged = None
    if judge is not None:
        from ctxcompact.cli.eval_judge import run_judge

        judged = run_judge(
            result,
            streams,
            judge=judge,
            model=judge_model,
            per_kind=questions,
            yes=yes,
            cache_dir=judge_cache,
            deadline_at=deadline_at,
        )
    if html is not None:
        streams.write_output(_html(result, judged, show_lost=show_lost or 20).encode(), html)
    _print_result(result, streams, as_json=as_json, show_lost=show_lost, judged=judged)
    for run in result.runs:
        if run.skipped:
            streams.note(f"{run.source}: {run.strategy} skipped: {run.skipped}")
    if batch.failed:
        raise typer.Exit(ExitStatus.BAD_INPUT)


def _html(result: EvalResult, judged: JudgeResult | None, *, show_lost: int) -> str:
    from ctxcompact.output.eval_table import html_page, summary_table

    if judged is None:
        return html_page(result, show_lost=show_lost)
    from ctxcompact.output.judge import judge_html, judge_table

    table = judge_table(summary_table(result), result, judged)
    return html_page(result, show_lost=show_lost, table=table, extra=judge_html(judged, result.strategies))


def _print_result(
    result: EvalResult, streams: Streams, *, as_json: bool, show_lost: int, judged: JudgeResult | None
) -> None:
    """JSON, or the table (Rich on a terminal, plain text when piped) and the lost probes."""
    from ctxcompact.output.eval_table import lost_lines, summary_table
    from ctxcompact.output.table import plain_table

    if as_json:
        from ctxcompact.output.json import eval_json

        data = eval_json(result, show_lost=show_lost)
        if judged is not None:
            from ctxcompact.output.judge import add_judge_json

            data = add_judge_json(data, judged)
        streams.write_json(data)
        return
    table = summary_table(result)
    if judged is not None:
        from ctxcompact.output.judge import judge_table

        table = judge_table(table, result, judged)
    stdout = streams.terminal.stdout
    if stdout.is_terminal:
        from ctxcompact.output.eval_table import for_terminal

        streams.report([for_terminal(table, stdout.width)])
    else:
        streams.write_text(plain_table(table))
    lost = lost_lines(result, show_lost)
    if lost:
        streams.write_text("\n" + lost)
