"""``eval``'s results as text: the per-strategy table (cells and best values), the lost
probes, and a self-contained HTML page (inline CSS and SVG, no external assets).

Pure formatting of :class:`~ctxcompact.evaluation.run.EvalResult`; the CLI prints the table (a
:class:`ctxcompact.output.table.Table`) with Rich on a terminal and as plain text otherwise,
from the same cells.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from html import escape

from ctxcompact.evaluation.probes import CATEGORIES, KindScore
from ctxcompact.evaluation.run import EvalResult, StrategyRun
from ctxcompact.output.table import Column, Table

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
#: Column headings; the probe categories' columns follow "score".
BASE_HEADERS = ("strategy", "runs", "tokens before → after", "ratio", "fits", "time", "score")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def summary_table(result: EvalResult) -> Table:
    """One row per strategy: the sums of :meth:`EvalResult.summaries`; ``score`` is the mean
    over conversations of the category mean (:attr:`ProbeReport.mean`), each category its
    pooled kept / total."""
    summaries = result.summaries()
    headers = (*BASE_HEADERS, *CATEGORIES)
    rows: list[tuple[str, ...]] = []
    values: list[list[float | None]] = []
    for s in summaries:
        categories = [s.report.category(c) for c in CATEGORIES]
        skipped = f" ({s.skipped} skipped)" if s.skipped else ""
        rows.append(
            (
                s.strategy,
                f"{s.runs}{skipped}",
                f"{s.tokens_before:,} → {s.tokens_after:,}",
                _pct(s.ratio),
                f"{s.fitting}/{s.budgeted}" if s.budgeted else "—",
                f"{s.seconds:.2f}s",
                _pct(s.score),
                *(_score_cell(c) for c in categories),
            )
        )
        fits = s.fitting / s.budgeted if s.budgeted else None
        values.append(
            [None, None, None, _neg(s.ratio), fits, _neg(s.seconds), s.score, *(c.score for c in categories)]
        )
    return Table(tuple(Column(h, drop=_DROP.get(h, 0)) for h in headers), tuple(rows), best_cells(values))


#: Left out first when the table does not fit: time, then runs, then the token figures.
_DROP = {"time": 1, "runs": 2, "tokens before → after": 3}
#: The compact layout's headings.
_SHORT = {
    "tokens before → after": "tokens",
    "continuation": "contin.",
    "artifacts": "artif.",
    "decisions": "decis.",
}


def for_terminal(table: Table, width: int) -> Table:
    """The table as a terminal ``width`` columns wide shows it: titled, figures right-aligned;
    when it does not fit whole, the compact layout — each score without its ``(kept/total)``,
    shorter headings, no frame, and the columns that say least left out first: time, runs, the
    token figures, then the probe categories no strategy has a score for, then the others from
    the last (the best value of each column stays highlighted)."""
    from ctxcompact.output.table import fit_columns

    columns = tuple(replace(c, justify="right") if i else c for i, c in enumerate(table.columns))
    table = replace(table, columns=columns, title="ctxcompact eval: cost and retention per strategy")
    if len(fit_columns(table, width)) == len(table.columns):
        return table
    rows = tuple(tuple(_SCORE.sub("", cell) for cell in row) for row in table.rows)
    kinds = [i for i, c in enumerate(columns) if c.header in CATEGORIES]
    empty = {i for i in kinds if all(row[i] == "—" for row in rows)}
    order = [*(i for i in reversed(kinds) if i in empty), *(i for i in reversed(kinds) if i not in empty)]
    drops = {i: 10 + n for n, i in enumerate(order)}
    compact = tuple(
        replace(c, header=_SHORT.get(c.header, c.header), drop=drops.get(i, c.drop))
        for i, c in enumerate(columns)
    )
    return replace(table, columns=compact, rows=rows, dense=True)


#: `` (130/130)`` after a score.
_SCORE = re.compile(r" \(\d+/\d+\)$")


def _score_cell(score: KindScore) -> str:
    return "—" if not score.total else f"{score.score:.0%} ({score.kept}/{score.total})"


def _neg(value: float | None) -> float | None:
    return None if value is None else -value


def best_cells(values: Sequence[Sequence[float | None]]) -> frozenset[tuple[int, int]]:
    """Where each column peaks (higher is better; ratio and time are negated). No highlight
    for a column with fewer than two values or where all are equal."""
    best: set[tuple[int, int]] = set()
    for col in range(len(values[0]) if values else 0):
        column = [(row[col], i) for i, row in enumerate(values) if row[col] is not None]
        numbers = {v for v, _ in column}
        if len(column) < 2 or len(numbers) < 2:
            continue
        top = max(numbers)  # type: ignore[type-var]
        best.update((i, col) for v, i in column if v == top)
    return frozenset(best)


def lost_lines(result: EvalResult, limit: int) -> str:
    """The first ``limit`` lost probes of each strategy, as ``strategy: [kind] text`` lines."""
    out: list[str] = []
    for s in result.summaries():
        lost = s.report.lost
        if not lost or limit <= 0:
            continue
        out.append(f"{s.strategy}: {len(lost)} probe(s) lost")
        out.extend(f"  [{p.kind}] {_one_line(p.text)}" for p in lost[:limit])
        if len(lost) > limit:
            out.append(f"  … {len(lost) - limit} more")
    return "\n".join(out)


def _one_line(text: str, limit: int = 140) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def html_page(result: EvalResult, *, show_lost: int = 20, table: Table | None = None, extra: str = "") -> str:
    """A self-contained page: the table, a tokens-vs-retention scatter per strategy (one
    point per conversation), and the lost probes. ``table``: the table to show instead of
    :func:`summary_table`'s (the judge's columns added); ``extra``: HTML appended at the end."""
    table = table or summary_table(result)
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=best' if (r, c) in table.best else ''}>{escape(cell)}</td>"
            for c, cell in enumerate(row)
        )
        + "</tr>"
        for r, row in enumerate(table.rows)
    )
    lost = "".join(
        f"<h3>{escape(s.strategy)} — {len(s.report.lost)} lost</h3><ul>"
        + "".join(
            f"<li><b>{escape(p.kind)}</b> {escape(_one_line(p.text, 300))}</li>"
            for p in s.report.lost[:show_lost]
        )
        + "</ul>"
        for s in result.summaries()
        if s.report.lost and show_lost > 0
    )
    page = _PAGE.format(table=f"<table><tr>{head}</tr>{body}</table>", svg=scatter_svg(result), lost=lost)
    return page.replace("</body></html>", f"{extra}</body></html>") if extra else page


def scatter_svg(result: EvalResult, *, width: int = 640, height: int = 360) -> str:
    """x: tokens after as a share of before (left is smaller); y: probes kept (up is more)."""
    pad = 48
    colors = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(result.strategies)}
    marks: list[str] = []
    for run in result.runs:
        point = _point(run)
        if point is None:
            continue
        x = pad + point[0] * (width - 2 * pad)
        y = height - pad - point[1] * (height - 2 * pad)
        tip = f"{run.strategy} · {run.source} · ratio {point[0]:.0%} · score {point[1]:.0%}"
        marks.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colors[run.strategy]}" fill-opacity="0.7">'
            f"<title>{escape(tip)}</title></circle>"
        )
    legend = "".join(
        f'<rect x="{width - 150}" y="{14 + 16 * i}" width="10" height="10" fill="{c}"/>'
        f'<text x="{width - 134}" y="{23 + 16 * i}" font-size="11">{escape(name)}</text>'
        for i, (name, c) in enumerate(colors.items())
    )
    axes = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#444"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#444"/>'
        f'<text x="{width / 2}" y="{height - 12}" text-anchor="middle" font-size="12">tokens after / before (0 %–100 %)</text>'
        f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" text-anchor="middle" font-size="12">score (0 %–100 %)</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="tokens versus retention">{axes}{"".join(marks)}{legend}</svg>'
    )


def _point(run: StrategyRun) -> tuple[float, float] | None:
    if run.ratio is None or run.report is None or run.report.mean is None:
        return None
    return min(max(run.ratio, 0.0), 1.0), run.report.mean


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctxcompact eval</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}
table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}
td.best{{background:#d9f2d9;font-weight:bold}}
li{{font-size:13px;font-family:ui-monospace,monospace}}
</style></head><body>
<h1>ctxcompact eval</h1>
<p>Per strategy: tokens before → after, ratio (after / before, lower is smaller), how many
results fit under the threshold, wall time, and the score: per probe category (task, artifacts,
continuation, decisions, recall) the share of probes from the compacted-away part found in the
compacted context, averaged over the categories and the conversations. Best value per column
highlighted.</p>
{table}
<h2>Tokens vs retention (one point per conversation)</h2>
{svg}
<h2>Lost probes</h2>
{lost}
</body></html>
"""
