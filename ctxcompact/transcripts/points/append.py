"""Writing an appended compaction (see :mod:`ctxcompact.transcripts.points`).

:func:`appended_records` gives the records that follow a conversation's history when a
summary compaction is written as a point: the dialect's own (Claude Code) when it compacts
natively, else the seed layout rendered by the dialect, its summary message carrying the
point in a ``"ctxcompact"`` field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from time import monotonic
from typing import TYPE_CHECKING, Any

from ctxcompact.transcripts.dialects import dialect_named
from ctxcompact.transcripts.dialects.common import NativeCompaction, plain_text
from ctxcompact.transcripts.points import (
    FIELD,
    TRIGGER_AUTO,
    TRIGGER_MANUAL,
    AppendedCompaction,
    CompactionPoint,
    boundary_id,
    compaction_time,
    ctxcompact_field,
    message_points,
    summary_id,
    summary_index,
)

if TYPE_CHECKING:
    from ctxcompact.ir import Message
    from ctxcompact.transcripts.conversation import Conversation


@dataclass(frozen=True, slots=True)
class PointLayout:
    """A compaction to be written as a point: the live ``messages`` in the dialect's layout,
    after ``head`` messages kept from before the boundary."""

    messages: tuple[Message, ...]
    head: int

    def mark(
        self, conversation: Conversation, *, auto: bool, before: int, after: int, started: float
    ) -> Conversation:
        """``conversation`` (rewritten to ``messages``) marked to be appended, with its figures;
        ``started``: the compaction's start (``time.monotonic()``), for ``durationMs``."""
        created, fixed = compaction_time()
        trigger = TRIGGER_AUTO if auto else TRIGGER_MANUAL
        duration = 0 if fixed else int((monotonic() - started) * 1000)
        return replace(
            conversation, appended=AppendedCompaction(self.head, trigger, before, after, duration, created)
        )


def point_layout(
    conversation: Conversation, messages: tuple[Message, ...], *, append: bool
) -> PointLayout | None:
    """How a compaction's result is written as a point, or None for a rewrite in place: a
    summary compaction of a dialect that compacts natively (Claude Code) always is; of a bare
    message list, with ``append`` or once it has a point."""
    at = summary_index(messages)
    if at is None:
        return None
    adapter = dialect_named(conversation.dialect)
    if isinstance(adapter, NativeCompaction):
        return PointLayout((*messages[:at], *adapter.compaction_layout(messages[at:])), at)
    if adapter.owns_file or not (append or message_points(conversation.records)):
        return None
    return PointLayout(messages, at)


def appended_records(conversation: Conversation) -> list[Any]:
    """The records to write after ``conversation.records`` (which stay as they are)."""
    compaction = conversation.appended
    if compaction is None:
        return []
    adapter = dialect_named(conversation.dialect)
    live = conversation.messages[compaction.head :]
    if isinstance(adapter, NativeCompaction):
        return adapter.append_compaction(conversation.records, live, compaction)
    records = conversation.records
    last = max((i for m in conversation.read_messages if m.source for i in m.source.indices), default=-1)
    boundary = boundary_id(records, last)
    out: list[Any] = []
    for message in live:
        if message.source is not None and not message.changed:
            rendered = list(message.source.records)
        else:
            rendered = adapter.render(message)
        if message.meta.get("kind") == "summary" and rendered and isinstance(rendered[0], Mapping):
            point = CompactionPoint(
                summary_id(boundary, plain_text(message.content) or ""), boundary, compaction.created_ms
            )
            mark = ctxcompact_field(isSummary=True, compactionPoint=point.to_json())
            rendered[0] = {**rendered[0], FIELD: mark}
        out.extend(rendered)
    return out
