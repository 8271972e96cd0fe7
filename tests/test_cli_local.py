"""The local strategies, pins, tails and the fallback ladder from the command line (issue 10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CliOutcome, run_cli
from conftest import SAMPLES

from ctxcompact.transcripts.io import parse_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

SESSION = SAMPLES / "anthropic-session.json"
RECORDS: list[Any] = json.loads(SESSION.read_text())
WINDOW = ["--context-window", "20000"]  # threshold 9,000 tokens: the 15.6K sample is over it


def run(tmp_path: Path, *args: str) -> tuple[CliOutcome, dict[str, Any]]:
    stats = tmp_path / "stats.json"
    argv = ["compact", *args, "--archive-dir", str(tmp_path / "archive"), "--stats-json", str(stats)]
    result = run_cli(*argv, "--summarizer", "extractive")
    assert result.exit_code == 0, result.stderr
    return result, json.loads(stats.read_text()) if stats.exists() else {}


def output_messages(result: CliOutcome) -> list[Any]:
    messages = parse_transcript(result.stdout_bytes).messages
    assert not errors_only(validate_messages(messages))
    return [r for m in messages if m.source for r in m.source.records]


def test_selective_applies_rules_and_reports_phases(tmp_path: Path) -> None:
    result, stats = run(tmp_path, str(SESSION), "--strategy", "selective", *WINDOW, "-v")
    step = stats["steps"][0]
    assert step["strategy"] == "selective"
    phases = [e["phase"] for e in step["events"]]
    assert phases[0] == "selective_start" and "selective_done" in phases
    assert stats["compacted_token_count"] < stats["original_token_count"]
    assert "phase=selective_rule rule=tool_result" in result.stderr  # --verbose timeline
    kept = output_messages(result)
    assert RECORDS[-1] in kept  # the live request's round is verbatim


def test_key_messages_reports_seed_metadata(tmp_path: Path) -> None:
    result, stats = run(tmp_path, str(SESSION), "--strategy", "key-messages", *WINDOW, "--min-recent", "4")
    step = stats["steps"][0]
    assert step["strategy_used"] == "KeyMessageExtraction"
    assert step["dropped_count"] == len(step["dropped_indexes"]) > 0
    assert step["target_tokens"] <= 7500  # 0.5 × (20,000 − 5,000 reserve)
    first_user = next(r for r in RECORDS if r["role"] == "user")
    assert first_user in output_messages(result)  # the task is pinned


def test_auto_defaults_to_hybrid_and_plain_compact_stays_full(tmp_path: Path) -> None:
    _, auto = run(tmp_path, str(SESSION), "--auto", *WINDOW)
    assert auto["strategy"] == "hybrid"
    assert auto["compacted_token_count"] < 9000 or auto["warnings"]
    _, plain = run(tmp_path, str(SESSION))
    assert plain["strategy"] == "full"


def test_pin_keeps_a_message_verbatim_through_full(tmp_path: Path) -> None:
    target = next(r for r in RECORDS[5:] if r["role"] == "user" and isinstance(r["content"], str))
    needle = target["content"][:20]
    result, _ = run(tmp_path, str(SESSION), "--pin", needle)
    assert target in output_messages(result)


def test_keep_recent_tokens_keeps_the_last_round(tmp_path: Path) -> None:
    result, stats = run(tmp_path, str(SESSION), "--keep-recent-tokens", "3000")
    kept = output_messages(result)
    assert RECORDS[-1] in kept and stats["steps"][0]["kept_loop_message_count"] > 0


def test_keep_user_tokens_keeps_newest_user_words(tmp_path: Path) -> None:
    users = [r for r in RECORDS[:-6] if r["role"] == "user" and isinstance(r["content"], str)]
    result, _ = run(tmp_path, str(SESSION), "--keep-user-tokens", "2000")
    assert users[-1] in output_messages(result)


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result, _ = run(tmp_path, str(SESSION), "--strategy", "prune,full", "--dry-run", "-o", str(out))
    assert not out.exists()
    assert "step prune: changed, tokens" in result.stderr and "step full:" in result.stderr


@pytest.mark.parametrize("text", ["[rules.nope]\n", "not toml ["])
def test_bad_rules_file_exits_2(tmp_path: Path, text: str) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(text)
    result = run_cli("compact", SESSION, "--strategy", "selective", "--rules", rules)
    assert result.exit_code == 2 and "rules.toml" in result.stderr


def test_ladder_says_why_when_the_protected_part_is_over(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "task " * 8000},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "again " * 8000},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(records))
    _, stats = run(tmp_path, str(path), "--strategy", "key-messages", *WINDOW)
    assert any("protected part" in w for w in stats["warnings"])


def test_pins_alone_over_the_budget_warn_or_exit_3(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "task words " * 6000},  # the task: pinned, ~12K tokens
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "done"},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(records))
    _, stats = run(tmp_path, str(path), "--strategy", "key-messages", *WINDOW)
    assert any("pinned messages alone" in w for w in stats["warnings"])
    assert records[0] in run_cli("compact", path, "-s", "key-messages", *WINDOW).json()
    failed = run_cli(
        "compact", path, "-s", "key-messages", *WINDOW, "--on-failure", "error", "--archive-dir", tmp_path
    )
    assert failed.exit_code == 3 and "pinned messages alone" in failed.stderr
