"""``count --timeline``: the context size at every recorded call, as text blocks and a page.

On a terminal a bar chart — one column per call (or per group of calls when there are more
calls than columns), eighth-block heights, the threshold as a dotted line, each compaction
marked ``▲`` under its column — then one line per compaction with its drop. On a pipe a table
of the calls (one line each, compactions as rows of their own) for grep and awk. The page
(:func:`timeline_html`) draws the same figures as an inline SVG line with the compactions and
the threshold marked, and the table. Pure formatting; rich-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from ctxcompact.output.table import Block, Column, Line, Segment, Table

if TYPE_CHECKING:
    from ctxcompact.accounting.history import Call, Compaction, UsageHistory
    from ctxcompact.accounting.prices import Cost

#: Rows of the chart, and the eighths of a row a bar top can stop at.
CHART_ROWS = 10
_EIGHTHS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class Timeline:
    """What a timeline shows: the session's history, its budget and its estimated cost."""

    label: str
    history: UsageHistory
    window: int | None
    threshold: int | None
    cost: Cost | None
    cost_source: str


def _n(value: int) -> str:
    return f"{value:,}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _time(stamp: str | None) -> str:
    return (stamp or "-")[:19].replace("T", " ")


def dollars(value: float) -> str:
    """``$8.43``; a cent or less shows its first significant digits (``$0.0042``)."""
    if value >= 0.01 or value == 0:
        return f"${value:,.2f}"
    return f"${value:.2g}"


def cost_text(cost: Cost | None, source: str) -> str:
    """``cost ≈ $8.43 (estimate: list prices of genai-prices 0.2.3 at each call's date; …)``."""
    if cost is None or not (cost.priced_calls or cost.unpriced_calls):
        return "cost: no API usage recorded"
    if not cost.priced_calls:
        return f"cost: unknown (no price for the model of its {cost.unpriced_calls} calls in {source})"
    left_out = f"; {cost.unpriced_calls} calls without a known price left out" if cost.unpriced_calls else ""
    return (
        f"cost ≈ {dollars(cost.dollars)} (estimate: {cost.priced_calls} calls at the list prices of "
        f"{source} on each call's date, priced as {', '.join(cost.priced_as)}{left_out})"
    )


def _summary(t: Timeline) -> list[Block]:
    history = t.history
    main = history.main
    peak = max(main, key=lambda c: c.context)
    head: list[Segment] = [
        (t.label, "bold"),
        (f"  {history.agent} · {len(main)} calls", ""),
        (f" (+{len(history.calls) - len(main)} subagent)" if len(history.calls) > len(main) else "", ""),
        (f" · {history.model or 'model not recorded'}", ""),
        (f" · {_time(main[0].timestamp)} → {_time(main[-1].timestamp)}", "dim"),
    ]
    tokens = history.tokens
    lines: list[Block] = [
        Line(tuple(head)),
        Line(
            (
                ("context now ", ""),
                (_n(main[-1].context), "bold"),
                (f" · peak {_n(peak.context)} (call {main.index(peak) + 1})", ""),
                (f" · window {_n(t.window)}" if t.window else "", ""),
                (f" · threshold {_n(t.threshold)}" if t.threshold else "", ""),
                (f" · {_plural(len(history.compactions), 'compaction')}", ""),
            )
        ),
        Line.of(
            f"billed tokens: input {_n(tokens.input)} · cache writes {_n(tokens.cache_write)} · "
            f"cache reads {_n(tokens.cache_read)} · output {_n(tokens.output)}",
            "dim",
        ),
        Line.of(cost_text(t.cost, t.cost_source)),
    ]
    return lines


def timeline_report(t: Timeline, *, width: int | None) -> list[Block]:
    """The summary, then a chart ``width`` columns wide (a terminal) or, with ``width`` None,
    the table of calls (a pipe)."""
    if not t.history.main:
        return [
            Line.of(f"{t.label}: no API usage recorded (a Claude Code session or a Codex rollout records it)")
        ]
    blocks = _summary(t)
    if width is None:
        return [*blocks, calls_table(t.history)]
    return [*blocks, *chart(t, width=width), *_drop_lines(t.history)]


def drop_text(point: Compaction, after: int | None) -> str:
    """`` (auto): 155,979 → 36,935``: a compaction's trigger and its drop."""
    trigger = f" ({point.trigger})" if point.trigger else ""
    pre = _n(point.pre_tokens) if point.pre_tokens is not None else "?"
    return f"{trigger}: {pre} → {_n(after) if after is not None else 'no call since'}"


def _drop_lines(history: UsageHistory) -> list[Block]:
    return [
        Line(
            (
                ("▲ ", "bold magenta"),
                (f"compaction after call {point.calls_before}, {_time(point.timestamp)}", ""),
                (drop_text(point, after), "bold"),
                (" tokens", ""),
            )
        )
        for point, after in history.drops()
    ]


def _columns(calls: Sequence[Call], plot: int) -> tuple[list[int], int]:
    """The value of each chart column (the largest context of the calls it stands for) and
    how many calls a column holds; few calls get wider bars, up to four columns each."""
    n = len(calls)
    if n <= plot:
        repeat = max(1, min(4, plot // n))
        return [c.context for c in calls for _ in range(repeat)], -repeat
    per = -(-n // plot)
    return [max(c.context for c in calls[i : i + per]) for i in range(0, n, per)], per


def chart(t: Timeline, *, width: int) -> list[Block]:
    """Bars of the context per call, an axis of tokens on the left, the threshold dotted."""
    main = t.history.main
    top = max(max(c.context for c in main), t.threshold or 0)
    label_width = len(_n(top))
    plot = max(10, width - label_width - 3)
    values, per = _columns(main, plot)
    marks = _mark_columns(t.history, per, len(values))
    threshold_row = min(CHART_ROWS - 1, int(t.threshold / top * CHART_ROWS)) if t.threshold and top else None
    lines: list[Block] = []
    for row in range(CHART_ROWS - 1, -1, -1):
        label = (
            _n(top)
            if row == CHART_ROWS - 1
            else (_n(t.threshold) if row == threshold_row and t.threshold else "")
        )
        cells: list[Segment] = [(label.rjust(label_width) + " ┤", "dim")]
        for value in values:
            eighths = round(value / top * CHART_ROWS * 8) - row * 8 if top else 0
            char = _EIGHTHS[max(0, min(8, eighths))]
            over = t.threshold is not None and value >= t.threshold
            if char == " " and row == threshold_row:
                cells.append(("┈", "yellow"))
            else:
                cells.append((char, "red" if over else "cyan"))
        lines.append(Line(tuple(cells)))
    axis = "".join("▲" if i in marks else "─" for i in range(len(values)))
    lines.append(Line(((("0".rjust(label_width) + " └"), "dim"), (axis, "magenta"))))
    span = f"calls 1–{len(main)}" + (f", {per} a column" if per > 1 else "")
    lines.append(Line.of(" " * (label_width + 2) + span, "dim"))
    return lines


def _mark_columns(history: UsageHistory, per: int, columns: int) -> set[int]:
    """The chart columns a compaction falls on: the first column of the call after it."""
    marks = set()
    for point in history.compactions:
        call = point.calls_before
        column = call * -per if per < 0 else call // per
        marks.add(min(column, columns - 1))
    return marks


def calls_table(history: UsageHistory) -> Table:
    """One row per main-thread call, a row per compaction between them."""
    columns = (
        Column("call", justify="right"),
        Column("line", justify="right", drop=2),
        Column("time", drop=5),
        Column("model", drop=1),
        Column("context", justify="right"),
        Column("input", justify="right", drop=3),
        Column("cache write", justify="right", drop=4),
        Column("cache read", justify="right", drop=4),
        Column("output", justify="right", drop=6),
        Column("note", overflow="fold", shrink=True),
    )
    rows: list[tuple[str, ...]] = []
    styles: dict[tuple[int, int], str] = {}
    points: dict[int, list[tuple[Compaction, int | None]]] = {}
    for point, after in history.drops():
        points.setdefault(point.calls_before, []).append((point, after))
    for i in range(len(history.main) + 1):
        for point, after in points.get(i, ()):
            styles[len(rows), len(columns) - 1] = "bold magenta"
            rows.append(
                (
                    "",
                    str(point.line),
                    _time(point.timestamp),
                    *[""] * 6,
                    f"compaction{drop_text(point, after)}",
                )
            )
        if i < len(history.main):
            call = history.main[i]
            u = call.tokens
            numbers = (call.context, u.input, u.cache_write, u.cache_read, u.output)
            rows.append(
                (str(i + 1), str(call.line), _time(call.timestamp), call.model or "-", *map(_n, numbers), "")
            )
    return Table(columns, tuple(rows), title="Calls", styles=styles)


# --- the page --------------------------------------------------------------------------------


def timeline_svg(t: Timeline, *, width: int = 760, height: int = 320) -> str:
    """The context per call as a line, the threshold dashed, each compaction a labelled rule."""
    main = t.history.main
    pad_l, pad_r, pad_y = 72, 16, 28
    top = max(max(c.context for c in main), t.threshold or 0) or 1
    n = len(main)

    def x(i: float) -> float:
        return pad_l + (i / max(n - 1, 1)) * (width - pad_l - pad_r)

    def y(v: float) -> float:
        return height - pad_y - v / top * (height - 2 * pad_y)

    points = " ".join(f"{x(i):.1f},{y(c.context):.1f}" for i, c in enumerate(main))
    dots = "".join(
        f'<circle cx="{x(i):.1f}" cy="{y(c.context):.1f}" r="2.5" fill="#1f77b4">'
        f"<title>call {i + 1} · {escape(_time(c.timestamp))} · {_n(c.context)} tokens</title></circle>"
        for i, c in enumerate(main)
    )
    parts = [
        f'<line x1="{pad_l}" y1="{height - pad_y}" x2="{width - pad_r}" y2="{height - pad_y}" stroke="#444"/>',
        f'<line x1="{pad_l}" y1="{pad_y}" x2="{pad_l}" y2="{height - pad_y}" stroke="#444"/>',
        f'<text x="{pad_l - 6}" y="{y(top) + 4:.1f}" text-anchor="end" font-size="11">{_n(top)}</text>',
        f'<text x="{pad_l - 6}" y="{height - pad_y + 4}" text-anchor="end" font-size="11">0</text>',
        f'<text x="{(width + pad_l) / 2}" y="{height - 6}" text-anchor="middle" font-size="12">call 1 – {n}</text>',
    ]
    if t.threshold:
        ty = y(t.threshold)
        parts.append(
            f'<line x1="{pad_l}" y1="{ty:.1f}" x2="{width - pad_r}" y2="{ty:.1f}" stroke="#d62728" stroke-dasharray="5,4"/>'
            f'<text x="{pad_l - 6}" y="{ty + 4:.1f}" text-anchor="end" font-size="11" fill="#d62728">{_n(t.threshold)}</text>'
        )
    for point, after in t.history.drops():
        cx = x(max(point.calls_before - 0.5, 0))
        pre = _n(point.pre_tokens) if point.pre_tokens is not None else "?"
        post = _n(after) if after is not None else "?"
        parts.append(
            f'<line x1="{cx:.1f}" y1="{pad_y}" x2="{cx:.1f}" y2="{height - pad_y}" stroke="#9467bd" stroke-width="2">'
            f"<title>compaction: {pre} → {post}</title></line>"
            f'<text x="{cx + 4:.1f}" y="{pad_y + 12}" font-size="11" fill="#9467bd">compaction {pre} → {post}</text>'
        )
    parts.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{points}"/>{dots}')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="context size per call">{"".join(parts)}</svg>'
    )


def timeline_html(timelines: Sequence[Timeline]) -> str:
    """A self-contained page: per session its summary lines, the chart and the calls table."""
    sections = []
    for t in timelines:
        if not t.history.main:
            sections.append(f"<h2>{escape(t.label)}</h2><p>no API usage recorded</p>")
            continue
        summary = "".join(
            f"<p>{escape(b.text)}</p>" for b in _summary(t) + _drop_lines(t.history) if isinstance(b, Line)
        )
        table = calls_table(t.history)
        head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table.rows
        )
        sections.append(
            f"<h2>{escape(t.label)}</h2>{summary}{timeline_svg(t)}"
            f"<details><summary>every call</summary><table><tr>{head}</tr>{body}</table></details>"
        )
    return _PAGE.format(sections="".join(sections))


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctxcompact count --timeline</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}
p{{margin:.2em 0;font-size:14px}}
table{{border-collapse:collapse;font-size:12px;margin-top:1em}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}
</style></head><body>
<h1>Context size per call</h1>
<p>From the usage the agent recorded for each API call (Claude Code <code>message.usage</code>,
Codex <code>token_count</code>): the prompt it sent plus the answer it got. Compactions are marked;
costs are estimates at list prices.</p>
{sections}
</body></html>
"""
