"""`compact` and `restore-files` from the command line: streams, files, batches, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from fake_anthropic import FakeAnthropicServer

from ctxcompact.transcripts.io import load_transcript, parse_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

SESSION = SAMPLES / "anthropic-session.json"
WORKSPACE = SAMPLES / "workspace"


def offline(tmp_path: Path, *extra: str) -> list[str]:
    return ["--summarizer", "extractive", "--archive-dir", str(tmp_path / "archive"), *extra]


def test_stdout_is_only_the_transcript_and_stats_go_to_stderr(tmp_path: Path) -> None:
    result = run_cli("compact", str(SESSION), "--work-dir", str(WORKSPACE), *offline(tmp_path))
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out[1]["content"].startswith("[Conversation compressed]\n\n")
    assert "[Restored after compact] " in json.dumps(out)
    assert "originals archived to" in result.stderr and "retention check" in result.stderr
    reloaded = parse_transcript(result.stdout_bytes)
    assert not errors_only(validate_messages(reloaded.messages))
    quiet = run_cli("compact", str(SESSION), "-q", *offline(tmp_path))
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_output_file_stats_json_and_no_key_means_extractive(tmp_path: Path) -> None:
    target = tmp_path / "small.json"
    stats = tmp_path / "stats.json"
    result = run_cli(
        "compact", str(SESSION), "-o", str(target), "--stats-json", str(stats), "--work-dir", str(WORKSPACE),
        "--archive-dir", str(tmp_path / "archive"),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    data = json.loads(stats.read_text())
    assert data["summarizer"] == "extractive"  # no ANTHROPIC_API_KEY in tests: the embedded default
    assert data["restored_file_count"] >= 1
    assert data["compacted_token_count"] < data["original_token_count"]
    assert Path(data["archive_path"]).is_file()
    assert load_transcript(target).conversations[0].messages


def test_in_place_keeps_a_backup(tmp_path: Path) -> None:
    copy = tmp_path / "t.json"
    copy.write_bytes(SESSION.read_bytes())
    result = run_cli("compact", str(copy), "--in-place", "--no-restore", *offline(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "t.json.bak").read_bytes() == SESSION.read_bytes()
    assert json.loads(copy.read_text())[1]["content"].startswith("[Conversation compressed]")


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = run_cli("compact", str(SESSION), "--dry-run", "-o", str(target), *offline(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert not target.exists() and not (tmp_path / "archive").exists()
    assert result.stdout == ""
    assert "dry run" in result.stderr


def test_auto_under_threshold_passes_input_through(tmp_path: Path) -> None:
    result = run_cli(
        "compact", "--auto", "--model", "claude-sonnet-4-5", *offline(tmp_path), input=SESSION.read_bytes()
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(SESSION.read_bytes())
    assert "under the threshold" in result.stderr
    assert not (tmp_path / "archive").exists()


def test_auto_over_threshold_compacts(tmp_path: Path) -> None:
    result = run_cli(
        "compact",
        "--auto",
        "--model",
        "gpt-4",
        *offline(tmp_path, "--no-restore"),
        input=SESSION.read_bytes(),
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)[1]["content"].startswith("[Conversation compressed]")


def test_batch_directory_with_a_bad_file(tmp_path: Path) -> None:
    inputs = tmp_path / "sessions"
    inputs.mkdir()
    (inputs / "a.json").write_bytes(SESSION.read_bytes())
    (inputs / "b.json").write_bytes((SAMPLES / "openai-chat.json").read_bytes())
    (inputs / "c.json").write_text('[{"role": "user", "content": "x"}, {"content": "no role"}]')
    out_dir = tmp_path / "compacted"
    report = tmp_path / "report.json"
    result = run_cli(
        "compact",
        str(inputs),
        "--out-dir",
        str(out_dir),
        "--report",
        str(report),
        "--no-restore",
        *offline(tmp_path),
    )
    assert result.exit_code == 2
    # the outputs, and the batch's hidden journal (--resume)
    assert sorted(p.name for p in out_dir.iterdir()) == [".ctxcompact-journal.jsonl", "a.json", "b.json"]
    data = json.loads(report.read_text())
    assert data["compacted"] == 2 and data["failed"] == 1
    failed = next(r for r in data["inputs"] if r["status"] == "failed")
    assert "message 1 has no 'role'" in failed["error"]
    b = json.loads((out_dir / "b.json").read_text())
    assert b[0] == json.loads((SAMPLES / "openai-chat.json").read_text())[0]  # system record untouched
    assert all(isinstance(r["content"], str) for r in b)  # no Anthropic content blocks


def test_several_inputs_need_an_out_dir(tmp_path: Path) -> None:
    result = run_cli("compact", str(SESSION), str(SAMPLES / "openai-chat.json"), *offline(tmp_path))
    assert result.exit_code == 2
    assert "--out-dir" in result.stderr


def test_bad_options_exit_2(tmp_path: Path) -> None:
    assert run_cli("compact", str(SESSION), "--strategy", "magic", *offline(tmp_path)).exit_code == 2
    assert run_cli("compact", str(SESSION), "--on-failure", "shrug", *offline(tmp_path)).exit_code == 2
    assert (
        run_cli("compact", str(SESSION), "--auto", "--threshold", "0.95", *offline(tmp_path)).exit_code == 2
    )


def test_llm_failure_with_on_failure_error_exits_3_and_writes_nothing(
    tmp_path: Path, fake_api: FakeAnthropicServer
) -> None:
    fake_api.enqueue(*[FakeAnthropicServer.reply_error(500) for _ in range(3)])
    target = tmp_path / "out.json"
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test-secret", "ANTHROPIC_BASE_URL": fake_api.base_url}
    proc = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "compact", str(SESSION), "--summarizer", "anthropic", "--on-failure", "error",
         "--max-retries", "2", "-o", str(target), "--archive-dir", str(tmp_path / "archive")],
        capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert not target.exists() and not (tmp_path / "archive").exists()
    assert b"Traceback" not in proc.stderr and b"sk-test-secret" not in proc.stderr
    assert b"500" in proc.stderr


def test_llm_summary_through_the_fake_server(tmp_path: Path, fake_api: FakeAnthropicServer) -> None:
    fake_api.enqueue(
        FakeAnthropicServer.reply_text("<summary>## Goals & Decisions\nFix the tax bug.</summary>")
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test-secret", "ANTHROPIC_BASE_URL": fake_api.base_url}
    proc = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "compact", str(SESSION), "--no-restore", "--archive-dir", str(tmp_path / "a"),
         "--stats-json", str(tmp_path / "s.json")],
        capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out[1]["content"] == "[Conversation compressed]\n\n## Goals & Decisions\nFix the tax bug."
    assert json.loads((tmp_path / "s.json").read_text())["summarizer"] == "anthropic"
    assert b"sk-test-secret" not in proc.stderr + proc.stdout


def test_restore_files_prints_pairs_and_appends(tmp_path: Path) -> None:
    result = run_cli("restore-files", str(SESSION), "--work-dir", str(WORKSPACE))
    assert result.exit_code == 0, result.stderr
    pairs = json.loads(result.stdout)
    assert pairs[0]["content"].startswith("[Restored after compact] ")
    assert pairs[1] == {"role": "assistant", "content": "Noted, file content restored."}
    assert "src/invoice/legacy.py" in result.stderr and "missing" in result.stderr

    appended = run_cli("restore-files", str(SESSION), "--work-dir", str(WORKSPACE), "--append")
    assert appended.exit_code == 0
    records = json.loads(appended.stdout)
    original = json.loads(SESSION.read_text())
    assert records[: len(original)] == original
    assert records[len(original) :] == pairs


def test_restore_files_never_reads_outside_the_work_dir(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link.txt").symlink_to(secret)
    records = [
        {"role": "user", "content": "read them"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "../secret.txt"}},
                {"type": "tool_use", "id": "b", "name": "read_file", "input": {"path": str(secret)}},
                {"type": "tool_use", "id": "c", "name": "read_file", "input": {"path": "link.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": i, "content": "x"} for i in "abc"],
        },
    ]
    result = run_cli("restore-files", "--work-dir", str(work), input=json.dumps(records).encode())
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == []
    assert "TOP SECRET" not in result.stdout
    assert result.stderr.count("outside work dir") == 3


@pytest.mark.parametrize("command", ["compact", "restore-files"])
def test_help_teaches_with_examples(command: str) -> None:
    result = run_cli(command, "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.stdout


@pytest.mark.parametrize("mode", ["fallback", "skip"])
def test_llm_failure_fallback_and_skip_through_the_real_sdk(
    tmp_path: Path, fake_api: FakeAnthropicServer, mode: str
) -> None:
    fake_api.enqueue(*[FakeAnthropicServer.reply_error(529) for _ in range(3)])
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test-secret", "ANTHROPIC_BASE_URL": fake_api.base_url}
    proc = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "compact", str(SESSION), "--on-failure", mode, "--max-retries", "2",
         "--no-restore", "--archive-dir", str(tmp_path / "a"), "--stats-json", str(tmp_path / "s.json")],
        capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(fake_api.requests) == 3  # the first try and two retries
    stats = json.loads((tmp_path / "s.json").read_text())
    if mode == "skip":
        assert json.loads(proc.stdout) == json.loads(SESSION.read_bytes())
        assert not stats["compacted"] and not (tmp_path / "a").exists()
    else:
        assert json.loads(proc.stdout)[1]["content"].startswith("[Conversation compressed]")
        assert stats["summarizer"] == "extractive"
        assert any("529" in w for w in stats["warnings"])
    assert b"sk-test-secret" not in proc.stderr + proc.stdout
