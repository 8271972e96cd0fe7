"""``prune``: Anthropic ``clear_tool_uses`` / ``clear_thinking`` semantics on the transcript."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import SAMPLES, corpus_files, requires_corpus
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction import masking
from ctxcompact.compaction.masking import stub_text
from ctxcompact.compaction.strategies.prune import PLACEHOLDER_PREFIX, prune_tool_outputs
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message, current_loop_start
from ctxcompact.transcripts.io import dump_transcript, load_messages, load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

COUNTER = EstimateCounter()
BIG = "output line with some words\n" * 40


def step(
    tool_id: str, name: str = "read_file", result: Any = BIG, *, thinking: str | None = None
) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if thinking:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
    content.append({"type": "tool_use", "id": tool_id, "name": name, "input": {"path": f"src/{tool_id}.py"}})
    return [
        {"role": "assistant", "content": content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": result}]},
    ]


def session(n_old: int, n_live: int = 0, **kw: Any) -> list[dict[str, Any]]:
    """A finished round with ``n_old`` tool steps, then a live request with ``n_live`` more."""
    records: list[dict[str, Any]] = [{"role": "user", "content": "fix the bug"}]
    for i in range(n_old):
        records += step(f"old{i}", **kw)
    records.append({"role": "assistant", "content": "Fixed."})
    records.append({"role": "user", "content": "now add a test"})
    for i in range(n_live):
        records += step(f"live{i}", **kw)
    return records


def ir(records: list[dict[str, Any]], dialect: str | None = None) -> tuple[Message, ...]:
    return load_messages(records, dialect=dialect).messages


def prune(messages: Any, **options: Any) -> Any:
    return prune_tool_outputs(messages, counter=COUNTER, **options)


def contents(messages: Any) -> dict[str, Any]:
    return {
        b["tool_use_id"]: b["content"] for m in messages for b in m.content if b.get("type") == "tool_result"
    }


def test_older_results_become_placeholders_and_recent_ones_stay() -> None:
    messages = ir(session(5))
    result = prune(messages, keep=3)
    got = contents(result.messages)
    tokens = count_tokens([Message("user", ({"type": "text", "text": BIG},))], counter=COUNTER).total - 3
    first = BIG.splitlines()[0].strip()
    for i in (0, 1):
        assert got[f"old{i}"] == (
            f"[Tool result cleared by ctxcompact: read_file `src/old{i}.py` → ok: {first[:99]}"
            f"{'…' if len(first) > 100 else first[99:]}; {tokens:,} tokens]"
        )
    assert got["old2"] == got["old3"] == got["old4"] == BIG
    assert result.stats["tool_uses_cleared"] == 2
    assert result.stats["tokens_freed"] > 0
    assert result.stats["applied_edits"] == [
        {
            "type": "clear_tool_uses_20250919",
            "cleared_tool_uses": 2,
            "cleared_input_tokens": result.stats["tokens_freed"],
        }
    ]
    assert result.changed
    # Pairs and message count stay; only contents changed.
    assert len(result.messages) == len(messages)
    assert not errors_only(validate_messages(result.messages))


def test_a_cleared_result_is_a_one_line_stub_naming_tool_input_outcome_and_size() -> None:
    messages = ir(session(3))
    got = contents(prune(messages, keep=0).messages)
    stub = next(v for v in got.values() if isinstance(v, str) and v.startswith(PLACEHOLDER_PREFIX))
    assert "\n" not in stub and stub.endswith(" tokens]")
    assert " → ok" in stub or " → error" in stub


def test_keep_counts_tool_uses_across_the_whole_list_but_the_live_loop_is_never_touched() -> None:
    messages = ir(session(3, n_live=2))
    loop = current_loop_start(messages)
    result = prune(messages, keep=1)
    got = contents(result.messages)
    # keep=1 keeps live1 only, but live0 is in the current loop: untouched as well.
    assert got["live0"] == got["live1"] == BIG
    assert all(got[f"old{i}"].startswith(PLACEHOLDER_PREFIX) for i in range(3))
    assert all(a is b for a, b in zip(result.messages[loop:], messages[loop:], strict=True))
    # With enough live tool uses, keep covers only them and every old result goes.
    assert prune(ir(session(3, n_live=3)), keep=3).stats["tool_uses_cleared"] == 3


def test_protect_loop_false_clears_inside_a_single_long_loop() -> None:
    records = [{"role": "user", "content": "do the task"}]
    for i in range(4):
        records += step(f"t{i}", thinking=f"thinking {i} " * 5)
    messages = ir(records)
    assert prune(messages, keep=1).changed is False  # all of it is the current loop
    result = prune(messages, keep=1, keep_thinking=0, protect_loop=False)
    got = contents(result.messages)
    assert [got[f"t{i}"].startswith(PLACEHOLDER_PREFIX) for i in range(4)] == [True, True, True, False]
    # The last assistant turn keeps its thinking (the API requires it in a live tool loop).
    last_assistant = [m for m in result.messages if m.role == "assistant"][-1]
    assert last_assistant.content[0]["type"] == "thinking"
    assert result.stats["thinking_turns_cleared"] == 3
    assert not errors_only(validate_messages(result.messages))


def test_clear_at_least_not_reached_changes_nothing() -> None:
    messages = ir(session(4))
    freed = prune(messages, keep=0).stats["tokens_freed"]
    result = prune(messages, keep=0, clear_at_least=freed + 1)
    assert not result.changed
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert "less than --clear-at-least" in result.warnings[0]
    assert prune(messages, keep=0, clear_at_least=freed).stats["tool_uses_cleared"] == 4


def test_excluded_tools_are_never_cleared() -> None:
    records = [{"role": "user", "content": "go"}]
    records += step("a", "read_file") + step("b", "memory") + step("c", "read_file")
    records += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    got = contents(prune(ir(records), keep=0, exclude_tools=("memory",)).messages)
    assert got["b"] == BIG
    assert got["a"].startswith(PLACEHOLDER_PREFIX) and got["c"].startswith(PLACEHOLDER_PREFIX)


def test_clear_tool_inputs_blanks_inputs_in_both_dialects() -> None:
    result = prune(ir(session(2)), keep=0, clear_tool_inputs=True)
    uses = [b for m in result.messages for b in m.content if b.get("type") == "tool_use"]
    assert [u["input"] for u in uses] == [{}, {}]

    openai = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "grep", "arguments": '{"pattern": "a long pattern here"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": BIG},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    transcript = load_transcript(data=json.dumps(openai))
    conv = transcript.conversations[0]
    cleared = prune(conv.messages, keep=0, clear_tool_inputs=True)
    written = json.loads(
        dump_transcript(transcript.with_conversations([conv.with_messages(cleared.messages)]))
    )
    assert written[1]["tool_calls"][0]["function"] == {"name": "grep", "arguments": "{}"}
    assert (
        written[2]
        == {
            "role": "tool",
            "tool_call_id": "c1",
            "content": stub_text(
                "grep",
                None,  # the inputs being cleared are not repeated in the stub
                {"content": BIG},
                count_tokens(conv.messages[2:3], counter=COUNTER).total - 3,
            ),
        }
    )


def test_results_smaller_than_their_placeholder_stay() -> None:
    result = prune(ir(session(3, result="ok")), keep=0)
    assert not result.changed
    assert result.stats["tool_uses_cleared"] == 0


def test_second_pass_changes_nothing() -> None:
    first = prune(
        ir(session(5, thinking="deep thoughts " * 10)), keep=1, keep_thinking=0, clear_tool_inputs=True
    )
    assert first.changed
    second = prune(first.messages, keep=1, keep_thinking=0, clear_tool_inputs=True)
    assert not second.changed
    assert all(a is b for a, b in zip(second.messages, first.messages, strict=True))
    assert second.stats["tokens_freed"] == 0


def test_keep_thinking() -> None:
    messages = ir(session(4, n_live=1, thinking="reasoning " * 20))
    kept_all = prune(messages, keep=10)
    assert not kept_all.changed  # None: every thinking block stays (the API's "all")

    result = prune(messages, keep=10, keep_thinking=1)
    with_thinking = [
        i for i, m in enumerate(result.messages) if any(b["type"] == "thinking" for b in m.content)
    ]
    # keep 1 most recent thinking turn (the live one); the 4 older ones lose theirs.
    assert len(with_thinking) == 1 and with_thinking[0] >= current_loop_start(messages)
    assert result.stats["thinking_turns_cleared"] == 4
    assert result.stats["applied_edits"][0]["type"] == "clear_thinking_20251015"
    assert prune(messages, keep=10, keep_thinking=2).stats["thinking_turns_cleared"] == 3


def test_an_assistant_turn_with_only_thinking_keeps_it() -> None:
    records = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz" * 50}]},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "ok"},
    ]
    assert not prune(ir(records), keep_thinking=0).changed


def test_is_error_and_other_fields_survive() -> None:
    records = session(1)
    records[2]["content"][0]["is_error"] = True
    records[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    block = prune(ir(records), keep=0).messages[2].content[0]
    assert block["is_error"] is True and block["cache_control"] == {"type": "ephemeral"}


def test_input_is_not_mutated() -> None:
    records = session(4, n_live=1, thinking="t " * 30)
    pristine = copy.deepcopy(records)
    messages = ir(records)
    result = prune(messages, keep=0, keep_thinking=0, clear_tool_inputs=True)
    assert result.changed and records == pristine


def test_negative_options_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        prune((), keep=-1)


def test_default_counter_is_tiktoken() -> None:
    result = prune_tool_outputs(ir(session(2)), keep=0)
    assert result.stats["tokens_freed"] > 0


def test_sample_session_prunes_validly() -> None:
    transcript = load_transcript(SAMPLES / "anthropic-session.json")
    result = prune(transcript.messages)
    assert result.stats["tool_uses_cleared"] > 0
    assert not errors_only(validate_messages(result.messages))
    assert (
        count_tokens(result.messages, counter=COUNTER).total
        < count_tokens(transcript.messages, counter=COUNTER).total
    )


@pytest.mark.corpus
@requires_corpus
@pytest.mark.parametrize("path", corpus_files("anthropic", "openai", "claude-code"), ids=lambda p: p.name)
def test_corpus_prune_is_valid(path: Any) -> None:
    transcript = load_transcript(path)
    for conv in transcript.conversations[:20]:
        for options in (
            {},
            {"keep": 1, "keep_thinking": 0, "clear_tool_inputs": True, "protect_loop": False},
        ):
            result = prune(conv.messages, **options)
            assert not errors_only(validate_messages(result.messages, dialect=conv.dialect))
            before = count_tokens(conv.messages, counter=COUNTER).total
            assert count_tokens(result.messages, counter=COUNTER).total <= before


_STATUS_PARTS = [
    "<returncode>", "</returncode>", "<returncode>2</returncode>", "exit code", "Exit code: ", "Exit code 3",
    "Exited", "Process exited with code ", "exited", "xit", " 1", "-3", "0", "a", "_", " ", "\n", "code", ":",
]  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_STATUS_PARTS), max_size=10))
@example([" 1", "0", "0", "0", "0", " ", "exit code", " 1", "<returncode>"])  # "xit" 9 characters in
def test_a_stubs_exit_status_is_looked_for_from_its_first_word_with_the_same_answer(parts: list[str]) -> None:
    """The exit status is searched from where its first word could open a match (not at every
    position of the output's head): the same match as a search of the whole head."""
    head = "".join(parts)
    whole = masking._RETURNCODE.search(head)
    from_word = masking._RETURNCODE.search(head, masking._returncode_from(head))
    assert (whole and (whole.span(), whole.groups())) == (
        from_word and (from_word.span(), from_word.groups())
    )
