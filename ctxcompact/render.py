"""How results look: Rich tables, panels and progress bars for people (JSON shapes are
:mod:`ctxcompact.reports`'s).

With :mod:`ctxcompact.render_tools`, the only module that imports ``rich``. Functions take
result objects and a console; they decide nothing about the results themselves.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ctxcompact.text_table import Block
from ctxcompact.text_table import Line as TextLine
from ctxcompact.text_table import Panel as TextPanel
from ctxcompact.text_table import Table as TextTable

if TYPE_CHECKING:
    from ctxcompact.batch import FileCompaction


class _PipeSafeConsole(Console):
    """A console that falls silent when its reader goes away (``| head``).

    Rich's default raises ``SystemExit(1)``, which for ``check`` would read as "compaction
    needed" whatever the verdict: here the output is dropped and the command exits with its
    own status.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.file.fileno())
        except (OSError, ValueError):
            pass


def make_console(file: Any) -> Console:
    """A console on ``file``: colours only on a terminal; a stable width when piped."""
    is_tty = bool(getattr(file, "isatty", lambda: False)())
    return _PipeSafeConsole(
        file=file,
        highlight=False,
        soft_wrap=False,
        no_color=not is_tty,
        width=None if is_tty else 100,
    )


def _n(value: int) -> str:
    return f"{value:,}"


def print_blocks(blocks: Sequence[Block], console: Console) -> None:
    """A report (:mod:`ctxcompact.text_reports`) on a terminal: lines, Rich tables, panels."""
    for block in blocks:
        if isinstance(block, TextLine):
            console.print(_text(block), soft_wrap=True)
        elif isinstance(block, TextPanel):
            body = Group(*(_text(line) for line in block.lines))
            console.print(Panel(body, title=Text(block.title), title_align="left", expand=False))
        else:
            console.print(_table(block))


def _text(line: TextLine) -> Text:
    return Text.assemble(*line.segments)


def _table(table: TextTable) -> Table:
    out = Table(title=table.title or None, title_justify="left")
    for c in table.columns:
        out.add_column(
            c.header, justify=c.justify, overflow=c.overflow, max_width=c.max_width, no_wrap=c.no_wrap
        )
    for r, row in enumerate(table.rows):
        styles = [
            table.styles.get((r, i), "bold green" if (r, i) in table.best else "") for i in range(len(row))
        ]
        out.add_row(*(Text(cell, style=style) for cell, style in zip(row, styles, strict=True)))
    if table.footer:
        out.add_section()
    for row in table.footer:
        out.add_row(*(Text(cell) for cell in row), style=table.footer_style or None)
    return out


def render_warnings(warnings: Sequence[str], console: Console) -> None:
    for warning in warnings:
        console.print(Text(f"warning: {warning}", style="yellow"), soft_wrap=True)


# --- compact / restore-files -------------------------------------------------------------------


def render_compact_stats(stats: Any, console: Console, *, label: str | None = None) -> None:
    """The stats panel on stderr (``stats`` is a :class:`ctxcompact.compact.CompactStats`)."""
    lines: list[Text] = []
    if stats.compacted:
        lines.append(
            Text.assemble(
                ("tokens ", "dim"),
                _n(stats.original_tokens),
                " → ",
                (_n(stats.compacted_tokens), "bold"),
                f"  ({stats.compaction_ratio:.1%} of the original)",
            )
        )
    else:
        lines.append(
            Text.assemble(
                ("unchanged: ", "bold yellow"), stats.reason, f"  ({_n(stats.original_tokens)} tokens)"
            )
        )
    if stats.compacted:
        detail = (
            f"messages compacted {stats.compacted_message_count}, retained {stats.retained_message_count}; "
            f"files restored {stats.restored_file_count} ({_n(stats.restored_token_count)} tokens)"
        )
        lines.append(Text(detail))
        if stats.summarizer:
            retries = max(0, (stats.attempts or 1) - 1)
            lines.append(Text(f"summarizer {stats.summarizer}" + (f", {retries} retries" if retries else "")))
        for step in stats.steps:
            extra = {
                k: v
                for k, v in step.items()
                if k not in ("strategy", "changed") and isinstance(v, int | float) and not isinstance(v, bool)
            }
            if step["strategy"] != "full" and extra:
                lines.append(
                    Text(
                        f"{step['strategy']}: "
                        + ", ".join(
                            f"{k.replace('_', ' ')} {_n(v) if isinstance(v, int) else v}"
                            for k, v in extra.items()
                        )
                    )
                )
        if stats.retention is not None:
            lines.append(Text(f"retention check: {stats.retention.summary_line()}"))
        if stats.archive_path:
            lines.append(Text.assemble(("originals archived to ", "dim"), stats.archive_path))
        if stats.appended:
            lines.append(Text("appended after the history as a compaction point", style="dim"))
        if stats.threshold is not None:
            over = stats.still_over_threshold
            lines.append(
                Text(
                    f"threshold {_n(stats.threshold)}: " + ("still over it" if over else "now under it"),
                    style="red" if over else "green",
                )
            )
        if stats.reason and stats.reason != "compacted":
            lines.append(Text(stats.reason, style="yellow"))
    for warning in stats.warnings:
        lines.append(Text(f"warning: {warning}", style="yellow"))
    console.print(
        Panel(
            Group(*lines),
            title=f"ctxcompact compact · {stats.strategy}" + (f" · {label}" if label else ""),
            title_align="left",
            expand=False,
        )
    )


def render_file_stats(done: FileCompaction, console: Console) -> None:
    """One stats panel per conversation, labelled when the file holds several."""
    for r in done.results:
        render_compact_stats(r.stats, console, label=r.conversation.label if len(done.results) > 1 else None)


def render_restore(result: Any, console: Console) -> None:
    """Restored and skipped files (``result`` is a :class:`ctxcompact.restore.RestoreResult`)."""
    table = Table(title="restore-files", title_justify="left")
    table.add_column("path", overflow="fold")
    table.add_column("tokens", justify="right")
    table.add_column("status")
    for f in result.files:
        table.add_row(f.path, _n(f.tokens), Text("restored", style="green"))
    for s in result.skipped:
        table.add_row(s.path, "-", Text(f"skipped: {s.reason}", style="yellow"))
    if not result.files and not result.skipped:
        table.add_row("(no file reads found)", "", "")
    console.print(table)
