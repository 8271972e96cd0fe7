"""Reading and writing transcripts: containers, dialect detection, lossless round trip.

Containers (how the messages are packed in the file):

``array``        a JSON array of messages
``body``         a JSON object with a ``messages`` list (an Anthropic or OpenAI request body,
                 or a wrapper like mini-swe-agent's ``{"info", "messages"}``); every other key
                 — ``system``, ``tools``, ``model``… — is kept
``jsonl``        one message per line
``claude-code``  a Claude Code session file (JSONL of entries)
``collection``   a JSON array of objects that each hold a message list under ``messages`` or
                 ``traj`` (tau-bench's trajectory dumps): one conversation per item

Dialects: ``anthropic``, ``openai``, ``claude-code``; detected from the records, or forced.

Writing puts a conversation back into its own container and dialect: messages a rewrite
kept are emitted from their raw records (every field intact), changed and new messages are
rendered by the dialect, and records that are not messages (Claude Code progress lines, an
OpenAI ``exit`` record) stay where they were relative to the messages around them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

import orjson

from ctxcompact.dialects import DIALECTS, claude_code
from ctxcompact.dialects.common import json_kind
from ctxcompact.errors import InputError
from ctxcompact.ir import Block, Message

Container = Literal["array", "body", "jsonl", "claude-code", "collection"]
STDIN_NAME = "<stdin>"
_COLLECTION_KEYS = ("messages", "traj")


@dataclass(frozen=True, slots=True)
class Conversation:
    """One message list and what surrounds it.

    ``records`` are the raw values of the message list in file order; ``messages`` the IR
    read from them. ``system`` and ``tools`` come from a request body's top level (they
    count towards the prompt but are not messages); ``model`` from the body, if any.
    """

    label: str
    dialect: str
    records: tuple[Any, ...]
    messages: tuple[Message, ...]
    passthrough: frozenset[int] = frozenset()
    system: tuple[Block, ...] = ()
    tools: tuple[Any, ...] = ()
    model: str | None = None
    #: The request body turns extended thinking on (``"thinking": {"type": "enabled"}``).
    thinking: bool = False
    warnings: tuple[str, ...] = ()

    #: The messages as read, to tell whether a rewrite changed anything.
    read_messages: tuple[Message, ...] = ()

    @property
    def unchanged(self) -> bool:
        """True when ``messages`` are exactly the messages read (same objects, same order)."""
        return len(self.messages) == len(self.read_messages) and all(
            a is b for a, b in zip(self.messages, self.read_messages, strict=True)
        )

    def with_messages(self, messages: Sequence[Message]) -> Conversation:
        """The same conversation with a rewritten message list (records are rebuilt on write)."""
        return replace(self, messages=tuple(messages))


@dataclass(frozen=True, slots=True)
class Transcript:
    """A file (or stdin) as read: its container, parsed root and conversations."""

    name: str
    container: Container
    root: Any
    conversations: tuple[Conversation, ...]
    collection_key: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: The bytes read: written back as they are when no conversation changed.
    raw: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def dialect(self) -> str:
        return self.conversations[0].dialect if self.conversations else "anthropic"

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages of a single-conversation transcript (the common case)."""
        if len(self.conversations) != 1:
            raise InputError(
                f"{self.name} holds {len(self.conversations)} conversations; use .conversations."
            )
        return self.conversations[0].messages

    def with_conversations(self, conversations: Sequence[Conversation]) -> Transcript:
        return replace(self, conversations=tuple(conversations))


# --- reading ---------------------------------------------------------------------------------


def read_bytes(path: str | os.PathLike[str] | None, stdin: BinaryIO | None = None) -> tuple[str, bytes]:
    """Bytes of a path, or of stdin for ``None`` / ``"-"``; returns ``(display name, data)``."""
    if path is None or str(path) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return STDIN_NAME, stream.read()
    p = Path(path)
    try:
        return str(p), p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file.") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory; give the transcript files in it.") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read it ({exc.strerror or exc}).") from None


def load_transcript(
    path: str | os.PathLike[str] | None = None,
    *,
    data: bytes | str | None = None,
    name: str | None = None,
    dialect: str | None = None,
) -> Transcript:
    """Read a transcript from ``path`` (``None`` or ``"-"``: stdin) or from ``data``.

    ``dialect`` forces ``anthropic``, ``openai`` or ``claude-code`` instead of detecting it.
    Raises :class:`InputError` naming the file and the line/column or message index of what
    is wrong.
    """
    if dialect is not None and dialect not in DIALECTS:
        raise InputError(f"unknown format {dialect!r}; expected one of {', '.join(DIALECTS)}.")
    if data is None:
        name, raw = read_bytes(path)
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
            return Transcript(name, "jsonl", [], (_conversation(name, [], dialect or "anthropic", None),))
        raise InputError("is empty; expected a JSON array of messages, a request body or JSONL.")
    root, err = _loads(raw)
    if err is None:
        return _from_root(name, root, dialect)
    # Not one JSON document: JSONL when the first line parses on its own.
    first_line = text_start.split(b"\n", 1)[0]
    if text_start[:1] == b"{" and _loads(first_line)[1] is None:
        return _from_lines(name, raw, dialect)
    raise InputError(f"invalid JSON at {err}.")


_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _loads(raw: bytes) -> tuple[Any, str | None]:
    """Parse JSON fast with orjson; on failure ask the stdlib for the line and column.

    What only the stdlib accepts is kept (integers beyond 64 bits, a BOM), except lone
    surrogate escapes (``"\\ud800"`` without its pair): they are not text, no API accepts them,
    and they could not be written back as UTF-8, so they are refused with their position.
    """
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        pass
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, f"byte {exc.start}: not valid UTF-8"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # The stdlib says "Unterminated string starting at" and gives the position apart.
        msg = exc.msg[:-3] + " here" if exc.msg.endswith(" at") else exc.msg
        return None, f"line {exc.lineno}, column {exc.colno}: {msg}"
    except RecursionError:
        return None, "line 1, column 1: nested too deeply (more than ~1,000 levels)"
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        if "surrogate" in str(exc):
            return None, _surrogate_position(text)
    return value, None


def _surrogate_position(text: str) -> str:
    for match in _LONE_SURROGATE.finditer(text):
        before = text[: match.start()]
        line = before.count("\n") + 1
        column = match.start() - (before.rfind("\n") + 1) + 1
        return f"line {line}, column {column}: {match.group(0)} is a lone surrogate escape, not valid Unicode text"
    return "line 1, column 1: a lone surrogate escape, not valid Unicode text"


def _from_lines(name: str, raw: bytes, dialect: str | None) -> Transcript:
    records: list[Any] = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        value, err = _loads(stripped)
        if err is not None:
            column = err.split("column ", 1)[1].split(":", 1)[0] if "column " in err else "1"
            detail = err.split(": ", 1)[1] if ": " in err else err
            hint = " (truncated line?)" if lineno == raw.rstrip(b"\n").count(b"\n") + 1 else ""
            raise InputError(f"invalid JSON on line {lineno}, column {column}: {detail}{hint}.")
        records.append(value)
    _refuse_foreign_lines(records)
    chosen = dialect or ("claude-code" if claude_code.looks_like(records) else detect_dialect(records, None))
    if chosen == "claude-code":
        conv = _conversation(name, records, "claude-code", None)
        return Transcript(name, "claude-code", records, (conv,))
    return Transcript(name, "jsonl", records, (_conversation(name, records, chosen, None),))


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
            _refuse_foreign_lines(root)
            if dialect == "claude-code" or claude_code.looks_like(root):
                return Transcript(
                    name, "claude-code", root, (_conversation(name, root, "claude-code", None),)
                )
        chosen = dialect or detect_dialect(root, None)
        return Transcript(name, "array", root, (_conversation(name, root, chosen, None),))
    if isinstance(root, Mapping):
        messages = root.get("messages")
        if isinstance(messages, list):
            _refuse_gemini(root)
            chosen = dialect or detect_dialect(messages, root)
            return Transcript(name, "body", root, (_conversation(name, messages, chosen, root),))
        if "role" in root:
            return Transcript(
                name,
                "jsonl",
                [root],
                (_conversation(name, [root], dialect or detect_dialect([root], None), None),),
            )
        if dialect == "claude-code" or claude_code.looks_like([root]):
            # A one-line session file (a session just started, a short subagent run).
            return Transcript(
                name, "claude-code", [root], (_conversation(name, [root], "claude-code", None),)
            )
        _refuse_foreign_object(root)
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


def _collection_item(name: str, i: int, records: Any, dialect: str, item: Mapping[str, Any]) -> Conversation:
    try:
        return _conversation(f"{name}#{i}", records, dialect, item)
    except InputError as exc:
        raise InputError(f"item {i}: {exc}") from None


def _refuse_foreign_object(root: Mapping[str, Any]) -> None:
    if "history" in root and ("trajectory" in root or "info" in root):
        raise InputError(
            "looks like a SWE-agent trajectory (.traj): not a supported input format; export its 'history' as a message list."
        )
    if "history" in root and "instance_id" in root:
        raise InputError("looks like an OpenHands evaluation record: not a supported input format.")


def _refuse_gemini(root: Mapping[str, Any]) -> None:
    msgs = root.get("messages") or []
    if msgs and all(
        isinstance(m, Mapping) and "role" not in m and m.get("type") in ("user", "gemini", "info", "error")
        for m in msgs[:20]
    ):
        raise InputError(
            "looks like a Gemini CLI session: not a supported input format (its messages have 'type', not 'role')."
        )


def _refuse_foreign_lines(records: Sequence[Any]) -> None:
    head = [r for r in records[:20] if isinstance(r, Mapping)]
    if head and all(
        "payload" in r and r.get("type") in ("session_meta", "response_item", "event_msg", "turn_context")
        for r in head
    ):
        raise InputError("looks like a Codex CLI rollout: not a supported input format.")
    if head and all("history" in r and "instance_id" in r for r in head):
        raise InputError("looks like OpenHands evaluation output: not a supported input format.")
    if head and all(("action" in r or "observation" in r) and "role" not in r for r in head):
        raise InputError("looks like an OpenHands event stream: not a supported input format.")


def detect_dialect(records: Sequence[Any], body: Mapping[str, Any] | None) -> str:
    """``openai`` when the records use OpenAI shapes, ``anthropic`` otherwise.

    OpenAI signs: a ``tool`` role, ``tool_calls``, null content, ``image_url`` parts, or
    function-style tool definitions in the body. Plain text messages are the same in both
    dialects; they default to ``anthropic`` unless the body's tools or model say otherwise.
    """
    for record in records:
        if not isinstance(record, Mapping):
            continue
        if record.get("role") in ("tool", "function", "developer") or record.get("tool_calls"):
            return "openai"
        content = record.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping):
                    kind = block.get("type")
                    if kind in (
                        "tool_use",
                        "tool_result",
                        "thinking",
                        "redacted_thinking",
                        "image",
                        "document",
                    ):
                        return "anthropic"
                    if kind in ("image_url", "input_audio", "file"):
                        return "openai"
        elif content is None and record.get("role") == "assistant":
            return "openai"
    if body is not None:
        tools = body.get("tools")
        if isinstance(tools, list) and tools and isinstance(tools[0], Mapping):
            if tools[0].get("type") == "function" or "function" in tools[0]:
                return "openai"
            if "input_schema" in tools[0]:
                return "anthropic"
        model = str(body.get("model", ""))
        if model.startswith(("gpt", "o1", "o3", "o4", "deepseek", "qwen")):
            return "openai"
    return "anthropic"


def _conversation(
    label: str, records: Sequence[Any], dialect: str, body: Mapping[str, Any] | None
) -> Conversation:
    parsed = DIALECTS[dialect].parse_records(records)
    system: tuple[Block, ...] = ()
    tools: tuple[Any, ...] = ()
    model = None
    thinking = False
    if body is not None:
        raw_system = body.get("system")
        if isinstance(raw_system, str):
            system = ({"type": "text", "text": raw_system},) if raw_system else ()
        elif isinstance(raw_system, list):
            system = tuple(b for b in raw_system if isinstance(b, Mapping))
        raw_tools = body.get("tools")
        if isinstance(raw_tools, list):
            tools = tuple(raw_tools)
        if isinstance(body.get("model"), str):
            model = body["model"]
        raw_thinking = body.get("thinking")
        thinking = isinstance(raw_thinking, Mapping) and raw_thinking.get("type") in ("enabled", "adaptive")
    return Conversation(
        label=label,
        dialect=dialect,
        records=tuple(records),
        messages=parsed.messages,
        read_messages=parsed.messages,
        passthrough=parsed.passthrough,
        system=system,
        tools=tools,
        model=model,
        thinking=thinking,
        warnings=parsed.warnings,
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
    render = DIALECTS[conversation.dialect].render_message
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
        if message.source is not None and not message.changed:
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
                r.get("uuid"): i
                for i, r in zip(message.source.indices, message.source.records, strict=True)
                if isinstance(r, Mapping) and r.get("uuid")
            }
            for j, record in enumerate(render(message)):
                uid = record.get("uuid") if isinstance(record, Mapping) else None
                index = by_id.get(id(record), by_uuid.get(uid, first))
                items.append(((index, 1, n, j), record))
            cursor = max(message.source.indices)
        else:
            for record in render(message):
                seq += 1
                items.append(((cursor, 1, n, seq), record))
    items.sort(key=lambda item: item[0])
    records = [record for _, record in items]
    finalize = getattr(DIALECTS[conversation.dialect], "finalize_records", None)
    return finalize(records, conversation.records) if finalize else records


def dump_transcript(transcript: Transcript) -> bytes:
    """Serialize a transcript in its own container (JSON pretty-printed, JSONL one per line).

    When no conversation changed, the bytes read come back exactly — formatting, escapes and
    all — so a pass-through (``--auto`` under the threshold, nothing to offload) is a no-op.
    """
    convs = transcript.conversations
    if transcript.raw is not None and all(c.unchanged for c in convs):
        return transcript.raw
    if transcript.container == "array":
        return _dumps(conversation_records(convs[0]), indent=True) + b"\n"
    if transcript.container == "body":
        body = dict(transcript.root)
        body["messages"] = conversation_records(convs[0])
        return _dumps(body, indent=True) + b"\n"
    if transcript.container == "collection":
        key = transcript.collection_key or "messages"
        items = []
        for item, conv in zip(transcript.root, convs, strict=True):
            new_item = dict(item)
            new_item[key] = conversation_records(conv)
            items.append(new_item)
        return _dumps(items, indent=True) + b"\n"
    if transcript.container in ("jsonl", "claude-code"):
        records = conversation_records(convs[0])
        return b"".join(_dumps(r) + b"\n" for r in records)
    raise AssertionError(f"unknown container {transcript.container}")


def dump_records(records: Iterable[Any]) -> bytes:
    """JSONL bytes for a list of records (archives)."""
    return b"".join(_dumps(r) + b"\n" for r in records)


def _dumps(value: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(value, option=option)
    except (TypeError, orjson.JSONEncodeError):
        # Lone surrogates or integers beyond 64 bits that only the stdlib reader accepted.
        return json.dumps(value, indent=2 if indent else None, ensure_ascii=True).encode()
