"""Reports as data: lines of styled text, tables of strings and titled panels, printed with
Rich on a terminal (:func:`ctxcompact.output.rich.print_blocks`) and as plain aligned text here.

The one home of the "table of strings" that ``count``, ``check``, ``sessions``, ``config`` and
``eval`` build. Plain text is for pipes (grep, awk, cut): one line per row, never wrapped or
cut, no box characters, no ANSI codes, one header line per table, columns aligned by display
width (wide CJK characters count two). This module imports nothing heavy, so a piped report
never loads ``rich``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxcompact.output.safe_text import printable

#: A run of text and its Rich style ("" for none); styles are dropped in plain text.
Segment = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text made of styled runs."""

    segments: tuple[Segment, ...]

    @classmethod
    def of(cls, text: str, style: str = "") -> Line:
        return cls(((text, style),))

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.segments)


@dataclass(frozen=True, slots=True)
class Column:
    """A heading and how its cells sit. ``justify`` applies everywhere; the rest shapes the
    Rich table on a terminal only (plain cells are never cut):

    ``shrink``: the column may be narrower than its longest cell (a path folds, a preview ends
    in ``…``); every other column keeps its cells whole — a number is never cut.
    ``drop``: when the table does not fit the terminal, columns are left out in this order,
    1 first (previews, then secondary figures); 0 is never left out.
    ``overflow``, ``max_width``, ``no_wrap``: as Rich's.
    """

    header: str
    justify: Literal["left", "right"] = "left"
    overflow: Literal["fold", "ellipsis"] = "ellipsis"
    max_width: int | None = None
    no_wrap: bool = False
    shrink: bool = False
    drop: int = 0


@dataclass(frozen=True, slots=True)
class Table:
    """Cells as strings, one tuple per row; ``footer`` rows (totals) follow a rule.

    ``best`` holds (row, column) of each column's best value (highlighted); ``styles`` gives a
    body cell a Rich style; ``footer_style`` styles the footer rows.
    """

    columns: tuple[Column, ...]
    rows: tuple[tuple[str, ...], ...]
    best: frozenset[tuple[int, int]] = frozenset()
    title: str = ""
    styles: Mapping[tuple[int, int], str] = field(default_factory=dict)
    footer: tuple[tuple[str, ...], ...] = ()
    footer_style: str = ""
    #: On a terminal: no frame, one space between columns (a wide table's compact layout).
    dense: bool = False

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.columns)


@dataclass(frozen=True, slots=True)
class Panel:
    """Lines under a title: a framed box on a terminal, the title line and the lines in plain."""

    title: str
    lines: tuple[Line, ...]


Block = Line | Table | Panel


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide and full-width characters two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


_FLAT = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def natural_widths(table: Table) -> list[int]:
    """Each column's width with every cell whole: its longest line, heading included."""
    grid = [table.headers, *table.rows, *table.footer]
    return [
        max(display_width(line) for row in grid for line in (row[i].splitlines() or [""]))
        for i in range(len(table.columns))
    ]


#: A shrinkable column keeps at least this many columns of the terminal.
MIN_SHRUNK = 12


def fit_columns(table: Table, width: int) -> list[int]:
    """The columns (indexes) to show so the table fits ``width`` terminal columns: every one
    if they fit, else leaving out the ``drop`` columns in their order (1 first) until the whole
    cells (every column but the ``shrink`` ones, which keep :data:`MIN_SHRUNK`) fit, with the
    frame's own columns (a framed table: a rule and a space each side per column; a dense
    one: one space between columns)."""
    natural = natural_widths(table)
    per_column, edge = (1, -1) if table.dense else (3, 1)

    def needed(kept: list[int]) -> int:
        cells = sum(min(natural[i], MIN_SHRUNK) if table.columns[i].shrink else natural[i] for i in kept)
        return cells + per_column * len(kept) + edge

    kept = list(range(len(table.columns)))
    order = sorted((c.drop, -i) for i, c in enumerate(table.columns) if c.drop)
    for _, negative in order:
        if needed(kept) <= width:
            break
        kept.remove(-negative)
    return kept


def plain_table(table: Table) -> str:
    """The header line, the rows and the footer rows, columns aligned, two spaces apart."""
    grid = [table.headers, *table.rows, *table.footer]
    cells = [[printable(cell.translate(_FLAT)) for cell in row] for row in grid]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(table.columns))]
    lines = []
    for row in cells:
        parts = []
        for cell, width, column in zip(row, widths, table.columns, strict=True):
            pad = " " * (width - display_width(cell))
            parts.append(pad + cell if column.justify == "right" else cell + pad)
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def plain_lines(block: Block) -> list[str]:
    """One block as plain lines: a table's title above it, a panel's title above its lines."""
    if isinstance(block, Line):
        return [printable(block.text)]
    if isinstance(block, Panel):
        return [printable(block.title), *(printable(line.text) for line in block.lines)]
    return ([printable(block.title)] if block.title else []) + plain_table(block).splitlines()


def plain_text(blocks: Sequence[Block]) -> str:
    """Blocks as plain text: consecutive lines together, a blank line around each table and
    panel (paragraphs for ``awk -v RS=``)."""
    out: list[str] = []
    previous: Block | None = None
    for block in blocks:
        framed = not isinstance(block, Line)
        if previous is not None and (framed or not isinstance(previous, Line)):
            out.append("")
        out.extend(plain_lines(block))
        previous = block
    return "\n".join(out)
