"""``key-messages`` (seed 004): scores, greedy fill, tool groups whole, over-budget fallbacks."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.strategies.key_messages import (
    KeyMessageOptions,
    base_score,
    content_weight,
    key_message_extraction,
    score_message,
    score_messages,
)
from ctxcompact.compaction.strategies.previews import TRUNCATION_MARKER
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message, text_of, tool_result_text
from ctxcompact.transcripts.io import load_transcript
from ctxcompact.transcripts.validate import validate_messages

COUNTER = EstimateCounter()


def load(records: list[Any]) -> tuple[Message, ...]:
    return (
        load_transcript(data=orjson.dumps(records), name="t", dialect="anthropic").conversations[0].messages
    )


def one(record: dict[str, Any]) -> Message:
    return load([record])[0]


def use(i: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "read_file", "input": {}}]}


def result(i: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": text}]}


def total(messages: tuple[Message, ...]) -> int:
    return count_tokens(messages, counter=COUNTER).total


def test_base_scores_are_the_seeds() -> None:
    assert base_score(one({"role": "user", "content": "hi"})) == 100
    assert base_score(one({"role": "assistant", "content": "ARTIFACT_SAVED x"})) == 90
    assert base_score(one({"role": "assistant", "content": "NODE_COMPLETE"})) == 85
    assert base_score(one(use("a"))) == 80
    assert base_score(load([use("a"), result("a", "out")])[1]) == 79
    assert base_score(one({"role": "assistant", "content": "plain"})) == 50


def test_recency_and_position() -> None:
    m = one({"role": "assistant", "content": "plain"})
    assert score_message(m, 5, 20, min_recent=10, tokens=1) == pytest.approx(50.05)
    assert score_message(m, 10, 20, min_recent=10, tokens=1) == pytest.approx(1050.10)


def test_weights_raise_and_lower_within_categories() -> None:
    assert content_weight("edit src/app/main.py now") == 1.5
    assert content_weight("```x```") == 1.5
    assert content_weight("you must") == 1.0
    assert content_weight("必须这样") == 1.0
    assert content_weight("3 tests") == 0.5
    assert content_weight("edit src/a.py, you must, ```x```, 3") == 4.5  # < 5: categories keep order
    records = [use("a"), result("a", "same"), use("b"), result("b", "same")]
    messages = load(records)
    sizes = [1] * 4
    scores = score_messages(messages, sizes, min_recent=0)
    assert scores[3] == pytest.approx(79 + 0.03 - 3)  # a repeated result
    long = score_message(messages[1], 1, 4, min_recent=0, tokens=601)
    assert long == pytest.approx(79 + 0.01 - 2)


def test_options_defaults_and_target() -> None:
    options = KeyMessageOptions()
    assert (options.target_usage, options.min_recent_messages, options.fallback_rounds) == (0.5, 10, 4)
    assert options.target_tokens() == 64_000  # seed default budget 128,000 × 0.5
    assert options.target_tokens(200_000) == 100_000
    assert KeyMessageOptions(token_budget=1000).target_tokens(200_000) == 500
    with pytest.raises(UsageError):
        KeyMessageOptions(target_usage=0)


def session(rounds: int, size: int = 50) -> tuple[Message, ...]:
    records: list[dict[str, Any]] = []
    for n in range(rounds):
        records += [
            {"role": "user", "content": f"request {n}"},
            use(f"t{n}"),
            result(f"t{n}", "w " * size),
            {"role": "assistant", "content": f"answer {n}"},
        ]
    return load(records)


def test_greedy_fill_keeps_users_groups_whole_and_order() -> None:
    messages = session(10)
    options = KeyMessageOptions(min_recent_messages=2)
    out = key_message_extraction(
        messages, target_tokens=total(messages) // 2, options=options, counter=COUNTER
    )
    kept = out.messages
    assert [m for m in kept if m.role == "user" and text_of(m).startswith("request")] == [
        m for m in messages if text_of(m).startswith("request")
    ]  # users score highest: all kept
    indexes = [messages.index(m) for m in kept]
    assert indexes == sorted(indexes)
    assert not [v for v in validate_messages(kept) if v.severity == "error"]  # groups whole
    assert out.details.target_met and total(kept) <= total(messages) // 2
    d = out.details.to_dict()
    assert d["strategy_used"] == "KeyMessageExtraction"
    assert d["input_count"] == 40 and d["output_count"] == len(kept)
    assert d["dropped_count"] == len(d["dropped_indexes"]) == 40 - len(kept)


def test_recent_messages_kept_before_higher_scores() -> None:
    messages = session(6)
    target = total(messages[-10:]) + 10  # room for the recent ten and little else
    out = key_message_extraction(
        messages, target_tokens=target, counter=COUNTER, pins=PinOptions(pin_first=False)
    )
    assert out.details.target_met and not out.details.fallbacks
    assert all(any(k is m for k in out.messages) for m in messages[-10:])
    assert not any(k is messages[0] for k in out.messages)  # an old user message (100) is not


def test_fallbacks_run_in_order_and_shrink() -> None:
    messages = session(8, size=800)
    options = KeyMessageOptions(min_recent_messages=40)
    nopin = PinOptions(pin_first=False)
    squeezed = key_message_extraction(messages, target_tokens=1, options=options, counter=COUNTER, pins=nopin)
    steps = [f.step for f in squeezed.details.fallbacks]
    # the seed's three, then (beyond the seed) fewer rounds, down to the live round
    assert steps[:3] == ["tool_result_previews", "clip_long_texts", "last_4_rounds"]
    assert steps[3:] == ["last_3_rounds", "last_2_rounds", "last_1_rounds"]
    assert text_of(squeezed.messages[0]) == "request 7"
    four_rounds = squeezed.details.fallbacks[2].tokens_after
    out = key_message_extraction(
        messages, target_tokens=four_rounds, options=options, counter=COUNTER, pins=nopin
    )
    assert [f.step for f in out.details.fallbacks] == steps[:3] and out.details.target_met
    first = out.details.fallbacks[0]
    assert first.tokens_after < first.tokens_before
    texts = [tool_result_text(b) for m in out.messages for b in m.content if b.get("type") == "tool_result"]
    assert any(TRUNCATION_MARKER in t and "read_file ok" in t for t in texts)
    requests = [text_of(m) for m in out.messages if text_of(m).startswith("request")]
    assert requests == ["request 4", "request 5", "request 6", "request 7"]  # last K=4 rounds
    assert not [v for v in validate_messages(out.messages) if v.severity == "error"]


def test_long_texts_are_clipped_to_first_paragraph_and_conclusion() -> None:
    long = "First paragraph here.\n\n" + "filler words " * 400 + "\n\n- a bullet\n\nIn conclusion: it works."
    records = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": long},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok"},
    ]
    messages = load(records)
    out = key_message_extraction(messages, target_tokens=60, counter=COUNTER)
    clipped = text_of(out.messages[1])
    assert clipped.startswith("First paragraph here.")
    assert "- a bullet" in clipped and "In conclusion: it works." in clipped
    assert TRUNCATION_MARKER in clipped and "filler" not in clipped


def test_pins_and_live_loop_survive_verbatim() -> None:
    messages = session(6)
    pins = PinOptions(patterns=("answer 2",))
    out = key_message_extraction(messages, target_tokens=1, counter=COUNTER, pins=pins)
    kept = out.messages
    assert any(k is messages[0] for k in kept)  # the task
    assert any(k is messages[11] for k in kept)  # "answer 2"
    assert all(any(k is m for k in kept) for m in messages[20:])  # the live loop


_PIECES = (
    "a",
    "Z",
    "_",
    "-",
    ".",
    "/",
    "~",
    " ",
    "\n",
    '"',
    "'",
    "(",
    "`",
    "9",
    ".py",
    ".sh",
    ".yml",
    "x.md",
    "must",
    "MUST",
    "ſhould",
    "need",
    "needs",
    "需要",
    "必须",
    "ǅ",
    "é",
    "```",
    "\u2028",
)


@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join))
@settings(max_examples=400, deadline=None)
def test_content_weight_is_the_four_regexes(text: str) -> None:
    # content_weight looks for each kind where a substring scan says it can be (issue 24: four
    # regex scans of every message were most of the strategy's time): the answer is the regexes'.
    from ctxcompact.compaction.strategies import key_messages as km

    expected = sum(
        value
        for pattern, value in (
            (km._PATH, km.WEIGHT_PATH),
            (re.compile("```"), km.WEIGHT_CODE),
            (km._KEYWORD, km.WEIGHT_KEYWORD),
            (km._NUMBER, km.WEIGHT_NUMBER),
        )
        if pattern.search(text)
    )
    assert content_weight(text) == expected
