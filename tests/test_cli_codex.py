"""Codex rollouts through the commands: detection, lossless round trip, native compaction
write-back, offload in place and back, file restoration, recorded usage in count and check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import CliOutcome, run_cli
from test_codex import ROLLOUTS, assistant, item, line, sample, user

from ctxcompact.markers import CODEX_SUMMARY_PREFIX
from ctxcompact.transcripts.dialects.codex.read import live_history
from ctxcompact.transcripts.io import dump_transcript, load_transcript
from ctxcompact.transcripts.validate import validate_messages


def run(*args: str | Path, code: int = 0) -> CliOutcome:
    result = run_cli(*args)
    assert "Traceback" not in result.stderr
    assert result.exit_code == code, result.stderr
    return result


def jsonl(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def lines(path: Path) -> list[Any]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


@pytest.fixture
def rollout(tmp_path: Path) -> Path:
    return jsonl(tmp_path / "rollout.jsonl", sample())


def test_a_rollout_is_detected_and_written_back_byte_for_byte(rollout: Path) -> None:
    transcript = load_transcript(rollout)
    assert (transcript.container, transcript.dialect) == ("codex", "codex")
    assert dump_transcript(transcript) == rollout.read_bytes()
    forced = load_transcript(rollout, dialect="codex")
    assert len(forced.messages) == len(transcript.messages)


@pytest.mark.skipif(not ROLLOUTS, reason="../shared/corpus is not present")
@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name)
def test_real_rollouts_round_trip_and_validate(path: Path) -> None:
    transcript = load_transcript(path)
    assert transcript.dialect == "codex"
    assert dump_transcript(transcript) == path.read_bytes()
    conv = transcript.conversations[0]
    assert [v for v in validate_messages(conv.messages, dialect="codex") if v.severity == "error"] == []


def test_compact_appends_a_compacted_line_that_reads_back_as_the_compacted_history(
    rollout: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    run(
        "compact",
        rollout,
        "--summarizer",
        "extractive",
        "--no-restore",
        "-o",
        out,
        "-q",
        "--work-dir",
        tmp_path,
    )
    before, after = lines(rollout), lines(out)
    assert after[:-1] == before  # nothing earlier is rewritten
    compacted = after[-1]
    assert compacted["type"] == "compacted"
    history = compacted["payload"]["replacement_history"]
    assert compacted["payload"]["message"].startswith(CODEX_SUMMARY_PREFIX + "\n")
    # Codex's layout: the initial context, the user's request verbatim, then the summary.
    assert history[:3] == [before[2]["payload"], before[3]["payload"], before[5]["payload"]]
    assert history[-1]["content"][0]["text"] == compacted["payload"]["message"]
    assert [i.payload for i in live_history(after)] == history
    assert len(load_transcript(out).messages) == 4


def test_keep_user_tokens_zero_keeps_only_context_and_summary(rollout: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    run(
        "compact",
        rollout,
        "--summarizer",
        "extractive",
        "--no-restore",
        "--keep-user-tokens",
        "0",
        "-o",
        out,
        "-q",
    )
    history = lines(out)[-1]["payload"]["replacement_history"]
    assert [h.get("role") for h in history] == ["developer", "user", "user"]
    assert history[1]["content"][0]["text"].startswith("<environment_context>")


def test_offload_edits_output_lines_in_place_and_undo_restores_the_bytes(
    rollout: Path, tmp_path: Path
) -> None:
    lean, back, store = tmp_path / "lean.jsonl", tmp_path / "back.jsonl", tmp_path / "store"
    run("offload", rollout, "--out-dir", store, "-o", lean, "-q")
    before, after = lines(rollout), lines(lean)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [11]  # the one output of 100+ characters
    assert after[11]["payload"]["output"].startswith("[Content offloaded to: ")
    run("offload", "--undo", lean, "--out-dir", store, "-o", back, "-q")
    assert back.read_bytes() == rollout.read_bytes()


def test_restore_files_finds_shell_reads_and_patches_relative_to_the_session(
    rollout: Path, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text("def main():\n    return 2\n")
    result = run("restore-files", rollout, "--work-dir", tmp_path, "-q")
    restored = [orjson.loads(x) for x in result.stdout.splitlines()]
    assert (
        restored[0]["payload"]["content"][0]["text"]
        == "[Restored after compact] app.py:\ndef main():\n    return 2\n"
    )


def test_restore_files_re_roots_the_session_folder_with_path_map(rollout: Path, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "app.py").write_text("def main():\n    return 3\n")
    # The session ran in /repo: not here, so nothing is found and the warning says where it looked.
    missing = run("restore-files", rollout)
    assert "the session's folder /repo does not exist here" in " ".join(missing.stderr.split())
    result = run("restore-files", rollout, "--path-map", f"/repo={checkout}", "-q")
    restored = [orjson.loads(x) for x in result.stdout.splitlines()]
    assert restored[0]["payload"]["content"][0]["text"] == (
        "[Restored after compact] app.py:\ndef main():\n    return 3\n"
    )


def test_count_shows_the_recorded_usage_beside_ours(rollout: Path) -> None:
    data = orjson.loads(run("count", rollout, "--json").stdout)
    row = data["transcripts"][0]
    assert row["dialect"] == "codex"
    assert row["recorded_usage"]["input_tokens"] == 2400
    assert row["recorded_usage"]["model_context_window"] == 258400
    assert "recorded by the agent" in run("count", rollout).stdout


def check_json(tmp_path: Path, input_tokens: int, window: int, code: int) -> dict[str, Any]:
    records = sample()
    info = records[-2]["payload"]["info"]
    info["last_token_usage"] = {
        "input_tokens": input_tokens,
        "output_tokens": 10,
        "total_tokens": input_tokens + 10,
    }
    info["model_context_window"] = window
    data: dict[str, Any] = orjson.loads(
        run("check", jsonl(tmp_path / "r.jsonl", records), "--json", code=code).stdout
    )
    return data


def test_check_decides_from_the_recorded_usage_and_window(tmp_path: Path) -> None:
    # Our count of the sample is a few hundred tokens, under the threshold of an 800-token
    # window ((800 - 200) x 0.6 = 360); the recorded 350 + 10 is at it.
    data = check_json(tmp_path, 350, 800, code=1)
    row = data["transcripts"][0]
    assert row["budget"]["context_window"] == 800 and row["budget"]["threshold"] == 360
    assert row["tokens"] == 360 and row["needs_compaction"] and row["counted_tokens"] < 360


def test_a_record_far_above_our_count_is_stale_and_our_count_decides(tmp_path: Path) -> None:
    row = check_json(tmp_path, 150_000, 258_400, code=0)["transcripts"][0]
    assert row["tokens"] == row["counted_tokens"] < 1_000


def test_count_and_check_size_a_rollout_through_the_shared_recorded_usage(tmp_path: Path) -> None:
    records = sample()
    info = records[-2]["payload"]["info"]
    info["last_token_usage"] = {"input_tokens": 350, "cached_input_tokens": 300, "output_tokens": 10}
    info["last_token_usage"]["total_tokens"] = 360
    path = jsonl(tmp_path / "r.jsonl", [*records, item(user("and the tests, please " * 20))])
    context = orjson.loads(run("count", path, "--json").stdout)["transcripts"][0]["context"]
    usage = context["recorded_usage"]
    assert (usage["input_tokens"], usage["cache_read_input_tokens"], usage["output_tokens"]) == (50, 300, 10)
    assert usage["where"] == f"token_count, line {len(records) - 1}"
    after = context["counted_after_recorded"]
    assert context["source"] == "recorded" and after > 20
    assert context["tokens"] == 360 + after
    checked = orjson.loads(run("check", path, "--json").stdout)["transcripts"][0]
    assert checked["tokens"] == context["tokens"]
    assert "source: recorded usage 360 (token_count, line" in run("count", path).stdout


def test_a_developer_message_mid_session_is_valid_for_codex(tmp_path: Path) -> None:
    records = [
        *sample(),
        item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<mode>"}]}),
        item(user("go on")),
        item(assistant("ok")),
        line("event_msg", {"type": "agent_message", "message": "ok"}),
    ]
    run("check", jsonl(tmp_path / "r.jsonl", records), "--no-validate")
    run("check", jsonl(tmp_path / "r.jsonl", records))


def test_format_codex_on_bare_messages_is_refused_by_line(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "m.jsonl", [{"role": "user", "content": "hi"}])
    result = run("count", path, "--format", "codex", code=2)
    assert "line 1 is not a rollout line; expected a Codex rollout line" in result.stderr


def test_compacting_twice_appends_a_second_compacted_line_with_one_summary(
    rollout: Path, tmp_path: Path
) -> None:
    once, twice = tmp_path / "once.jsonl", tmp_path / "twice.jsonl"
    run(
        "compact",
        rollout,
        "--summarizer",
        "extractive",
        "--no-restore",
        "-o",
        once,
        "-q",
        "--work-dir",
        tmp_path,
    )
    more = [*lines(once), item(user("now add a test")), item(assistant("added"))]
    jsonl(once, more)
    run(
        "compact",
        once,
        "--summarizer",
        "extractive",
        "--no-restore",
        "-o",
        twice,
        "-q",
        "--work-dir",
        tmp_path,
    )
    after = lines(twice)
    assert after[:-1] == more and after[-1]["type"] == "compacted"
    history = after[-1]["payload"]["replacement_history"]
    summaries = [
        h
        for h in history
        if h.get("role") == "user" and h["content"][0]["text"].startswith(CODEX_SUMMARY_PREFIX)
    ]
    assert len(summaries) == 1 and history[-1] == summaries[0]
    users = [h["content"][0]["text"] for h in history if h.get("role") == "user"]
    assert users[-3:-1] == ["fix the bug in app.py", "now add a test"]
