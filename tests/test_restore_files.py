"""restore_files.py: restore-files as a core call — pairs, the append refusal, the output form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from session_builders import SessionBuilder

from ctxcompact.compaction.restore import InMemoryFileReader
from ctxcompact.compaction.restore_files import appended_transcript, dump_pairs, restore_files
from ctxcompact.errors import InputError, UsageError
from ctxcompact.markers import RESTORED_ACK
from ctxcompact.transcripts.io import dump_transcript, parse_transcript

READ = {"type": "tool_use", "id": "r1", "name": "read_file", "input": {"path": "a.py"}}
RECORDS: list[dict[str, Any]] = [
    {"role": "user", "content": "look at a.py"},
    {"role": "assistant", "content": [READ]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": "old"}]},
]


def restored(records: list[dict[str, Any]], tmp_path: Path, *, jsonl: bool = False, **kw: Any) -> Any:
    raw = b"".join(orjson.dumps(r) + b"\n" for r in records) if jsonl else orjson.dumps(records)
    transcript = parse_transcript(raw, name="t.jsonl" if jsonl else "t.json")
    reader = InMemoryFileReader({tmp_path / "a.py": b"x = 1\n"})
    return restore_files(transcript, work_dir=tmp_path, reader=reader, **kw)


def test_the_files_read_come_back_as_message_pairs(tmp_path: Path) -> None:
    result = restored(RECORDS, tmp_path)
    assert [f.path for f in result.restore.files] == ["a.py"]
    assert [m.role for m in result.pairs] == ["user", "assistant"]
    records = orjson.loads(dump_pairs(result))  # a JSON array, like the input
    assert "x = 1" in records[0]["content"] and records[1]["content"] == RESTORED_ACK


def test_jsonl_input_gives_jsonl_pairs(tmp_path: Path) -> None:
    lines = dump_pairs(restored(RECORDS, tmp_path, jsonl=True)).splitlines()
    assert len(lines) == 2 and orjson.loads(lines[1])["role"] == "assistant"


def test_appending_keeps_the_transcript_and_adds_the_pairs(tmp_path: Path) -> None:
    result = restored(RECORDS, tmp_path)
    messages = appended_transcript(result).conversations[0].messages
    assert len(messages) == len(RECORDS) + 2 and messages[: len(RECORDS)] == result.conversation.messages


def test_appending_after_an_unanswered_tool_call_is_refused(tmp_path: Path) -> None:
    result = restored(RECORDS[:2], tmp_path)
    with pytest.raises(InputError, match="waiting for its result"):
        appended_transcript(result)


def test_negative_limits_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="max_tokens_total must not be negative"):
        restored(RECORDS, tmp_path, max_tokens_total=-1)


def test_pairs_appended_to_a_claude_code_session_are_on_the_chain_it_resumes(tmp_path: Path) -> None:
    """Claude Code resumes from the file's last entry and walks ``parentUuid`` back. A turn
    that ended with Claude Code's own entries (a stop-hook summary, the turn's duration) gets
    the restored files after them, linked to the last one: placed before them, the files were
    off that walk and never sent (found by `make interop` on a corpus session)."""
    builder = SessionBuilder(cwd=str(tmp_path)).user("look at a.py").assistant("").user("").assistant("done")
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": str(tmp_path / "a.py")}}
    builder.entries[1]["message"]["content"] = [read]
    builder.entries[2]["message"]["content"] = [
        {"type": "tool_result", "tool_use_id": "r1", "content": "old"}
    ]
    for n, subtype in enumerate(("stop_hook_summary", "turn_duration")):
        parent = builder.entries[-1]["uuid"]
        entry = {k: v for k, v in builder.entries[-1].items() if k != "message"}
        entry.update(
            type="system", subtype=subtype, uuid=f"00000000-0000-4000-9000-{n:012d}", parentUuid=parent
        )
        builder.entries.append(entry)
    raw = b"".join(orjson.dumps(e) + b"\n" for e in builder.entries)
    result = restore_files(
        parse_transcript(raw, name="s.jsonl"),
        work_dir=tmp_path,
        reader=InMemoryFileReader({tmp_path / "a.py": b"x = 1\n"}),
    )
    records = [orjson.loads(line) for line in dump_transcript(appended_transcript(result)).splitlines()]
    assert records[: len(builder.entries)] == builder.entries
    by_uuid = {r["uuid"]: r for r in records}
    walked, at = [], records[-1]
    while at is not None:
        walked.append(at)
        at = by_uuid.get(at["parentUuid"])
    assert walked[-1] == builder.entries[0]  # the whole conversation is on the walk …
    assert "x = 1" in orjson.dumps(walked).decode()  # … and so is the restored file
