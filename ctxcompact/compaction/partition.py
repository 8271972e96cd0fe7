"""Head / rest partition for full compaction (seed 000 F-003).

Head: the leading ``system`` messages (a request body's top-level ``system`` is not in the
message list at all, so it is kept untouched by construction). Rest: everything after — the
part a full compaction replaces with a summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxcompact.ir import Message, leading_system_count


@dataclass(frozen=True, slots=True)
class Partition:
    head: tuple[Message, ...]
    rest: tuple[Message, ...]


def partition_messages(messages: Sequence[Message]) -> Partition:
    """Split at the first non-system message. No system message → all rest; only system
    messages → empty rest (nothing to compact); empty list → both empty."""
    n = leading_system_count(messages)
    return Partition(tuple(messages[:n]), tuple(messages[n:]))
