"""What ``count``, ``check``, ``sessions`` and ``config`` report, as blocks of text
(:mod:`ctxcompact.output.table`): title lines, tables of strings and panels.

Pure formatting of result objects, rich-free: the CLI prints the same blocks with Rich on a
terminal (:func:`ctxcompact.output.rich.print_blocks`) and as plain aligned text when piped.
Styles are Rich style names, ignored in plain text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxcompact.accounting.context_size import describe_side, describe_size
from ctxcompact.output.json.inspection import CountRow
from ctxcompact.output.table import Block, Column, Line, Panel, Segment, Table

if TYPE_CHECKING:
    from ctxcompact.accounting.check import CheckResult
    from ctxcompact.accounting.models_table import KnownModel
    from ctxcompact.accounting.sessions import SessionInfo
    from ctxcompact.accounting.windows import Budget
    from ctxcompact.transcripts.dialects.rollout_usage import RolloutUsage

#: More conversations than this and ``check`` shows one table row each instead of a panel each.
CHECK_PANELS_UP_TO = 3
#: The agent column of ``sessions``, short: the table is wide already.
_AGENTS = {"claude-code": "claude", "codex": "codex"}


def _n(value: int) -> str:
    return f"{value:,}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _right(header: str, **kwargs: Any) -> Column:
    return Column(header, justify="right", **kwargs)


# --- count -----------------------------------------------------------------------------------


def count_report(
    rows: Sequence[CountRow], *, top: int, width: int | None = None, color: bool = False
) -> list[Block]:
    """One conversation: its detail; several: a table of one row each and a total. The
    headline figure is the context size ``check`` decides by; our own count stands beside it
    when the two differ (recorded usage, rescaled, estimate)."""
    if len(rows) == 1:
        return _count_detail(rows[0], top=top, width=width, color=color)
    show_share = any(r.model for r in rows)
    show_size = any(_sized(r) for r in rows)
    show_recorded = any(r.size is not None and r.size.recorded is not None for r in rows)
    columns = [
        Column("transcript", overflow="fold", shrink=True),
        Column("dialect", drop=3),
        _right("messages", drop=4),
    ]
    columns += (
        [_right("context"), Column("source", drop=5), _right("counted", drop=2)]
        if show_size
        else [_right("tokens")]
    )
    columns += [_right("of window", drop=6)] if show_share else []
    columns += [_right("recorded", drop=1), _right("ours vs recorded", drop=1)] if show_recorded else []
    body = []
    for row in rows:
        cells = [row.label, row.dialect, _n(row.report.message_count)]
        if show_size:
            cells += [_n(_context(row)), row.size.source if row.size else "count", _n(row.report.total)]
        else:
            cells.append(_n(row.report.total))
        if show_share:
            cells.append(_pct(_context(row), row.model.context_window) if row.model else "-")
        if show_recorded:
            cells.extend(_recorded_cells(row))
        body.append(tuple(cells))
    total = ["total", "", _n(sum(r.report.message_count for r in rows))]
    if show_size:
        total += [_n(sum(_context(r) for r in rows)), "", _n(sum(r.report.total for r in rows))]
    else:
        total.append(_n(sum(r.report.total for r in rows)))
    total += [""] * (len(columns) - len(total))
    table = Table(
        tuple(columns),
        tuple(body),
        title="Tokens per transcript",
        footer=(tuple(total),),
        footer_style="bold",
    )
    return [table]


def _sized(row: CountRow) -> bool:
    """The context size is not simply our count (recorded usage, rescaled, estimate)."""
    return row.size is not None and row.size.source != "count"


def _context(row: CountRow) -> int:
    return row.size.tokens if row.size is not None else row.report.total


def _recorded_cells(row: CountRow) -> list[str]:
    size = row.size
    if size is None or size.recorded is None:
        return ["-", "-"]
    diff = size.difference
    return [_n(size.recorded.context), f"{diff:+.1f}%" if diff is not None else "-"]


def _count_detail(row: CountRow, *, top: int, width: int | None, color: bool) -> list[Block]:
    report = row.report
    counter = report.counter + (f" ({report.encoding})" if report.encoding else "")
    exact = " — exact total; parts approximate" if report.per_message_approximate else ""
    headline = ("context ", _context(row)) if _sized(row) else ("total ", report.total)
    total: list[Segment] = [(headline[0], ""), (_n(headline[1]), "bold"), (" tokens", "")]
    if row.model is not None:
        total.append(
            (
                f" · {_pct(headline[1], row.model.context_window)} of {row.model.model or 'default'}'s "
                f"{_n(row.model.context_window)}-token window",
                "",
            )
        )
    if _sized(row):
        total.append((f" · our count {_n(report.total)}", ""))
    blocks: list[Block] = [
        Line(
            (
                (row.label, "bold"),
                (f"  {row.dialect} · {report.message_count} messages · counter {counter}{exact}", ""),
            )
        ),
        Line(tuple(total)),
    ]
    if row.recorded is not None:
        blocks.append(Line.of(recorded_text(row.recorded)))
    source = describe_size(row.size) if row.size is not None else ""
    if source:
        blocks.append(Line.of(source, "dim"))
    if row.side is not None and (row.side.sidechain_entries or row.side.meta_entries):
        blocks.append(Line.of(describe_side(row.side), "dim"))
    if row.breakdown is not None and row.breakdown.parts:
        from ctxcompact.output.picture import picture

        blocks += picture(row.breakdown, width=width, color=color)
    for title, header, parts in (
        ("By role", "role", report.by_role),
        ("By block type", "block type", report.by_type),
    ):
        shares = tuple(
            (k, _n(v), _pct(v, report.total)) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
        )
        blocks.append(Table((Column(header), _right("tokens"), _right("share")), shares, title=title))
    if report.messages:
        largest = tuple((str(m.index), m.role, _n(m.tokens), m.preview) for m in report.largest_messages(top))
        blocks.append(
            Table(
                (
                    _right("#"),
                    Column("role"),
                    _right("tokens"),
                    Column("preview", max_width=60, no_wrap=True, shrink=True, drop=1),
                ),
                largest,
                title=f"Largest messages (top {top})",
            )
        )
    if report.tool_results:
        results = tuple(
            (str(r.message_index), r.tool_name or "?", _n(r.tokens), r.preview)
            for r in report.largest_tool_results(top)
        )
        blocks.append(
            Table(
                (
                    _right("#"),
                    Column("tool"),
                    _right("tokens"),
                    Column("preview", max_width=50, no_wrap=True, shrink=True, drop=1),
                ),
                results,
                title=f"Largest tool results (top {top})",
            )
        )
    return blocks


# --- check -----------------------------------------------------------------------------------


def usage_bar(used: int, threshold: int, window: int, width: int = 40) -> tuple[Segment, ...]:
    """``[██████░░░░|░░░]``: filled to the tokens used, a ``|`` at the threshold."""
    width = max(width, 10)
    mark = min(width - 1, round(width * threshold / window)) if window else width - 1
    filled = min(width, round(width * used / window)) if window else width
    bar: list[Segment] = [("[", "")]
    for i in range(width):
        char = "█" if i < filled else "░"
        if i == mark:
            char = "|"
        style = "red" if i < filled and i >= mark else ("green" if i < filled else "dim")
        bar.append((char, style))
    bar.append(("]", ""))
    return tuple(bar)


def check_report(results: Sequence[CheckResult]) -> list[Block]:
    """The budget line, then a panel per conversation (a table when there are many). Inputs
    whose budgets differ (different models) get their budget line each."""
    budgets = list(dict.fromkeys(r.status.budget for r in results))
    if len(results) > CHECK_PANELS_UP_TO:
        return [*(_budget_line(b) for b in budgets), *_check_table(results, per_row=len(budgets) > 1)]
    if len(budgets) == 1:
        return [_budget_line(budgets[0]), *(_check_panel(r) for r in results)]
    return [block for r in results for block in (_budget_line(r.status.budget), _check_panel(r))]


def _budget_line(budget: Budget) -> Line:
    model = budget.model
    return Line(
        (
            ("model ", "dim"),
            (model.model or "no model given", "bold"),
            ("" if model.known else " (unknown: default window)", ""),
            ("  window ", "dim"),
            (_n(model.context_window), ""),
            ("  output reserve ", "dim"),
            (_n(budget.output_reserve), ""),
            ("  ratio ", "dim"),
            (f"{budget.ratio:g} ({budget.label})", ""),
            ("  threshold ", "dim"),
            (_n(budget.threshold), "bold"),
        )
    )


def _check_panel(r: CheckResult) -> Panel:
    budget = r.status.budget
    verdict = ("compaction needed", "bold red") if r.needs_compaction else ("within budget", "bold green")
    remaining = r.status.remaining
    remain_text = (
        f"{_n(remaining)} tokens left before the threshold"
        if remaining > 0
        else f"{_n(-remaining)} tokens over the threshold"
    )
    lines = [
        Line(
            (*usage_bar(r.status.tokens, budget.threshold, budget.model.context_window), ("  ", ""), verdict)
        ),
        Line.of(
            f"{_n(r.status.tokens)} tokens = {r.status.usage:.1%} of the threshold, "
            f"{r.status.window_share:.1%} of the window; {remain_text}"
            + (" (exact)" if r.report.exact_total else f" (counter: {r.report.counter})")
        ),
    ]
    source = describe_size(r.size) if r.size is not None else ""
    if source:
        lines.append(Line.of(source, "dim"))
    if r.recorded is not None:
        lines.append(Line.of(f"{recorded_text(r.recorded)}; counted here: {_n(r.report.total)}", "dim"))
    for v in r.violations:
        lines.append(Line.of(f"{v.severity}: {v}", "red" if v.severity == "error" else "yellow"))
    return Panel(r.label, tuple(lines))


def _check_table(results: Sequence[CheckResult], *, per_row: bool = False) -> list[Block]:
    """Many conversations (a directory, a trajectory collection): one row each, errors listed;
    ``per_row``: each row names its model and threshold (the budgets differ)."""
    columns = [
        Column("transcript", overflow="fold", shrink=True),
        _right("tokens"),
        _right("of threshold", drop=4),
        _right("left", drop=3),
        Column("verdict"),
        _right("errors", drop=5),
        _right("warnings", drop=1),
    ]
    sources = [r.size.source if r.size is not None else "count" for r in results]
    show_source = any(s != "count" for s in sources)
    columns += [Column("source", drop=2)] if show_source else []
    columns += [Column("model", drop=2), _right("threshold", drop=2)] if per_row else []
    rows = []
    styles: dict[tuple[int, int], str] = {}
    for i, (r, source) in enumerate(zip(results, sources, strict=True)):
        errors = len(r.errors)
        rows.append(
            (
                r.label,
                _n(r.status.tokens),
                f"{r.status.usage:.1%}",
                _n(r.status.remaining),
                "compaction needed" if r.needs_compaction else "within budget",
                str(errors),
                str(len(r.violations) - errors),
                *([source] if show_source else []),
                *((r.status.budget.model.model or "-", _n(r.status.budget.threshold)) if per_row else ()),
            )
        )
        styles[i, 4] = "red" if r.needs_compaction else "green"
        if errors:
            styles[i, 5] = "red"
    over = sum(r.needs_compaction for r in results)
    total = (
        f"{len(results)} transcripts",
        _n(sum(r.status.tokens for r in results)),
        "",
        "",
        f"{over} need compaction",
        str(sum(len(r.errors) for r in results)),
        "",
        *([""] if show_source else []),
        *(("", "") if per_row else ()),
    )
    blocks: list[Block] = [Table(tuple(columns), tuple(rows), styles=styles, footer=(total,))]
    blocks += [Line.of(f"{r.label}: error: {v}", "red") for r in results for v in r.errors]
    return blocks


# --- sessions, config ------------------------------------------------------------------------


def sessions_report(rows: Sequence[SessionInfo], *, cost_source: str = "") -> list[Block]:
    """Most recent first: agent, project, session, model, last activity, live tokens and their
    source, compactions so far, the estimated cost and the verdict against the threshold; a
    footer with the totals, and a line saying where the prices come from."""
    from ctxcompact.output.timeline import dollars

    columns = (
        Column("agent", drop=6),
        Column("project", overflow="fold", shrink=True),
        Column("session", drop=2),
        Column("model", drop=5),
        Column("last activity", drop=7),
        _right("tokens"),
        Column("source", drop=1),
        _right("compactions", drop=3),
        _right("threshold", drop=4),
        _right("cost", drop=8),
        Column("verdict", overflow="fold", shrink=True),
    )
    verdict_at = len(columns) - 1
    body = []
    styles: dict[tuple[int, int], str] = {}
    for i, row in enumerate(rows):
        if row.error is not None:
            verdict, styles[i, verdict_at] = f"unreadable: {row.error}", "red"
        elif row.over_threshold:
            verdict, styles[i, verdict_at] = "over", "bold red"
        else:
            verdict, styles[i, verdict_at] = "within", "green"
        if row.error is None and not row.window_known:
            verdict += " (window guessed)"
        body.append(
            (
                _AGENTS.get(row.agent, row.agent),
                row.project,
                row.session_id[:8],
                row.model or "-",
                (row.last_activity or "-")[:19].replace("T", " "),
                f"{row.tokens:,}",
                row.source,
                str(row.compactions),
                f"{row.threshold:,}",
                _cost_cell(row),
                verdict,
            )
        )
    over = sum(r.over_threshold for r in rows)
    costs = [r.cost for r in rows if r.cost is not None and r.cost.priced_calls]
    total_cost = dollars(sum(c.dollars for c in costs)) if costs else "-"
    footer = ("", f"{len(rows)} sessions", "", "", "", "", "", "", "", total_cost, f"{over} over")
    blocks: list[Block] = [Table(columns, tuple(body), styles=styles, footer=(footer,))]
    if costs and cost_source:
        blocks.append(
            Line.of(f"cost: estimated at the list prices of {cost_source} on each call's date", "dim")
        )
    return blocks


def _cost_cell(row: SessionInfo) -> str:
    from ctxcompact.output.timeline import dollars

    cost = row.cost
    if cost is None:
        return "-"
    if not cost.priced_calls:
        return "?"
    return dollars(cost.dollars) + ("+" if cost.unpriced_calls else "")


def toml_value(value: Any) -> str:
    """A setting's value as it would be written in ``ctxcompact.toml``: ``true``, ``0.6``,
    ``"gpt-4o"``, ``["Read:file_path"]``; an unset one as ``(not set)`` (TOML has no null)."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    import json

    return json.dumps(str(getattr(value, "value", value)), ensure_ascii=False)


def config_report(payload: dict[str, Any]) -> list[Block]:
    """``ctxcompact config``: the file found, then each setting with its source and commands
    (a value set by anything but the default in bold)."""
    rows = []
    styles: dict[tuple[int, int], str] = {}
    for i, row in enumerate(payload["settings"]):
        value = toml_value(row["value"])
        rows.append((row["key"], value, row["source"], ", ".join(row["commands"])))
        if row["source"] != "default":
            styles[i, 1] = "bold"
    columns = (
        Column("setting"),
        Column("value", overflow="fold", shrink=True),
        Column("source", overflow="fold", shrink=True, drop=2),
        Column("commands", overflow="fold", shrink=True, drop=1),
    )
    return [
        Line.of(f"config file: {payload['file'] or '(none found)'}"),
        Table(columns, tuple(rows), title="Effective settings", styles=styles),
    ]


def restore_report(result: Any) -> list[Block]:
    """``restore-files``' table of restored and skipped files (``result``: a
    :class:`ctxcompact.compaction.restore.RestoreResult`)."""
    rows = [(f.path, _n(f.tokens), "restored") for f in result.files]
    rows += [(s.path, "-", f"skipped: {s.reason}") for s in result.skipped]
    styles = {(i, 2): "green" if i < len(result.files) else "yellow" for i in range(len(rows))}
    if not rows:
        rows = [("(no file reads found)", "", "")]
    columns = (
        Column("path", overflow="fold", shrink=True),
        _right("tokens"),
        Column("status", overflow="fold", shrink=True),
    )
    return [Table(columns, tuple(rows), title="restore-files", styles=styles)]


def models_report(rows: Sequence[KnownModel], *, source: str) -> list[Block]:
    """``ctxcompact models``: id, window and its source, list prices per million tokens."""

    def price(value: float | None, tiered: bool) -> str:
        return "-" if value is None else f"{value:g}" + ("*" if tiered else "")

    body = []
    for row in rows:
        p = row.price
        cells = (
            (
                price(p.input, p.tiered),
                price(p.output, p.tiered),
                price(p.cache_read, p.tiered),
                price(p.cache_write, p.tiered),
                p.priced_as,
            )
            if p is not None
            else ("-", "-", "-", "-", "-")
        )
        body.append((row.model, _n(row.context_window), row.window_source, *cells))
    columns = (
        Column("model"),
        _right("window"),
        Column("window from", overflow="fold", shrink=True, drop=1),
        _right("input $"),
        _right("output $"),
        _right("cache read $", drop=3),
        _right("cache write $", drop=3),
        Column("priced as", drop=2),
    )
    today = next((r.price.at for r in rows if r.price is not None), None)
    return [
        Table(columns, tuple(body), title="Known models"),
        Line.of(
            f"prices: USD per million tokens, list prices of {source} in force on {today or 'today'} "
            "(standard API; * a long prompt costs more); estimates, not a bill",
            "dim",
        ),
    ]


def recorded_text(recorded: RolloutUsage) -> str:
    """One line on the usage an agent recorded: ``count`` and ``check`` show it."""
    last = recorded.last
    window = f" of a {recorded.context_window:,}-token window" if recorded.context_window else ""
    return (
        f"recorded by the agent (line {recorded.line + 1}): {recorded.context_tokens:,} tokens in context"
        f"{window} — last call {last.input_tokens:,} input ({last.cached_input_tokens:,} cached)"
        f" + {last.output_tokens:,} output"
    )
