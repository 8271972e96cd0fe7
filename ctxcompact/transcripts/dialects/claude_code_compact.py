"""Claude Code's own compaction, written the way Claude Code writes it after ``/compact``.

A summary compaction of a session never rewrites its history. It appends:

1. a ``system`` entry, ``subtype: "compact_boundary"``, ``content: "Conversation
   compacted"``, ``parentUuid: null`` (a new chain starts), ``logicalParentUuid``: the last
   entry of the thread, and ``compactMetadata`` (``trigger``, ``preTokens``, ``postTokens``,
   ``durationMs``);
2. the summary as a ``user`` entry with ``isCompactSummary`` and
   ``isVisibleInTranscriptOnly``, worded as Claude Code words it
   (:func:`ctxcompact.markers.claude_code_summary_text`);
3. one ``user`` entry per restored file (Claude Code sends consecutive user entries as one
   message, so no acknowledgement is written — an invented assistant entry would have no
   ``message.id``, model or usage);
4. with ``--keep-loop``, copies of the entries of the kept request and its tool loop.

Each appended entry has a fresh uuid (derived from its parent and content: same input, same
output), ``parentUuid`` linking it to the one before, a ``timestamp``, the session fields of
the thread's last entry (``sessionId``, ``cwd``, ``version``, ``gitBranch``…), and a
``"ctxcompact"`` field with our version (copies also name the uuid they copy). Claude Code,
and our reader, start the live context at the latest boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

from ctxcompact.ir import Message
from ctxcompact.markers import SUMMARY_PREFIX, claude_code_summary_text
from ctxcompact.transcripts.dialects.common import plain_text
from ctxcompact.transcripts.points import AppendedCompaction, CompactionPoint, ctxcompact_field, epoch_ms

#: Fields an appended entry takes from the thread's last entry.
SESSION_FIELDS = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "agentId", "slug")
_DROPPED_KINDS = frozenset({"summary_ack", "restored_ack"})


def is_boundary(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and record.get("type") == "system"
        and record.get("subtype") == "compact_boundary"
    )


def preserved_segment(
    records: Sequence[Mapping[str, Any]], by_uuid: Mapping[str, int], chain: Sequence[int], boundary: int
) -> tuple[int | None, list[int]]:
    """The entries a compaction kept verbatim, and the entry they follow (its summary).

    Claude Code (2.1.332 does) keeps the latest messages through its compaction (manual, auto)
    without writing them again: its boundary's ``compactMetadata.preservedSegment`` names them
    by ``headUuid`` … ``tailUuid`` (a ``parentUuid`` chain before the boundary) and the
    ``anchorUuid`` they are sent after, and its loader splices them in there. (None, []) when
    the boundary has none, or its links do not resolve to a chain on the file."""
    if boundary < 0:
        return None, []
    metadata = records[chain[boundary]].get("compactMetadata")
    segment = metadata.get("preservedSegment") if isinstance(metadata, Mapping) else None
    if not isinstance(segment, Mapping):
        return None, []
    head, tail = by_uuid.get(str(segment.get("headUuid"))), by_uuid.get(str(segment.get("tailUuid")))
    anchor = by_uuid.get(str(segment.get("anchorUuid")))
    if head is None or tail is None or anchor not in chain[boundary + 1 :]:
        return None, []
    kept: list[int] = []
    at: int | None = tail
    while at is not None and at not in kept and at < chain[boundary]:
        kept.append(at)
        if at == head:
            return anchor, kept[::-1]
        parent = records[at].get("parentUuid")
        at = by_uuid.get(parent) if isinstance(parent, str) else None
    return None, []


def keep_preserved_segments(
    records: list[Any], present: Set[str | None], parents: Mapping[str | None, str | None]
) -> list[Any]:
    """``records`` whose boundaries still name the preserved entries a rewrite kept.

    A rewrite that removes the head or the tail of a boundary's ``preservedSegment`` (``parents``:
    each original entry's ``parentUuid``; ``present``: the uuids still in the file) would leave a
    segment that resolves to nothing, and Claude Code would resume without the entries that
    remain: the head moves to the first entry still present and the tail to the last; a segment
    with none left is dropped. Boundaries whose segment is whole are the same objects."""
    out = list(records)
    for k, record in enumerate(records):
        if not is_boundary(record):
            continue
        metadata = record.get("compactMetadata")
        if not isinstance(metadata, Mapping) or not isinstance(metadata.get("preservedSegment"), Mapping):
            continue
        segment = metadata["preservedSegment"]
        head, tail = segment.get("headUuid"), segment.get("tailUuid")
        if head in present and tail in present:
            continue
        chain: list[Any] = []  # tail back to head, as the file had it
        at: Any = tail
        while at is not None and at not in chain:
            chain.append(at)
            if at == head:
                break
            at = parents.get(at)
        kept = [u for u in reversed(chain) if u in present] if chain and chain[-1] == head else []
        if kept:
            moved = {**segment, "headUuid": kept[0], "tailUuid": kept[-1]}
            out[k] = {**record, "compactMetadata": {**metadata, "preservedSegment": moved}}
        else:
            out[k] = {
                **record,
                "compactMetadata": {m: v for m, v in metadata.items() if m != "preservedSegment"},
            }
    return out


def native_layout(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The compacted context in Claude Code's layout, from the seed's (summary, ack, restored
    file, ack…, kept tail): the summary reworded, acknowledgements dropped, and consecutive
    user messages joined into one (as Claude Code sends them, and as our reader reads them
    back); a joined message remembers its ``parts`` for writing."""
    out: list[Message] = []
    for message in messages:
        kind = message.meta.get("kind")
        if kind in _DROPPED_KINDS:
            continue
        if kind == "summary":
            text = plain_text(message.content) or ""
            text = text.removeprefix(SUMMARY_PREFIX)
            message = Message(
                "user", ({"type": "text", "text": claude_code_summary_text(text)},), None, True, message.meta
            )
        if out and out[-1].role == "user" and message.role == "user":
            previous = out.pop()
            parts = (*previous.meta.get("parts", (previous,)), message)
            meta = {"kind": previous.meta.get("kind"), "parts": parts}
            message = Message("user", previous.content + message.content, None, True, meta)
        out.append(message)
    return tuple(out)


def thread_tail(records: Sequence[Any]) -> Mapping[str, Any]:
    """The last entry of the conversation's own thread (main thread, or a subagent file's)."""
    entries = [r for r in records if isinstance(r, Mapping) and r.get("type") in ("user", "assistant")]
    sidechain = bool(entries) and all(r.get("isSidechain") for r in entries)
    for record in reversed(records):
        if (
            isinstance(record, Mapping)
            and isinstance(record.get("uuid"), str)
            and record.get("type") in ("user", "assistant", "system")
            and bool(record.get("isSidechain")) == sidechain
        ):
            return record
    return entries[-1] if entries else {}


def recorded_cwd(records: Sequence[Any]) -> str | None:
    """The folder the session ran in (its last entry's ``cwd``)."""
    for record in reversed(records):
        if isinstance(record, Mapping) and isinstance(record.get("cwd"), str) and record["cwd"]:
            return str(record["cwd"])
    return None


def append_entries(
    records: Sequence[Any],
    live: Sequence[Message],
    compaction: AppendedCompaction,
    derive_uuid: Callable[[Any, Any], str],
    render: Callable[[Message], list[Any]],
) -> list[dict[str, Any]]:
    """The entries appended after ``records`` for the compacted ``live`` messages; ``render``
    gives a changed message's entries (the dialect's own writer, passed in so that this module
    does not import the one that imports it)."""
    last = thread_tail(records)
    session = {k: last[k] for k in SESSION_FIELDS if k in last}
    stamp = compaction.timestamp
    boundary: dict[str, Any] = {
        "parentUuid": None,
        "logicalParentUuid": last.get("uuid"),
        **session,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": stamp,
        "uuid": derive_uuid(last.get("uuid"), ["compact_boundary", stamp]),
        "level": "info",
        "compactMetadata": {
            "trigger": compaction.trigger,
            "preTokens": compaction.pre_tokens,
            "postTokens": compaction.post_tokens,
            "durationMs": compaction.duration_ms,
        },
        "ctxcompact": ctxcompact_field(),
    }
    out = [boundary]
    for message in live:
        for part in message.meta.get("parts", (message,)):
            for entry in _entries_of(part, session, stamp, render, boundary["uuid"]):
                parent = out[-1]["uuid"]
                entry["parentUuid"] = parent
                entry["uuid"] = derive_uuid(parent, entry.get("message"))
                out.append(entry)
    return out


def _entries_of(
    message: Message,
    session: Mapping[str, Any],
    stamp: str,
    render: Callable[[Message], list[Any]],
    boundary: str,
) -> list[dict[str, Any]]:
    """Fresh entries for one live message: a new one (summary, restored file), or copies of a
    kept one's entries (rendered anew when a strategy changed it).

    A copy is written now (``timestamp``: the compaction's) and, for an assistant entry, is a
    response of its own: a ``message.id`` derived from the original's and the ``boundary``.
    Claude Code gathers every entry sharing a ``message.id`` from the whole file, so a copy
    keeping the original's would bring the pre-boundary original back: sent twice."""
    if message.source is None:
        text = plain_text(message.content)
        entry: dict[str, Any] = {
            "parentUuid": None,
            **session,
            "type": message.role,
            "message": {
                "role": message.role,
                "content": text if text is not None else [dict(b) for b in message.content],
            },
        }
        entry.update(new_entry_flags(message))
        entry["uuid"] = ""
        entry["timestamp"] = stamp
        entry["ctxcompact"] = ctxcompact_field()
        return [entry]
    templates = render(message) if message.changed else list(message.source.records)
    copies: list[dict[str, Any]] = []
    for template in templates:
        copy = dict(template)
        copy["timestamp"] = stamp
        inner = copy.get("message")
        if isinstance(inner, Mapping) and isinstance(inner.get("id"), str) and inner["id"]:
            copy["message"] = {**inner, "id": copied_message_id(inner["id"], boundary)}
        copy["ctxcompact"] = ctxcompact_field(copiedFrom=template.get("uuid"))
        copies.append(copy)
    return copies


def copied_message_id(original: str, boundary: str) -> str:
    """The ``message.id`` of a copy of a response's entries after ``boundary``: the same for
    every entry of the response (they stay one message), new for each compaction."""
    import hashlib  # here: loading OpenSSL (~7 ms) is paid by the runs that make a digest

    digest = hashlib.sha256(f"{boundary}:{original}".encode()).hexdigest()[:24]
    return f"msg_ctxcompact_{digest}"


def new_entry_flags(message: Message) -> dict[str, Any]:
    """The flags Claude Code sets on an entry like the new ``message``: its own summary is
    ``isCompactSummary`` and ``isVisibleInTranscriptOnly``; a restored file (an attachment Claude
    Code itself injects) is ``isMeta`` — without it Claude Code takes the last one for a prompt
    the user typed and never answered."""
    kind = message.meta.get("kind")
    if kind == "summary":
        return {"isVisibleInTranscriptOnly": True, "isCompactSummary": True}
    if kind == "restored_file":
        return {"isMeta": True}
    return {}


def session_points(records: Sequence[Any]) -> list[CompactionPoint]:
    """Every compaction of a session (Claude Code's and ours), oldest first: the boundary's
    ``logicalParentUuid``, the summary entry's uuid, the boundary's time."""
    points: list[CompactionPoint] = []
    for i, record in enumerate(records):
        if not is_boundary(record):
            continue
        summary = next(
            (
                r
                for r in records[i + 1 :]
                if isinstance(r, Mapping)
                and r.get("isCompactSummary")
                and r.get("parentUuid") == record.get("uuid")
            ),
            None,
        )
        points.append(
            CompactionPoint(
                str(summary.get("uuid", "")) if summary else "",
                str(record.get("logicalParentUuid") or ""),
                epoch_ms(record.get("timestamp")),
            )
        )
    return points
