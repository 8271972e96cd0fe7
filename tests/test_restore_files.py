"""restore_files.py: restore-files as a core call — pairs, the append refusal, the output form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ctxcompact.compaction.restore import InMemoryFileReader
from ctxcompact.compaction.restore_files import appended_transcript, dump_pairs, restore_files
from ctxcompact.errors import InputError, UsageError
from ctxcompact.markers import RESTORED_ACK
from ctxcompact.transcripts.io import parse_transcript

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
