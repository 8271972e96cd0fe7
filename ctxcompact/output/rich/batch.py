"""How a batch's progress looks on a terminal: a Rich bar (a log gets a line per file, written
without rich: :meth:`ctxcompact.cli.streams.Streams.batch_progress`; the final table is
:mod:`ctxcompact.output.batch_table`'s). Rich is imported here and in :mod:`ctxcompact.output.rich`
only."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

from ctxcompact.batch.results import BatchProgress, ProgressCallback


@contextmanager
def batch_progress(console: Console, total: int) -> Iterator[ProgressCallback]:
    """Progress of a batch on a terminal; yields the callback that drives it: a transient Rich
    bar (files done, tokens read, elapsed, ETA)."""
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


@contextmanager
def files_progress(console: Console, total: int, doing: str) -> Iterator[Callable[[str], None]]:
    """A transient Rich bar over ``total`` files, on a terminal (the caller decides:
    :meth:`ctxcompact.cli.streams.Streams.files_progress`); yields ``advance(name)``, called as
    each is done."""
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
