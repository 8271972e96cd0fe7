"""Formats that look like transcripts but that no dialect reads: refused by name.

A file of another agent's format would otherwise be read as bare messages and fail with a
puzzling error deep inside (or, worse, be counted as empty). These checks run only after
every registered dialect has declined the file, so a dialect added later for one of these
formats takes precedence without touching this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.errors import InputError


def refuse_foreign_object(root: Mapping[str, Any]) -> None:
    """A top-level JSON object of another tool's format."""
    if "history" in root and "info" in root and not isinstance(root.get("history"), list):
        raise InputError(
            "looks like a SWE-agent trajectory (.traj) without a 'history' list: nothing to read."
        )
    if "history" in root and "instance_id" in root:
        raise InputError("looks like an OpenHands evaluation record: not a supported input format.")


def refuse_foreign_body(root: Mapping[str, Any]) -> None:
    """An object with a ``messages`` list that are not messages (Gemini CLI sessions)."""
    msgs = root.get("messages") or []
    if msgs and all(
        isinstance(m, Mapping) and "role" not in m and m.get("type") in ("user", "gemini", "info", "error")
        for m in msgs[:20]
    ):
        raise InputError(
            "looks like a Gemini CLI session: not a supported input format (its messages have 'type', not 'role')."
        )


def refuse_foreign_lines(records: Sequence[Any]) -> None:
    """JSONL lines (or a top-level array) of another agent's event log."""
    head = [r for r in records[:20] if isinstance(r, Mapping)]
    if head and all("history" in r and "instance_id" in r for r in head):
        raise InputError("looks like OpenHands evaluation output: not a supported input format.")
    if head and all(("action" in r or "observation" in r) and "role" not in r for r in head):
        raise InputError("looks like an OpenHands event stream: not a supported input format.")
