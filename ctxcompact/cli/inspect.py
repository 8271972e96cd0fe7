"""``count`` and ``check``: reports on stdout, warnings on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ctxcompact.accounting.windows import load_registry, resolve_model
from ctxcompact.cli.common import (
    CONTEXT_WINDOW_OPT,
    COUNTER_OPT,
    DEADLINE_OPT,
    ENCODING_OPT,
    FILES_ARG,
    FORMAT_OPT,
    JSON_OPT,
    MAX_INPUT_BYTES_OPT,
    MODEL_OPT,
    MODELS_FILE_OPT,
    OUTPUT_RESERVE_OPT,
    SYSTEM_TOKENS_OPT,
    THRESHOLD_OPT,
    Format,
    load_all,
    reports_errors,
)
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.llm.retry import deadline_in
from ctxcompact.names import BreakdownView as View
from ctxcompact.names import CounterName
from ctxcompact.status import ExitStatus


def _counter(name: CounterName, encoding: str, model: str | None, deadline_at: float | None = None) -> Any:
    from ctxcompact.accounting.tokens import make_counter

    if name is CounterName.anthropic:
        from ctxcompact.llm.anthropic_api import DEFAULT_COUNT_MODEL, AnthropicTotalCounter
        from ctxcompact.llm.retry import RequestLimits

        limits = RequestLimits(deadline_at=deadline_at)
        return AnthropicTotalCounter(model=model or DEFAULT_COUNT_MODEL, limits=limits)
    return make_counter(name.value, encoding=encoding)


@reports_errors
def count(
    ctx: typer.Context,
    files: list[Path] | None = FILES_ARG,
    fmt: Format | None = FORMAT_OPT,
    max_input_bytes: int = MAX_INPUT_BYTES_OPT,
    counter: CounterName = COUNTER_OPT,
    encoding: str = ENCODING_OPT,
    deadline: float = DEADLINE_OPT,
    model: str | None = MODEL_OPT,
    top: int = typer.Option(
        10, "--top", "-n", min=0, help="How many of the largest messages and tool results to list."
    ),
    as_json: bool = JSON_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    system_tokens: int | None = SYSTEM_TOKENS_OPT,
    timeline: bool = typer.Option(
        False,
        "--timeline",
        help="Instead: the context size at every call the session recorded (Claude Code, Codex), "
        "its compactions and estimated cost; a chart on a terminal, a table on a pipe.",
    ),
    html: Path | None = typer.Option(
        None, "--html", help="With --timeline: also write the chart and the calls as an HTML page here."
    ),
    by: View = typer.Option(
        View.category,
        "--by",
        case_sensitive=False,
        help="The picture's parts: category (system and tools, user and assistant text, tool calls, "
        "tool results by tool, thinking, images…), tool, role or type.",
    ),
) -> None:
    """Where do my tokens go? A picture of the real context by category, totals per role and block type, the largest messages and tool results.

    The model (for the share of its window) is --model, else the transcript's own. A Claude
    Code session shows its last recorded usage beside our count, and its sidechain and meta
    entries apart; a Claude model with nothing recorded gets a calibrated estimate.

    \b
    Examples:
      ctxcompact count session.jsonl
      ctxcompact count sessions/ --json | jq .total
      cat request.json | ctxcompact count --counter estimate
      ctxcompact count t.json --model claude-sonnet-4-5     # adds the share of the window
      ctxcompact count session.jsonl --timeline --html growth.html
    """
    from ctxcompact.accounting.breakdown import context_breakdown, tool_calls
    from ctxcompact.accounting.check import conversation_model, measure, unknown_model_warning
    from ctxcompact.accounting.context_size import context_size, side_entries
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.accounting.windows import make_budget
    from ctxcompact.output.json import CountRow, count_to_json

    streams = streams_for(ctx)
    deadline_at = deadline_in(deadline)
    if timeline or html is not None:
        _timeline(files, fmt, max_input_bytes, model, models_file, as_json, html, streams)
        return
    registry = load_registry(models_file)
    rows: list[CountRow] = []
    warnings: list[str] = []
    loaded = load_all(files, fmt, max_bytes=max_input_bytes, streams=streams, plain_text=True)
    info = resolve_model(model, registry=registry) if model is not None else None
    warning = unknown_model_warning(info) if info is not None else None
    if warning:
        warnings.append(warning)
    for transcript in loaded.transcripts:
        for conv in transcript.conversations:
            own = model or conversation_model(conv)
            chosen = _counter(counter, encoding, own, deadline_at)
            report = measure(conv, chosen)
            warnings.extend(f"{conv.label}: {w}" for w in conv.warnings)
            row_info = info
            if row_info is None and own:
                # The transcript's own model gives the window share when we know its window.
                window = conv.recorded.context_window if conv.recorded is not None else None
                found = resolve_model(own, context_window=window, registry=registry)
                row_info = found if found.known or window else None
            size = context_size(conv, report, model=own, system_tokens=system_tokens)
            plain = chosen if hasattr(chosen, "count_batch") else make_counter(encoding=encoding)
            side = side_entries(conv, plain)
            calls = tool_calls(conv.messages, plain) if by == View.tool else ()
            budget = make_budget(row_info) if row_info is not None else None
            picture = context_breakdown(report, size, view=by.value, budget=budget, calls=calls)
            rows.append(
                CountRow(
                    conv.label,
                    conv.dialect,
                    report,
                    row_info,
                    size=size,
                    side=side,
                    recorded=conv.recorded,
                    breakdown=picture,
                )
            )
    streams.warnings(warnings)
    if as_json:
        streams.write_json(count_to_json(rows, top=top))
    else:
        from ctxcompact.output.text import count_report

        stdout = streams.terminal.stdout
        width = stdout.width if stdout.is_terminal else None
        streams.report(count_report(rows, top=top, width=width, color=stdout.color))
    if loaded.failed:
        raise typer.Exit(ExitStatus.BAD_INPUT)


def _timeline(
    files: list[Path] | None,
    fmt: Format | None,
    max_input_bytes: int,
    model: str | None,
    models_file: Path | None,
    as_json: bool,
    html: Path | None,
    streams: Streams,
) -> None:
    from ctxcompact.cli.timeline import print_timelines, timelines

    items, failed = timelines(
        files, fmt, max_bytes=max_input_bytes, model=model, models_file=models_file, streams=streams
    )
    print_timelines(items, streams, as_json=as_json, html=html)
    if failed:
        raise typer.Exit(ExitStatus.BAD_INPUT)


@reports_errors
def check(
    ctx: typer.Context,
    files: list[Path] | None = FILES_ARG,
    model: str | None = MODEL_OPT,
    context_window: int | None = CONTEXT_WINDOW_OPT,
    output_reserve: int | None = OUTPUT_RESERVE_OPT,
    threshold: float = THRESHOLD_OPT,
    validate: bool = typer.Option(
        True, "--validate/--no-validate", help="Also check API invariants (tool pairs, ids, roles)."
    ),
    fmt: Format | None = FORMAT_OPT,
    max_input_bytes: int = MAX_INPUT_BYTES_OPT,
    counter: CounterName = COUNTER_OPT,
    encoding: str = ENCODING_OPT,
    deadline: float = DEADLINE_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    as_json: bool = JSON_OPT,
    system_tokens: int | None = SYSTEM_TOKENS_OPT,
) -> None:
    """Will my next call fit? Exit 0 within budget, 1 when compaction is due, 2 on bad input.

    threshold = (context window − output reserve) × ratio. Invariant errors (an orphan
    tool_result, an unanswered tool_use, a duplicate id) also exit 2: the API would refuse
    the request.

    The decision is from the transcript's last recorded usage (a Claude Code session's
    message.usage) plus our count of what came after it; else, for a Claude model, our
    count × a measured factor + --system-tokens, marked as an estimate; else our count.

    \b
    Examples:
      ctxcompact check t.json --model claude-sonnet-4-5 && echo fits
      ctxcompact check session.jsonl --threshold 0.75 --json
      ctxcompact check t.json -m gpt-4o || [ $? -ne 1 ] || ctxcompact compact t.json -i
      ctxcompact compact t.json -i --auto -m gpt-4o     # the same in one step
    """
    from ctxcompact.accounting.check import budget_for, check_conversation, unknown_model_warning
    from ctxcompact.output.json import check_to_json

    streams = streams_for(ctx)
    deadline_at = deadline_in(deadline)
    registry = load_registry(models_file)
    results = []
    budget = None
    warnings: list[str] = []
    loaded = load_all(files, fmt, max_bytes=max_input_bytes, streams=streams)
    for transcript in loaded.transcripts:
        for conv in transcript.conversations:
            budget = budget_for(
                conv,
                model=model,
                context_window=context_window,
                output_reserve=output_reserve,
                ratio=threshold,
                registry=registry,
            )
            warning = unknown_model_warning(budget.model)
            if warning:
                warnings.append(warning)
            warnings.extend(f"{conv.label}: {w}" for w in conv.warnings)
            info = budget.model
            chosen = _counter(counter, encoding, info.model, deadline_at)
            results.append(
                check_conversation(
                    conv, budget=budget, counter=chosen, validate=validate, system_tokens=system_tokens
                )
            )
    assert budget is not None
    streams.warnings(warnings)
    if as_json:
        streams.write_json(check_to_json(results, budget))
    else:
        from ctxcompact.output.text import check_report

        streams.report(check_report(results, budget))
    if loaded.failed or any(r.errors for r in results):
        raise typer.Exit(ExitStatus.BAD_INPUT)
    if any(r.needs_compaction for r in results):
        raise typer.Exit(ExitStatus.OVER_THRESHOLD)
