"""Where turns and tool interaction blocks start, found in one pass (issue 24: ``hybrid`` and
``--auto`` asked :func:`block_start_at` once per message, each a scan of the whole
transcript: 7 s of a 0.5 s compaction at 800K tokens)."""

from __future__ import annotations

from typing import Any

from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings

from ctxcompact.ir import Message, block_start_at, block_starts, has_user_text, turn_starts
from ctxcompact.transcripts.io import load_messages


def _turn_starts_one_by_one(messages: list[Message]) -> list[int]:
    """The definition: each assistant message's block start, widened back to a user message
    with text that opens its round."""
    starts: list[int] = []
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        start = block_start_at(messages, i)
        if (
            start > 0
            and has_user_text(messages[start - 1])
            and block_start_at(messages, start - 1) == start - 1
        ):
            start -= 1
        if not starts or start > starts[-1]:
            starts.append(start)
    return starts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts())
def test_block_and_turn_starts_match_their_definitions(generated: tuple[str, list[Any]]) -> None:
    dialect, records = generated
    messages = list(load_messages(records, dialect=dialect).messages)
    assert block_starts(messages) == [block_start_at(messages, i) for i in range(len(messages))]
    assert turn_starts(messages) == _turn_starts_one_by_one(messages)
