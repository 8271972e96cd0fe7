"""The ``compact`` stats panel as data (its piped form: :mod:`ctxcompact.output.panel`).

:func:`compact_stats_lines` is the one home of what the panel says (its lines of styled runs,
drawn by :func:`ctxcompact.output.rich.render_compact_stats` with Rich). On a stderr that is not a
terminal, :func:`ctxcompact.output.panel.plain_panel` writes the same bytes without ``rich``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.output.table import Line


def _n(value: int) -> str:
    return f"{value:,}"


def compact_stats_title(stats: Any, label: str | None = None) -> str:
    return f"ctxcompact compact · {stats.strategy}" + (f" · {label}" if label else "")


def _counted_line(stats: Any) -> list[Line]:
    """Our own count beside the context size, when the size is not our count as is."""
    if set(stats.size_sources) == {"count"} or stats.counted_before is None:
        return []
    before, after = stats.size_sources
    sources = before if before == after else f"{before} → {after}"
    return [
        Line.of(
            f"size as check measures it ({sources}); our count "
            f"{_n(stats.counted_before)} → {_n(stats.counted_after)}",
            "dim",
        )
    ]


def compact_stats_lines(stats: Any) -> list[Line]:
    """The panel's lines (``stats`` is a :class:`ctxcompact.compaction.pipeline.CompactStats`)."""
    if not stats.compacted:
        head = (
            ("unchanged: ", "bold yellow"),
            (stats.reason, ""),
            (f"  ({_n(stats.original_tokens)} tokens)", ""),
        )
        return [Line(head), *(Line.of(f"warning: {w}", "yellow") for w in stats.warnings)]
    lines = [
        Line(
            (
                ("tokens ", "dim"),
                (_n(stats.original_tokens), ""),
                (" → ", ""),
                (_n(stats.compacted_tokens), "bold"),
                (f"  ({stats.compaction_ratio:.1%} of the original)", ""),
            )
        ),
        *_counted_line(stats),
        Line.of(
            f"messages compacted {stats.compacted_message_count}, retained {stats.retained_message_count}; "
            f"files restored {stats.restored_file_count} ({_n(stats.restored_token_count)} tokens)"
        ),
    ]
    if stats.summarizer:
        retries = max(0, (stats.attempts or 1) - 1)
        lines.append(Line.of(f"summarizer {stats.summarizer}" + (f", {retries} retries" if retries else "")))
    lines.extend(Line.of(line) for line in _step_lines(stats.steps))
    if stats.retention is not None:
        lines.append(Line.of(f"retention check: {stats.retention.summary_line()}"))
    if stats.archive_path:
        lines.append(Line((("originals archived to ", "dim"), (stats.archive_path, ""))))
    if stats.appended:
        lines.append(Line.of("appended after the history as a compaction point", "dim"))
    if stats.threshold is not None:
        over = stats.still_over_threshold
        verdict = "still over it" if over else "now under it"
        lines.append(Line.of(f"threshold {_n(stats.threshold)}: {verdict}", "red" if over else "green"))
    if stats.reason and stats.reason != "compacted":
        lines.append(Line.of(stats.reason, "yellow"))
    lines.extend(Line.of(f"warning: {w}", "yellow") for w in stats.warnings)
    return lines


def _step_lines(steps: Any) -> list[str]:
    """One line per step with figures of its own (``prune: cleared 12``); a pipeline's steps
    (``hybrid``) each get theirs."""
    lines: list[str] = []
    for step in steps:
        extra = {
            k: v
            for k, v in step.items()
            if k not in ("strategy", "changed") and isinstance(v, int | float) and not isinstance(v, bool)
        }
        if step["strategy"] != "full" and extra:
            shown = ", ".join(
                f"{k.replace('_', ' ')} {_n(v) if isinstance(v, int) else v}" for k, v in extra.items()
            )
            lines.append(f"{step['strategy']}: {shown}")
        lines.extend(_step_lines(step.get("steps", ())))
    return lines


def step_timeline(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """``compact --verbose``: one line per strategy step, selective rule and fallback."""
    lines: list[str] = []
    for step in steps:
        name = step.get("strategy", "?")
        figures = ""
        if isinstance(step.get("tokens"), Mapping):
            figures = f", tokens {step['tokens']['before']:,} → {step['tokens']['after']:,}"
        lines.append(f"step {name}: {'changed' if step.get('changed') else 'unchanged'}{figures}")
        for event in step.get("events", ()):
            rule = f" rule={event['rule']}" if event.get("rule") else ""
            lines.append(
                f"  phase={event['phase']}{rule} removed={event.get('removed', 0)} "
                f"tokens {event['tokens_before']:,} → {event['tokens_after']:,}"
            )
        for sub in (*step.get("fallbacks", ()), *step.get("ladder", ())):
            lines.append(f"  {sub['step']}: tokens {sub['tokens_before']:,} → {sub['tokens_after']:,}")
    return lines
