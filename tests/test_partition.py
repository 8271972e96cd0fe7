"""Full compaction's partition: the head a full compaction keeps (leading system messages) and the rest."""

from __future__ import annotations

from ctxcompact.compaction.strategies.full import partition_messages
from ctxcompact.ir import Message, new_message


def msgs(*roles: str) -> tuple[Message, ...]:
    return tuple(new_message(role, f"{role} {i}") for i, role in enumerate(roles))  # type: ignore[arg-type]


def test_leading_system_messages_are_the_head() -> None:
    messages = msgs("system", "system", "user", "assistant")
    part = partition_messages(messages)
    assert part.head == messages[:2] and part.rest == messages[2:]


def test_a_system_message_after_the_first_turn_belongs_to_the_rest() -> None:
    messages = msgs("user", "system", "assistant")
    part = partition_messages(messages)
    assert part.head == () and part.rest == messages


def test_only_system_messages_leave_nothing_to_compact() -> None:
    messages = msgs("system")
    assert partition_messages(messages).rest == ()


def test_empty_list() -> None:
    part = partition_messages([])
    assert (part.head, part.rest) == ((), ())


def test_the_messages_are_the_same_objects_and_the_input_is_untouched() -> None:
    messages = list(msgs("system", "user"))
    part = partition_messages(messages)
    assert part.head[0] is messages[0] and part.rest[0] is messages[1]
    assert len(messages) == 2
