"""How the agent-loop results look: ``uncompact``'s (JSON and text) and, for ``sessions``,
what each of an agent's compactions lost (from the hooks' records)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxcompact.agents.compactions import Compaction
from ctxcompact.output.table import Block, Column, Line, Table

#: Lost probes listed per compaction under ``sessions``' table (all are in ``--json``).
SHOWN_LOST = 5


def compactions_report(path: Path, found: Sequence[Compaction]) -> list[Block]:
    """``uncompact --list``: one row per compaction."""
    if not found:
        return [Line.of(f"{path}: no compaction")]
    columns = (
        Column("#", justify="right"),
        Column("by"),
        Column("trigger"),
        Column("time"),
        Column("line", justify="right"),
    )
    rows = tuple(
        (
            str(c.number),
            c.by,
            c.trigger or "-",
            (c.timestamp or "-")[:19].replace("T", " "),
            f"{c.first + 1:,}",
        )
        for c in found
    )
    return [Table(columns, rows, title=f"Compactions of {path}")]


def lost_report(scored: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Block]:
    """Under ``sessions``' table: per session, each scored compaction of its agent and the
    first probes it lost (``scored``: session label → post-compact records)."""
    blocks: list[Block] = []
    for label, records in scored.items():
        for r in records:
            kept, total = r.get("kept", 0), r.get("total", 0)
            share = f" ({kept / total:.0%})" if total else ""
            when = str(r.get("at") or "-")[:19].replace("T", " ")
            blocks.append(
                Line.of(
                    f"{label}: compaction {when} ({r.get('trigger') or '-'}) kept {kept}/{total} facts{share}"
                )
            )
            lost = r.get("lost") or []
            for probe in lost[:SHOWN_LOST]:
                blocks.append(Line.of(f"  lost {probe.get('kind')}: {probe.get('text')}", "dim"))
            if len(lost) > SHOWN_LOST:
                blocks.append(
                    Line.of(f"  … and {len(lost) - SHOWN_LOST} more (--json lists them all)", "dim")
                )
    if blocks:
        blocks.insert(
            0, Line.of("What the agents' own compactions lost (recorded by ctxcompact hook post-compact)")
        )
    return blocks
