"""How the agent-loop results look: ``uncompact``'s (JSON and text) and, for ``sessions``,
what each of an agent's compactions lost (from the hooks' records)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxcompact.agents.compactions import Compaction
from ctxcompact.agents.uncompact import Fork, Removed
from ctxcompact.output.table import Block, Column, Line, Table

#: Lost probes listed per compaction under ``sessions``' table (all are in ``--json``).
SHOWN_LOST = 5


def compaction_json(c: Compaction) -> dict[str, Any]:
    return {
        "number": c.number,
        "by": c.by,
        "trigger": c.trigger,
        "timestamp": c.timestamp,
        "line": c.first + 1,
        "offset": c.start,
    }


def compactions_json(path: Path, found: Sequence[Compaction]) -> dict[str, Any]:
    return {"path": str(path), "compactions": [compaction_json(c) for c in found]}


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


def removed_json(removed: Removed) -> dict[str, Any]:
    return {
        "path": str(removed.path),
        "removed": compaction_json(removed.compaction),
        "kept_after": removed.kept_after,
        "backup": str(removed.backup) if removed.backup else None,
    }


def fork_json(fork: Fork) -> dict[str, Any]:
    return {
        "source": str(fork.source),
        "path": str(fork.path),
        "session_id": fork.session_id,
        "agent": fork.agent,
        "before": compaction_json(fork.compaction),
        "tokens": fork.tokens,
        "context_window": fork.context_window,
        "model": fork.model,
        "over_window": fork.over_window,
    }


def scored_json(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The scored compactions of a session as ``sessions --json`` lists them."""
    return [
        {
            "at": r.get("at"),
            "trigger": r.get("trigger"),
            "kept": r.get("kept"),
            "total": r.get("total"),
            "by_kind": r.get("by_kind", {}),
            "lost": r.get("lost", []),
        }
        for r in records
    ]


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
