"""``count``: where the tokens go (``--timeline``: how the context grew, call by call); the
report on stdout, warnings on stderr."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from ctxcompact.accounting.tokens import DEFAULT_ENCODING
from ctxcompact.cli.common import load_all, reports_errors
from ctxcompact.cli.groups import counter_for
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.llm.deadline import DEFAULT_DEADLINE, deadline_in
from ctxcompact.names import BreakdownView as View
from ctxcompact.names import CounterName
from ctxcompact.status import ExitStatus
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

if TYPE_CHECKING:
    import typer

    from ctxcompact.cli.common import Loaded
    from ctxcompact.cli.options import (
        Counter,
        Deadline,
        Encoding,
        Files,
        FormatOption,
        Html,
        Json,
        MaxInputBytes,
        Model,
        ModelsFile,
        SystemTokens,
    )
    from ctxcompact.output.timeline import Timeline


@reports_errors
def count(
    ctx: typer.Context,
    files: Files = None,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    counter: Counter = CounterName.tiktoken,
    encoding: Encoding = DEFAULT_ENCODING,
    deadline: Deadline = DEFAULT_DEADLINE,
    model: Model = None,
    top: Annotated[
        int,
        typer.Option("--top", "-n", min=0, help="How many of the largest messages and tool results to list."),
    ] = 10,
    as_json: Json = False,
    models_file: ModelsFile = None,
    system_tokens: SystemTokens = None,
    timeline: Annotated[
        bool,
        typer.Option(
            "--timeline",
            help="Instead: the context size at every call the session recorded (Claude Code, Codex), "
            "its compactions and estimated cost; a chart on a terminal, a table on a pipe.",
        ),
    ] = False,
    html: Html = None,
    by: Annotated[
        View,
        typer.Option(
            "--by",
            case_sensitive=False,
            help="The picture's parts: category (system and tools, user and assistant text, tool calls, "
            "tool results by tool, thinking, images…), tool, role or type.",
        ),
    ] = View.category,
) -> None:
    """Where do my tokens go? A picture of the real context by category, totals per role and block type, the largest messages and tool results.

    The model (for the share of its window) is --model, else the transcript's own. A Claude
    Code session shows its last recorded usage beside our count, and its sidechain and meta
    entries apart; a Claude model with nothing recorded gets a calibrated estimate. --html
    (with or without --timeline) also writes the timeline as a page.

    \b
    Examples:
      ctxcompact count session.jsonl
      ctxcompact count sessions/ --json | jq .total
      cat request.json | ctxcompact count --counter estimate
      ctxcompact count t.json --model claude-sonnet-4-5     # adds the share of the window
      ctxcompact count session.jsonl --timeline --html growth.html
    """
    from ctxcompact.accounting.windows import load_registry

    streams = streams_for(ctx)
    registry = load_registry(models_file)
    loaded = load_all(files, fmt, max_bytes=max_input_bytes, streams=streams, plain_text=True)
    if timeline or html is not None:
        _print_timelines(_timelines(loaded, model, registry), streams, as_json=as_json, html=html)
    else:
        _print_counts(
            loaded,
            streams,
            counter=counter,
            encoding=encoding,
            model=model,
            registry=registry,
            top=top,
            as_json=as_json,
            system_tokens=system_tokens,
            by=by,
            deadline_at=deadline_in(deadline),
        )
    if loaded.failed:
        raise SystemExit(ExitStatus.BAD_INPUT)


def _print_counts(
    loaded: Loaded,
    streams: Streams,
    *,
    counter: CounterName,
    encoding: str,
    model: str | None,
    registry: dict[str, int],
    top: int,
    as_json: bool,
    system_tokens: int | None,
    by: View,
    deadline_at: float | None,
) -> None:
    """Each conversation counted, with its window share when its model's window is known."""
    from ctxcompact.accounting.breakdown import context_breakdown, tool_calls
    from ctxcompact.accounting.check import conversation_model, measure, unknown_model_warning
    from ctxcompact.accounting.context_size import context_size, side_entries
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.accounting.windows import make_budget, resolve_model
    from ctxcompact.output.json import CountRow, count_to_json

    rows: list[CountRow] = []
    info = resolve_model(model, registry=registry) if model is not None else None
    warning = unknown_model_warning(info) if info is not None else None
    warnings: list[str] = [warning] if warning else []
    for transcript in loaded.transcripts:
        for conv in transcript.conversations:
            own = model or conversation_model(conv)
            chosen = counter_for(counter, encoding=encoding, model=own, deadline_at=deadline_at)
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


def _timelines(loaded: Loaded, model: str | None, registry: dict[str, int]) -> list[Timeline]:
    """A timeline per input file: its whole record, every compaction included."""
    from ctxcompact.accounting.history import usage_history
    from ctxcompact.accounting.prices import price_source
    from ctxcompact.accounting.windows import make_budget, resolve_model
    from ctxcompact.output.timeline import Timeline

    out = []
    for transcript in loaded.transcripts:
        records = [r for conv in transcript.conversations for r in conv.records]
        history = usage_history(records)
        label = transcript.conversations[0].label if transcript.conversations else "stdin"
        info = resolve_model(model or history.model, context_window=history.context_window, registry=registry)
        budget = make_budget(info) if info.known else None
        out.append(
            Timeline(
                label=label,
                history=history,
                window=info.context_window if info.known else None,
                threshold=budget.threshold if budget is not None else None,
                cost=history.cost() if history.calls else None,
                cost_source=price_source() if history.calls else "",  # shown with a cost only
            )
        )
    return out


def _print_timelines(
    items: Sequence[Timeline], streams: Streams, *, as_json: bool, html: Path | None
) -> None:
    """The report on stdout (JSON; a chart as wide as the terminal; a table of the calls on a
    pipe), and the page to ``html`` when asked."""
    if html is not None:
        from ctxcompact.output.timeline import timeline_html

        streams.write_output(timeline_html(items).encode(), html)
    if as_json:
        from ctxcompact.output.json import timeline_json

        streams.write_json(timeline_json(items))
        return
    from ctxcompact.output.table import Line
    from ctxcompact.output.timeline import timeline_report

    stdout = streams.terminal.stdout
    width = stdout.width if stdout.is_terminal else None
    blocks = []
    for i, t in enumerate(items):
        blocks += ([Line.of("")] if i and width is not None else []) + timeline_report(t, width=width)
    streams.report(blocks)
