"""The ``offload`` stats panel as data: its title and its lines of styled runs.

Drawn with Rich by :func:`ctxcompact.output.rich.offload.render_offload_stats` on a terminal; on a
pipe :func:`ctxcompact.output.panel.plain_panel` writes the same bytes without importing rich.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxcompact.output.table import Line

#: Files named in the panel; the rest are counted.
MAX_LISTED_FILES = 10


def _n(value: int) -> str:
    return f"{value:,}"


def offload_stats_title(label: str) -> str:
    return f"ctxcompact offload · {label}"


def offload_stats_lines(stats: dict[str, Any], *, min_chars: int) -> list[Line]:
    """The panel's lines (``stats``: :func:`ctxcompact.output.json.offload_stats_json`)."""
    count = stats["offloaded_count"]
    if not count:
        return [
            Line(
                (
                    ("unchanged: ", "bold yellow"),
                    (
                        f"no tool result of {_n(min_chars)}+ characters to offload (references are skipped)",
                        "",
                    ),
                )
            )
        ]
    out_dir = stats["out_dir"]
    lines = [
        Line(
            (
                ("offloaded ", "dim"),
                (_n(count), "bold"),
                (" tool result" + ("" if count == 1 else "s"), ""),
                ("  freed ", "dim"),
                (f"{_n(stats['freed_chars'])} characters, ", ""),
                (f"{_n(stats['tokens_freed'])} tokens", "bold"),
            )
        ),
        Line((("to ", "dim"), (out_dir, ""))),
    ]
    files = stats["files"]
    lines.extend(Line.of(f"  {Path(path).name}") for path in files[:MAX_LISTED_FILES])
    if len(files) > MAX_LISTED_FILES:
        lines.append(Line.of(f"  … and {len(files) - MAX_LISTED_FILES} more", "dim"))
    if stats["reused_files"]:
        lines.append(Line.of(f"{stats['reused_files']} identical file(s) already there were reused", "dim"))
    lines.append(Line.of(f"undo: ctxcompact offload --undo FILE --out-dir {out_dir}", "dim"))
    return lines
