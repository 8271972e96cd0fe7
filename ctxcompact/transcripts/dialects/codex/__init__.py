"""Codex CLI rollouts: reading (:mod:`.read`), writing back (:mod:`.write`), the usage the API
recorded and Codex's compacted history (:mod:`.history`), the files a session read
(:mod:`.files`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxcompact.ir import Message
from ctxcompact.transcripts.dialects.codex.history import compacted_history, compaction_points, recorded_usage
from ctxcompact.transcripts.dialects.codex.read import (
    KEEP_USER_TOKENS,
    NAME,
    instructions,
    parse_records,
    session_cwd,
    session_model,
)
from ctxcompact.transcripts.dialects.codex.write import finalize_records, render_message
from ctxcompact.transcripts.dialects.common import Parsed
from ctxcompact.transcripts.dialects.detect import looks_like_codex as looks_like
from ctxcompact.transcripts.points import CompactionPoint
from ctxcompact.transcripts.recorded_usage import RecordedUsage


class CodexDialect:
    """Codex CLI rollout files: lines of ``{timestamp, type, payload}``; the file is the
    container. The Responses API takes items in any order of roles, pairs calls and outputs by
    ``call_id`` and never accepts a reused one."""

    name = NAME
    owns_file = True
    alternating_roles = False
    reused_tool_ids = False
    #: Codex's usage is in its ``token_count`` lines, and a ``compacted`` line ends it: no
    #: field of ours on its lines.
    size_notes = False
    #: Codex adds developer messages mid-session (a changed model, sandbox or mode).
    system_anywhere = True
    #: Codex reads files through shell commands, recognised by :mod:`.files`, not by a tool.
    read_tools: tuple[tuple[str, str], ...] = ()

    def looks_like(self, records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
        return looks_like(records, body)

    def parse(self, records: Sequence[Any]) -> Parsed:
        """The live history, plus the session's instructions (its system prompt), model and
        the usage of its newest API call."""
        return replace(
            parse_records(records),
            system=instructions(records),
            model=session_model(records),
            recorded=recorded_usage(records),
        )

    def render(self, message: Message) -> list[Any]:
        return render_message(message)

    def summary_layout(
        self, messages: Sequence[Message], summary: str, *, keep_user_tokens: int | None
    ) -> tuple[Message, ...] | None:
        """Codex's ``build_compacted_history``: the initial context, the newest user messages
        up to ``keep_user_tokens``, the summary with Codex's prefix."""
        budget = KEEP_USER_TOKENS if keep_user_tokens is None else keep_user_tokens
        return compacted_history(messages, summary, keep_user_tokens=budget)

    def finalize(self, records: list[Any], original: Sequence[Any]) -> list[Any]:
        return finalize_records(records, original)

    def recorded_cwd(self, records: Sequence[Any]) -> str | None:
        """The session's folder (the newest ``turn_context`` / ``session_meta`` ``cwd``): the
        paths inside it are read as relative to it, so restoring from it, or from where
        ``--path-map`` re-roots it, finds them."""
        return session_cwd(records)

    def compaction_points(self, records: Sequence[Any]) -> list[CompactionPoint]:
        """Its ``compacted`` lines (see :func:`.history.compaction_points`)."""
        return compaction_points(records)

    def recorded_usage(self, messages: Sequence[Message]) -> RecordedUsage | None:
        """None: a rollout's usage is in its ``token_count`` event lines, not in its messages;
        :meth:`parse` returns it as ``Parsed.recorded``, which
        :func:`ctxcompact.accounting.context_size.recorded_usage` converts to this same record."""
        return None


DIALECT = CodexDialect()

__all__ = [
    "DIALECT",
    "NAME",
    "CodexDialect",
    "finalize_records",
    "instructions",
    "looks_like",
    "parse_records",
    "render_message",
    "session_cwd",
]
