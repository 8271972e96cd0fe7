"""The API's own token usage as a transcript records it: one dialect-neutral record.

A leaf module (it imports only :mod:`ctxcompact.ir`): each dialect's ``recorded_usage``
builds a :class:`RecordedUsage` from its own fields (Claude Code ``message.usage``,
mini-swe-agent ``extra.response.usage``, Codex ``token_count`` events), and
:mod:`ctxcompact.accounting.context_size` decides from it. A rewrite makes the usage recorded
before it stale: :func:`rewrite_mark` finds the trace it left (a :class:`SizeNote` on the
records it wrote, :func:`stamp_note`), so the next reader knows which usage still holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.ir import Message

#: The field naming ctxcompact on the records it writes (also :data:`ctxcompact.transcripts.points.FIELD`).
FIELD = "ctxcompact"


@dataclass(frozen=True, slots=True)
class RecordedUsage:
    """One request's token usage as the API reported it, in any dialect.

    ``at_message_index`` is the index (in the conversation's messages) of the response this
    usage belongs to: the request was every message before it; ``output`` is that response.
    ``source`` says where it was read ("message.usage, entry 412").
    """

    input: int
    cache_creation: int
    cache_read: int
    output: int
    at_message_index: int
    source: str

    @property
    def prompt(self) -> int:
        """Tokens the request took: input + cache creation + cache read."""
        return self.input + self.cache_creation + self.cache_read

    @property
    def context(self) -> int:
        """The context after that turn: the request plus the response it produced."""
        return self.prompt + self.output


#: The key of a record's ``"ctxcompact"`` field that carries a rewrite's :class:`SizeNote`.
NOTE_KEY = "context"


@dataclass(frozen=True, slots=True)
class SizeNote:
    """The context size a rewrite measured for its output, written on every record it created
    or changed (``"ctxcompact": {"context": {...}}``) so that the next reader measures the
    output exactly as the rewrite did (one size everywhere).

    ``tokens`` is that size; ``overhead`` the part of it outside our count of the messages
    (× the model's factor): the system prompt and tool definitions a session file does not
    hold, as the usage recorded before the rewrite showed them (or the calibrated default);
    ``records`` how many records the output had — usage recorded on a later record was
    recorded after the rewrite (an agent resumed the session), and is the truth again.
    """

    tokens: int
    overhead: int
    records: int = 0

    def to_json(self) -> dict[str, int]:
        return {"tokens": self.tokens, "overhead": self.overhead, "records": self.records}

    @classmethod
    def from_json(cls, value: Any) -> SizeNote | None:
        if not isinstance(value, Mapping):
            return None
        tokens, overhead, records = (value.get(k) for k in ("tokens", "overhead", "records"))
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (tokens, overhead, records)):
            return None
        return cls(int(tokens or 0), int(overhead or 0), int(records or 0))


@dataclass(frozen=True, slots=True)
class RewriteMark:
    """Where the latest rewrite of a conversation left its trace.

    ``first``: the first message it created or changed (usage recorded on an earlier message
    describes messages the rewrite left alone); ``horizon``: the messages before this index
    existed when it ran, so usage recorded on them predates it (stale) and usage on a later
    one is fresh; ``note``: the size it measured, when it wrote one.
    """

    first: int
    horizon: int
    note: SizeNote | None = None


def _mark(record: Any) -> Mapping[str, Any] | None:
    """A record's :data:`FIELD`, when it holds one. ``type(x) is dict`` and ``None`` first:
    the Mapping check (an ABC) costs more than the look-up, and this runs on every record of
    every compaction's input."""
    if type(record) is not dict and not isinstance(record, Mapping):
        return None
    mark = record.get(FIELD)
    if mark is None or (type(mark) is not dict and not isinstance(mark, Mapping)):
        return None
    return mark


def rewrite_mark(messages: Sequence[Message]) -> RewriteMark | None:
    """The trace rewrites left on ``messages``, or None when none did.

    A message a rewrite created or changed in memory (not yet written) puts the horizon at the
    end of the list: nothing has been sent since. A written one carries a ``"ctxcompact"``
    field on a record; the horizon is past it and past every record its note says the output
    had (a message ctxcompact copied may carry the usage of the one it copies: stale too). The
    note of the last such message counts.
    """
    first: int | None = None
    horizon = 0
    records = 0
    note: SizeNote | None = None
    for index, message in enumerate(messages):
        if message.source is None or message.changed:
            first = index if first is None else first
            horizon = len(messages)
            continue
        marks = [mark for r in message.source.records if (mark := _mark(r)) is not None]
        if not marks:
            continue
        first = index if first is None else first
        horizon = max(horizon, index + 1)
        for mark in marks:
            found = SizeNote.from_json(mark.get(NOTE_KEY))
            if found is not None:
                note, records = found, max(records, found.records)
    if first is None:
        return None
    if records:
        later = (i for i, m in enumerate(messages) if m.source is not None and m.source.indices[0] >= records)
        horizon = max(horizon, next(later, len(messages)))
    return RewriteMark(first, horizon, note)


def stamp_note(record: Any, note: SizeNote | None) -> Any:
    """``record`` (one a rewrite wrote) with ``note`` in its ``"ctxcompact"`` field, or, with
    None, without any (``offload --undo`` gives the records back as they were)."""
    if not isinstance(record, Mapping):
        return record
    mark = record.get(FIELD)
    base = {k: v for k, v in mark.items() if k != NOTE_KEY} if isinstance(mark, Mapping) else {}
    if note is not None:
        return {**record, FIELD: {**base, NOTE_KEY: note.to_json()}}
    if not isinstance(mark, Mapping) or NOTE_KEY not in mark:
        return record
    if base:
        return {**record, FIELD: base}
    return {k: v for k, v in record.items() if k != FIELD}


def token_field(value: Any) -> int:
    """A usage field as a count: a positive int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
