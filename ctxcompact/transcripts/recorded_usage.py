"""The API's own token usage as a transcript records it: one dialect-neutral record.

A leaf module (it imports only :mod:`ctxcompact.ir`): each dialect's ``recorded_usage``
builds a :class:`RecordedUsage` from its own fields (Claude Code ``message.usage``,
mini-swe-agent ``extra.response.usage``, Codex ``token_count`` events), and
:mod:`ctxcompact.accounting.context_size` decides from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.ir import Message


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


def as_recorded(messages: Sequence[Message]) -> int:
    """How many leading messages are as read: none created or changed by a rewrite in memory.
    Usage recorded at or after the first other one describes a conversation we no longer have."""
    for index, message in enumerate(messages):
        if message.source is None or message.changed:
            return index
    return len(messages)


def written_by_us(message: Message) -> bool:
    """A message read from records ctxcompact wrote (they carry a ``ctxcompact`` field): a
    summary, a restored file, or a copy of a kept entry whose usage describes the longer
    context before our compaction. Usage on them is never the API's answer to what the file
    now holds; usage the API recorded after them (the agent resumed) is."""
    return message.source is not None and any(
        isinstance(r, Mapping) and "ctxcompact" in r for r in message.source.records
    )


def token_field(value: Any) -> int:
    """A usage field as a count: a positive int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
