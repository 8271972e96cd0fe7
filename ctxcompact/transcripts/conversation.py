"""A transcript as read: its conversations, each a message list with what surrounds it.

The value types :mod:`ctxcompact.transcripts.io` reads and writes; kept apart so that the
modules io calls while writing (:mod:`ctxcompact.transcripts.points.append`) can name them without
importing io back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import Block, Message
from ctxcompact.transcripts.dialects import DEFAULT_DIALECT
from ctxcompact.transcripts.dialects.rollout_usage import RolloutUsage
from ctxcompact.transcripts.points import AppendedCompaction
from ctxcompact.transcripts.recorded_usage import SizeNote

#: ``array``, ``body``, ``jsonl``, ``collection``, or a session-log dialect's name.
Container = str
#: Containers holding one conversation's messages as one JSON document; the others
#: (``jsonl`` and session logs) are written one record per line.
_DOCUMENT_CONTAINERS = ("array", "body", "collection")
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
    #: Set when a summary compaction is written after the history (a compaction point):
    #: ``messages`` are then the live context, appended after ``records``.
    appended: AppendedCompaction | None = None
    #: The usage the API reported for the newest call, when the session log records it.
    recorded: RolloutUsage | None = None
    #: Why the agent would resume the file otherwise than it reads (``Parsed.problems``).
    problems: tuple[str, ...] = ()
    #: Set by a rewrite whose reader needs it: the size it measured, written on every record
    #: it creates or changes (so usage recorded before the rewrite is read as stale).
    note: SizeNote | None = None
    #: The records the rewrite writes drop an earlier size note (``offload --undo``).
    unnote: bool = False

    @property
    def unchanged(self) -> bool:
        """True when ``messages`` are exactly the messages read (same objects, same order)."""
        return (
            self.appended is None
            and len(self.messages) == len(self.read_messages)
            and all(a is b for a, b in zip(self.messages, self.read_messages, strict=True))
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
    #: The key holding the message lists of a collection (``messages``, ``traj``), or a body's
    #: message list when it is not ``messages`` (a SWE-agent ``.traj``'s ``history``).
    collection_key: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: The bytes read: written back as they are when no conversation changed.
    raw: bytes | None = field(default=None, repr=False, compare=False)
    #: A line-per-record file's line of each record, as spelled: a record a rewrite kept is
    #: written back with these bytes (lines we did not change stay byte for byte).
    lines: tuple[bytes, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def dialect(self) -> str:
        return self.conversations[0].dialect if self.conversations else DEFAULT_DIALECT.name

    @property
    def line_per_record(self) -> bool:
        """Written one record per line (JSONL, a session log) rather than as one document."""
        return self.container not in _DOCUMENT_CONTAINERS

    @property
    def is_session_log(self) -> bool:
        """An agent's own session file (Claude Code, Codex), which its agent may still append to."""
        return self.line_per_record and self.container != "jsonl"

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
