"""Writing an appended compaction (see :mod:`ctxcompact.compaction_points`).

:func:`appended_records` gives the records that follow a conversation's history when a
summary compaction is written as a point: the dialect's own (Claude Code) when it compacts
natively, else the seed layout rendered by the dialect, its summary message carrying the
point in a ``"ctxcompact"`` field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctxcompact.compaction_points import (
    FIELD,
    CompactionPoint,
    boundary_id,
    ctxcompact_field,
    summary_id,
)
from ctxcompact.dialects import dialect_named
from ctxcompact.dialects.common import NativeCompaction, plain_text

if TYPE_CHECKING:
    from ctxcompact.transcript import Conversation


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
