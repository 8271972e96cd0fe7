"""How ``ctxcompact sessions`` looks on a terminal: one table, a progress bar while scanning."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ctxcompact.sessions import ProgressCallback, SessionInfo

#: The agent column, short: the table is wide already.
_AGENTS = {"claude-code": "claude", "codex": "codex"}


def render_sessions(rows: Sequence[SessionInfo], console: Console) -> None:
    """Most recent first: agent, project, session, last activity, live tokens and their
    source, compactions so far, and the verdict against the threshold."""
    table = Table(title_justify="left")
    for column, justify in (
        ("agent", "left"),
        ("project", "left"),
        ("session", "left"),
        ("last activity", "left"),
        ("tokens", "right"),
        ("source", "left"),
        ("compactions", "right"),
        ("threshold", "right"),
        ("verdict", "left"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        if row.error is not None:
            verdict = Text(f"unreadable: {row.error}", style="red")
        elif row.over_threshold:
            verdict = Text("over", style="bold red")
        else:
            verdict = Text("within", style="green")
        table.add_row(
            _AGENTS.get(row.agent, row.agent),
            row.project,
            row.session_id[:8],
            (row.last_activity or "-")[:19].replace("T", " "),
            f"{row.tokens:,}",
            row.source,
            str(row.compactions),
            f"{row.threshold:,}",
            verdict,
        )
    over = sum(r.over_threshold for r in rows)
    table.add_section()
    table.add_row("", f"{len(rows)} sessions", "", "", "", "", "", "", f"{over} over")
    console.print(table)


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
