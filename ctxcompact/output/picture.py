"""``count``'s picture of the real context, after Claude Code's ``/context``: a stacked bar of
the window by category — each category its colour (its own glyph when colours are off), free
space light, the output reserve shaded, the threshold marked under the bar — and a legend with
every category's tokens and share. On a pipe the legend alone, as a table. Rich-free.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ctxcompact.output.table import Block, Column, Line, Segment, Table

if TYPE_CHECKING:
    from ctxcompact.accounting.breakdown import Breakdown

#: (colour, glyph without colour) of the parts in order; estimated parts are grey.
_PALETTE = (
    ("blue", "█"),
    ("magenta", "▓"),
    ("cyan", "▚"),
    ("green", "▞"),
    ("yellow", "■"),
    ("red", "◆"),
    ("bright_blue", "●"),
    ("bright_magenta", "◼"),
    ("bright_cyan", "◇"),
    ("bright_green", "○"),
    ("bright_yellow", "◈"),
    ("bright_red", "▣"),
)
_ESTIMATED = ("grey50", "▦")
_FREE = ("grey35", "░")
_RESERVE = ("grey50", "▒")
#: The bar is at most this wide (cells), however wide the terminal.
MAX_BAR = 100


def _n(value: int) -> str:
    return f"{value:,}"


def _styles(breakdown: Breakdown, *, color: bool) -> list[tuple[str, str]]:
    """(style, glyph) per part: solid blocks in colours, or a glyph each without colour."""
    out = []
    for i, part in enumerate(breakdown.parts):
        style, glyph = _ESTIMATED if part.estimated else _PALETTE[i % len(_PALETTE)]
        out.append((style, "█" if color and not part.estimated else glyph))
    return out


def _cells(values: list[int], width: int) -> list[int]:
    """Cells per value, summing to ``width`` (largest remainder); a value that is not zero
    gets at least one cell when there is room."""
    whole = sum(values)
    if whole <= 0:
        return [0] * len(values)
    exact = [v * width / whole for v in values]
    cells = [math.floor(x) for x in exact]
    for i in sorted(range(len(values)), key=lambda i: cells[i] - exact[i])[: width - sum(cells)]:
        cells[i] += 1
    for i, v in enumerate(values):
        if v and not cells[i]:
            donor = max(range(len(cells)), key=lambda j: cells[j])
            if cells[donor] > 1:
                cells[donor] -= 1
                cells[i] = 1
    return cells


def bar(breakdown: Breakdown, *, width: int, color: bool) -> list[Block]:
    """The stacked bar ``width`` cells wide (the window, or the context alone without one)
    and, under it, the threshold's mark."""
    styles = _styles(breakdown, color=color)
    values = [p.tokens for p in breakdown.parts]
    segments: list[tuple[str, str]] = list(styles)
    free, reserve = breakdown.free, breakdown.output_reserve
    if free is not None and reserve is not None:
        values += [free, reserve]
        segments += [(_FREE[0], _FREE[1]), (_RESERVE[0], _RESERVE[1])]
    cells = _cells(values, width)
    line: list[Segment] = []
    for (style, glyph), n in zip(segments, cells, strict=True):
        if n:
            line.append((glyph * n, style))
    blocks: list[Block] = [Line(tuple(line))]
    if breakdown.threshold is not None:
        scale = sum(values)
        at = min(width - 1, round(breakdown.threshold / scale * width)) if scale else 0
        label = f"threshold {_n(breakdown.threshold)}"
        mark = "▲ " + label if at + len(label) + 2 <= width else label + " ▲"
        start = at if mark.startswith("▲") else max(at - len(label) - 1, 0)
        style = "bold red" if breakdown.over_threshold else "bold yellow"
        blocks.append(Line(((" " * start, ""), (mark, style))))
    return blocks


def legend(breakdown: Breakdown, *, color: bool, swatches: bool = True) -> Table:
    """Every part with its tokens and share (of the window when it is known, as ``/context``
    shows them; of the context otherwise), then free space and the output reserve."""
    whole = breakdown.window or breakdown.total
    share_header = "of window" if breakdown.window else "share"

    def share(tokens: int) -> str:
        return f"{100 * tokens / whole:.1f}%" if whole else "-"

    rows: list[tuple[str, ...]] = []
    styles: dict[tuple[int, int], str] = {}
    for i, (part, (style, glyph)) in enumerate(
        zip(breakdown.parts, _styles(breakdown, color=color), strict=True)
    ):
        styles[i, 0] = style
        rows.append((glyph, part.name, _n(part.tokens), share(part.tokens)))
    if breakdown.free is not None and breakdown.output_reserve is not None:
        for name, tokens, (style, glyph) in (
            ("free space", breakdown.free, _FREE),
            ("output reserve", breakdown.output_reserve, _RESERVE),
        ):
            styles[len(rows), 0] = style
            rows.append((glyph, name, _n(tokens), share(tokens)))
    columns: tuple[Column, ...] = (
        Column(""),
        Column(breakdown.view),
        Column("tokens", justify="right"),
        Column(share_header, justify="right"),
    )
    footer: tuple[tuple[str, ...], ...] = (("", "context", _n(breakdown.total), share(breakdown.total)),)
    if not swatches:
        columns, rows = columns[1:], [row[1:] for row in rows]
        footer = (footer[0][1:],)
        styles = {}
    return Table(
        columns,
        tuple(rows),
        title=f"Context by {breakdown.view}",
        styles=styles,
        footer=footer,
        footer_style="bold",
    )


def picture(breakdown: Breakdown, *, width: int | None, color: bool) -> list[Block]:
    """The bar and its legend on a terminal ``width`` columns wide; the legend alone (no
    swatches) on a pipe (``width`` None). Estimated parts are named so in a line below."""
    note = [Line.of(breakdown.note, "dim")] if breakdown.note else []
    if width is None:
        return [legend(breakdown, color=False, swatches=False), *note]
    return [*bar(breakdown, width=min(width, MAX_BAR), color=color), legend(breakdown, color=color), *note]
