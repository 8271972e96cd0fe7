"""archive.py: what a compaction replaces is saved first, raw and whole, or nothing happens."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from ctxcompact.compaction.archive import archive_records, write_archive
from ctxcompact.errors import WorkFailedError
from ctxcompact.ir import new_message
from ctxcompact.transcripts.io import load_messages

RECORDS: list[dict[str, Any]] = [
    {"role": "user", "content": "fix the bug", "extra": {"kept": True}},
    {"role": "assistant", "content": [{"type": "text", "text": "done"}], "id": "msg_1"},
]
NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_records_read_are_archived_exactly_as_read_with_every_field() -> None:
    messages = load_messages(RECORDS, dialect="anthropic").messages
    assert archive_records(messages, "anthropic") == RECORDS


def test_a_message_never_read_is_rendered_in_the_dialect() -> None:
    summary = new_message("user", "the summary")
    assert archive_records([summary], "openai") == [{"role": "user", "content": "the summary"}]


def test_archive_is_jsonl_named_by_time_and_content(tmp_path: Path) -> None:
    messages = load_messages(RECORDS, dialect="anthropic").messages
    path = write_archive(messages, dialect="anthropic", archive_dir=tmp_path / "a" / "b", now=NOW)
    assert path.parent == tmp_path / "a" / "b"  # created, parents included
    assert path.name.startswith("20260102T030405678901Z-") and path.suffix == ".jsonl"
    assert [orjson.loads(line) for line in path.read_bytes().splitlines()] == RECORDS
    again = write_archive(messages, dialect="anthropic", archive_dir=tmp_path / "a" / "b", now=NOW)
    assert again.name == path.name.replace(".jsonl", "-1.jsonl")  # an archive is never replaced
    assert path.read_bytes() == again.read_bytes()


def test_different_content_at_the_same_time_never_collides(tmp_path: Path) -> None:
    one = write_archive(
        load_messages(RECORDS[:1]).messages, dialect="anthropic", archive_dir=tmp_path, now=NOW
    )
    two = write_archive(load_messages(RECORDS).messages, dialect="anthropic", archive_dir=tmp_path, now=NOW)
    assert one != two and one.is_file() and two.is_file()


def test_an_unwritable_directory_is_work_failed_and_says_nothing_was_compacted(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(WorkFailedError, match="nothing was compacted"):
        write_archive(load_messages(RECORDS).messages, dialect="anthropic", archive_dir=blocker / "sub")
