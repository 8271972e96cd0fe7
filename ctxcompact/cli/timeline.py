"""``count --timeline``: the context size at every call a session recorded, its compactions,
its estimated cost — a chart on a terminal, a table on a pipe, JSON, or an HTML page."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ctxcompact.cli.common import Format, Streams, load_all, print_report, write_stdout

if TYPE_CHECKING:
    from ctxcompact.output.timeline import Timeline


def timelines(
    files: Sequence[Path] | None,
    fmt: Format | None,
    *,
    max_bytes: int,
    model: str | None,
    models_file: Path | None,
    context_window: int | None = None,
) -> tuple[list[Timeline], int]:
    """A timeline per input file (its whole record, every compaction included) and how many
    inputs could not be read."""
    from ctxcompact.accounting.history import usage_history
    from ctxcompact.accounting.prices import price_source
    from ctxcompact.accounting.windows import load_registry, make_budget, resolve_model
    from ctxcompact.output.timeline import Timeline

    registry = load_registry(models_file)
    loaded = load_all(files, fmt, max_bytes=max_bytes)
    out = []
    for transcript in loaded.transcripts:
        records = [r for conv in transcript.conversations for r in conv.records]
        history = usage_history(records)
        label = transcript.conversations[0].label if transcript.conversations else "stdin"
        window = context_window or history.context_window
        info = resolve_model(model or history.model, context_window=window, registry=registry)
        budget = make_budget(info) if info.known else None
        cost = history.cost() if history.calls else None
        out.append(
            Timeline(
                label=label,
                history=history,
                window=info.context_window if info.known else None,
                threshold=budget.threshold if budget is not None else None,
                cost=cost,
                cost_source=price_source(),
            )
        )
    return out, loaded.failed


def print_timelines(
    items: Sequence[Timeline], streams: Streams, *, as_json: bool, html: Path | None, width: int | None
) -> None:
    """The report on stdout (JSON, or text blocks ``width`` wide: None on a pipe), and the page
    to ``html`` when asked."""
    if html is not None:
        from ctxcompact.cli.common import write_output
        from ctxcompact.output.timeline import timeline_html

        write_output(timeline_html(items).encode(), html)
    if as_json:
        import orjson

        from ctxcompact.output.json import timeline_json

        write_stdout(orjson.dumps(timeline_json(items), option=orjson.OPT_INDENT_2).decode())
        return
    from ctxcompact.output.timeline import timeline_report

    blocks = [block for t in items for block in timeline_report(t, width=width)]
    print_report(blocks, streams)
