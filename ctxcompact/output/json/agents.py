"""The JSON of the agent's loop: ``uncompact``'s (a session's compactions, the one removed,
the fork written) and, in ``sessions --json``, the scored compactions of the agents' hooks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxcompact.output.json.document import document

if TYPE_CHECKING:
    from ctxcompact.agents.compactions import Compaction
    from ctxcompact.agents.uncompact import Fork, Removed


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
    """``uncompact --list --json``: the session's compactions, oldest first."""
    return document({"path": str(path), "compactions": [compaction_json(c) for c in found]})


def removed_json(removed: Removed) -> dict[str, Any]:
    """``uncompact --json`` when ctxcompact's compaction was taken out."""
    return document(
        {
            "path": str(removed.path),
            "removed": compaction_json(removed.compaction),
            "kept_after": removed.kept_after,
            "backup": str(removed.backup) if removed.backup else None,
        }
    )


def fork_json(fork: Fork) -> dict[str, Any]:
    """``uncompact --fork --json``: the session written, and what it holds."""
    return document(
        {
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
    )


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
