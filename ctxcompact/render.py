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

from ctxcompact.context_size import describe_side, describe_size
from ctxcompact.models import Budget
from ctxcompact.reports import CountRow, recorded_text
from ctxcompact.usage import CheckResult

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


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def render_count(rows: Sequence[CountRow], console: Console, *, top: int) -> None:
    if len(rows) == 1:
        _render_count_detail(rows[0], console, top=top)
        return
    table = Table(title="Tokens per transcript", title_justify="left")
    table.add_column("transcript", overflow="fold")
    table.add_column("dialect")
    table.add_column("messages", justify="right")
    table.add_column("tokens", justify="right")
    show_share = any(r.model for r in rows)
    if show_share:
        table.add_column("of window", justify="right")
    show_recorded = any(r.size is not None and r.size.recorded is not None for r in rows)
    if show_recorded:
        table.add_column("recorded", justify="right")
        table.add_column("ours vs recorded", justify="right")
    for row in rows:
        cells = [row.label, row.dialect, _n(row.report.message_count), _n(row.report.total)]
        if show_share:
            cells.append(_pct(row.report.total, row.model.context_window) if row.model else "-")
        if show_recorded:
            cells.extend(_recorded_cells(row))
        table.add_row(*cells)
    total = sum(r.report.total for r in rows)
    table.add_section()
    cells = ["total", "", _n(sum(r.report.message_count for r in rows)), _n(total)]
    if show_share:
        cells.append("")
    if show_recorded:
        cells.extend(["", ""])
    table.add_row(*cells, style="bold")
    console.print(table)


def _recorded_cells(row: CountRow) -> list[str]:
    size = row.size
    if size is None or size.recorded is None:
        return ["-", "-"]
    diff = size.difference
    return [_n(size.recorded.context), f"{diff:+.1f}%" if diff is not None else "-"]


def _render_count_detail(row: CountRow, console: Console, *, top: int) -> None:
    report = row.report
    counter = report.counter + (f" ({report.encoding})" if report.encoding else "")
    exact = " — exact total; parts approximate" if report.per_message_approximate else ""
    head = Text.assemble(
        (f"{row.label}", "bold"),
        f"  {row.dialect} · {report.message_count} messages · counter {counter}{exact}\n",
        ("total ", ""),
        (_n(report.total), "bold"),
        " tokens",
    )
    if row.model is not None:
        head.append(
            f" · {_pct(report.total, row.model.context_window)} of {row.model.model or 'default'}'s "
            f"{_n(row.model.context_window)}-token window"
        )
    if row.recorded is not None:
        head.append(f"\n{recorded_text(row.recorded)}")
    console.print(head, soft_wrap=True)
    source = describe_size(row.size) if row.size is not None else ""
    if source:
        console.print(Text(source, style="dim"), soft_wrap=True)
    if row.side is not None and (row.side.sidechain_entries or row.side.meta_entries):
        console.print(Text(describe_side(row.side), style="dim"), soft_wrap=True)

    roles = Table(title="By role", title_justify="left")
    roles.add_column("role")
    roles.add_column("tokens", justify="right")
    roles.add_column("share", justify="right")
    for role, tokens in sorted(report.by_role.items(), key=lambda kv: -kv[1]):
        roles.add_row(role, _n(tokens), _pct(tokens, report.total))
    types = Table(title="By block type", title_justify="left")
    types.add_column("block type")
    types.add_column("tokens", justify="right")
    types.add_column("share", justify="right")
    for kind, tokens in sorted(report.by_type.items(), key=lambda kv: -kv[1]):
        types.add_row(kind, _n(tokens), _pct(tokens, report.total))
    console.print(roles)
    console.print(types)

    if report.messages:
        largest = Table(title=f"Largest messages (top {top})", title_justify="left")
        largest.add_column("#", justify="right")
        largest.add_column("role")
        largest.add_column("tokens", justify="right")
        largest.add_column("preview", overflow="ellipsis", no_wrap=True, max_width=60)
        for m in report.largest_messages(top):
            largest.add_row(str(m.index), m.role, _n(m.tokens), m.preview)
        console.print(largest)
    if report.tool_results:
        results = Table(title=f"Largest tool results (top {top})", title_justify="left")
        results.add_column("#", justify="right")
        results.add_column("tool")
        results.add_column("tokens", justify="right")
        results.add_column("preview", overflow="ellipsis", no_wrap=True, max_width=50)
        for r in report.largest_tool_results(top):
            results.add_row(str(r.message_index), r.tool_name or "?", _n(r.tokens), r.preview)
        console.print(results)


# --- check -----------------------------------------------------------------------------------


def usage_bar(used: int, threshold: int, window: int, width: int = 40) -> Text:
    """``[██████░░░░|░░░]``: filled to the tokens used, a ``|`` at the threshold."""
    width = max(width, 10)
    mark = min(width - 1, round(width * threshold / window)) if window else width - 1
    filled = min(width, round(width * used / window)) if window else width
    bar = Text("[")
    for i in range(width):
        char = "█" if i < filled else "░"
        if i == mark:
            char = "|"
        style = "red" if i < filled and i >= mark else ("green" if i < filled else "dim")
        bar.append(char, style=style)
    bar.append("]")
    return bar


def render_check(results: Sequence[CheckResult], budget: Budget, console: Console) -> None:
    model = budget.model
    name = model.model or "no model given"
    known = "" if model.known else " (unknown: default window)"
    console.print(
        Text.assemble(
            ("model ", "dim"),
            (name, "bold"),
            known,
            ("  window ", "dim"),
            _n(model.context_window),
            ("  output reserve ", "dim"),
            _n(budget.output_reserve),
            ("  ratio ", "dim"),
            f"{budget.ratio:g} ({budget.label})",
            ("  threshold ", "dim"),
            (_n(budget.threshold), "bold"),
        ),
        soft_wrap=True,  # one logical line: never split "threshold" from its number when piped
    )
    if len(results) > 3:
        _render_check_table(results, budget, console)
        return
    for r in results:
        verdict = (
            Text("compaction needed", style="bold red")
            if r.needs_compaction
            else Text("within budget", style="bold green")
        )
        remaining = r.status.remaining
        remain_text = (
            f"{_n(remaining)} tokens left before the threshold"
            if remaining > 0
            else f"{_n(-remaining)} tokens over the threshold"
        )
        lines = [
            Text.assemble(usage_bar(r.status.tokens, budget.threshold, model.context_window), "  ", verdict),
            Text(
                f"{_n(r.status.tokens)} tokens = {r.status.usage:.1%} of the threshold, "
                f"{r.status.window_share:.1%} of the window; {remain_text}"
                + (" (exact)" if r.report.exact_total else f" (counter: {r.report.counter})")
            ),
        ]
        source = describe_size(r.size) if r.size is not None else ""
        if source:
            lines.append(Text(source, style="dim"))
        if r.recorded is not None:
            lines.append(
                Text(f"{recorded_text(r.recorded)}; counted here: {_n(r.report.total)}", style="dim")
            )
        for v in r.violations:
            style = "red" if v.severity == "error" else "yellow"
            lines.append(Text(f"{v.severity}: {v}", style=style))
        console.print(Panel(Group(*lines), title=r.label, title_align="left", expand=False))


def _render_check_table(results: Sequence[CheckResult], budget: Budget, console: Console) -> None:
    """Many conversations (a directory, a trajectory collection): one row each, errors listed."""
    table = Table(title_justify="left")
    for column, justify in (
        ("transcript", "left"),
        ("tokens", "right"),
        ("of threshold", "right"),
        ("left", "right"),
        ("verdict", "left"),
        ("errors", "right"),
        ("warnings", "right"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    sources = [r.size.source if r.size is not None else "count" for r in results]
    show_source = any(s != "count" for s in sources)
    if show_source:
        table.add_column("source")
    for r, source in zip(results, sources, strict=True):
        errors = len(r.errors)
        table.add_row(
            r.label,
            _n(r.status.tokens),
            f"{r.status.usage:.1%}",
            _n(r.status.remaining),
            Text("compaction needed", style="red")
            if r.needs_compaction
            else Text("within budget", style="green"),
            Text(str(errors), style="red") if errors else Text("0"),
            str(len(r.violations) - errors),
            *([source] if show_source else []),
        )
    over = sum(r.needs_compaction for r in results)
    table.add_section()
    table.add_row(
        f"{len(results)} transcripts",
        _n(sum(r.status.tokens for r in results)),
        "",
        "",
        f"{over} need compaction",
        str(sum(len(r.errors) for r in results)),
        "",
        *([""] if show_source else []),
    )
    console.print(table)
    for r in results:
        for v in r.errors:
            console.print(Text(f"{r.label}: error: {v}", style="red"))


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


def render_config(payload: dict[str, Any], console: Console) -> None:
    """``ctxcompact config``: the file found, then each setting with its source and commands."""
    console.print(f"config file: {payload['file'] or '(none found)'}", markup=False, highlight=False)
    table = Table(title="Effective settings", title_justify="left")
    for column in ("setting", "value", "source", "commands"):
        table.add_column(column, overflow="fold")
    for row in payload["settings"]:
        style = "" if row["source"] == "default" else "bold"
        value = row["value"] if isinstance(row["value"], str) else repr(row["value"])
        table.add_row(  # Text, not markup: "[check]" is a source, not a style
            Text(row["key"]), Text(value, style=style), Text(row["source"]), Text(", ".join(row["commands"]))
        )
    console.print(table)
