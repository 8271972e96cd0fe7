"""File restoration (seed 000 F-005): which files, in which order, and which are refused."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES
from ir_builders import msg

from ctxcompact.accounting.tokens import EstimateCounter, estimate_tokens
from ctxcompact.compaction.restore import (
    CLAUDE_CODE_READ_TOOLS,
    DEFAULT_READ_TOOLS,
    READ_TOOL_PRESETS,
    DiskFileReader,
    InMemoryFileReader,
    ReadTool,
    RestoredFile,
    find_recent_reads,
    parse_read_tool,
    restore_recent_files,
    restored_message_text,
)
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message
from ctxcompact.markers import RESTORED_ACK
from ctxcompact.transcripts.io import load_messages, load_transcript

_ids = iter(range(1_000_000))


def reads(*paths: str, tool: str = "read_file", field: str = "path") -> list[Message]:
    """One assistant read per path (oldest first), each answered."""
    out: list[Message] = [msg("user", {"type": "text", "text": "go"})]
    for p in paths:
        tool_id = f"t{next(_ids)}"
        out.append(msg("assistant", {"type": "tool_use", "id": tool_id, "name": tool, "input": {field: p}}))
        out.append(msg("user", {"type": "tool_result", "tool_use_id": tool_id, "content": "..."}))
    return out


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    for name, body in {
        "a.py": "A = 1\n",
        "b.py": "B = 2\n",
        "c.py": "C = 3\n",
        "d.py": "D\n",
        "e.py": "E\n",
        "f.py": "F\n",
    }.items():
        (root / "src" / name).write_text(body)
    return root


def restored_paths(result: Any) -> list[str]:
    return [f.path for f in result.files]


def skipped(result: Any) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


# --- the scan --------------------------------------------------------------------------------


def test_find_recent_reads_newest_first_last_access_wins() -> None:
    messages = reads("a", "b", "c", "a", "d", "b")
    assert find_recent_reads(messages) == ["b", "d", "a", "c"]


def test_find_recent_reads_ignores_other_tools_users_and_bad_inputs() -> None:
    messages = [
        msg("user", {"type": "tool_use", "id": "u", "name": "read_file", "input": {"path": "user-side"}}),
        msg(
            "assistant",
            {"type": "tool_use", "id": "1", "name": "write_file", "input": {"path": "w"}},
            {"type": "tool_use", "id": "2", "name": "read_file", "input": {"path": ""}},
            {"type": "tool_use", "id": "3", "name": "read_file", "input": {"path": 7}},
            {"type": "tool_use", "id": "4", "name": "read_file", "input": "not a dict"},
            {"type": "tool_use", "id": "5", "name": "read_file", "input": {"file_path": "wrong field"}},
            {"type": "tool_use", "id": "6", "name": "read_file", "input": {"path": "ok"}},
        ),
    ]
    assert find_recent_reads(messages) == ["ok"]
    assert find_recent_reads([]) == []


def test_parse_read_tool_and_presets() -> None:
    assert parse_read_tool("read_file:path") == ReadTool("read_file", "path")
    assert parse_read_tool(" Read:file_path ") == ReadTool("Read", "file_path")
    assert parse_read_tool("mcp__fs__read:path") == ReadTool("mcp__fs__read", "path")
    assert str(ReadTool("Read", "file_path")) == "Read:file_path"
    for bad in ("read_file", ":path", "read_file:", ""):
        with pytest.raises(UsageError):
            parse_read_tool(bad)
    assert (ReadTool("read_file", "path"),) == DEFAULT_READ_TOOLS
    assert ReadTool("Read", "file_path") in CLAUDE_CODE_READ_TOOLS
    assert set(READ_TOOL_PRESETS["all"]) >= set(DEFAULT_READ_TOOLS + CLAUDE_CODE_READ_TOOLS)


# --- choosing and restoring ------------------------------------------------------------------


def test_restores_newest_first_with_exact_message_text(work: Path) -> None:
    result = restore_recent_files(reads("src/a.py", "src/b.py"), work_dir=work)
    assert restored_paths(result) == ["src/b.py", "src/a.py"]
    first = result.files[0]
    assert first == RestoredFile("src/b.py", work / "src" / "b.py", "B = 2\n", estimate_tokens("B = 2\n"))
    assert restored_message_text(first) == "[Restored after compact] src/b.py:\nB = 2\n"
    assert RESTORED_ACK == "Noted, file content restored."
    assert result.tokens == sum(f.tokens for f in result.files)
    assert result.skipped == ()


def test_max_files_takes_the_newest(work: Path) -> None:
    messages = reads("src/a.py", "src/b.py", "src/c.py", "src/d.py", "src/e.py", "src/f.py")
    assert restored_paths(restore_recent_files(messages, work_dir=work)) == [
        "src/f.py",
        "src/e.py",
        "src/d.py",
        "src/c.py",
        "src/b.py",
    ]
    assert restored_paths(restore_recent_files(messages, work_dir=work, max_files=2)) == [
        "src/f.py",
        "src/e.py",
    ]


def test_max_files_zero_restores_nothing(work: Path) -> None:
    result = restore_recent_files(reads("src/a.py"), work_dir=work, max_files=0)
    assert result.files == () and result.skipped == ()


def test_invalid_newest_is_not_replaced_by_an_older_file(work: Path) -> None:
    messages = reads("src/a.py", "src/b.py", "gone.py")
    result = restore_recent_files(messages, work_dir=work, max_files=2)
    assert restored_paths(result) == ["src/b.py"]
    assert skipped(result) == {"gone.py": "missing"}


def test_duplicates_restored_once_at_their_last_read(work: Path) -> None:
    messages = reads("src/a.py", "src/b.py", "src/a.py", "./src/b.py", "src/../src/a.py")
    result = restore_recent_files(messages, work_dir=work, max_files=5)
    # Three spellings of a.py and two of b.py: each file once, at its newest spelling.
    assert restored_paths(result) == ["src/../src/a.py", "./src/b.py"]


def test_empty_file_is_restored_with_zero_tokens(work: Path) -> None:
    (work / "empty.txt").write_text("")
    (file,) = restore_recent_files(reads("empty.txt"), work_dir=work).files
    assert (file.content, file.tokens) == ("", 0)
    assert restored_message_text(file) == "[Restored after compact] empty.txt:\n"


def test_no_reads_restores_nothing(work: Path) -> None:
    result = restore_recent_files([msg("user", {"type": "text", "text": "hi"})], work_dir=work)
    assert result.files == () and result.skipped == ()


def test_input_is_not_mutated(work: Path) -> None:
    messages = reads("src/a.py", "src/b.py")
    snapshot = copy.deepcopy([m.content for m in messages])
    restore_recent_files(messages, work_dir=work)
    assert [m.content for m in messages] == snapshot


# --- limits ------------------------------------------------------------------------------------


def test_file_over_the_per_file_limit_is_skipped_and_the_next_restored(work: Path) -> None:
    (work / "big.txt").write_text("x" * 400)  # 100 estimated tokens
    result = restore_recent_files(reads("src/a.py", "big.txt"), work_dir=work, max_tokens_per_file=99)
    assert restored_paths(result) == ["src/a.py"]
    assert skipped(result)["big.txt"].startswith("over per-file limit (100 > 99 tokens)")


def test_exactly_at_the_limits_is_allowed(work: Path) -> None:
    (work / "edge.txt").write_text("x" * 400)
    result = restore_recent_files(
        reads("edge.txt"), work_dir=work, max_tokens_per_file=100, max_tokens_total=100
    )
    assert restored_paths(result) == ["edge.txt"]


def test_total_limit_stops(work: Path) -> None:
    for name in ("one", "two", "three"):
        (work / name).write_text("y" * 200)  # 50 tokens each
    (work / "tiny").write_text("z")
    messages = reads("tiny", "three", "two", "one")  # newest: one, two, three, tiny
    result = restore_recent_files(messages, work_dir=work, max_tokens_total=120)
    assert restored_paths(result) == ["one", "two"]
    # Stopped at "three": the older "tiny" would have fit but restoration stops (seed: 停止).
    assert skipped(result) == {
        "three": "total limit reached (120 tokens)",
        "tiny": "total limit reached (120 tokens)",
    }


def test_all_files_over_the_limit_gives_nothing(work: Path) -> None:
    result = restore_recent_files(reads("src/a.py", "src/b.py"), work_dir=work, max_tokens_per_file=1)
    assert result.files == ()
    assert len(result.skipped) == 2


def test_injected_counter_is_used(work: Path) -> None:
    class Fixed:
        name = "fixed"

        def count_batch(self, texts: Any) -> list[int]:
            return [1000 for _ in texts]

    result = restore_recent_files(reads("src/a.py"), work_dir=work, counter=Fixed(), max_tokens_per_file=999)
    assert result.files == ()
    result = restore_recent_files(reads("src/a.py"), work_dir=work, counter=EstimateCounter())
    assert result.files[0].tokens == estimate_tokens("A = 1\n")


# --- refusals ------------------------------------------------------------------------------------


def test_parent_traversal_is_refused(work: Path) -> None:
    (work.parent / "secret.txt").write_text("top secret")
    result = restore_recent_files(reads("../secret.txt", "src/../../secret.txt"), work_dir=work)
    assert result.files == ()
    assert set(skipped(result).values()) == {"outside work dir"}


def test_absolute_paths_inside_are_fine_outside_refused(work: Path) -> None:
    (work.parent / "secret.txt").write_text("top secret")
    inside = str(work / "src" / "a.py")
    outside = str(work.parent / "secret.txt")
    result = restore_recent_files(reads(inside, outside, "/etc/passwd"), work_dir=work)
    assert restored_paths(result) == [inside]
    assert skipped(result) == {outside: "outside work dir", "/etc/passwd": "outside work dir"}


def test_symlink_escape_is_refused_and_inner_symlink_allowed(work: Path) -> None:
    (work.parent / "secret.txt").write_text("top secret")
    (work / "escape.txt").symlink_to(work.parent / "secret.txt")
    (work / "linkdir").symlink_to(work.parent)
    (work / "alias.py").symlink_to(work / "src" / "a.py")
    result = restore_recent_files(reads("escape.txt", "linkdir/secret.txt", "alias.py"), work_dir=work)
    assert restored_paths(result) == ["alias.py"]
    assert result.files[0].resolved == work / "src" / "a.py"
    assert skipped(result) == {"escape.txt": "outside work dir", "linkdir/secret.txt": "outside work dir"}
    assert all("top secret" not in f.content for f in result.files)


def test_work_dir_given_through_a_symlink(work: Path, tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(work)
    assert restored_paths(restore_recent_files(reads("src/a.py"), work_dir=tmp_path / "alias")) == [
        "src/a.py"
    ]


def test_relative_work_dir_is_the_current_directory(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    assert restored_paths(restore_recent_files(reads("src/a.py"))) == ["src/a.py"]


def test_missing_binary_not_utf8_directory_and_invalid(work: Path) -> None:
    (work / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (work / "latin1.txt").write_bytes("café".encode("latin-1"))
    (work / "late-nul.txt").write_bytes(b"a" * 9000 + b"\x00")  # NUL after the sniffed 8 KiB
    messages = reads("nope.txt", "image.png", "latin1.txt", "src", "bad\x00name", "late-nul.txt")
    result = restore_recent_files(messages, work_dir=work, max_files=6, max_tokens_per_file=10_000)
    assert restored_paths(result) == ["late-nul.txt"]
    assert skipped(result) == {
        "nope.txt": "missing",
        "image.png": "binary",
        "latin1.txt": "not UTF-8",
        "src": "not a regular file",
        "bad\x00name": "invalid path",
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(work: Path) -> None:
    os.mkfifo(work / "pipe")
    assert skipped(restore_recent_files(reads("pipe"), work_dir=work)) == {"pipe": "not a regular file"}


def test_unreadable_file_is_skipped(work: Path) -> None:
    class Denied:
        def read_bytes(self, path: Path) -> bytes:
            raise PermissionError(13, "Permission denied", str(path))

    result = restore_recent_files(reads("src/a.py"), work_dir=work, reader=Denied())
    assert skipped(result) == {"src/a.py": "unreadable (Permission denied)"}


def test_disk_reader_refuses_huge_files_unread(work: Path) -> None:
    (work / "huge.log").write_bytes(b"x" * 2048)
    result = restore_recent_files(reads("huge.log"), work_dir=work, reader=DiskFileReader(max_bytes=1024))
    assert skipped(result) == {"huge.log": "over per-file limit (2,048 bytes)"}


def test_in_memory_reader(tmp_path: Path) -> None:
    reader = InMemoryFileReader({tmp_path / "x.py": b"X = 1\n"})
    result = restore_recent_files(reads("x.py", "y.py"), work_dir=tmp_path, reader=reader)
    assert restored_paths(result) == ["x.py"]
    assert skipped(result) == {"y.py": "missing"}


# --- other dialects ----------------------------------------------------------------------------


def test_claude_code_read_tool(work: Path) -> None:
    messages = reads(str(work / "src" / "a.py"), tool="Read", field="file_path")
    assert restore_recent_files(messages, work_dir=work).files == ()  # not a default read tool
    result = restore_recent_files(messages, work_dir=work, tools=CLAUDE_CODE_READ_TOOLS)
    assert [f.content for f in result.files] == ["A = 1\n"]
    both = [*reads("src/b.py"), *messages]
    assert len(restore_recent_files(both, work_dir=work, tools=READ_TOOL_PRESETS["all"]).files) == 2


def test_openai_tool_calls(work: Path) -> None:
    conv = load_messages(
        [
            {"role": "user", "content": "read both"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "src/a.py"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "src/c.py"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "A = 1"},
            {"role": "tool", "tool_call_id": "c2", "content": "C = 3"},
        ]
    )
    assert conv.dialect == "openai"
    result = restore_recent_files(conv.messages, work_dir=work)
    assert restored_paths(result) == ["src/c.py", "src/a.py"]


def test_sample_session_against_its_workspace() -> None:
    messages = load_transcript(SAMPLES / "anthropic-session.json").messages
    result = restore_recent_files(messages, work_dir=SAMPLES / "workspace")
    # tax.py was read twice: it counts once, at its last (newest) read.
    assert restored_paths(result) == [
        "src/invoice/tax.py",
        "tests/conftest.py",
        "tests/test_totals.py",
        "src/invoice/totals.py",
    ]
    assert "ROUND_HALF_UP" in result.files[0].content
    # The five newest reads include the deleted legacy.py: skipped, not replaced by pyproject.toml.
    assert skipped(result) == {"src/invoice/legacy.py": "missing"}
