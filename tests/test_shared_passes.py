"""The passes every compaction repeats over the whole list — tool interaction blocks, rounds,
the current loop, earlier summaries, pins — against their plain definitions (issue 24: each
is now one inline scan with shortcuts, run a dozen times per ``eval`` of ~8,400 messages).

The lists are drawn from a small alphabet that makes the edge cases likely: tool uses without
an id, results answering an older call, several result messages after one call, summaries of
each kind with and without their acknowledgement, pin markers at both depths, empty text.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_builders import msg, result, text, use

import ctxcompact.ir as ir_module
from ctxcompact import compact_messages
from ctxcompact.compaction.pins import (
    PinOptions,
    has_pin_marker,
    is_earlier_summary,
    pinned_indices,
    protected_part,
    summary_indices,
)
from ctxcompact.ir import (
    Message,
    Source,
    Span,
    current_loop_start,
    has_user_text,
    leading_system_count,
    remembered_passes,
    round_starts,
    text_of,
    tool_interaction_blocks,
    tool_pairs,
    turn_starts,
)
from ctxcompact.markers import (
    CLAUDE_CODE_SUMMARY_PREFIX,
    CODEX_SUMMARY_PREFIX,
    EARLIER_SUMMARY_PREFIXES,
    OUR_ACKS,
    RESTORED_ACK,
    SUMMARY_ACK,
    SUMMARY_PREFIX,
)

_IDS = st.sampled_from(["a", "b", "c", None])
_TEXTS = st.sampled_from(
    [
        "",
        "  ",
        "fix the bug",
        SUMMARY_PREFIX + "earlier work",
        "  " + SUMMARY_PREFIX,
        CLAUDE_CODE_SUMMARY_PREFIX + " that ran out of context.",
        CODEX_SUMMARY_PREFIX,
        SUMMARY_ACK,
        RESTORED_ACK,
        "keep THIS",
    ]
)
_BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _TEXTS),
    st.builds(lambda i: {"type": "tool_use", "name": "Bash", "input": {}} | ({"id": i} if i else {}), _IDS),
    st.builds(lambda i: {"type": "tool_result", "content": "ok"} | ({"tool_use_id": i} if i else {}), _IDS),
    st.just({"type": "thinking", "thinking": "hm", "signature": "s"}),
    st.just({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}),
)
_RECORDS = st.sampled_from(
    [
        {},
        {"ctxcompact_pin": True},
        {"ctxcompact_pin": "yes"},
        {"message": {"ctxcompact_pin": True}},
        {"message": "not a mapping"},
        {"isCompactSummary": True},
        "not a record",
    ]
)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "user", "assistant", "assistant", "system"]))
    blocks = tuple(draw(st.lists(_BLOCKS, max_size=3)))
    source = draw(
        st.one_of(
            st.none(),
            st.builds(lambda rs: Source(tuple(rs), (0,)), st.lists(_RECORDS, min_size=1, max_size=2)),
        )
    )
    meta = draw(st.sampled_from([{}, {"kind": "summary"}, {"kind": "restored"}]))
    return Message(role, blocks, source, source is None, meta)


_LISTS = st.lists(_message(), max_size=14)


# --- the plain definitions (the code before the shortcuts) ------------------------------------


def _records(message: Message) -> list[Mapping[str, Any]]:
    return [r for r in message.source.records if isinstance(r, Mapping)] if message.source else []


def _pin_marked(message: Message) -> bool:
    return any(
        r.get("ctxcompact_pin") is True
        or (isinstance(r.get("message"), Mapping) and r["message"].get("ctxcompact_pin") is True)
        for r in _records(message)
    )


def _summary(message: Message, following: Message | None) -> bool:
    if message.meta.get("kind") == "summary" or any(
        r.get("isCompactSummary") is True for r in _records(message)
    ):
        return True
    if message.role != "user":
        return False
    text = text_of(message).lstrip()
    if text.startswith(SUMMARY_PREFIX.rstrip()):
        return (
            following is not None
            and following.role == "assistant"
            and text_of(following).strip() == SUMMARY_ACK
        )
    return text.startswith(EARLIER_SUMMARY_PREFIXES)


def _summaries(messages: Sequence[Message]) -> frozenset[int]:
    out: set[int] = set()
    for i, message in enumerate(messages):
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if _summary(message, nxt):
            out.add(i)
            if nxt is not None and nxt.role == "assistant" and text_of(nxt).strip() in OUR_ACKS:
                out.add(i + 1)
    return frozenset(out)


def _blocks(messages: Sequence[Message]) -> list[Span]:
    spans: list[Span] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        ids = (
            {b.get("id") for b in message.content if b.get("type") == "tool_use"}
            if message.role == "assistant"
            else set()
        )
        if not ids:
            i += 1
            continue
        j = i + 1
        while (
            j < len(messages)
            and messages[j].role == "user"
            and any(
                b.get("tool_use_id") in ids for b in messages[j].content if b.get("type") == "tool_result"
            )
        ):
            j += 1
        spans.append(Span(i, j))
        i = j
    return spans


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_LISTS)
def test_blocks_rounds_and_the_loop_match_their_definitions(messages: list[Message]) -> None:
    assert tool_interaction_blocks(messages) == _blocks(messages)
    rounds = [i for i, m in enumerate(messages) if has_user_text(m)]
    assert round_starts(messages) == rounds
    assert current_loop_start(messages) == (rounds[-1] if rounds else leading_system_count(messages))
    pairs = tool_pairs(messages)
    assert [p.span for p in pairs] == [
        s for s in _blocks(messages) for b in messages[s.start].content if b.get("type") == "tool_use"
    ]


@_SETTINGS
@given(_LISTS)
def test_summaries_and_pins_match_their_definitions(messages: list[Message]) -> None:
    for i, message in enumerate(messages):
        following = messages[i + 1] if i + 1 < len(messages) else None
        assert has_pin_marker(message) == _pin_marked(message)
        assert is_earlier_summary(message, following) == _summary(message, following)
    assert summary_indices(messages) == _summaries(messages)
    marked = {i for i, m in enumerate(messages) if _pin_marked(m)}
    unpinned_task = PinOptions(pin_first=False)
    assert pinned_indices(messages, unpinned_task) >= marked
    guard = protected_part(messages, unpinned_task)
    assert guard.summaries >= _summaries(messages)
    assert guard.pins == pinned_indices(messages, unpinned_task)


# --- answers remembered per list (ctxcompact.ir.per_list) -------------------------------------


def _fresh(messages: Sequence[Message]) -> tuple[Any, ...]:
    """What the remembered passes answer, computed with nothing remembered (in an empty
    context: no :func:`remembered_passes` scope is open there)."""
    return contextvars.Context().run(_answers, messages)


def _answers(messages: Sequence[Message]) -> tuple[Any, ...]:
    options = PinOptions(patterns=("THIS",))
    return (
        tool_interaction_blocks(messages),
        tool_pairs(messages),
        turn_starts(messages),
        protected_part(messages),
        protected_part(messages, options, include_loop=True),
        pinned_indices(messages, options, first_default=False),
        pinned_indices(messages),
    )


@_SETTINGS
@given(_LISTS, st.data())
def test_a_changed_list_gets_the_fresh_answer(messages: list[Message], data: st.DataObject) -> None:
    """A list asked again gets the same answers; one that differs in any way — a message
    replaced (even by an equal copy), dropped, added or moved — gets its own, never the
    remembered list's."""
    with remembered_passes():
        _a_changed_list_gets_the_fresh_answer(messages, data)


def _a_changed_list_gets_the_fresh_answer(messages: list[Message], data: st.DataObject) -> None:
    first = _answers(messages)
    assert _answers(messages) == first == _fresh(messages)
    assert _answers(tuple(messages)) == first  # the same objects in another container
    changed = list(messages)
    edit = data.draw(st.sampled_from(["replace", "copy", "drop", "add", "swap"]))
    at = data.draw(st.integers(0, max(len(changed) - 1, 0)))
    if edit == "add" or not changed:
        changed.insert(at, data.draw(_message()))
    elif edit == "replace":
        changed[at] = data.draw(_message())
    elif edit == "copy":
        old = changed[at]
        changed[at] = Message(old.role, old.content, old.source, old.changed, old.meta)
    elif edit == "drop":
        del changed[at]
    else:
        changed[at], changed[-1] = changed[-1], changed[at]
    assert _answers(changed) == _fresh(changed)
    assert _answers(messages) == first


def test_answers_follow_the_objects_not_the_container() -> None:
    """A list changed in place after a pass is asked afresh: the answer is keyed on the
    messages it holds now, not on the list object."""
    call = msg("assistant", use("t1", "Bash"))
    answer = msg("user", result("t1", "ok"))
    messages = [msg("user", text("go")), call, answer]
    with remembered_passes():
        assert tool_interaction_blocks(messages) == [Span(1, 3)]
        messages[2] = msg("user", text("no answer"))
        assert tool_interaction_blocks(messages) == [Span(1, 2)]
        assert tool_interaction_blocks(messages) is not tool_interaction_blocks(messages)  # a copy each
        for n in range(ir_module.LISTS_REMEMBERED + 2):  # the oldest lists are let go
            tool_interaction_blocks([*messages, msg("user", text(f"more {n}"))])
        scope = ir_module._PASSES.get()
        assert scope is not None and len(scope.recent) == ir_module.LISTS_REMEMBERED


@pytest.fixture
def blocks_made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each list whose tool blocks are made (not served from a scope), in order."""
    made: list[int] = []
    real = ir_module._tool_interaction_blocks

    def counted(messages: Sequence[Message]) -> tuple[Span, ...]:
        made.append(len(messages))
        return real(messages)

    monkeypatch.setattr(ir_module, "_tool_interaction_blocks", counted)
    return made


def test_a_held_list_is_remembered_for_the_whole_scope(blocks_made: list[int]) -> None:
    """``eval`` holds its conversation's list: each pass over it is made once however many
    other lists (a strategy's copies) are asked about in between."""
    made = blocks_made
    messages = [msg("user", text("go")), msg("assistant", use("t1", "Bash")), msg("user", result("t1", "ok"))]
    with remembered_passes(messages):
        assert tool_interaction_blocks(messages) == [Span(1, 3)]
        for n in range(ir_module.LISTS_REMEMBERED + 2):
            tool_interaction_blocks([*messages, msg("user", text(f"more {n}"))])
        assert tool_interaction_blocks(list(messages)) == [Span(1, 3)]
    assert made == [3, *[4] * (ir_module.LISTS_REMEMBERED + 2)]


def test_nothing_is_remembered_outside_a_scope(
    blocks_made: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only an open :func:`remembered_passes` keeps answers: outside one each pass is made
    again, and a compaction forgets its lists when it returns (a library host's agent loop
    keeps none of its transcripts alive through us)."""
    made = blocks_made
    messages = [msg("user", text("go")), msg("assistant", use("t1", "Bash")), msg("user", result("t1", "ok"))]
    tool_interaction_blocks(messages)
    tool_interaction_blocks(messages)
    assert made == [3, 3]
    with remembered_passes():
        tool_interaction_blocks(messages)
        with remembered_passes():  # a scope inside another is the outer one
            tool_interaction_blocks(messages)
    assert made == [3, 3, 3]
    # A compaction runs in a scope of its own, and leaves none open.
    from ctxcompact.compaction import pipeline

    inner = pipeline.measure  # the run's first step
    scoped: list[bool] = []

    def run(*args: Any, **kwargs: Any) -> Any:
        scoped.append(ir_module._PASSES.get() is not None)
        return inner(*args, **kwargs)

    monkeypatch.setattr(pipeline, "measure", run)
    compact_messages([{"role": "user", "content": "Fix the build."}], dry_run=True)
    assert scoped == [True]
    assert ir_module._PASSES.get() is None
