"""The ``compact`` stats panel as data, and its piped form without ``rich``.

:func:`compact_stats_lines` is the one home of what the panel says (its lines of styled runs,
drawn by :func:`ctxcompact.render.render_compact_stats` with Rich). On a stderr that is not a
terminal, :func:`plain_panel` writes the very bytes Rich's ``Panel`` (``expand=False``, title
on the left, a 100-column piped console) would, so a piped ``compact`` never imports ``rich``
(~30 ms of its start-up). It covers printable ASCII (and "→", "·") only and says None for
anything else (wide or combining characters, tabs, markup in the title), where Rich draws.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ctxcompact.text_table import Line

#: The width of a piped Rich console (:func:`ctxcompact.render.make_console`).
PIPED_WIDTH = 100
_WORD = re.compile(r"\s*\S+\s*")  # Rich's word: leading and trailing whitespace included
#: Printable ASCII and the two other characters the panel itself writes ("→", "·"): one
#: terminal cell each, so lengths are widths.
_PLAIN = re.compile(r"[ -~→·]*")


def _n(value: int) -> str:
    return f"{value:,}"


def compact_stats_title(stats: Any, label: str | None = None) -> str:
    return f"ctxcompact compact · {stats.strategy}" + (f" · {label}" if label else "")


def compact_stats_lines(stats: Any) -> list[Line]:
    """The panel's lines (``stats`` is a :class:`ctxcompact.compact.CompactStats`)."""
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
        Line.of(
            f"messages compacted {stats.compacted_message_count}, retained {stats.retained_message_count}; "
            f"files restored {stats.restored_file_count} ({_n(stats.restored_token_count)} tokens)"
        ),
    ]
    if stats.summarizer:
        retries = max(0, (stats.attempts or 1) - 1)
        lines.append(Line.of(f"summarizer {stats.summarizer}" + (f", {retries} retries" if retries else "")))
    for step in stats.steps:
        extra = {
            k: v
            for k, v in step.items()
            if k not in ("strategy", "changed") and isinstance(v, int | float) and not isinstance(v, bool)
        }
        if step["strategy"] != "full" and extra:
            shown = ", ".join(
                f"{k.replace('_', ' ')} {_n(v) if isinstance(v, int) else v}" for k, v in extra.items()
            )
            lines.append(Line.of(f"{step['strategy']}: {shown}"))
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


def plain_panel(title: str, lines: Sequence[str], *, width: int = PIPED_WIDTH) -> str | None:
    """What a piped Rich console of ``width`` columns prints for ``Panel(Group(*lines),
    title=title, title_align="left", expand=False)``; None unless the lines and the title are
    printable ASCII (or "→", "·"), the title without markup or emoji codes."""
    if not lines or not all(_PLAIN.fullmatch(line) for line in lines):
        return None
    if not _PLAIN.fullmatch(title) or "[" in title or ":" in title:
        return None
    if len(title) + 2 > width - 4:
        return None  # Rich would crop the title
    inner = min(max(len(line) for line in lines), width - 4) + 2
    inner = min(width - 2, max(inner, len(title) + 4))
    text_width = inner - 2
    head = f" {title} "
    out = [f"╭─{head}{'─' * (inner - 2 - len(head))}─╮"]
    for line in lines:
        for piece in _wrap(line, text_width):
            out.append(f"│ {piece}{' ' * (text_width - len(piece))} │")
    out.append(f"╰{'─' * inner}╯")
    return "\n".join(out) + "\n"


def _wrap(line: str, width: int) -> list[str]:
    """Rich's word wrap of one ASCII line (``rich._wrap.divide_line`` with folding, then each
    piece's trailing spaces past ``width`` dropped and the rest cropped to ``width``)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            chunks = [word[i : i + width] for i in range(0, len(word), width)]
            for k, chunk in enumerate(chunks):
                if start:
                    breaks.append(start)
                if k == len(chunks) - 1:
                    offset = len(chunk)
                else:
                    start += len(chunk)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    pieces = [line[a:b] for a, b in zip([0, *breaks], [*breaks, len(line)], strict=True)]
    out = []
    for piece in pieces:
        if len(piece) > width:
            spaces = len(piece) - len(piece.rstrip())
            piece = piece[: len(piece) - min(spaces, len(piece) - width)]
        out.append(piece[:width])
    return out
