"""``count --timeline``: the context size at every call a session recorded, its compactions,
its estimated cost — a chart on a terminal, a table on a pipe, JSON, or an HTML page."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ctxcompact.cli.common import Format, load_all
from ctxcompact.cli.streams import Streams

if TYPE_CHECKING:
    from ctxcompact.output.timeline import Timeline


def timelines(
    files: Sequence[Path] | None,
    fmt: Format | None,
    *,
    max_bytes: int,
    model: str | None,
    models_file: Path | None,
    streams: Streams,
) -> tuple[list[Timeline], int]:
    """A timeline per input file (its whole record, every compaction included) and how many
    inputs could not be read."""
    from ctxcompact.accounting.history import usage_history
    from ctxcompact.accounting.prices import price_source
    from ctxcompact.accounting.windows import load_registry, make_budget, resolve_model
    from ctxcompact.output.timeline import Timeline

    registry = load_registry(models_file)
    loaded = load_all(files, fmt, max_bytes=max_bytes, streams=streams)
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
                cost_source=price_source(),
            )
        )
    return out, loaded.failed


def print_timelines(items: Sequence[Timeline], streams: Streams, *, as_json: bool, html: Path | None) -> None:
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
