"""A batch's result for people and for CI: the final table (text blocks, drawn by Rich on a
terminal, plain lines on a log), GitHub Actions annotations and a Markdown step summary.

Every file's row says what became of it — ``compacted`` only when its tokens went down;
``grew`` and ``unchanged`` are flagged as such — and a totals row follows. Pure formatting of a
:class:`~ctxcompact.batch.results.BatchResult`; rich-free.
"""

from __future__ import annotations

from ctxcompact.batch.results import BatchItem, BatchProgress, BatchResult, Gates
from ctxcompact.output.table import Block, Column, Line, Table

#: The outcomes' styles on a terminal.
_STYLES = {"compacted": "green", "grew": "bold red", "unchanged": "yellow", "failed": "red"}
#: At most this many files are listed one by one in a step summary (GitHub caps it at 1 MiB).
SUMMARY_ROWS = 200


def _n(value: int) -> str:
    return f"{value:,}"


def _tokens(item: BatchItem) -> str:
    if item.before is None or item.after is None:
        return "-"
    return f"{_n(item.before)} → {_n(item.after)}"


def _ratio(before: int | None, after: int | None) -> str:
    return f"{after / before:.1%}" if before and after is not None else "-"


def status_text(item: BatchItem, gates: Gates) -> str:
    """``grew (+81)``, ``compacted > fail-over``, ``unchanged (within budget)``…"""
    outcome = item.outcome
    text: str = outcome
    if outcome == "grew" and item.before is not None and item.after is not None:
        text = f"grew (+{_n(item.after - item.before)})"
    elif outcome == "unchanged" and item.within_budget:
        text = "unchanged (within budget)"
    if item.resumed:
        text += " (earlier run)"
    if gates.fail_over is not None and item.over_ratio(gates.fail_over):
        text += " > fail-over"
    return text


def batch_blocks(batch: BatchResult, gates: Gates) -> list[Block]:
    """The final table: file, tokens before → after, ratio, strategy, status, output or error;
    a totals row; then a line per gate a file failed."""
    columns = (
        Column("file", overflow="fold", shrink=True),
        Column("tokens", justify="right"),
        Column("ratio", justify="right"),
        Column("strategy", overflow="fold", shrink=True, drop=2),
        Column("status", overflow="fold", shrink=True),
        Column("output", overflow="fold", shrink=True, drop=1),
    )
    rows = []
    styles: dict[tuple[int, int], str] = {}
    for i, item in enumerate(batch.items):
        over = gates.fail_over is not None and item.over_ratio(gates.fail_over)
        styles[i, 4] = "red" if over else _STYLES[item.outcome]
        strategy = ",".join(dict.fromkeys(s.strategy for s in item.stats)) if item.stats else "-"
        rows.append(
            (
                item.input,
                _tokens(item),
                _ratio(item.before, item.after),
                strategy,
                status_text(item, gates),
                item.output or item.error or "",
            )
        )
    before, after = batch.totals
    counts = ", ".join(
        f"{n} {outcome}"
        for outcome in ("compacted", "grew", "unchanged", "failed")
        if (n := sum(i.outcome == outcome for i in batch.items))
    )
    total = (
        f"{len(batch.items)} files",
        f"{_n(before)} → {_n(after)}",
        _ratio(before, after),
        "",
        counts,
        "",
    )
    blocks: list[Block] = [
        Table(
            columns,
            tuple(rows),
            title="Batch compaction",
            styles=styles,
            footer=(total,),
            footer_style="bold",
        )
    ]
    if gates.fail_over is not None and (above := batch.over_ratio(gates.fail_over)):
        blocks.append(
            Line.of(
                f"{len(above)} file(s) still above --fail-over {gates.fail_over:g} (tokens after / before)."
            )
        )
    if batch.grew:
        gate = " (--fail-on-growth: exit 1)" if gates.fail_on_growth else ""
        blocks.append(Line.of(f"{len(batch.grew)} file(s) grew: more tokens after than before{gate}.", "red"))
    return blocks


# --- GitHub Actions --------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str, title: str, message: str) -> str:
    """One workflow command (``::error file=…,title=…::message``), escaped as the runner wants."""
    return f"::{level} file={_escape_property(file)},title={_escape_property(title)}::{_escape_data(message)}"


def github_annotations(batch: BatchResult, gates: Gates) -> list[str]:
    """An error per failed file and per file that fails a gate, a warning per file that grew
    (an error under ``--fail-on-growth``), a notice per file left unchanged over its budget."""
    out = []
    for item in batch.items:
        figures = f" ({_tokens(item)} tokens, {_ratio(item.before, item.after)})" if item.before else ""
        if item.outcome == "failed":
            out.append(annotation("error", item.input, "ctxcompact: failed", item.error or "failed"))
        elif gates.fail_over is not None and item.over_ratio(gates.fail_over):
            out.append(
                annotation(
                    "error",
                    item.input,
                    "ctxcompact: above --fail-over",
                    f"tokens after / before {_ratio(item.before, item.after)} > {gates.fail_over:g}{figures}",
                )
            )
        elif item.outcome == "grew":
            level = "error" if gates.fail_on_growth else "warning"
            out.append(
                annotation(level, item.input, "ctxcompact: grew", f"the compacted file is larger{figures}")
            )
        elif item.outcome == "unchanged" and not item.within_budget and not item.resumed:
            out.append(
                annotation("notice", item.input, "ctxcompact: unchanged", f"nothing was compacted{figures}")
            )
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def step_summary(
    batch: BatchResult, gates: Gates, *, exit_code: int, title: str = "ctxcompact compact"
) -> str:
    """A Markdown summary for ``$GITHUB_STEP_SUMMARY``: the totals, the gate, then the files —
    flagged ones first — up to :data:`SUMMARY_ROWS`."""
    before, after = batch.totals
    counts = {
        o: sum(i.outcome == o for i in batch.items) for o in ("compacted", "grew", "unchanged", "failed")
    }
    verdict = "passed" if exit_code == 0 else f"failed (exit {exit_code})"
    lines = [
        f"### {title}: {len(batch.items)} files, {verdict}",
        "",
        "| files | tokens before → after | ratio | compacted | grew | unchanged | failed |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(batch.items)} | {_n(before)} → {_n(after)} | {_ratio(before, after)} | "
        + " | ".join(str(counts[o]) for o in ("compacted", "grew", "unchanged", "failed"))
        + " |",
        "",
    ]
    if gates.fail_over is not None:
        lines.append(
            f"Gate: `--fail-over {gates.fail_over:g}` — {len(batch.over_ratio(gates.fail_over))} file(s) above."
        )
    if gates.fail_on_growth:
        lines.append(f"Gate: `--fail-on-growth` — {len(batch.grew)} file(s) grew.")
    flagged = [i for i in batch.items if i.outcome != "compacted" or _over(i, gates)]
    ordered = flagged + [i for i in batch.items if i not in flagged]
    lines += ["", "| file | tokens | ratio | status |", "|---|---:|---:|---|"]
    for item in ordered[:SUMMARY_ROWS]:
        status = status_text(item, gates) + (f": {item.error}" if item.error else "")
        lines.append(
            f"| `{_md(item.input)}` | {_tokens(item)} | {_ratio(item.before, item.after)} | {_md(status)} |"
        )
    if len(ordered) > SUMMARY_ROWS:
        lines.append(f"\n… and {len(ordered) - SUMMARY_ROWS} more files (see the job's report).")
    return "\n".join(lines) + "\n"


def _over(item: BatchItem, gates: Gates) -> bool:
    return gates.fail_over is not None and item.over_ratio(gates.fail_over)


def progress_line(event: BatchProgress) -> str | None:
    """The line a log gets as a file is done (``[ 3/40] a.jsonl: compacted 9,000 → 4,000
    tokens``); None for the report before a file starts."""
    item = event.item
    if item is None:
        return None
    figures = ""
    if item.before is not None and item.after is not None:
        figures = f" {item.before:,} → {item.after:,} tokens"
    note = f": {item.error}" if item.error else (" (done earlier)" if item.resumed else "")
    width = len(str(event.total))
    return f"[{event.index + 1:>{width}}/{event.total}] {item.input}: {item.outcome}{figures}{note}"
