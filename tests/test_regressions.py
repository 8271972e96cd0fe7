"""Regression tests for bugs found in review: each test names the failure it pins down."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.accounting.windows import make_budget, resolve_model
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.restore import InMemoryFileReader
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.ir import new_message
from ctxcompact.markers import CLAUDE_CODE_SUMMARY_PREFIX
from ctxcompact.transcripts.io import dump_transcript, load_messages, load_transcript


def _use(i: str, name: str = "read_file", **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": name, "input": inp}


def _result(i: str, text: str = "output " * 40) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": text}


def test_a_problem_the_input_already_had_is_not_blamed_on_the_rewrite(tmp_path: Path) -> None:
    """A duplicate id in the input used to look 'new' once messages moved: exit 70."""
    records = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [_use("old", path="a.py")]},
        {"role": "user", "content": [_result("old")]},
        {"role": "assistant", "content": [_use("X", path="b.py")]},
        {"role": "user", "content": [_result("X")]},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": [_use("X", path="c.py")]},
        {"role": "user", "content": [_result("X")]},
        {"role": "assistant", "content": "done"},
    ]
    path = tmp_path / "dup.json"
    path.write_bytes(orjson.dumps(records))
    result = run_cli(
        "compact",
        str(path),
        "--strategy",
        "clean-tools",
        "--rounds",
        "0",
        "--archive-dir",
        str(tmp_path / "a"),
    )
    assert result.exit_code == 0, result.stderr


def test_a_failing_input_does_not_stop_a_batch(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.json").write_text("[1, 2]")
    (inputs / "b.json").write_bytes((SAMPLES / "anthropic-session.json").read_bytes())
    result = run_cli(
        "compact", str(inputs), "--out-dir", str(tmp_path / "out"), "--report", str(tmp_path / "r.json"),
        "--summarizer", "extractive", "--no-restore", "--archive-dir", str(tmp_path / "arch"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert (tmp_path / "out" / "b.json").is_file()
    assert json.loads((tmp_path / "r.json").read_text())["failed"] == 1


def test_append_refuses_to_orphan_a_pending_tool_call(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    records = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [_use("t1", path="a.py")]}]
    result = run_cli("restore-files", "--work-dir", str(tmp_path), "--append", input=orjson.dumps(records))
    assert result.exit_code == 2
    assert "waiting for its result" in result.stderr
    assert result.stdout == ""


def test_prune_then_full_still_restores_files_whose_read_inputs_were_cleared(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "read both"},
        {"role": "assistant", "content": [_use("t1", path="a.py"), _use("t2", path="b.py")]},
        {"role": "user", "content": [_result("t1"), _result("t2")]},
        {"role": "assistant", "content": "read them"},
        {"role": "user", "content": "thanks"},
    ]
    reader = InMemoryFileReader({tmp_path / "a.py": b"A = 1\n", tmp_path / "b.py": b"B = 2\n"})
    options = CompactOptions.from_keywords(
        strategies=("prune", "full"),
        keep=0,
        clear_tool_inputs=True,
        work_dir=tmp_path,
        archive_dir=tmp_path / "arc",
    )
    result = compact_conversation(
        load_messages(records),
        options=options,
        summarizer=ExtractiveSummarizer(),
        reader=reader,
        counter=EstimateCounter(),
    )
    assert result.stats.restored_file_count == 2


def test_batch_over_a_directory_skips_its_own_outputs(tmp_path: Path) -> None:
    work = tmp_path / "sessions"
    work.mkdir()
    (work / "s.json").write_bytes((SAMPLES / "anthropic-session.json").read_bytes())
    args = ["compact", str(work), "--out-dir", str(work / "out"), "--report", str(work / "report.json")]
    args += [
        "--summarizer",
        "extractive",
        "--no-restore",
        "--archive-dir",
        str(work / ".ctxcompact" / "archive"),
    ]
    for _ in range(2):
        result = run_cli(*args)
        assert result.exit_code == 0, result.stderr
    report = json.loads((work / "report.json").read_text())
    assert [row["input"] for row in report["inputs"]] == [str(work / "s.json")]
    assert sorted(p.name for p in (work / "out").iterdir() if not p.name.startswith(".")) == ["s.json"]


def test_a_second_in_place_run_keeps_the_first_backup(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    original = (SAMPLES / "anthropic-session.json").read_bytes()
    path.write_bytes(original)
    for _ in range(2):
        result = run_cli(
            "compact",
            str(path),
            "-i",
            "--summarizer",
            "extractive",
            "--no-restore",
            "--archive-dir",
            str(tmp_path / "a"),
        )
        assert result.exit_code == 0, result.stderr
    assert (tmp_path / "t.json.bak").read_bytes() == original
    assert (tmp_path / "t.json.bak.1").is_file()


def test_threshold_uses_exact_decimal_arithmetic() -> None:
    assert make_budget(resolve_model("claude-sonnet-4-5"), ratio=0.7).threshold == 117_600
    assert make_budget(resolve_model("gpt-5"), ratio=0.7).threshold == 257_600


def test_non_string_tool_ids_are_bad_input_not_a_crash() -> None:
    for records in (
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": {"a": 1}, "content": "5"}]}],
        [{"role": "assistant", "content": [{"type": "tool_use", "id": ["a"], "name": "x", "input": {}}]}],
        [{"role": "tool", "tool_call_id": ["c"], "content": "x"}],
    ):
        result = run_cli("check", input=orjson.dumps(records))
        assert result.exit_code == 2, result.stderr
        assert "expected a string id" in result.stderr and "message 0" in result.stderr


def test_written_files_keep_a_normal_mode(tmp_path: Path) -> None:
    target = tmp_path / "keep.json"
    target.write_text("{}")
    os.chmod(target, 0o644)
    result = run_cli("compact", str(SAMPLES / "anthropic-session.json"), "-o", str(target), "--summarizer", "extractive",
                 "--no-restore", "--archive-dir", str(tmp_path / "a"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    fresh = tmp_path / "fresh.json"
    umask = os.umask(0o022)
    try:
        run_cli("count", str(SAMPLES / "anthropic-session.json"))  # no file written: sanity
        result = run_cli(
            "offload",
            str(SAMPLES / "anthropic-session.json"),
            "-o",
            str(fresh),
            "--out-dir",
            str(tmp_path / "od"),
            "-q",
        )
    finally:
        os.umask(umask)
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in (tmp_path / "od").iterdir())


def test_swe_agent_tool_call_ids_keep_their_fields_when_rewritten(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "tool_call_ids": ["c"],
            "agent": "main",
            "message_type": "observation",
            "content": "x" * 500,
        },
    ]
    path = tmp_path / "swe.json"
    path.write_bytes(orjson.dumps(records))
    result = run_cli("offload", str(path), "--out-dir", str(tmp_path / "od"), "-q")
    assert result.exit_code == 0, result.stderr
    tool = json.loads(result.stdout)[2]
    assert (
        tool["tool_call_ids"] == ["c"] and tool["agent"] == "main" and tool["message_type"] == "observation"
    )
    assert tool["content"].startswith("[Content offloaded to: ./tool-result-c.md]")


def test_claude_code_output_is_deterministic_and_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The boundary records the real time and duration; a fixed clock makes runs identical.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    transcript = load_transcript(SAMPLES / "claude-code-session.jsonl")
    outputs = []
    for i in range(2):
        options = CompactOptions(archive_dir=tmp_path / f"a{i}", configured=(FullOptions(restore=False),))
        result = compact_conversation(
            transcript.conversations[0],
            options=options,
            summarizer=ExtractiveSummarizer(),
            counter=EstimateCounter(),
        )
        outputs.append(dump_transcript(transcript.with_conversations([result.conversation])))
    assert outputs[0] == outputs[1]
    entries = [json.loads(line) for line in outputs[0].splitlines()]
    assert not any("__ctxcompact_new__" in e for e in entries)
    uuids = {e.get("uuid") for e in entries}
    assert all(e.get("parentUuid") in uuids for e in entries if e.get("parentUuid"))
    new = [
        e
        for e in entries
        if isinstance(e.get("message"), dict)
        and str(e["message"].get("content", "")).startswith(CLAUDE_CODE_SUMMARY_PREFIX)
    ]
    assert new and new[0]["sessionId"] and new[0]["timestamp"] and new[0]["isCompactSummary"]


def test_output_to_a_fifo_or_through_a_symlink_never_replaces_the_node(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    result = run_cli(
        "offload", str(SAMPLES / "openai-chat.json"), "--out-dir", str(tmp_path / "od"), "-q", "-o", str(fifo)
    )
    reader.join(timeout=10)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and json.loads(got[0])
    target = tmp_path / "target.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = run_cli(
        "offload", str(SAMPLES / "openai-chat.json"), "--out-dir", str(tmp_path / "od"), "-q", "-o", str(link)
    )
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and json.loads(target.read_text())


def test_records_that_are_not_messages_keep_their_place_around_new_ones(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "hi there"},
        {"role": "assistant", "content": "hello"},
        {"role": "exit"},
    ]
    result = run_cli(
        "compact",
        "-q",
        "--summarizer",
        "extractive",
        "--archive-dir",
        str(tmp_path / "a"),
        input=orjson.dumps(records),
    )
    assert result.exit_code == 0, result.stderr
    assert [r["role"] for r in json.loads(result.stdout)] == ["user", "assistant", "exit"]


def test_new_claude_code_entries_join_the_conversations_own_thread(tmp_path: Path) -> None:
    entries = [
        {"type": "user", "uuid": "m1", "parentUuid": None, "isSidechain": False, "sessionId": "s", "gitBranch": "main",
         "timestamp": "t1", "message": {"role": "user", "content": "main task"}},
        {"type": "user", "uuid": "s1", "parentUuid": None, "isSidechain": True, "sessionId": "s",
         "message": {"role": "user", "content": "subagent task"}},
        {"type": "assistant", "uuid": "m2", "parentUuid": "m1", "isSidechain": False, "sessionId": "s", "gitBranch": "feat",
         "timestamp": "t2", "message": {"id": "x", "role": "assistant", "content": [{"type": "text", "text": "done"}]}},
        {"type": "assistant", "uuid": "s2", "parentUuid": "s1", "isSidechain": True, "sessionId": "s",
         "message": {"id": "y", "role": "assistant", "content": [{"type": "text", "text": "sub done"}]}},
        {"type": "user", "uuid": "m3", "parentUuid": "m2", "isSidechain": False, "sessionId": "s", "gitBranch": "feat",
         "timestamp": "t3", "message": {"role": "user", "content": "next"}},
    ]  # fmt: skip
    data = b"".join(orjson.dumps(e) + b"\n" for e in entries)
    transcript = load_transcript(data=data, name="s.jsonl")
    conv = transcript.conversations[0]
    # An in-place rewrite that adds messages before the last one (a summary compaction of a
    # session appends instead: tests/test_claude_code_compact.py).
    keep_last = [new_message("user", "summary"), new_message("assistant", "ok"), conv.messages[-1]]
    out = [
        json.loads(line)
        for line in dump_transcript(
            transcript.with_conversations([conv.with_messages(keep_last)])
        ).splitlines()
    ]
    new = [e for e in out if "uuid" in e and e["uuid"] not in {"m1", "m2", "m3", "s1", "s2"}]
    assert new[0]["parentUuid"] is None and new[1]["parentUuid"] == new[0]["uuid"]  # not after s1/s2
    assert all(e["isSidechain"] is False and e["sessionId"] == "s" for e in new)
    assert [e["uuid"] for e in out if e.get("isSidechain")] == [
        "s1",
        "s2",
    ]  # the subagent thread is untouched


def test_a_second_compaction_restores_the_files_again(tmp_path: Path) -> None:
    """UC-005: earlier restored-file messages count as reads, so the files come back."""
    workspace = SAMPLES / "workspace"
    first = run_cli("compact", str(SAMPLES / "anthropic-session.json"), "--work-dir", str(workspace), "--summarizer", "extractive",
                "--archive-dir", str(tmp_path / "a"), "-q", "-o", str(tmp_path / "c1.json"))  # fmt: skip
    assert first.exit_code == 0, first.stderr
    second = run_cli("compact", str(tmp_path / "c1.json"), "--work-dir", str(workspace), "--summarizer", "extractive",
                 "--archive-dir", str(tmp_path / "a"), "-q", "--stats-json", str(tmp_path / "s.json"))  # fmt: skip
    assert second.exit_code == 0, second.stderr
    assert json.loads((tmp_path / "s.json").read_text())["restored_file_count"] == 4
    summary = json.loads(second.stdout)[1]["content"]
    # The earlier summary is carried forward whole under its own heading (issue 13).
    assert "### Earlier compaction summary (carried forward)" in summary and "ROUND_HALF_UP" in summary


def test_error_messages_name_what_is_wrong() -> None:
    collection = [
        {"task": 1, "traj": [{"role": "user", "content": "a"}]},
        {"task": 2, "traj": [{"content": "x"}]},
    ]
    result = run_cli("count", input=orjson.dumps(collection))
    assert result.exit_code == 2 and "item 1: message 0 has no 'role'" in result.stderr
    result = run_cli("count", input=b'{"model": "x", "messages": "hi"}')
    assert result.exit_code == 2 and "'messages' is a JSON string, expected a list" in result.stderr
    result = run_cli("count", input=b'{"role":"user","content":"ok"}\n{"role":"assistant","content":"trunc')
    assert result.exit_code == 2
    assert "line 2, column 31: Unterminated string starting here (truncated line?)" in result.stderr


def test_a_failed_summary_names_the_file(tmp_path: Path, fake_api: Any, monkeypatch: Any) -> None:
    from fake_anthropic import FakeAnthropicServer

    fake_api.enqueue(*[FakeAnthropicServer.reply_error(500) for _ in range(2)])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    session = SAMPLES / "anthropic-session.json"
    result = run_cli("compact", str(session), "--summarizer", "anthropic", "--on-failure", "error", "--max-retries", "1",
                 "--archive-dir", str(tmp_path / "a"))  # fmt: skip
    assert result.exit_code == 3
    assert f"{session}: summary failed after 2 attempts" in result.stderr
