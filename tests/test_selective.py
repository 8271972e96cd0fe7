"""``selective`` (seed 002 §4–§6): rules in priority order, blocks whole, previews, protection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction.pins import PinOptions, message_tokens
from ctxcompact.compaction.strategies.previews import TRUNCATION_MARKER
from ctxcompact.compaction.strategies.selective import (
    DEFAULT_RULES,
    SelectiveOptions,
    classify,
    load_rules,
    selective_compaction,
)
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message, text_of, tool_result_text
from ctxcompact.transcripts.io import load_transcript
from ctxcompact.transcripts.validate import validate_messages

COUNTER = EstimateCounter()


def load(records: list[Any]) -> tuple[Message, ...]:
    return (
        load_transcript(data=orjson.dumps(records), name="t", dialect="anthropic").conversations[0].messages
    )


def tool_round(n: int, result: str = "ok", args: str = "x") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"request {n}"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {"path": args}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": result}]},
        {"role": "assistant", "content": f"answer {n}"},
    ]


def session(rounds: int, **kw: Any) -> tuple[Message, ...]:
    records: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for n in range(rounds):
        records += tool_round(n, **kw)
    return load(records)


def total(messages: tuple[Message, ...]) -> int:
    return count_tokens(messages, counter=COUNTER).total


def test_defaults_are_seed_002_table() -> None:
    table = {r.item_type: (r.action, r.keep_recent, r.priority) for r in DEFAULT_RULES}
    assert table == {
        "tool_result": ("truncate", 5, 10),
        "skill_prompt": ("drop", 0, 20),
        "skill_metadata": ("drop", 0, 40),
        "assistant_message": ("truncate", 5, 30),
        "user_message": ("truncate", 5, 50),
        "system_prompt": ("none", 0, 100),
        "memory": ("none", 0, 100),
        "compaction_summary": ("none", 0, 80),
    }
    options = SelectiveOptions()
    assert (options.tool_input_threshold, options.tool_result_threshold, options.preview_tokens) == (
        500,
        600,
        200,
    )


def test_under_target_changes_nothing() -> None:
    messages = session(3)
    result = selective_compaction(messages, target_tokens=10_000, counter=COUNTER)
    assert not result.changed and result.messages == messages
    assert [e.phase for e in result.details.events] == ["selective_start", "selective_done"]


def test_tool_rule_keeps_newest_five_blocks_and_stops_when_target_met() -> None:
    messages = session(9, result="word " * 100)
    before = total(messages)
    result = selective_compaction(messages, target_tokens=before - 10, counter=COUNTER)
    out = result.messages
    ids = [b["id"] for m in out for b in m.content if b.get("type") == "tool_use"]
    # Oldest first, and only until the target is met (issue 19: the whole rule used to run,
    # leaving 8,176 tokens of a 40,799 target): one block is enough here.
    assert ids == ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"]
    rules = [e.rule for e in result.details.events if e.phase == "selective_rule"]
    assert rules == ["tool_result"]  # met after the first rule: assistant/user text untouched
    assert sum(1 for m in out if text_of(m).startswith("answer")) == 9
    assert result.details.target_met
    assert not [v for v in validate_messages(out) if v.severity == "error"]


def test_rules_run_in_priority_order_until_met() -> None:
    messages = session(9)
    result = selective_compaction(messages, target_tokens=1, counter=COUNTER)
    rules = [e.rule for e in result.details.events if e.phase == "selective_rule"]
    assert rules == ["tool_result", "skill_prompt", "assistant_message", "skill_metadata", "user_message"]
    out = result.messages
    assert out[0].role == "system"  # system prompt never
    assert text_of(out[1]) == "request 0"  # the task is pinned
    assert text_of(out[-4]) == "request 8"  # the live loop stays whole
    assert not result.details.target_met


def test_oversized_fields_become_previews_with_marker_once() -> None:
    big = "line of output " * 400
    messages = session(2, result=big, args="p" * 3000)
    result = selective_compaction(
        messages, target_tokens=1, counter=COUNTER, pins=PinOptions(pin_first=False)
    )
    first = result.messages[2:4]  # round 0's block, kept (only 2 blocks) and previewed
    use = first[0].content[0]
    assert TRUNCATION_MARKER in use["input"]["ctxcompact_preview"]
    result_text = tool_result_text(first[1].content[0])
    assert TRUNCATION_MARKER in result_text
    assert COUNTER.count_batch([result_text])[0] < 260
    # the live loop (round 1) is untouched
    assert result.messages[-3:] == messages[-3:]
    # a second pass does not truncate the preview again
    again = selective_compaction(result.messages, target_tokens=1, counter=COUNTER)
    assert again.details.previews == 0


def test_offloaded_result_is_not_truncated_again() -> None:
    from ctxcompact.offload.tool_results import reference_for

    ref = reference_for("tool-result-t0.md", "preview " * 800, preview=400)
    messages = session(2, result=ref)
    result = selective_compaction(messages, target_tokens=1, counter=COUNTER)
    assert result.details.previews == 0


def test_an_output_that_only_starts_like_a_reference_is_still_truncated() -> None:
    """Issue 23, defect 12: a large output beginning with a marker's text is content."""
    lookalike = "[Content offloaded to: ./tool-result-t0.md]\n" + "preview " * 800
    result = selective_compaction(session(2, result=lookalike), target_tokens=1, counter=COUNTER)
    assert result.details.previews > 0


def test_user_words_in_a_dropped_block_survive() -> None:
    records: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for n in range(7):
        records += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "x", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{n}", "content": "r" * 400},
                    {"type": "text", "text": f"also do {n}"},
                ],
            },
        ]
    records.append({"role": "assistant", "content": "done"})
    messages = load(records)
    result = selective_compaction(messages, target_tokens=1, counter=COUNTER)
    texts = [text_of(m) for m in result.messages]
    assert "also do 0" in texts  # its tool result went with the block, the words stayed
    assert not [v for v in validate_messages(result.messages) if v.severity == "error"]


def test_skill_items_are_recognised() -> None:
    skill = load([{"role": "user", "content": "Base directory for this skill: /x\n\nDo it."}])[0]
    meta = load([{"role": "user", "content": "<command-name>/clear</command-name>"}])[0]
    assert classify(skill) == "skill_prompt"
    assert classify(meta) == "skill_metadata"


def test_rules_file_overrides(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(
        '[rules.tool_result]\nkeep_recent = 2\n[rules.user_message]\naction = "none"\n'
        "[fields]\ntool_result_threshold = 800\n"
    )
    options = load_rules(path)
    table = {r.item_type: r for r in options.rules}
    assert table["tool_result"].keep_recent == 2 and table["tool_result"].priority == 10
    assert table["user_message"].action == "none"
    assert options.tool_result_threshold == 800 and options.tool_input_threshold == 500


@pytest.mark.parametrize(
    "text",
    [
        "[rules.nope]\naction='drop'\n",
        "[rules.system_prompt]\naction='drop'\n",
        "[rules.tool_result]\naction='shred'\n",
        "[fields]\npreview_tokens='x'\n",
        "not toml [",
    ],
)
def test_bad_rules_file_is_a_usage_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=r"rules\.toml"):
        load_rules(path)


def test_input_not_mutated_and_kept_messages_identical() -> None:
    messages = session(8, result="w " * 300)
    snapshot = [dict(m.content[0]) for m in messages]
    result = selective_compaction(messages, target_tokens=1, counter=COUNTER)
    assert [dict(m.content[0]) for m in messages] == snapshot
    kept = [m for m in result.messages if not m.changed]
    assert all(any(m is o for o in messages) for m in kept)


@given(
    st.lists(st.tuples(st.sampled_from(["drop", "edit"]), st.integers(0, 7), st.integers(1, 40)), max_size=30)
)
def test_the_kept_total_is_the_sum_of_the_kept_sizes(steps: list[tuple[str, int, int]]) -> None:
    # The rules ask the total once per block: it is kept as drops and edits change it, and it
    # must always equal the plain sum over the messages not dropped.
    from ctxcompact.compaction.strategies.selective import _State

    messages = [Message("user", ({"type": "text", "text": f"message {i} " * (i + 1)},)) for i in range(8)]
    counter = EstimateCounter()
    state = _State(messages, message_tokens(messages, counter), counter)
    for action, i, words in steps:
        if action == "drop":
            state.drop(i)
        else:
            state.edit(i, messages[i].with_content([{"type": "text", "text": "w " * words}]))
        assert state.total() == sum(s for j, s in enumerate(state.sizes) if j not in state.dropped)
