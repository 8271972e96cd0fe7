"""Codex CLI rollouts: reading the live history, lossless write-back, in-place edits, Codex's
own compaction record, and the usage the API recorded."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcompact.ir import Message, new_message, text_of, tool_pairs
from ctxcompact.markers import SUMMARY_PREFIX
from ctxcompact.output.json.inspection import rollout_usage_json
from ctxcompact.transcripts.dialects import codex
from ctxcompact.transcripts.dialects.codex.files import command_files, relative_to, touched_files
from ctxcompact.transcripts.dialects.codex.history import compacted_history, recorded_usage
from ctxcompact.transcripts.dialects.codex.read import CODEX_SUMMARY_PREFIX, live_history, truncate_middle
from ctxcompact.transcripts.io import Conversation, conversation_records, dump_transcript, parse_transcript
from ctxcompact.transcripts.validate import validate_messages

ROLLOUTS = sorted((CORPUS / "other").glob("codex-rollout-*.jsonl")) if CORPUS.is_dir() else []
TS = "2026-05-11T08:27:17.490Z"


def line(kind: str, payload: dict[str, Any], ts: str = TS) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return line("response_item", payload)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(call_id: str, cmd: str) -> dict[str, Any]:
    args = json.dumps({"cmd": cmd})
    return {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id}


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def token_count(last_input: int, window: int = 258400) -> dict[str, Any]:
    usage = {"input_tokens": last_input, "cached_input_tokens": 0, "output_tokens": 10}
    usage |= {"reasoning_output_tokens": 2, "total_tokens": last_input + 10}
    info = {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": window}
    return line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})


def sample() -> list[dict[str, Any]]:
    """A small rollout with every item kind, events interleaved."""
    return [
        line("session_meta", {"id": "s1", "cwd": "/repo", "base_instructions": {"text": "You are Codex."}}),
        line("event_msg", {"type": "task_started", "turn_id": "t1", "model_context_window": 258400}),
        item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<perm>"}]}),
        item(user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>")),
        line("turn_context", {"turn_id": "t1", "cwd": "/repo", "model": "gpt-5.5"}),
        item(user("fix the bug in app.py")),
        line("event_msg", {"type": "user_message", "message": "fix the bug in app.py"}),
        item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Looking at app.py**"}],
                "content": None,
                "encrypted_content": "gAAAAopaque",
            }
        ),
        item(call("c1", "sed -n '1,80p' app.py")),
        item(call("c2", "rg -n bug")),
        token_count(1200),
        item(output("c1", "def main():\n    return 1\n" * 20)),
        line("event_msg", {"type": "exec_command_end", "call_id": "c1", "stdout": "..."}),
        item(output("c2", "app.py:3: bug")),
        item(
            {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": "c3",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 1\n+    return 2\n*** End Patch\n",
            }
        ),
        item({"type": "custom_tool_call_output", "call_id": "c3", "output": '{"output":"Success."}'}),
        item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}}),
        item(
            {
                "type": "local_shell_call",
                "call_id": "c4",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"]},
            }
        ),
        item(output("c4", "app.py")),
        item(assistant("Fixed: main returns 2 now.")),
        token_count(2400),
        line("event_msg", {"type": "agent_message", "message": "Fixed: main returns 2 now."}),
    ]


def conversation(records: list[Any]) -> Conversation:
    parsed = codex.parse_records(records)
    return Conversation(
        "test", "codex", tuple(records), parsed.messages, parsed.passthrough, read_messages=parsed.messages
    )


def write(conv: Conversation, messages: list[Message] | tuple[Message, ...]) -> list[Any]:
    """The rollout lines for ``messages``, as JSON would carry them (Rendered dicts → dicts)."""
    return [
        orjson.loads(orjson.dumps(r)) for r in conversation_records(replace(conv, messages=tuple(messages)))
    ]


def shape(messages: tuple[Message, ...] | list[Message]) -> list[tuple[str, list[str]]]:
    return [(m.role, [str(b.get("type")) for b in m.content]) for m in messages]


# --- reading ----------------------------------------------------------------------------------


def test_items_become_messages_with_calls_paired_by_call_id() -> None:
    conv = conversation(sample())
    assert shape(conv.messages) == [
        ("system", ["text"]),
        ("user", ["text"]),
        ("user", ["text"]),
        ("assistant", ["thinking", "redacted_thinking", "tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["web_search_call", "tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    pairs = tool_pairs(conv.messages)
    assert [p.name for p in pairs] == ["exec_command", "exec_command", "apply_patch", "local_shell"]
    assert all(len(p.results) == 1 for p in pairs)
    first = conv.messages[3].content
    assert first[0]["thinking"] == "**Looking at app.py**"
    assert first[1]["data"] == "gAAAAopaque"
    assert first[2]["input"] == {"cmd": "sed -n '1,80p' app.py"}
    assert conv.messages[5].content[0]["input"]["input"].startswith("*** Begin Patch")


def test_events_metadata_and_turn_context_are_not_messages_but_stay_in_place() -> None:
    records = sample()
    conv = conversation(records)
    kinds = {records[i]["type"] for i in conv.passthrough}
    assert kinds == {"session_meta", "event_msg", "turn_context"}
    counted = {i for m in conv.messages for i in (m.source.indices if m.source else ())}
    assert all(records[i]["type"] == "response_item" for i in counted)
    assert codex.instructions(records) == ({"type": "text", "text": "You are Codex."},)
    assert codex.session_cwd(records) == "/repo"


def test_an_earlier_compacted_line_replaces_the_history_before_it() -> None:
    replacement = [user("first request"), user(f"{CODEX_SUMMARY_PREFIX}\nwhat happened")]
    records = [
        *sample(),
        line("compacted", {"message": "what happened", "replacement_history": replacement}),
        item(user("next request")),
    ]
    conv = conversation(records)
    assert [text_of(m) for m in conv.messages] == [
        "first request",
        f"{CODEX_SUMMARY_PREFIX}\nwhat happened",
        "next request",
    ]
    # Everything before the compaction is kept in the file but is not counted.
    assert all(i in conv.passthrough for i in range(len(sample())))


def test_a_legacy_compacted_line_keeps_user_messages_and_the_summary() -> None:
    records = [*sample(), line("compacted", {"message": f"{CODEX_SUMMARY_PREFIX}\nS"})]
    texts = [text_of(m) for m in conversation(records).messages]
    assert texts == ["fix the bug in app.py", f"{CODEX_SUMMARY_PREFIX}\nS"]


def test_a_rollback_drops_the_last_user_turns() -> None:
    records = [
        *sample(),
        item(user("second request")),
        item(assistant("done")),
        line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
    ]
    texts = [text_of(m) for m in conversation(records).messages]
    assert texts[-1] == "Fixed: main returns 2 now."


def test_a_rollout_with_line_types_of_a_newer_codex_is_still_a_rollout() -> None:
    """Codex 0.169 numbers every line (``ordinal``) and writes line types this reader does not
    know (``world_state``, ``token_usage_record``) among the first lines: the file is still a
    rollout, read as one without --format, its unknown lines kept in place."""
    records = [{**record, "ordinal": k} for k, record in enumerate(sample())]
    records[2:2] = [
        {"timestamp": TS, "ordinal": 90, "type": "world_state", "payload": {"full": True, "state": {}}},
        {
            "timestamp": TS,
            "ordinal": 91,
            "type": "token_usage_record",
            "payload": {"usage": {"total_tokens": 9}},
        },
    ]
    raw = b"".join(orjson.dumps(r) + b"\n" for r in records)
    transcript = parse_transcript(raw, name="rollout.jsonl")
    conv = transcript.conversations[0]
    assert conv.dialect == "codex"
    assert shape(conv.messages) == shape(conversation(sample()).messages)
    assert dump_transcript(transcript) == raw


def test_an_answer_recorded_with_its_annotations_is_read_as_text() -> None:
    """Codex 0.169 records an answer's parts as the Responses API sends them, with an
    ``annotations`` list (empty unless the model cited URLs): the answer is still text — what
    pins, probes, summaries and counts read — and a rewrite keeps annotations that say
    something (an empty list says nothing: the line is kept as it was while untouched)."""
    cited = [{"type": "url_citation", "url": "https://example.com/a", "start_index": 0, "end_index": 5}]
    parts = [
        {"type": "output_text", "text": "Fixed: main returns 2 now.", "annotations": []},
        {"type": "output_text", "text": "See the docs.", "annotations": cited},
    ]
    records = [*sample()[:-3], item({"type": "message", "role": "assistant", "content": parts})]
    conv = conversation(records)
    answer = conv.messages[-1]
    assert [b["type"] for b in answer.content] == ["text", "text"]
    assert text_of(answer) == "Fixed: main returns 2 now.\nSee the docs."
    assert write(conv, conv.messages) == records
    edited = answer.with_content([{"type": "text", "text": "Fixed."}, answer.content[1]])
    rewritten = write(conv, [*conv.messages[:-1], edited])
    assert rewritten[-1]["payload"]["content"] == [
        {"type": "output_text", "text": "Fixed."},
        {"type": "output_text", "text": "See the docs.", "annotations": cited},
    ]


# --- writing back ------------------------------------------------------------------------------


def test_untouched_rollout_writes_back_the_same_records() -> None:
    records = sample()
    conv = conversation(records)
    out = conversation_records(conv)
    assert len(out) == len(records) and all(a is b for a, b in zip(out, records, strict=True))


def test_an_in_place_edit_rewrites_only_that_line() -> None:
    records = sample()
    conv = conversation(records)
    target = conv.messages[4]  # the two outputs
    blocks = [dict(target.content[0], content="[pruned]"), target.content[1]]
    messages = list(conv.messages)
    messages[4] = target.with_content(blocks)
    out = write(conv, messages)
    assert len(out) == len(records)
    changed = [i for i, (a, b) in enumerate(zip(out, records, strict=True)) if a != b]
    assert changed == [11]
    assert out[11] == {**records[11], "payload": {**records[11]["payload"], "output": "[pruned]"}}


def test_new_messages_at_the_end_become_new_lines() -> None:
    conv = conversation(sample())
    out = write(conv, [*conv.messages, new_message("user", "and now the tests")])
    assert out[: len(sample())] == sample()
    assert out[-1] == item(user("and now the tests")) | {"timestamp": TS}


def test_a_compaction_appends_one_compacted_line_and_reads_back_as_the_new_history() -> None:
    records = sample()
    conv = conversation(records)
    compacted = compacted_history(conv.messages, "the summary")
    out = write(conv, compacted)
    assert out[:-1] == records  # earlier lines are never rewritten
    last = out[-1]
    assert last["type"] == "compacted" and last["timestamp"] == TS
    assert last["payload"]["message"] == f"{CODEX_SUMMARY_PREFIX}\nthe summary"
    history = last["payload"]["replacement_history"]
    assert history[:3] == [records[2]["payload"], records[3]["payload"], records[5]["payload"]]
    assert history[-1] == user(f"{CODEX_SUMMARY_PREFIX}\nthe summary")
    again = conversation(out)
    assert shape(again.messages) == shape(compacted)
    assert [text_of(m) for m in again.messages] == [text_of(m) for m in compacted]
    assert [item.payload for item in live_history(out)] == history


def test_our_summary_prefix_becomes_codex_s_when_rendered() -> None:
    conv = conversation(sample())
    summary = new_message("user", SUMMARY_PREFIX + "S")
    out = write(conv, [conv.messages[0], summary])
    assert out[-1]["payload"]["message"] == f"{CODEX_SUMMARY_PREFIX}\nS"


def test_compacting_an_already_compacted_rollout_keeps_message_order() -> None:
    replacement = [user("a"), assistant("b"), call("c9", "ls"), output("c9", "x" * 50), user("c")]
    records = [line("compacted", {"message": "", "replacement_history": replacement})]
    conv = conversation(records)
    messages = list(conv.messages)
    # prune the output (a changed message inside the compacted line's history) and insert a
    # new message between two kept ones: the new history keeps the message order.
    messages[2] = messages[2].with_content([dict(messages[2].content[0], content="[pruned]")])
    messages.insert(1, new_message("user", "inserted"))
    out = write(conv, messages)
    assert [text_of(m, include_tool_results=True) for m in conversation(out).messages] == [
        "a",
        "inserted",
        "b",
        "[pruned]",
        "c",
    ]


def test_a_compaction_that_clears_reasoning_and_a_result_keeps_every_call_before_its_output() -> None:
    """Seen on a real rollout under ``--auto``: three calls, their outputs, then reasoning and a
    fourth call. Masking the third output and clearing the reasoning wrote the fourth call
    before the third output (the call, copied by the rewrite, was taken for a new item of the
    reasoning line, and a new item was placed after the previous *kept* item rather than after
    every item before it), so the compacted history broke its pairs."""
    reasoning = {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAAopaque"}
    items = [
        user("look around"),
        call("c1", "ls"), call("c2", "ls src"), call("c3", "ls tests"),
        output("c1", "a"), output("c2", "b"), output("c3", "c" * 80),
        reasoning, call("c4", "cat a"), output("c4", "text of a"),
        assistant("done"),
    ]  # fmt: skip
    conv = conversation([item(payload) for payload in items])
    messages = list(conv.messages)
    results, turn = messages[2], messages[3]
    assert shape([results, turn]) == [
        ("user", ["tool_result"] * 3), ("assistant", ["redacted_thinking", "tool_use"])
    ]  # fmt: skip
    cleared = [dict(b, content="[cleared]") for b in results.content]
    messages[2] = results.with_content([cleared[0], results.content[1], cleared[2]])
    messages[3] = turn.with_content([dict(turn.content[1])])  # reasoning cleared, the call an equal copy
    messages.insert(0, new_message("user", "[Conversation compressed] earlier work"))
    out = write(conv, messages)
    history = out[-1]["payload"]["replacement_history"]
    order = [(h["type"], h.get("call_id")) for h in history if "call" in h["type"]]
    assert order == [
        ("function_call", "c1"), ("function_call", "c2"), ("function_call", "c3"),
        ("function_call_output", "c1"), ("function_call_output", "c2"), ("function_call_output", "c3"),
        ("function_call", "c4"), ("function_call_output", "c4"),
    ]  # fmt: skip
    assert validate_messages(conversation(out).messages, dialect="codex") == []


# --- Codex's compacted history ---------------------------------------------------------------


def test_compacted_history_keeps_newest_user_messages_within_the_budget() -> None:
    turns = [new_message("user", f"request {i} " + "w" * 396) for i in range(5)]  # ~100 tokens
    compacted = compacted_history([new_message("system", "dev"), *turns], "S", keep_user_tokens=250)
    texts = [text_of(m) for m in compacted]
    assert texts[0] == "dev"
    assert compacted[-2] is turns[4] and compacted[-3] is turns[3]
    assert "tokens truncated" in texts[1] and texts[1].startswith("request 2")
    assert texts[-1] == f"{CODEX_SUMMARY_PREFIX}\nS"
    assert len(compacted) == 5


def test_truncate_middle_keeps_both_ends() -> None:
    text = "A" * 400 + "Z" * 400
    cut = truncate_middle(text, 50)
    assert cut.startswith("A" * 100) and cut.endswith("Z" * 100) and "tokens truncated" in cut


# --- recorded usage ----------------------------------------------------------------------------


def test_recorded_usage_is_the_newest_token_count() -> None:
    usage = recorded_usage(sample())
    assert usage is not None
    assert usage.last.input_tokens == 2400 and usage.context_tokens == 2410
    assert usage.context_window == 258400 and usage.line == 20
    assert rollout_usage_json(usage)["line"] == 21  # JSON counts lines from 1


def test_usage_recorded_before_a_compaction_no_longer_counts() -> None:
    records = [*sample(), line("compacted", {"message": "", "replacement_history": [user("x")]})]
    assert recorded_usage(records) is None
    assert recorded_usage([*records, token_count(99)]) is not None


# --- the two real rollouts ---------------------------------------------------------------------


@pytest.mark.skipif(not ROLLOUTS, reason="../shared/corpus is not present")
@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name)
def test_real_rollouts_read_pair_and_write_back(path: Path) -> None:
    records = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    conv = conversation(records)
    out = conversation_records(conv)
    assert all(a is b for a, b in zip(out, records, strict=True))
    calls = sum(1 for r in records if r["type"] == "response_item" and r["payload"]["type"].endswith("call"))
    uses = sum(1 for m in conv.messages for b in m.content if b.get("type") == "tool_use")
    assert uses == calls - sum(1 for r in records if r["payload"].get("type") == "web_search_call")
    assert all(p.results for p in tool_pairs(conv.messages))
    usage = recorded_usage(records)
    if path.name.endswith("tui.jsonl"):
        assert usage is not None and usage.context_window == 258400
    compacted = compacted_history(conv.messages, "S")
    back = conversation(write(conv, compacted))
    assert shape(back.messages) == shape(compacted)


# --- generated rollouts ------------------------------------------------------------------------


@st.composite
def rollouts(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [line("session_meta", {"id": "s", "cwd": "/w"})]
    n = 0

    def event() -> None:
        if draw(st.booleans()):
            records.append(draw(st.sampled_from([token_count(n * 10 + 1), line("event_msg", {"type": "x"})])))

    for turn in range(draw(st.integers(1, 4))):
        records.append(item(user(f"request {turn}")))
        event()
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                records.append(item({"type": "reasoning", "summary": [], "encrypted_content": "e" * 8}))
            ids = [f"call_{n + k}" for k in range(draw(st.integers(1, 3)))]
            n += len(ids)
            for call_id in ids:
                records.append(item(call(call_id, "cat f")))
                event()
            for call_id in draw(st.permutations(ids)):
                records.append(item(output(call_id, "o" * draw(st.integers(0, 30)))))
                event()
        records.append(item(assistant(f"done {turn}")))
        event()
    return records


@settings(max_examples=60, deadline=None)
@given(rollouts(), st.data())
def test_generated_rollouts_pair_edit_in_place_and_compact(records: list[Any], data: st.DataObject) -> None:
    conv = conversation(records)
    assert all(p.results for p in tool_pairs(conv.messages))
    out = conversation_records(conv)
    assert all(a is b for a, b in zip(out, records, strict=True)) and len(out) == len(records)
    results = [
        (i, j)
        for i, m in enumerate(conv.messages)
        for j, b in enumerate(m.content)
        if b.get("type") == "tool_result"
    ]
    if results:
        i, j = data.draw(st.sampled_from(results))
        content = list(conv.messages[i].content)
        content[j] = dict(content[j], content="[offloaded]")
        messages = list(conv.messages)
        messages[i] = messages[i].with_content(content)
        edited = write(conv, messages)
        assert len(edited) == len(records)
        assert sum(1 for a, b in zip(edited, records, strict=True) if a != b) == 1
        assert shape(conversation(edited).messages) == shape(conv.messages)
    compacted = compacted_history(conv.messages, "S", keep_user_tokens=data.draw(st.integers(0, 10)))
    back = write(conv, compacted)
    assert back[:-1] == records
    assert [text_of(m) for m in conversation(back).messages] == [text_of(m) for m in compacted]


# --- files read and patched (restore-files) ----------------------------------------------------


@pytest.mark.parametrize(
    ("script", "workdir", "expected"),
    [
        ("sed -n '1,80p' app.py", None, ["app.py"]),
        ("sed -n -e '1p' a.py b.py", None, ["a.py", "b.py"]),
        ("sed -i 's/a/b/' f.py", None, []),
        (
            "cat a.txt b.md 2>/dev/null; head -n 20 x.py && tail -50 y.py",
            None,
            ["a.txt", "b.md", "x.py", "y.py"],
        ),
        ("cd src && nl -ba main.py | sed -n '1,40p'", "/repo", ["/repo/src/main.py"]),
        ('rg -n "foo|bar" src/ lib/x.ts -g "*.py"', None, ["lib/x.ts"]),
        ("rg -n bug", None, []),
        ("git status --short", None, []),
        (
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\n@@\n*** End Patch\nEOF",
            "/r",
            ["/r/a.py"],
        ),
    ],
)
def test_shell_reads_are_recognised(script: str, workdir: str | None, expected: list[str]) -> None:
    assert command_files(script, workdir) == expected


def test_tool_calls_name_their_files_relative_to_the_session() -> None:
    shell = {"name": "shell", "input": {"command": ["bash", "-lc", "cat README.md"], "workdir": "/r"}}
    assert touched_files(shell) == ["/r/README.md"]
    patch = "*** Begin Patch\n*** Add File: n.py\n+x\n*** Update File: o.py\n*** Move to: p.py\n*** End Patch"
    assert touched_files({"name": "apply_patch", "input": {"input": patch}}) == ["n.py", "o.py", "p.py"]
    assert relative_to("/r/src/a.py", "/r") == "src/a.py"
    assert relative_to("/elsewhere/a.py", "/r") == "/elsewhere/a.py"
    conv = conversation(sample())
    found = [
        f for m in conv.messages for b in m.content if b.get("type") == "tool_use" for f in touched_files(b)
    ]
    assert found == ["app.py", "app.py"]  # sed -n, then the patch (rg without a file path: none)
