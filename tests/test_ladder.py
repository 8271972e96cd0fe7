"""The fallback ladder: prune → key-messages → last-K rounds, each step recorded."""

from __future__ import annotations

from typing import Any

import orjson

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.pins import message_tokens
from ctxcompact.compaction.strategies.ladder import fallback_ladder
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_transcript

COUNTER = EstimateCounter()


def session(rounds: int, size: int) -> tuple[Message, ...]:
    records: list[dict[str, Any]] = []
    for n in range(rounds):
        records += [
            {"role": "user", "content": f"request {n}"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "x", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "w " * size}],
            },
            {"role": "assistant", "content": f"answer {n} " + "words " * size},
        ]
    return load_transcript(data=orjson.dumps(records), name="t").conversations[0].messages


def total(messages: tuple[Message, ...]) -> int:
    return sum(message_tokens(messages, COUNTER))


def test_prune_alone_when_enough() -> None:
    messages = session(8, 200)
    pruned_target = total(messages) - 100
    result = fallback_ladder(messages, target_tokens=pruned_target, counter=COUNTER)
    assert [s.step for s in result.steps] == ["prune"]
    assert result.target_met and not result.reason


def test_steps_in_order_until_met() -> None:
    messages = session(8, 200)
    result = fallback_ladder(messages, target_tokens=total(messages) // 4, counter=COUNTER)
    assert [s.step for s in result.steps][:2] == ["prune", "key-messages"]
    assert result.target_met
    assert result.tokens <= total(messages)


def test_says_why_when_the_protected_part_is_too_big() -> None:
    messages = session(3, 500)
    result = fallback_ladder(messages, target_tokens=10, counter=COUNTER)
    assert not result.target_met
    assert "protected part alone" in result.reason
    assert result.tokens <= total(messages)
    # The last request and the agent's last words stay verbatim; the ladder works inside
    # the rest of the loop (a single-task run is all loop).
    assert result.messages[-1] is messages[-1]
    assert messages[-4] in result.messages
