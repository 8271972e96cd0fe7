"""The plain-text transcript a summary prompt embeds, and its split into chunks."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ir_builders import msg, text, use

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.summarize.serialize import clip_middle, serialize_for_prompt, split_into_chunks
from ctxcompact.ir import Message, tool_interaction_blocks
from ctxcompact.transcripts.io import load_messages


def result(tool_id: str, content: Any, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def test_roles_tool_calls_results_and_errors() -> None:
    messages = [
        msg("system", text("You are an agent.")),
        msg("user", text("Fix the bug.")),
        msg(
            "assistant",
            {"type": "thinking", "thinking": "Hmm.", "signature": "sig"},
            text("Reading."),
            use("t1", "read_file", path="src/a.py"),
        ),
        msg("user", result("t1", "print('hi')")),
        msg("assistant", use("t2", "run", command="pytest")),
        msg("user", result("t2", [{"type": "text", "text": "boom"}], is_error=True)),
    ]
    out = serialize_for_prompt(messages)
    assert out == (
        "[system]\nYou are an agent.\n\n"
        "[user]\nFix the bug.\n\n"
        '[assistant]\n[thinking] Hmm.\nReading.\n→ read_file({"path": "src/a.py"}) [id: t1]\n\n'
        "[user]\n← result (read_file, t1):\nprint('hi')\n\n"
        '[assistant]\n→ run({"command": "pytest"}) [id: t2]\n\n'
        "[user]\n← result (run, t2) ERROR:\nboom"
    )


def test_long_results_are_clipped_head_and_tail_with_a_count() -> None:
    body = "H" * 3000 + "M" * 10_000 + "T" * 3000
    messages = [msg("assistant", use("t1", "cat", path="x")), msg("user", result("t1", body))]
    out = serialize_for_prompt(messages, max_result_chars=1500)
    assert "[14,500 chars clipped]" in out
    assert "H" * 1000 in out and "T" * 500 in out and "M" not in out


def test_clip_middle_keeps_short_text() -> None:
    assert clip_middle("short", 10) == "short"
    clipped = clip_middle("a" * 100 + "z" * 100, 30)
    assert clipped.startswith("a" * 20) and clipped.endswith("z" * 10)
    assert "[170 chars clipped]" in clipped


def test_thinking_is_clipped_and_placeholders_for_media() -> None:
    messages = [
        msg(
            "user",
            text("look"),
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {
                "type": "document",
                "title": "spec",
                "source": {"type": "base64", "media_type": "application/pdf"},
            },
        ),
        msg(
            "assistant",
            {"type": "thinking", "thinking": "x" * 5000},
            {"type": "redacted_thinking", "data": "secret"},
            {"type": "server_tool_use", "id": "s1"},
        ),
    ]
    out = serialize_for_prompt(messages)
    assert "[image: image/png]" in out and "AAAA" not in out
    assert "[document: spec, application/pdf]" in out
    assert "[thinking] " in out and "clipped]" in out and len(out) < 2000
    assert "[redacted thinking]" in out and "secret" not in out
    assert "[server_tool_use block]" in out


def test_openai_tool_calls_show_their_raw_arguments() -> None:
    conv = load_messages(
        [
            {"role": "user", "content": "read it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        ]
    )
    out = serialize_for_prompt(conv.messages)
    assert '→ read_file({"path":"a.py"}) [id: c1]' in out
    assert "← result (read_file, c1):\nx = 1" in out


def test_deterministic_and_input_untouched() -> None:
    messages = [msg("user", text("hi")), msg("assistant", use("t1", "ls", path="."))]
    before = [dict(b) for m in messages for b in m.content]
    assert serialize_for_prompt(messages) == serialize_for_prompt(messages)
    assert [dict(b) for m in messages for b in m.content] == before
    assert serialize_for_prompt([]) == ""


def _conversation(rounds: int) -> list[Message]:
    messages: list[Message] = []
    for r in range(rounds):
        messages.append(msg("user", text(f"request {r} " + "word " * 40)))
        messages.append(
            msg("assistant", text("ok"), use(f"a{r}", "run", command="x"), use(f"b{r}", "run", command="y"))
        )
        messages.append(msg("user", result(f"a{r}", "out " * 60), result(f"b{r}", "out " * 60)))
        messages.append(msg("assistant", text("done " * 30)))
    return messages


def test_chunks_fit_keep_order_and_never_split_tool_blocks() -> None:
    messages = _conversation(8)
    counter = EstimateCounter()
    chunks = split_into_chunks(messages, max_tokens=300, counter=counter)
    assert len(chunks) > 1
    assert [m for c in chunks for m in c] == messages
    for chunk in chunks:
        assert counter.count_batch([serialize_for_prompt(chunk)])[0] <= 300
    starts = {id(c[0]) for c in chunks}
    for span in tool_interaction_blocks(messages):
        inner = messages[span.start + 1 : span.end]
        assert not any(id(m) in starts for m in inner), "a chunk starts inside a tool interaction block"


def test_an_oversized_block_stands_alone() -> None:
    messages = [
        msg("user", text("small")),
        msg("assistant", use("t1", "run", command="big"), use("t2", "run", command="big")),
        msg("user", result("t1", "z" * 5000), result("t2", "z" * 5000)),
        msg("assistant", text("small too")),
    ]
    chunks = split_into_chunks(messages, max_tokens=200, counter=EstimateCounter())
    assert chunks == [[messages[0]], [messages[1], messages[2]], [messages[3]]]


def test_everything_in_one_chunk_when_it_fits() -> None:
    messages = _conversation(2)
    assert split_into_chunks(messages, max_tokens=100_000, counter=EstimateCounter()) == [messages]
    assert split_into_chunks([], max_tokens=10, counter=EstimateCounter()) == []


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 400)), min_size=0, max_size=25),
    budget=st.integers(20, 600),
)
def test_chunking_properties(shape: list[tuple[int, int]], budget: int) -> None:
    """Chunks concatenate back to the input; tool interaction blocks are never split; a chunk
    over the budget holds a single unit."""
    messages: list[Message] = []
    for n, (uses, size) in enumerate(shape):
        messages.append(msg("user", text("u" * size)))
        ids = [f"id{n}-{k}" for k in range(uses)]
        messages.append(msg("assistant", text("a"), *(use(i, "run", command="x") for i in ids)))
        if ids:
            messages.append(msg("user", *(result(i, "r" * size) for i in ids)))
    counter = EstimateCounter()
    chunks = split_into_chunks(messages, max_tokens=budget, counter=counter)
    assert [m for c in chunks for m in c] == messages
    starts = {id(c[0]) for c in chunks}
    for span in tool_interaction_blocks(messages):
        assert not any(id(m) in starts for m in messages[span.start + 1 : span.end])
    for chunk in chunks:
        if counter.count_batch([serialize_for_prompt(chunk)])[0] > budget:
            spans = tool_interaction_blocks(chunk)
            assert len(chunk) == 1 or (len(spans) == 1 and len(spans[0]) == len(chunk))
