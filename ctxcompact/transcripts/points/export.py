"""``export``: the request-ready context of a transcript, from its latest compaction point.

What is sent to the model is the
summary plus the messages after the latest point's boundary — the leading system messages
kept — never the history before it. Our reader already reads a transcript that way
(:mod:`ctxcompact.transcripts.points`); this module writes that live context out in a form an
API takes: bare message lists keep their container (array, request body, JSONL, collection)
and dialect, minus the ``"ctxcompact"`` field; a session log (Claude Code) becomes a JSON
array of Anthropic messages, the way Claude Code sends it on resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxcompact.ir import Message
from ctxcompact.transcripts.dialects import DEFAULT_DIALECT, dialect_named
from ctxcompact.transcripts.dialects.common import CompactionLog
from ctxcompact.transcripts.io import Conversation, Transcript, dump_records
from ctxcompact.transcripts.jsontext import dumps
from ctxcompact.transcripts.points import CompactionPoint, message_points, strip_field


@dataclass(frozen=True, slots=True)
class ExportedConversation:
    """One conversation's live context as records, and every compaction point it has."""

    label: str
    records: tuple[Any, ...]
    points: tuple[CompactionPoint, ...]
    stored_messages: int


def compaction_points(conversation: Conversation) -> tuple[CompactionPoint, ...]:
    """The compaction points a conversation records, oldest first."""
    adapter = dialect_named(conversation.dialect)
    if isinstance(adapter, CompactionLog):
        return tuple(adapter.compaction_points(conversation.records))
    return tuple(p for _, p in message_points(conversation.records))


def export_conversation(conversation: Conversation) -> ExportedConversation:
    """The live context of ``conversation`` as request-ready records (see the module doc)."""
    adapter = dialect_named(conversation.dialect)
    records: list[Any] = []
    for message in conversation.messages:
        if adapter.owns_file:
            records.extend(DEFAULT_DIALECT.render(Message(message.role, message.content)))
        elif message.source is not None and not message.changed:
            records.extend(strip_field(r) for r in message.source.records)
        else:
            records.extend(strip_field(r) for r in adapter.render(message))
    stored = sum(1 for r in conversation.records if isinstance(r, dict))
    return ExportedConversation(conversation.label, tuple(records), compaction_points(conversation), stored)


def export_transcript(transcript: Transcript) -> tuple[bytes, tuple[ExportedConversation, ...]]:
    """The exported transcript's bytes (its own container; a session log: a JSON array)."""
    done = tuple(export_conversation(c) for c in transcript.conversations)
    if transcript.container == "jsonl":
        return dump_records(done[0].records), done
    if transcript.container == "body":
        body = {**transcript.root, transcript.collection_key or "messages": list(done[0].records)}
        return _json(body), done
    if transcript.container == "collection":
        key = transcript.collection_key or "messages"
        items = [{**item, key: list(d.records)} for item, d in zip(transcript.root, done, strict=True)]
        return _json(items), done
    return _json(list(done[0].records)), done


def _json(value: Any) -> bytes:
    return dumps(value, indent=True) + b"\n"
