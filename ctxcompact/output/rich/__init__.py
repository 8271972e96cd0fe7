"""How results look: Rich tables, panels and progress bars for people (JSON shapes are
:mod:`ctxcompact.output.json`'s).

With :mod:`ctxcompact.output.rich.offload`, the only module that imports ``rich``. Functions take
result objects and a console; they decide nothing about the results themselves.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ctxcompact.output.safe_text import printable
from ctxcompact.output.table import Block
from ctxcompact.output.table import Line as TextLine
from ctxcompact.output.table import Panel as TextPanel
from ctxcompact.output.table import Table as TextTable

if TYPE_CHECKING:
    from ctxcompact.batch.files import FileCompaction
    from ctxcompact.output.terminal import Stream


class _PipeSafeConsole(Console):
    """A console that falls silent when its reader goes away (``| head``).

    Rich's default raises ``SystemExit(1)``, which for ``check`` would read as "compaction
    needed" whatever the verdict: here the output is dropped and the command exits with its
    own status.
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Every run of text Rich writes passes here, whatever drew it (a table, a panel, a
        # progress bar, a plain print): text from a transcript loses its control characters
        # (:mod:`ctxcompact.output.safe_text`); Rich's own codes are control segments or
        # styles, added after this.
        return super()._render_buffer(
            segment if segment.control else Segment(printable(segment.text), segment.style, None)
            for segment in buffer
        )

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.file.fileno())
        except (OSError, ValueError):
            pass


def make_console(stream: Stream) -> Console:
    """A console on one of the run's streams (:mod:`ctxcompact.output.terminal`): drawn for a
    terminal or not, coloured or not, and its width, all as the terminal decided — Rich's own
    guesses (``NO_COLOR``, ``FORCE_COLOR``, ``COLUMNS``) are already in it."""
    return _PipeSafeConsole(
        file=stream.file,
        highlight=False,
        soft_wrap=False,
        force_terminal=stream.is_terminal,
        no_color=not stream.color,
        width=stream.width,
    )


def _n(value: int) -> str:
    return f"{value:,}"


def print_blocks(blocks: Sequence[Block], console: Console) -> None:
    """A report (:mod:`ctxcompact.output.text`) on a terminal: lines, Rich tables that fit the
    console's width (:func:`fitted_table`), panels."""
    for block in blocks:
        if isinstance(block, TextLine):
            console.print(_text(block), soft_wrap=True)
        elif isinstance(block, TextPanel):
            body = Group(*(_text(line) for line in block.lines))
            console.print(Panel(body, title=Text(block.title), title_align="left", expand=False))
        else:
            console.print(fitted_table(block, console.width))


def _text(line: TextLine) -> Text:
    return Text.assemble(*line.segments)


def fitted_table(table: TextTable, width: int) -> Table:
    """The table as Rich draws it within ``width`` columns: columns left out in their ``drop``
    order when the whole cells would not fit (a caption names them), every column but the
    ``shrink`` ones at least as wide as its longest cell — so a number is never cut."""
    from ctxcompact.output.table import MIN_SHRUNK, fit_columns, natural_widths

    kept = fit_columns(table, width)
    natural = natural_widths(table)
    left_out = [c.header for i, c in enumerate(table.columns) if i not in kept]
    caption = f"left out to fit {width} columns: {', '.join(left_out)}" if left_out else None
    style: dict[str, Any] = (
        {"box": box.SIMPLE_HEAD, "show_edge": False, "pad_edge": False, "padding": (0, 0)}
        if table.dense
        else {}
    )
    out = Table(
        title=table.title or None, title_justify="left", caption=caption, caption_justify="left", **style
    )
    shrinking = [i for i in kept if table.columns[i].shrink]
    rules = len(kept) - 1 if table.dense else 3 * len(kept) + 1
    room = width - rules - sum(natural[i] for i in kept if i not in shrinking)
    share = max(room // len(shrinking), MIN_SHRUNK) if shrinking else 0
    for i in kept:
        c = table.columns[i]
        max_width = c.max_width
        if c.shrink and c.no_wrap:  # one line each, cut with … at its share of the room
            max_width = min(max_width or natural[i], share)
        out.add_column(
            c.header,
            justify=c.justify,
            overflow=c.overflow,
            max_width=max_width,
            no_wrap=c.no_wrap or not c.shrink,
            min_width=None if c.shrink else natural[i],
        )
    for r, row in enumerate(table.rows):
        out.add_row(
            *(
                Text(row[i], style=table.styles.get((r, i), "bold green" if (r, i) in table.best else ""))
                for i in kept
            )
        )
    if table.footer:
        out.add_section()
    for row in table.footer:
        out.add_row(*(Text(row[i]) for i in kept), style=table.footer_style or None)
    return out


def render_warnings(warnings: Sequence[str], console: Console) -> None:
    for warning in warnings:
        console.print(Text(f"warning: {warning}", style="yellow"), soft_wrap=True)


# --- compact -------------------------------------------------------------------------------------


def render_compact_stats(stats: Any, console: Console, *, label: str | None = None) -> None:
    """The stats panel on stderr (``stats`` is a :class:`ctxcompact.compaction.pipeline.CompactStats`;
    its lines are :func:`ctxcompact.output.compact_panel.compact_stats_lines`)."""
    from ctxcompact.output.compact_panel import compact_stats_lines, compact_stats_title

    lines = [Text.assemble(*line.segments) for line in compact_stats_lines(stats)]
    console.print(
        Panel(Group(*lines), title=compact_stats_title(stats, label), title_align="left", expand=False)
    )


def render_file_stats(done: FileCompaction, console: Console) -> None:
    """One stats panel per conversation, labelled when the file holds several."""
    for r in done.results:
        render_compact_stats(r.stats, console, label=r.conversation.label if len(done.results) > 1 else None)
