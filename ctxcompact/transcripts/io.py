"""Reading and writing transcripts: containers, dialect detection, lossless round trip.

Containers (how the messages are packed in the file):

``array``        a JSON array of messages
``body``         a JSON object with a ``messages`` list (an Anthropic or OpenAI request body,
                 or a wrapper like mini-swe-agent's ``{"info", "messages"}``), or a SWE-agent
                 ``.traj``'s ``history`` (the key is ``Transcript.collection_key``); every other
                 key — ``system``, ``tools``, ``model``… — is kept
``jsonl``        one message per line
``claude-code``  a session-log dialect's own file (JSONL of entries), named after the dialect
``collection``   a JSON array of objects that each hold a message list under ``messages`` or
                 ``traj`` (tau-bench's trajectory dumps): one conversation per item

Dialects are those of :mod:`ctxcompact.transcripts.dialects` (``anthropic``, ``openai``,
``claude-code``); detected from the records by asking each in the registry's order, or forced.

Writing puts a conversation back into its own container and dialect: messages a rewrite
kept are emitted from their raw records (every field intact), changed and new messages are
rendered by the dialect, and records that are not messages (Claude Code progress lines, an
OpenAI ``exit`` record) stay where they were relative to the messages around them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.transcripts.conversation import _COLLECTION_KEYS
from ctxcompact.transcripts.conversation import Container as Container
from ctxcompact.transcripts.conversation import Conversation as Conversation
from ctxcompact.transcripts.conversation import Transcript as Transcript
from ctxcompact.transcripts.dialects import DEFAULT_DIALECT, dialect_named, file_dialect, message_dialect
from ctxcompact.transcripts.dialects.common import RequestBody, json_kind
from ctxcompact.transcripts.dialects.foreign import (
    refuse_foreign_body,
    refuse_foreign_lines,
    refuse_foreign_object,
)
from ctxcompact.transcripts.fileio import DEFAULT_MAX_INPUT_BYTES as DEFAULT_MAX_INPUT_BYTES
from ctxcompact.transcripts.fileio import STDIN_NAME as STDIN_NAME
from ctxcompact.transcripts.fileio import read_bytes as read_bytes
from ctxcompact.transcripts.jsontext import dumps as _dumps
from ctxcompact.transcripts.jsontext import loads as _loads
from ctxcompact.transcripts.points import FIELD as POINT_FIELD
from ctxcompact.transcripts.points import apply_latest_point
from ctxcompact.transcripts.recorded_usage import stamp_note

# --- reading ---------------------------------------------------------------------------------

_NON_SPACE = re.compile(rb"\S")


def load_transcript(
    path: str | os.PathLike[str] | None = None,
    *,
    data: bytes | str | None = None,
    name: str | None = None,
    dialect: str | None = None,
    max_bytes: int = DEFAULT_MAX_INPUT_BYTES,
) -> Transcript:
    """Read a transcript from ``path`` (``None`` or ``"-"``: stdin) or from ``data``.

    ``dialect`` forces one of the registered dialects (``anthropic``, ``openai``,
    ``claude-code``) instead of detecting it; ``max_bytes`` caps what is read (see
    :func:`read_bytes`). Raises :class:`InputError` naming the file and the line/column or
    message index of what is wrong.
    """
    if dialect is not None:
        dialect_named(dialect)
    if data is None:
        name, raw = read_bytes(path, max_bytes=max_bytes)
    else:
        raw = data.encode() if isinstance(data, str) else data
        name = name or (str(path) if path is not None else STDIN_NAME)
    try:
        return parse_transcript(raw, name=name, dialect=dialect)
    except InputError as exc:
        message = str(exc)
        if message.startswith(f"{name}:"):
            raise
        raise InputError(f"{name}: {message}") from None


def text_transcript(raw: bytes, *, name: str = STDIN_NAME) -> Transcript | None:
    """Plain text that is no JSON (it does not start with ``[`` or ``{``) as a transcript of
    one user message holding it — what ``count`` makes of ``echo hi | ctxcompact count``, as
    ``ttok`` counts text; None for anything that looks like JSON (its errors stay errors) or
    that is not UTF-8."""
    start = raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start in (b"[", b"{"):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    import orjson

    body = orjson.dumps([{"role": "user", "content": text.removeprefix("\ufeff")}])
    return parse_transcript(body, name=f"{name} (plain text)", dialect="anthropic")


def load_messages(messages: Sequence[Mapping[str, Any]], *, dialect: str | None = None) -> Conversation:
    """A conversation from in-memory message dicts (the library's entry point)."""
    records = list(messages)
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InputError("messages must be a list of message objects.")
    return _conversation("messages", records, dialect or detect_dialect(records, None), None)


def parse_transcript(raw: bytes, *, name: str = STDIN_NAME, dialect: str | None = None) -> Transcript:
    """Parse ``raw`` (see :func:`load_transcript`); the result keeps ``raw`` for write-back."""
    return replace(_parse(raw, name=name, dialect=dialect), raw=raw)


def _parse(raw: bytes, *, name: str, dialect: str | None) -> Transcript:
    text_start = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text_start:
        if name.endswith(".jsonl"):
            # Zero lines is valid JSONL: the line-per-message form of an empty list.
            chosen = dialect or DEFAULT_DIALECT.name
            return Transcript(name, "jsonl", [], (_conversation(name, [], chosen, None),))
        raise InputError("is empty; expected a JSON array of messages, a request body or JSONL.")
    # JSONL when the first line is an object on its own and more follows: then the whole is
    # not one JSON document, and reading it as one (a second pass over a large session) is spared.
    newline = text_start.find(b"\n")
    more = newline >= 0 and _NON_SPACE.search(text_start, newline) is not None
    if text_start[:1] == b"{" and more and _loads(text_start[:newline])[1] is None:
        return _from_lines(name, raw, dialect)
    root, err = _loads(raw)
    if err is None:
        return _from_root(name, root, dialect)
    raise InputError(f"invalid JSON at {err}.")


def _from_lines(name: str, raw: bytes, dialect: str | None) -> Transcript:
    lines: list[bytes] = []
    transcript = _from_line_records(name, raw, dialect, lines)
    return replace(transcript, lines=tuple(lines))


def _from_line_records(name: str, raw: bytes, dialect: str | None, lines: list[bytes]) -> Transcript:
    """The transcript of a JSONL file; ``lines`` gets each record's line as spelled."""
    records: list[Any] = []
    cut: InputError | None = None
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        value, err = _loads(stripped)
        if err is not None:
            # A line that is whole JSON but unreadable (a huge integer) was not cut off.
            last = lineno == raw.rstrip(b"\n").count(b"\n") + 1 and not err.whole
            hint = " (truncated line?)" if last else ""
            error = InputError(f"invalid JSON on line {lineno}, column {err.column}: {err.detail}{hint}.")
            if not last:
                raise error
            cut = error
            continue
        records.append(value)
        lines.append(line)
    whole_file = _whole_file_dialect(records, dialect)
    if whole_file is not None:
        transcript = _whole_file(name, records, whole_file)
        if cut is None:
            return transcript
        # A session being written right now: its agent skips the unreadable line, and so do we.
        skipped = f"{str(cut).removesuffix('.')}: skipped, as the agent skips it (a session being written?)"
        conv = transcript.conversations[0]
        return replace(transcript, conversations=(replace(conv, warnings=(*conv.warnings, skipped)),))
    if cut is not None:
        raise cut
    chosen = dialect or detect_dialect(records, None)
    return Transcript(name, "jsonl", records, (_conversation(name, records, chosen, None),))


def _whole_file_dialect(records: Sequence[Any], forced: str | None, *, refuse: bool = True) -> str | None:
    """The session-log dialect (forced, or recognised) a whole file is written in, if any.
    With ``refuse``, lines of another agent's format that no dialect reads are refused here."""
    if forced is not None and dialect_named(forced).owns_file:
        return forced
    found = file_dialect(records) if forced is None else None
    if found is None and refuse:
        refuse_foreign_lines(records)
    return found.name if found is not None else None


def _whole_file(name: str, records: list[Any], dialect: str) -> Transcript:
    """A session log: the file is the container, named after its dialect."""
    return Transcript(name, dialect, records, (_conversation(name, records, dialect, None),))


def _from_root(name: str, root: Any, dialect: str | None) -> Transcript:
    if isinstance(root, list):
        if root and all(isinstance(r, Mapping) for r in root) and not any("role" in r for r in root):
            key = next((k for k in _COLLECTION_KEYS if all(isinstance(r.get(k), list) for r in root)), None)
            if key is not None:
                # One file, one dialect: a trajectory without tool calls says nothing by itself.
                chosen = dialect or detect_dialect([r for item in root for r in item[key]], root[0])
                convs = tuple(
                    _collection_item(name, i, item[key], chosen, item) for i, item in enumerate(root)
                )
                return Transcript(name, "collection", root, convs, collection_key=key)
            whole_file = _whole_file_dialect(root, dialect)
            if whole_file is not None:
                return _whole_file(name, root, whole_file)
        chosen = dialect or detect_dialect(root, None)
        return Transcript(name, "array", root, (_conversation(name, root, chosen, None),))
    if isinstance(root, Mapping):
        key = _body_key(root)
        messages = root.get(key)
        if isinstance(messages, list):
            refuse_foreign_body(root)
            chosen = dialect or detect_dialect(messages, root)
            conv = _conversation(name, messages, chosen, root)
            return Transcript(name, "body", root, (conv,), collection_key=None if key == "messages" else key)
        if "role" in root:
            chosen = dialect or detect_dialect([root], None)
            return Transcript(name, "jsonl", [root], (_conversation(name, [root], chosen, None),))
        # A one-line session file (a session just started, a short subagent run).
        whole_file = _whole_file_dialect([root], dialect, refuse=False)
        if whole_file is not None:
            return _whole_file(name, [root], whole_file)
        refuse_foreign_object(root)
        if "messages" in root:
            raise InputError(
                f"'messages' is a JSON {json_kind(root['messages'])}, expected a list of messages."
            )
        keys = ", ".join(list(root)[:8]) or "none"
        raise InputError(
            "is a JSON object without a 'messages' list (keys: "
            f"{keys}); expected a message array, a request body with 'messages', JSONL or a Claude Code session."
        )
    raise InputError(
        f"is a JSON {json_kind(root)}; expected a message array, a request body with 'messages', JSONL or a Claude Code session."
    )


def _body_key(root: Mapping[str, Any]) -> str:
    """The key of an object's message list: ``messages``, or a SWE-agent ``.traj``'s
    ``history`` (beside its ``trajectory``)."""
    if (
        not isinstance(root.get("messages"), list)
        and isinstance(root.get("history"), list)
        and "trajectory" in root
    ):
        return "history"
    return "messages"


def _collection_item(name: str, i: int, records: Any, dialect: str, item: Mapping[str, Any]) -> Conversation:
    try:
        return _conversation(f"{name}#{i}", records, dialect, item)
    except InputError as exc:
        raise InputError(f"item {i}: {exc}") from None


def detect_dialect(records: Sequence[Any], body: Mapping[str, Any] | None) -> str:
    """The name of the dialect of a list of bare messages (and of the request ``body`` holding
    them, if any): the registry's most specific message dialect that claims them, else the
    default (see :mod:`ctxcompact.transcripts.dialects`)."""
    return message_dialect(records, body).name


def _conversation(
    label: str, records: Sequence[Any], dialect: str, body: Mapping[str, Any] | None
) -> Conversation:
    adapter = dialect_named(dialect)
    parsed = adapter.parse(records)
    messages, passthrough = parsed.messages, parsed.passthrough
    if not adapter.owns_file:  # a session log applies its own boundaries when parsing
        messages, passthrough = apply_latest_point(records, messages, passthrough)
    request = RequestBody.of(body)
    return Conversation(
        label=label,
        dialect=dialect,
        records=tuple(records),
        messages=messages,
        read_messages=messages,
        passthrough=passthrough,
        system=request.system or parsed.system,
        tools=request.tools,
        model=request.model or parsed.model,
        thinking=request.thinking,
        warnings=parsed.warnings,
        recorded=parsed.recorded,
        problems=parsed.problems,
    )


# --- writing ---------------------------------------------------------------------------------


def conversation_records(conversation: Conversation) -> list[Any]:
    """The raw records for a (possibly rewritten) conversation, in file order.

    Kept messages contribute their raw records at their original positions, and records
    that are not messages keep theirs, so an untouched conversation is written back exactly.
    A changed message is rendered at the position of its first record; a new message goes
    right after the message before it (at the start: just before the first original one).
    Strategies never reorder messages, so sorting by these positions is the output order;
    messages that share a position (the items of a Codex ``compacted`` line's history) keep
    their message order.
    """
    if conversation.appended is not None:
        return [*conversation.records, *_appended(conversation)]
    adapter = dialect_named(conversation.dialect)
    note = conversation.note if adapter.size_notes else None
    stamp = note is not None or (conversation.unnote and adapter.size_notes)
    render = adapter.render
    items: list[tuple[tuple[int, int, int, int], Any]] = [
        ((i, 0, 0, 0), conversation.records[i]) for i in conversation.passthrough
    ]
    # New messages before any kept one go where the first message of the file was: after
    # leading non-message records (a Claude Code compact boundary), before trailing ones.
    first_message = next(
        (i for i in range(len(conversation.records)) if i not in conversation.passthrough), None
    )
    cursor = first_message - 1 if first_message is not None else len(conversation.records)
    seq = 0
    for n, message in enumerate(conversation.messages):
        if message.source is not None and not message.changed and len(message.source.indices) == 1:
            cursor = message.source.indices[0]  # the common case: one kept record
            items.append(((cursor, 1, n, 0), message.source.records[0]))
        elif message.source is not None and not message.changed:
            items.extend(
                ((i, 1, n, 0), r) for i, r in zip(message.source.indices, message.source.records, strict=True)
            )
            cursor = max(message.source.indices)
        elif message.source is not None:
            # A rendered record that is, or stands for (same uuid), one of the message's own
            # records keeps that record's position; anything else goes with the first.
            first = message.source.indices[0]
            by_id = {id(r): i for i, r in zip(message.source.indices, message.source.records, strict=True)}
            by_uuid = {
                r["uuid"]: i
                for i, r in zip(message.source.indices, message.source.records, strict=True)
                if isinstance(r, Mapping) and isinstance(r.get("uuid"), str) and r["uuid"]
            }
            for j, record in enumerate(render(message)):
                uid = record.get("uuid") if isinstance(record, Mapping) else None
                uid = uid if isinstance(uid, str) else None
                index = by_id.get(id(record), by_uuid.get(uid, first))
                items.append(((index, 1, n, j), record))
            cursor = max(message.source.indices)
        else:
            for record in render(message):
                seq += 1
                items.append(((cursor, 1, n, seq), record))
    items.sort(key=lambda item: item[0])
    records = [record for _, record in items]
    if stamp:  # on what the rewrite wrote: the records it did not keep as read
        kept = {id(r) for r in conversation.records}
        note = note and replace(note, records=len(records))
        records = [r if id(r) in kept else stamp_note(r, note) for r in records]
    return adapter.finalize(records, conversation.records)


def _appended(conversation: Conversation) -> list[Any]:
    """The records an appended compaction writes after the history, each carrying the
    conversation's size note when it has one."""
    from ctxcompact.transcripts.points.append import appended_records

    appended = appended_records(conversation)
    note = conversation.note if dialect_named(conversation.dialect).size_notes else None
    if note is None:
        return appended
    note = replace(note, records=len(conversation.records) + len(appended))
    return [stamp_note(r, note) for r in appended]


def dump_transcript(transcript: Transcript) -> bytes:
    """Serialize a transcript in its own container (JSON pretty-printed, JSONL one per line).

    When no conversation changed, the bytes read come back exactly — formatting, escapes and
    all — so a pass-through (``--auto`` under the threshold, nothing to offload) is a no-op;
    a session log only gets the final newline it lacked (its agent appends after it).
    """
    convs = transcript.conversations
    raw = transcript.raw
    if raw is not None and raw and not raw.endswith(b"\n") and dialect_named(transcript.dialect).owns_file:
        # The agent appends its next entry right after the last byte: it would be glued on.
        raw += b"\n"
    if raw is not None and all(c.unchanged for c in convs):
        return raw
    if raw is not None and transcript.line_per_record and convs[0].appended is not None:
        # Appended after the history, which stays byte for byte.
        raw = raw if raw.endswith(b"\n") or not raw else raw + b"\n"
        return _note_added_newline(transcript.raw, raw + dump_records(_appended(convs[0])))
    if transcript.container == "array":
        return _document(conversation_records(convs[0]), raw)
    if transcript.container == "body":
        body = dict(transcript.root)
        body[transcript.collection_key or "messages"] = conversation_records(convs[0])
        return _document(body, raw)
    if transcript.container == "collection":
        key = transcript.collection_key or "messages"
        items = []
        for item, conv in zip(transcript.root, convs, strict=True):
            new_item = dict(item)
            new_item[key] = conversation_records(conv)
            items.append(new_item)
        return _document(items, raw)
    records = conversation_records(convs[0])
    if transcript.lines is None or len(transcript.lines) != len(transcript.root):
        data = dump_records(records)
    else:
        # A record kept as it is goes back as it was spelled (spacing, escapes, key order).
        spelled = {id(r): line for r, line in zip(transcript.root, transcript.lines, strict=True)}
        data = b"".join(
            [spelled[id(r)] + b"\n" if id(r) in spelled else _dumps(r, newline=True) for r in records]
        )
    return _note_added_newline(transcript.raw, data) if transcript.is_session_log else data


def _document(value: Any, raw: bytes | None) -> bytes:
    """A JSON document in the spelling of the one read: minified when it was written on one
    line, else indented by two spaces; ending as it ended."""
    body = raw.strip() if raw is not None else b""
    indent = raw is None or b"\n" in body
    ending = raw[len(raw.rstrip()) :] if raw is not None and not indent else b"\n"
    return _dumps(value, indent=indent) + ending


def _note_added_newline(raw: bytes | None, data: bytes) -> bytes:
    """``data`` with the first line appended after ``raw`` marked ``"newlineAdded": true`` in
    its ``"ctxcompact"`` field when ``raw`` had no final newline and one was added before it:
    so that ``uncompact`` gives the file back byte for byte."""
    if not raw or raw.endswith(b"\n") or not data.startswith(raw + b"\n"):
        return data
    head = len(raw) + 1
    cut = data.find(b"\n", head)
    line = data[head : cut if cut >= 0 else len(data)]
    record, error = _loads(line)
    if error is not None or not isinstance(record, dict) or not isinstance(record.get(POINT_FIELD), dict):
        return data
    record[POINT_FIELD] = {**record[POINT_FIELD], "newlineAdded": True}
    return data[:head] + _dumps(record) + (data[cut:] if cut >= 0 else b"")


def dump_records(records: Iterable[Any]) -> bytes:
    """JSONL bytes for a list of records (archives)."""
    return b"".join([_dumps(r, newline=True) for r in records])
