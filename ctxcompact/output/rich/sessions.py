"""``ctxcompact sessions`` on a terminal: a progress bar while scanning (the table itself is a
:func:`ctxcompact.output.text.sessions_report`, printed like every report)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from ctxcompact.accounting.sessions import ProgressCallback


@contextmanager
def sessions_progress(console: Console, total: int) -> Iterator[ProgressCallback]:
    """A transient progress bar on a terminal while the sessions are read."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("reading sessions"), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task("sessions", total=total)

        def update(done: int, _total: int) -> None:
            progress.update(task, completed=done)

        yield update
