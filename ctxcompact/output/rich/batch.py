"""How a batch looks: its progress (a Rich bar on a terminal, a line per file otherwise) and
its final table. Rich is imported here and in :mod:`ctxcompact.output.rich` only."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ctxcompact.batch.results import BatchProgress, BatchResult, ProgressCallback


def _n(value: int) -> str:
    return f"{value:,}"


@contextmanager
def batch_progress(console: Console, total: int) -> Iterator[ProgressCallback]:
    """Progress of a batch; yields the callback that drives it. On a terminal, a transient
    Rich bar (files done, tokens read, elapsed, ETA); otherwise one plain line per finished
    file, so a CI log shows each file as it is done."""
    if not console.is_terminal:
        yield functools.partial(_progress_line, console)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tokens]:,} tokens"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("compacting", total=total, tokens=0)
        tokens = 0

        def update(event: BatchProgress) -> None:
            nonlocal tokens
            if event.item is None:
                progress.update(task, description=f"compacting {os.path.basename(event.input)}")
            else:
                tokens += event.item.before or 0
                progress.update(task, advance=1, tokens=tokens)

        yield update


def _progress_line(console: Console, event: BatchProgress) -> None:
    item = event.item
    if item is None or console.quiet:
        return
    figures = ""
    if item.before is not None and item.after is not None:
        figures = f" {item.before:,} → {item.after:,} tokens"
    note = f": {item.error}" if item.error else (" (done earlier)" if item.resumed else "")
    width = len(str(event.total))
    console.print(
        f"[{event.index + 1:>{width}}/{event.total}] {item.input}: {item.status}{figures}{note}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def render_batch(batch: BatchResult, console: Console, *, fail_over: float | None = None) -> None:
    """The final table: file, tokens before → after, ratio, strategy, status, output or error;
    then a line naming the files above ``fail_over`` when there are any."""
    if console.quiet:  # -q: a quiet console would build the whole table only to drop it
        return
    table = Table(title="Batch compaction", title_justify="left")
    for column, justify in (
        ("file", "left"),
        ("tokens", "right"),
        ("ratio", "right"),
        ("strategy", "left"),
        ("status", "left"),
        ("output", "left"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for item in batch.items:
        over = fail_over is not None and item.over_ratio(fail_over)
        style = "red" if item.status == "failed" or over else ("green" if item.status == "compacted" else "")
        status = item.status + (" (earlier run)" if item.resumed else "") + (" > fail-over" if over else "")
        tokens = (
            f"{_n(item.before)} → {_n(item.after)}"
            if item.before is not None and item.after is not None
            else "-"
        )
        table.add_row(
            item.input,
            tokens,
            f"{item.ratio:.1%}" if item.ratio is not None else "-",
            ",".join(dict.fromkeys(s.strategy for s in item.stats)) if item.stats else "-",
            Text(status, style=style),
            item.output or item.error or "",
        )
    console.print(table)
    if fail_over is not None and (above := batch.over_ratio(fail_over)):
        console.print(
            f"{len(above)} file(s) still above --fail-over {fail_over:g} (tokens after / before).",
            markup=False,
            highlight=False,
        )


@contextmanager
def files_progress(console: Console, total: int, doing: str) -> Iterator[Callable[[str], None]]:
    """A transient Rich bar over ``total`` files on a terminal (nothing otherwise: the
    command's result is what a log needs); yields ``advance(name)``, called as each is done."""
    if not console.is_terminal or total < 2:
        yield lambda _name: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(doing, total=total)

        def advance(name: str) -> None:
            progress.update(task, advance=1, description=f"{doing} {os.path.basename(name)}")

        yield advance
