"""Compaction points for any transcript (seed 003 FR-1.5…1.8) and ``ctxcompact export``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from cli_helpers import run_cli
from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.markers import SUMMARY_PREFIX
from ctxcompact.transcripts.io import Transcript, dump_transcript, parse_transcript
from ctxcompact.transcripts.points.export import compaction_points, export_transcript

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT / "sample_transcripts" / "anthropic-session.json"


def _append(transcript: Transcript, *, append: bool = True) -> Transcript:
    results = [
        compact_conversation(
            conv,
            options=CompactOptions(append=append, configured=(FullOptions(restore=False),)),
            summarizer=ExtractiveSummarizer(),
            counter=EstimateCounter(),
        ).conversation
        for conv in transcript.conversations
    ]
    return parse_transcript(dump_transcript(transcript.with_conversations(results)), name=transcript.name)


def _view(messages: Any) -> list[tuple[str, list[Any]]]:
    return [(m.role, [dict(b) for b in m.content]) for m in messages]


def test_append_keeps_every_message_and_marks_the_summary() -> None:
    original = json.loads(SESSION.read_bytes())
    again = _append(parse_transcript(SESSION.read_bytes(), name="t.json"))
    stored = again.root
    assert stored[: len(original)] == original  # FR-1.5: the history is unchanged
    summary = stored[len(original)]
    assert summary["content"].startswith(SUMMARY_PREFIX)
    mark = summary["ctxcompact"]
    point = mark["compactionPoint"]
    assert mark["isSummary"] is True and point["boundaryMessageId"] == f"#{len(original) - 1}"
    assert point["summaryMessageId"].startswith("ctxcompact-summary-") and point["createdAt"] > 0
    # Our reader reads the live context: the system prompt, then the summary and what follows.
    live = again.conversations[0].messages
    assert live[0].role == "system" and live[1].content[0]["text"].startswith(SUMMARY_PREFIX)
    assert len(live) == 1 + len(stored) - len(original)


def test_export_builds_the_context_from_the_latest_point() -> None:
    first = _append(parse_transcript(SESSION.read_bytes(), name="t.json"))
    second = _append(first, append=False)  # a conversation with a point always appends
    assert len(compaction_points(second.conversations[0])) == 2
    data, (done,) = export_transcript(second)
    exported = json.loads(data)
    assert not any("ctxcompact" in m for m in exported)  # the API would refuse the field
    assert exported[0] == json.loads(SESSION.read_bytes())[0]  # the system prompt
    # The second summary, written from the first (which carried the original request).
    assert exported[1]["content"] == second.conversations[0].messages[1].content[0]["text"]
    assert "finance flagged" in exported[1]["content"]
    assert exported[1]["content"] != first.conversations[0].messages[1].content[0]["text"]
    assert len(exported) == len(second.conversations[0].messages) and len(done.points) == 2


def test_each_conversation_of_a_collection_keeps_its_own_points() -> None:
    convo = json.loads(SESSION.read_bytes())
    short = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    collection = orjson.dumps([{"messages": convo}, {"messages": short}])
    once = _append(parse_transcript(collection, name="c.json"))
    assert [len(compaction_points(c)) for c in once.conversations] == [1, 1]
    items = once.root
    assert items[0]["messages"][: len(convo)] == convo and items[1]["messages"][:2] == short
    twice = parse_transcript(dump_transcript(once), name="c.json")
    assert _view(twice.conversations[0].messages) == _view(once.conversations[0].messages)


def test_jsonl_history_stays_byte_for_byte(tmp_path: Path) -> None:
    lines = b"".join(orjson.dumps(m) + b"\n" for m in json.loads(SESSION.read_bytes()))
    path = tmp_path / "t.jsonl"
    path.write_bytes(lines)
    result = run_cli("compact", path, "--append", "--summarizer", "extractive", "--no-restore", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes.startswith(lines)
    out = tmp_path / "out.jsonl"
    out.write_bytes(result.stdout_bytes)
    exported = run_cli("export", out, "-q")
    assert exported.exit_code == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout_bytes.splitlines()]
    assert records[1]["content"].startswith(SUMMARY_PREFIX) and "ctxcompact" not in records[1]
    points = run_cli("export", out, "--points", "-q").json()
    assert len(points["points"]) == 1


def test_export_of_a_claude_code_session_is_a_list_of_api_messages(tmp_path: Path) -> None:
    session = ROOT / "sample_transcripts" / "claude-code-session.jsonl"
    compacted = run_cli("compact", session, "--summarizer", "extractive", "-q", "-o", tmp_path / "c.jsonl")
    assert compacted.exit_code == 0, compacted.stderr
    exported = run_cli("export", tmp_path / "c.jsonl", "-q").json()
    assert [m["role"] for m in exported] == ["user"] and set(exported[0]) == {"role", "content"}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(transcripts())
def test_property_append_keeps_history_and_export_is_the_compacted_context(
    case: tuple[str, list[Any]],
) -> None:
    dialect, records = case
    transcript = parse_transcript(orjson.dumps(records), name="gen.json", dialect=dialect)
    result = compact_conversation(
        transcript.conversations[0],
        options=CompactOptions(append=True, configured=(FullOptions(restore=False),)),
        summarizer=ExtractiveSummarizer(),
        counter=EstimateCounter(),
    )
    data = dump_transcript(transcript.with_conversations([result.conversation]))
    stored = json.loads(data)
    assert stored[: len(records)] == records
    again = parse_transcript(data, name="gen.json", dialect=dialect)
    assert _view(again.conversations[0].messages) == _view(result.conversation.messages)
    exported = json.loads(export_transcript(again)[0])
    assert not any(isinstance(r, dict) and "ctxcompact" in r for r in exported)
