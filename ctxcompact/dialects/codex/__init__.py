"""Codex CLI rollouts: reading (:mod:`.read`), writing back (:mod:`.write`), the usage the API
recorded and Codex's compacted history (:mod:`.history`)."""

from __future__ import annotations

from ctxcompact.dialects.codex.read import NAME, instructions, looks_like, parse_records, session_cwd
from ctxcompact.dialects.codex.write import finalize_records, render_message

__all__ = [
    "NAME",
    "finalize_records",
    "instructions",
    "looks_like",
    "parse_records",
    "render_message",
    "session_cwd",
]
