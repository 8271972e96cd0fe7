"""How the tool-output commands report: the ``offload`` / ``offload --undo`` stats panels
and what ``offload --clean-orphans`` removed.

Kept apart from :mod:`ctxcompact.output.rich` (same rules: takes result objects and a console,
decides nothing about the results, and is one of the few modules that import ``rich``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from ctxcompact.offload.store import OrphanCleanup
from ctxcompact.offload.tool_results import OffloadResult, UndoResult
from ctxcompact.output.json import offload_stats_json, undo_stats_json
from ctxcompact.output.offload_panel import MAX_LISTED_FILES, offload_stats_lines, offload_stats_title


def _n(value: int) -> str:
    return f"{value:,}"


def render_offload_stats(
    label: str, results: Sequence[OffloadResult], console: Console, *, min_chars: int
) -> None:
    """The stats panel on stderr (its lines: :func:`ctxcompact.output.offload_panel.offload_stats_lines`)."""
    lines = offload_stats_lines(offload_stats_json(label, results), min_chars=min_chars)
    console.print(
        Panel(
            Group(*(Text.assemble(*line.segments) for line in lines)),
            title=offload_stats_title(label),
            title_align="left",
            expand=False,
        )
    )


def render_undo_stats(label: str, results: Sequence[UndoResult], console: Console) -> None:
    stats = undo_stats_json(label, results)
    if stats["restored_count"]:
        line = Text.assemble(
            ("restored ", "dim"),
            (_n(stats["restored_count"]), "bold"),
            " tool result" + ("" if stats["restored_count"] == 1 else "s"),
            ("  ", ""),
            f"{_n(stats['restored_chars'])} characters from ",
            stats["out_dir"],
        )
    else:
        line = Text.assemble(("unchanged: ", "bold yellow"), "no offload references in the input")
    console.print(Panel(line, title=f"ctxcompact offload --undo · {label}", title_align="left", expand=False))


def render_orphan_cleanup(result: OrphanCleanup, console: Console) -> None:
    """What ``offload --clean-orphans`` removed (every name, up to a point), on stderr."""
    lines: list[Text] = []
    if result.removed:
        lines.append(
            Text.assemble(
                ("removed ", "dim"),
                (_n(len(result.removed)), "bold"),
                f" orphaned file{'' if len(result.removed) == 1 else 's'} from {result.out_dir}",
            )
        )
        lines.extend(Text(f"  {name}") for name in result.removed[:MAX_LISTED_FILES])
        if len(result.removed) > MAX_LISTED_FILES:
            lines.append(Text(f"  … and {len(result.removed) - MAX_LISTED_FILES} more", style="dim"))
    else:
        lines.append(
            Text.assemble(("nothing to clean: ", "bold green"), f"no orphaned file in {result.out_dir}")
        )
    lines.append(Text(f"{_n(result.referenced)} file(s) named by the manifest kept", style="dim"))
    console.print(
        Panel(Group(*lines), title="ctxcompact offload --clean-orphans", title_align="left", expand=False)
    )
