"""Where a session file was compacted, and by whom.

A compaction of a Claude Code session is a ``compact_boundary`` system entry (followed by the
summary entry); a compaction of a Codex rollout is a ``compacted`` line. Both agents, and
ctxcompact, only ever *append* them, so the history before a compaction is the file's bytes
before its first line. Ours are told apart by the ``"ctxcompact"`` field on every line we
write: our compaction is that boundary plus the marked entries right after it (summary,
restored files, copies of the kept loop), or that one ``compacted`` line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FIELD = "ctxcompact"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a session file: its byte span (``end`` past the newline) and its record
    (None when it is not a JSON object)."""

    start: int
    end: int
    record: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction found in a session file. ``first``/``last``: its line indexes (ours may
    span several lines); ``start``/``end``: their byte span; ``ours``: written by ctxcompact;
    ``newline_added``: we gave the file its final newline before appending it."""

    number: int
    first: int
    last: int
    start: int
    end: int
    ours: bool
    trigger: str | None
    timestamp: str | None
    newline_added: bool = False

    @property
    def by(self) -> str:
        return "ctxcompact" if self.ours else "agent"


def split_lines(raw: bytes) -> list[Line]:
    """The lines of ``raw`` with their records (parsed leniently: only what is needed here)."""
    import orjson

    lines: list[Line] = []
    start = 0
    size = len(raw)
    while start < size:
        cut = raw.find(b"\n", start)
        end = size if cut < 0 else cut + 1
        text = raw[start:end].strip()
        record: Mapping[str, Any] | None = None
        if text.startswith(b"{"):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                value = None
            record = value if isinstance(value, Mapping) else None
        lines.append(Line(start, end, record))
        start = end
    return lines


def is_compaction(record: Mapping[str, Any] | None) -> bool:
    if record is None:
        return False
    if record.get("type") == "compacted":
        return True
    return record.get("type") == "system" and record.get("subtype") == "compact_boundary"


def find_compactions(lines: list[Line]) -> list[Compaction]:
    """Every compaction of the file, oldest first, numbered from 1."""
    found: list[Compaction] = []
    for i, line in enumerate(lines):
        record = line.record
        if record is None or not is_compaction(record):
            continue
        ours = isinstance(record.get(FIELD), Mapping)
        last = i
        if ours and record.get("type") == "system":
            while (
                last + 1 < len(lines)
                and _ours(lines[last + 1].record)
                and not is_compaction(lines[last + 1].record)
            ):
                last += 1
        marker = record.get(FIELD) if ours else None
        found.append(
            Compaction(
                number=len(found) + 1,
                first=i,
                last=last,
                start=line.start,
                end=lines[last].end,
                ours=ours,
                trigger=_trigger(record),
                timestamp=record.get("timestamp") if isinstance(record.get("timestamp"), str) else None,
                newline_added=isinstance(marker, Mapping) and marker.get("newlineAdded") is True,
            )
        )
    return found


def _ours(record: Mapping[str, Any] | None) -> bool:
    return record is not None and isinstance(record.get(FIELD), Mapping)


def _trigger(record: Mapping[str, Any]) -> str | None:
    meta = record.get("compactMetadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("trigger"), str):
        return str(meta["trigger"])
    return None


def history_before(raw: bytes, compaction: Compaction) -> bytes:
    """The file as it was just before ``compaction`` was appended (byte for byte: a final
    newline ctxcompact added first is taken off again)."""
    head = raw[: compaction.start]
    if compaction.newline_added and head.endswith(b"\n"):
        head = head[:-1]
    return head
