"""Compaction points: compacting by *appending*.

A summary compaction written as a point keeps every original record where it was and appends
the compacted context after it, plus a record of where it starts::

    CompactionPoint(summary_id, boundary_id, created_at)

``boundary_id`` names the last message the summary replaced: that message and everything
before it are no longer sent (except the leading system messages, the *head*);
``summary_id`` names the summary message, which opens the live context. Several points
accumulate over time; the latest one counts. Each conversation of a collection keeps its own,
since they are stored on its own messages.

How a dialect stores a point:

* **Claude Code sessions**: natively, as Claude Code does after ``/compact`` (a
  ``compact_boundary`` system entry and an ``isCompactSummary`` user entry; see
  :mod:`ctxcompact.transcripts.dialects.claude_code_compact`). A summary compaction of a session always
  appends.
* **Bare API messages** (array, request body, JSONL, collection): the summary message carries
  a ``"ctxcompact"`` field holding ``{"version", "isSummary": true, "compactionPoint":
  {"summaryMessageId", "boundaryMessageId", "createdAt"}}``. Messages have no ids of their
  own, so the summary gets one (derived from its content) and the boundary is named by its
  position, ``"#N"`` (the N-th record of the message list; history is never rewritten, so
  positions stay valid) — or by the message's own ``id`` field when it has one. That field
  is not part of the API: ``ctxcompact export`` builds the request-ready context and strips
  it. ``compact --append`` writes the first point; once a conversation has one, every summary
  compaction of it appends another.

Our reader applies the latest point (``count``, ``check``, ``compact`` see the live
context); the records before it are kept as they are on every write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ctxcompact.ir import Message
from ctxcompact.transcripts.recorded_usage import FIELD as FIELD  # re-exported

TRIGGER_MANUAL = "manual"
TRIGGER_AUTO = "auto"


@dataclass(frozen=True, slots=True)
class CompactionPoint:
    """Where a compaction starts; ``created_at`` in milliseconds since the epoch."""

    summary_id: str
    boundary_id: str
    created_at: int

    def to_json(self) -> dict[str, Any]:
        return {
            "summaryMessageId": self.summary_id,
            "boundaryMessageId": self.boundary_id,
            "createdAt": self.created_at,
        }

    @classmethod
    def from_json(cls, value: Any) -> CompactionPoint | None:
        if not isinstance(value, Mapping):
            return None
        summary, boundary, created = (
            value.get("summaryMessageId"),
            value.get("boundaryMessageId"),
            value.get("createdAt"),
        )
        if not (isinstance(summary, str) and isinstance(boundary, str)):
            return None
        return cls(summary, boundary, created if isinstance(created, int) else 0)


@dataclass(frozen=True, slots=True)
class AppendedCompaction:
    """A summary compaction to be written after the history instead of over it.

    ``head`` leading messages of the conversation's live list are kept from before the
    boundary (system messages) and are not written again; the rest are appended. The figures
    are Claude Code's ``compactMetadata``.
    """

    head: int
    trigger: str
    pre_tokens: int
    post_tokens: int
    duration_ms: int
    created_at: datetime

    @property
    def created_ms(self) -> int:
        return int(self.created_at.timestamp() * 1000)

    @property
    def timestamp(self) -> str:
        """ISO 8601 in UTC with milliseconds, as Claude Code writes ``timestamp``."""
        return self.created_at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.created_at.microsecond // 1000:03d}Z"


def compaction_time() -> tuple[datetime, bool]:
    """Now, in UTC — or ``SOURCE_DATE_EPOCH`` when set (reproducible output: the tests'
    golden files); the flag says the time is fixed (then durations are written as 0)."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if fixed.isdigit():
        return datetime.fromtimestamp(int(fixed), UTC), True
    return datetime.now(UTC), False


def epoch_ms(stamp: Any) -> int:
    """An ISO 8601 ``timestamp`` (a session log's) in milliseconds since the epoch; 0 when
    unreadable."""
    if not isinstance(stamp, str):
        return 0
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def ctxcompact_field(**extra: Any) -> dict[str, Any]:
    """The ``"ctxcompact"`` value of a record we write: our version, and ``extra``."""
    from ctxcompact import __version__

    return {"version": __version__, **extra}


def summary_index(messages: Sequence[Message]) -> int | None:
    """Index of the summary message a compaction wrote (``meta kind == "summary"``), if any."""
    return next((i for i, m in enumerate(messages) if m.meta.get("kind") == "summary"), None)


# --- bare API messages: the point stored on the summary message ------------------------------


def record_point(record: Any) -> CompactionPoint | None:
    """The point a message record carries in its ``"ctxcompact"`` field, if any."""
    if type(record) is not dict and not isinstance(record, Mapping):  # a dict: no ABC check
        return None
    mark = record.get(FIELD)
    if mark is None:
        return None  # most records
    return CompactionPoint.from_json(mark.get("compactionPoint")) if isinstance(mark, Mapping) else None


def message_points(records: Sequence[Any]) -> list[tuple[int, CompactionPoint]]:
    """Every point stored in a message list, with the position of its summary record."""
    # Most records are dicts without the field: passed over without a call.
    return [
        (i, point)
        for i, r in enumerate(records)
        if not (type(r) is dict and FIELD not in r) and (point := record_point(r)) is not None
    ]


def boundary_position(records: Sequence[Any], point: CompactionPoint, summary_at: int) -> int:
    """Where ``point``'s boundary is in ``records``: ``#N``, or the record whose ``id`` it is;
    failing both, the record just before the summary."""
    ref = point.boundary_id
    if ref.startswith("#") and ref[1:].isdigit() and int(ref[1:]) < summary_at:
        return int(ref[1:])
    for i in range(summary_at - 1, -1, -1):
        record = records[i]
        if isinstance(record, Mapping) and record.get("id") == ref:
            return i
    return summary_at - 1


def boundary_id(records: Sequence[Any], index: int) -> str:
    """How a point names the message record at ``index``: its own ``id``, else ``#index``."""
    record = records[index] if 0 <= index < len(records) else None
    own = record.get("id") if isinstance(record, Mapping) else None
    return own if isinstance(own, str) and own else f"#{index}"


def summary_id(boundary: str, text: str) -> str:
    """A summary message's id, derived from its boundary and text (same input, same id)."""
    import hashlib  # here: loading OpenSSL (~7 ms) is paid by the runs that make a digest

    digest = hashlib.sha256(json.dumps([boundary, text]).encode()).hexdigest()[:24]
    return f"ctxcompact-summary-{digest}"


def live_indices(messages: Sequence[Message], boundary: int) -> list[int]:
    """Positions (in ``messages``) of the live messages once a point's boundary is at record
    ``boundary``: the leading system messages, then every message after the boundary."""
    out: list[int] = []
    for i, message in enumerate(messages):
        first = message.index
        if first is None or first > boundary or (message.role == "system" and len(out) == i):
            out.append(i)
    return out


def strip_field(record: Any) -> Any:
    """``record`` without our ``"ctxcompact"`` field (what the API accepts)."""
    if isinstance(record, Mapping) and FIELD in record:
        return {k: v for k, v in record.items() if k != FIELD}
    return record


def apply_latest_point(
    records: Sequence[Any], messages: tuple[Message, ...], passthrough: frozenset[int]
) -> tuple[tuple[Message, ...], frozenset[int]]:
    """The live messages of a bare message list with points, and the passthrough
    set grown by the records of the messages before the latest point's boundary."""
    points = message_points(records)
    if not points:
        return messages, passthrough
    at, point = points[-1]
    boundary = boundary_position(records, point, at)
    keep = live_indices(messages, boundary)
    kept = {id(messages[i]) for i in keep}
    hidden = {i for m in messages if id(m) not in kept and m.source for i in m.source.indices}
    return tuple(messages[i] for i in keep), passthrough | frozenset(hidden)
