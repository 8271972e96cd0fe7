"""``eval``: what each strategy costs and what each keeps, side by side; with ``--judge``, what
an LLM judge says of each (priced and confirmed before anything is sent)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ctxcompact.accounting.check import BudgetSpec  # a run-time name: Typer reads the signature
from ctxcompact.cli.common import ensure_writable_dir, expand_batch_inputs, reports_errors
from ctxcompact.cli.groups import budget_options, option_groups
from ctxcompact.cli.options import (
    Deadline,
    Files,
    FormatOption,
    Globs,
    Html,
    Json,
    MaxInputBytes,
)
from ctxcompact.cli.options.compaction import (
    EvalJobs,
    StrategyList,
    TargetRatio,
    TargetTokens,
    WorkDir,
    from_flag,
)
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.compaction.strategies.options import FullOptions
from ctxcompact.errors import InputError, UsageError
from ctxcompact.evaluation.judge import DEFAULT_JUDGE_MODEL, DEFAULT_QUESTIONS_PER_KIND
from ctxcompact.evaluation.run import DEFAULT_CONVERSATIONS, default_strategies
from ctxcompact.llm.deadline import DEFAULT_DEADLINE, deadline_in
from ctxcompact.names import JudgeName, SummarizerName
from ctxcompact.status import ExitStatus
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

if TYPE_CHECKING:
    from ctxcompact.evaluation.judge.ask import Asker
    from ctxcompact.evaluation.judge.result import JudgeResult
    from ctxcompact.evaluation.run import EvalResult


@reports_errors
@option_groups(budget=budget_options)
def eval_command(
    ctx: typer.Context,
    budget: BudgetSpec,  # --model, --context-window, --output-reserve, --threshold, --models-file
    files: Files = None,
    strategy: StrategyList = None,
    strategy_old_spelling: Annotated[str | None, typer.Option("--strategies", hidden=True)] = None,
    summarizer: Annotated[
        SummarizerName,
        from_flag(
            FullOptions,
            "summarizer",
            help="Summarizer for strategies that summarize: extractive (offline) or anthropic.",
            case_sensitive=False,
        ),
    ] = SummarizerName.extractive,
    show_lost: Annotated[
        int, typer.Option("--show-lost", min=0, help="List up to N lost probes per strategy.")
    ] = 0,
    as_json: Json = False,
    html: Html = None,
    conversations: Annotated[
        int,
        typer.Option(
            "--conversations",
            min=1,
            help="Evaluate at most this many conversations of a file that holds several.",
        ),
    ] = DEFAULT_CONVERSATIONS,
    work_dir: WorkDir = None,
    target_tokens: TargetTokens = None,
    target_ratio: TargetRatio = None,
    globs: Globs = None,
    jobs: EvalJobs = None,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    judge: Annotated[
        JudgeName | None,
        typer.Option(
            "--judge",
            help="Also have an LLM judge the compactions (needs ANTHROPIC_API_KEY; costs money, asked "
            "first): anthropic (Messages API) or anthropic-batch (Message Batches API, half the price).",
            show_default=False,
        ),
    ] = None,
    judge_model: Annotated[
        str,
        typer.Option(
            "--judge-model", help="The model that writes, answers and scores the judge's questions."
        ),
    ] = DEFAULT_JUDGE_MODEL,
    questions: Annotated[
        int,
        typer.Option(
            "--questions",
            min=1,
            max=10,
            help="Judge questions per kind (recall, artifact, continuation, decision) per conversation.",
        ),
    ] = DEFAULT_QUESTIONS_PER_KIND,
    deadline: Deadline = DEFAULT_DEADLINE,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", "-y", help="Start the judge without asking (for CI): the cost is still printed."
        ),
    ] = False,
    judge_cache: Annotated[
        Path | None,
        typer.Option(
            "--judge-cache",
            help="Where judge replies are cached by content hash [default: ~/.cache/ctxcompact/judge].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """How much does each strategy save, and what does it lose? Runs every strategy on the
    transcripts (with the budget -m/-w/-t gives, as compact would) and scores the probes taken
    from the compacted-away part: the task, user instructions and last request; files changed
    and their changes; the next step and test status; the agent's decisions; errors,
    identifiers, numbers and URLs. The default strategies are all that need no API key;
    --work-dir defaults to an empty directory here (nothing restored).

    \b
    Examples:
      ctxcompact eval session.jsonl
      ctxcompact eval session.jsonl -w 50000
      ctxcompact eval session.jsonl -w 50000 --target-ratio 0.3
      ctxcompact eval sessions/ --strategy full,prune --show-lost 5
      ctxcompact eval sessions/ --json | jq '.strategies[] | {strategy, ratio}'
      ctxcompact eval sessions/ --html eval.html
      ctxcompact eval ~/.claude/projects/ --glob '*.jsonl' --jobs 4
      ctxcompact eval session.jsonl --judge anthropic-batch --yes
    """
    from ctxcompact.batch.workers import default_jobs
    from ctxcompact.compaction.options import CompactOptions
    from ctxcompact.evaluation.files import EvalSettings, evaluate_inputs

    deadline_at = deadline_in(deadline)
    ensure_writable_dir(html, "--html")
    CompactOptions(target_tokens=target_tokens, target_ratio=target_ratio)  # exit 2 before any work
    chosen = strategy if strategy is not None else strategy_old_spelling
    names = [s.strip() for s in chosen.split(",") if s.strip()] if chosen is not None else None
    settings = EvalSettings(
        tuple(names) if names is not None else default_strategies(),
        summarizer=summarizer.value,
        work_dir=work_dir,
        max_conversations=conversations,
        dialect=fmt.value if fmt else None,
        max_bytes=max_input_bytes,
        keep_context=judge is not None,
        deadline_at=deadline_at,
        budget=budget,
        target_tokens=target_tokens,
        target_ratio=target_ratio,
    )
    if judge is not None:
        _check_judge_key(judge)  # exit 2 before any work
    streams = streams_for(ctx)
    paths = [i.path for i in expand_batch_inputs(files, streams.terminal, globs=globs or ())]
    with streams.files_progress(len(paths), "evaluating") as advance:
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
        judged = _run_judge(
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
        raise SystemExit(ExitStatus.BAD_INPUT)


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
    from ctxcompact.output.eval_table import for_terminal, lost_lines, summary_table
    from ctxcompact.output.table import plain_table

    if as_json:
        from ctxcompact.output.json import eval_json

        data = eval_json(result, show_lost=show_lost)
        if judged is not None:
            from ctxcompact.output.json import add_judge_json

            data = add_judge_json(data, judged)
        streams.write_json(data)
        return
    table = summary_table(result)
    if judged is not None:
        from ctxcompact.output.judge import judge_table

        table = judge_table(table, result, judged)
    stdout = streams.terminal.stdout
    if stdout.is_terminal:
        streams.report([for_terminal(table, stdout.width)])
    else:
        streams.write_text(plain_table(table))
    lost = lost_lines(result, show_lost)
    if lost:
        streams.write_text("\n" + lost)


# --- --judge ----------------------------------------------------------------------------------


def _check_judge_key(judge: JudgeName) -> None:
    """Exit 2 when no API key is set."""
    from ctxcompact.llm.anthropic_api import API_KEY_ENV, api_key_available

    if not api_key_available():
        raise InputError(
            f"eval --judge {judge.value} calls the Anthropic API and needs a key: set {API_KEY_ENV} "
            "(eval without --judge needs none)."
        )


def _make_asker(judge: JudgeName, streams: Streams, *, deadline_at: float | None) -> Asker:
    """The asker for ``--judge`` (exit 2 when no API key is set), within ``--deadline``."""
    _check_judge_key(judge)
    if judge == JudgeName.anthropic_batch:
        from ctxcompact.evaluation.judge.ask import BatchAsker
        from ctxcompact.llm.anthropic_api import AnthropicBatches
        from ctxcompact.llm.retry import RequestLimits

        backend = AnthropicBatches(limits=RequestLimits(deadline_at=deadline_at))
        return BatchAsker(
            backend, on_poll=lambda poll: streams.note(poll.describe()), deadline_at=deadline_at
        )
    from ctxcompact.evaluation.judge.ask import DirectAsker
    from ctxcompact.llm.anthropic_api import AnthropicTransport

    return DirectAsker(AnthropicTransport(), deadline_at=deadline_at)


def _run_judge(
    result: EvalResult,
    streams: Streams,
    *,
    judge: JudgeName,
    model: str,
    per_kind: int,
    yes: bool,
    cache_dir: Path | None,
    deadline_at: float | None,
) -> JudgeResult:
    """Print the cost line, ask to continue (unless ``yes`` or nothing is left to send), run."""
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.evaluation.judge.ask import CachedAsker
    from ctxcompact.evaluation.judge.cache import JudgeCache, default_cache_dir
    from ctxcompact.evaluation.judge.cost import cost_line
    from ctxcompact.evaluation.judge.run import JudgeSettings, judge_eval, plan_judge
    from ctxcompact.output.judge import judge_notes

    asker = _make_asker(judge, streams, deadline_at=deadline_at)
    cache = JudgeCache(cache_dir or default_cache_dir())
    cache.check_writable()
    counter = make_counter()
    settings = JudgeSettings(model=model, per_kind=per_kind)
    plan = plan_judge(result, cache=cache, counter=counter, settings=settings)
    streams.note(cost_line(plan, model=model, batch=judge == JudgeName.anthropic_batch))
    if plan.uncached and not yes:
        if not streams.terminal.stdin_isatty:
            raise UsageError(
                "eval --judge would send requests to the Anthropic API and cannot ask first "
                "(stdin is not a terminal): pass --yes to go ahead."
            )
        if not typer.confirm("Continue?", default=False, err=True):
            raise typer.Abort()
    judged = judge_eval(result, asker=CachedAsker(asker, cache), counter=counter, settings=settings)
    for line in judge_notes(judged):
        streams.note(line)
    return judged
