"""Hypothesis strategies for random *valid* transcripts, as raw record lists.

``transcripts()`` draws ``(dialect, records)`` for the Anthropic and OpenAI dialects: an
optional system prompt, then rounds of a user request, tool steps (parallel tool calls, their
results as strings or block lists, empty or small or large, sometimes errors), optional
thinking, and a final assistant answer; the last round may stop mid-loop (after tool results,
or on an assistant turn whose calls are still running). Every tool_use is answered in the next
message, ids are unique, roles alternate: the validator finds no error in any of them.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

WORDS = [
    *("alpha", "beta", "gamma", "delta", "file", "read", "write", "test", "passed", "failed"),
    *("error", "stack", "trace", "line", "def", "class", "return", "import", "self", "value"),
    *("config", "path", "module", "données", "naïve", "日本語", "テスト", "🎉"),
]

TOOL_NAMES = ("read_file", "run_command", "list_dir", "edit_file", "search")


def _text(min_words: int, max_words: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), min_size=min_words, max_size=max_words).map(" ".join)


#: Tool output sizes around the seed's 100-character boundary and well above it.
result_text = st.one_of(
    st.just(""),
    _text(1, 12),  # short: under 100 characters
    _text(20, 160),  # long: several hundred characters
)
prose = _text(1, 20).filter(lambda s: s.strip() != "")


@st.composite
def _tool_id(draw: st.DrawFn, counter: itertools.count[int], *, weird: bool) -> str:
    n = next(counter)
    if weird and draw(st.integers(0, 5)) == 0:
        # Ids a hostile or sloppy producer could send: they must never escape --out-dir.
        return draw(
            st.sampled_from(["../../etc/x", "a/b\\c", ".hidden", "nul\x00id", "sp ace", "x" * 150])
        ) + str(n)
    return f"toolu_{n:03d}{draw(st.text('abcdefXYZ0189', min_size=4, max_size=12))}"


@st.composite
def _anthropic_result_content(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(result_text)
    parts = draw(st.lists(result_text, min_size=1, max_size=3))
    return [{"type": "text", "text": p} for p in parts]


@st.composite
def transcripts(
    draw: st.DrawFn, dialects: tuple[str, ...] = ("anthropic", "openai")
) -> tuple[str, list[Any]]:
    """``(dialect, records)``: a random valid transcript in one of ``dialects``."""
    dialect = draw(st.sampled_from(dialects))
    counter = itertools.count()
    records: list[Any] = []
    if draw(st.booleans()):
        records.append({"role": "system", "content": draw(prose)})
    n_rounds = draw(st.integers(1, 4))
    for r in range(n_rounds):
        last_round = r == n_rounds - 1
        records.append(_user_text(draw, dialect))
        steps = draw(st.integers(0, 3))
        ended_mid_loop = False
        for step in range(steps):
            ids = [draw(_tool_id(counter, weird=dialect == "openai")) for _ in range(draw(st.integers(1, 3)))]
            records.append(_assistant(draw, dialect, ids))
            if last_round and step == steps - 1 and draw(st.integers(0, 3)) == 0:
                ended_mid_loop = True  # the calls are still running: no results yet
                break
            records.extend(_results(draw, dialect, ids))
            if last_round and step == steps - 1 and draw(st.integers(0, 3)) == 0:
                ended_mid_loop = True  # the results are in; the model has not answered yet
        if not ended_mid_loop:
            records.append(_assistant(draw, dialect, []))
    return dialect, records


def _user_text(draw: st.DrawFn, dialect: str) -> dict[str, Any]:
    text = draw(prose)
    if dialect == "anthropic" and draw(st.booleans()):
        block: dict[str, Any] = {"type": "text", "text": text}
        if draw(st.booleans()):
            block["cache_control"] = {"type": "ephemeral"}
        return {"role": "user", "content": [block]}
    return {"role": "user", "content": text}


def _assistant(draw: st.DrawFn, dialect: str, ids: list[str]) -> dict[str, Any]:
    thinking = draw(st.one_of(st.none(), prose))
    text = draw(st.one_of(st.none(), prose)) if ids else draw(prose)
    calls = [(i, draw(st.sampled_from(TOOL_NAMES)), {"path": draw(prose)}) for i in ids]
    if dialect == "openai":
        record: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            record["reasoning_content"] = thinking
        if calls:
            import json

            record["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, n, a in calls
            ]
        return record
    content: list[dict[str, Any]] = []
    if thinking:
        if draw(st.integers(0, 4)) == 0:
            content.append({"type": "redacted_thinking", "data": "EmwKAhgBEgy" + thinking[:8]})
        else:
            content.append(
                {"type": "thinking", "thinking": thinking, "signature": "sig-" + str(len(thinking))}
            )
    if text:
        content.append({"type": "text", "text": text})
    content.extend({"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls)
    record = {"role": "assistant", "content": content}
    if draw(st.integers(0, 4)) == 0:
        record["id"] = "msg_" + str(len(content))  # an unknown field that must survive
    return record


def _results(draw: st.DrawFn, dialect: str, ids: list[str]) -> list[dict[str, Any]]:
    if dialect == "openai":
        out: list[dict[str, Any]] = []
        for i in ids:
            content: Any = draw(result_text)
            if draw(st.integers(0, 4)) == 0:
                content = [{"type": "text", "text": draw(result_text)}]
            out.append({"role": "tool", "tool_call_id": i, "content": content})
        return out
    blocks: list[dict[str, Any]] = []
    for i in ids:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": i,
            "content": draw(_anthropic_result_content()),
        }
        if draw(st.integers(0, 5)) == 0:
            block["is_error"] = True
        blocks.append(block)
    return [{"role": "user", "content": blocks}]
