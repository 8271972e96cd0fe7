"""What a ``full`` summary keeps verbatim besides the head: the recent tail, pins, and the
newest user messages (``--keep-recent-tokens``, ``--pin``, ``--keep-user-tokens``).

The summary still covers everything after the head and before the tail (pinned and kept user
messages included, so it reads as one story); the verbatim copies follow the summary's
acknowledgement in their original order, before the restored files. A message inside a tool
interaction block is only kept with its whole block (pins are widened to blocks; a user
message that also answers tool uses is never kept on its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.compaction.pins import (
    PinOptions,
    message_tokens,
    pinned_indices,
    recent_tail_start,
    summary_at,
)
from ctxcompact.ir import Message, has_user_text, tool_interaction_blocks
from ctxcompact.markers import restored_file_path


def recent_start(
    messages: Sequence[Message], keep_recent_tokens: int | None, counter: TokenCounter
) -> int | None:
    """Where the kept recent tail starts (None: no tail asked for, or none fits)."""
    if not keep_recent_tokens:
        return None
    start = recent_tail_start(messages, tokens=keep_recent_tokens, counter=counter)
    return start if start < len(messages) else None


def kept_verbatim(
    messages: Sequence[Message],
    rest: range,
    *,
    pins: PinOptions,
    keep_user_tokens: int,
    counter: TokenCounter,
) -> tuple[Message, ...]:
    """The messages of ``rest`` (indices into ``messages``) that follow the summary verbatim:
    the pinned ones, and the newest real user messages up to ``keep_user_tokens`` tokens."""
    chosen = {i for i in pinned_indices(messages, pins, first_default=False) if i in rest}
    if keep_user_tokens > 0:
        in_blocks = {i for s in tool_interaction_blocks(messages) for i in range(s.start, s.end)}
        users = [
            i
            for i in rest
            if i not in in_blocks
            and i not in chosen
            and has_user_text(messages[i])
            and not summary_at(messages, i)
            and restored_file_path(messages[i]) is None
        ]
        sizes = message_tokens([messages[i] for i in users], counter)
        budget = keep_user_tokens
        for i, size in zip(reversed(users), reversed(sizes), strict=True):
            if size > budget:
                break
            chosen.add(i)
            budget -= size
    return tuple(messages[i] for i in sorted(chosen))


def insert_after_summary(
    assembled: Sequence[Message], head: int, middle: Sequence[Message]
) -> tuple[Message, ...]:
    """``assembled`` (head, summary, acknowledgement, restored files) with ``middle`` placed
    right after the acknowledgement."""
    cut = head + 2
    return (*assembled[:cut], *middle, *assembled[cut:])
