"""``offload`` from the command line: streams, files, undo, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_helpers import run_cli
from conftest import SAMPLES

from ctxcompact.offload.store import MANIFEST_NAME
from ctxcompact.transcripts.io import load_transcript, parse_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

OPENAI = SAMPLES / "openai-chat.json"
SESSION = SAMPLES / "anthropic-session.json"


def test_stdout_is_the_transcript_and_stats_go_to_stderr(tmp_path: Path) -> None:
    out_dir = tmp_path / "off"
    result = run_cli("offload", str(SESSION), "--out-dir", str(out_dir), "--counter", "estimate")
    assert result.exit_code == 0, result.stderr
    lean = parse_transcript(result.stdout_bytes)
    assert not errors_only(validate_messages(lean.messages))
    assert "[Content offloaded to: ./tool-result-" in result.stdout
    assert "ctxcompact offload" in result.stderr and "tokens" in result.stderr
    assert (out_dir / MANIFEST_NAME).is_file()
    assert len(list(out_dir.glob("tool-result-*.md"))) >= 1


def test_output_file_stats_json_quiet_and_undo_round_trip(tmp_path: Path) -> None:
    out_dir = tmp_path / "off"
    lean = tmp_path / "lean.json"
    stats = tmp_path / "stats.json"
    result = run_cli(
        "offload", str(OPENAI), "-d", str(out_dir), "-o", str(lean), "--stats-json", str(stats), "-q",
        "--counter", "estimate",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    data = json.loads(stats.read_text())
    assert data["offloaded_count"] == len(data["files"]) > 0
    assert data["freed_chars"] > 0 and data["tokens_freed"] > 0
    assert all(Path(f).is_absolute() and Path(f).is_file() for f in data["files"])
    # OpenAI in, OpenAI out: tool messages stay tool messages.
    assert load_transcript(lean).dialect == "openai"

    restored = tmp_path / "restored.json"
    undo = run_cli("offload", "--undo", str(lean), "-d", str(out_dir), "-o", str(restored))
    assert undo.exit_code == 0, undo.stderr
    assert restored.read_bytes() == OPENAI.read_bytes()
    assert "restored" in undo.stderr


def test_stdin_to_stdout_pipeline_and_idempotence(tmp_path: Path) -> None:
    out_dir = str(tmp_path / "off")
    first = run_cli("offload", "-d", out_dir, "-q", "--counter", "estimate", input=SESSION.read_bytes())
    assert first.exit_code == 0, first.stderr
    second = run_cli("offload", "-d", out_dir, "--counter", "estimate", input=first.stdout_bytes)
    assert second.exit_code == 0
    assert second.stdout_bytes == first.stdout_bytes
    assert "unchanged" in second.stderr


def test_options_are_passed_through(tmp_path: Path) -> None:
    result = run_cli(
        "offload", str(SESSION), "-d", str(tmp_path), "--min-chars", "2000", "--keep-recent", "2",
        "--preview", "30", "--protect-loop", "--counter", "estimate", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "Preview (first 30 characters):" in result.stdout


def test_undo_refuses_a_changed_file_with_exit_3(tmp_path: Path) -> None:
    out_dir = tmp_path / "off"
    lean = tmp_path / "lean.json"
    assert (
        run_cli(
            "offload", str(SESSION), "-d", str(out_dir), "-o", str(lean), "-q", "--counter", "estimate"
        ).exit_code
        == 0
    )
    victim = next(out_dir.glob("tool-result-*.md"))
    victim.write_text("edited")
    result = run_cli("offload", "--undo", str(lean), "-d", str(out_dir))
    assert result.exit_code == 3
    assert result.stdout == ""
    message = result.stderr.replace("\n", "")  # the error console wraps at 100 columns
    assert f"{victim.name} has changed" in message and "Traceback" not in message


def test_write_failure_exits_3_emits_nothing_and_leaves_no_file(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the directory should go")
    result = run_cli("offload", str(SESSION), "-d", str(blocker / "off"), "--counter", "estimate")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "cannot create the offload directory" in result.stderr
    # A failing -o write takes back the offload files it wrote.
    out_dir = tmp_path / "off"
    failed = run_cli(
        "offload", str(SESSION), "-d", str(out_dir), "-o", str(blocker / "lean.json"), "--counter", "estimate"
    )
    assert failed.exit_code == 3, failed.stderr
    assert "cannot write it" in failed.stderr
    assert list(out_dir.iterdir()) == []


def test_several_inputs_are_refused_clearly(tmp_path: Path) -> None:
    result = run_cli("offload", str(SESSION), str(OPENAI), "-d", str(tmp_path))
    assert result.exit_code == 2
    assert "one transcript per run" in result.stderr


def test_bad_option_values_are_usage_errors(tmp_path: Path) -> None:
    assert run_cli("offload", str(SESSION), "--min-chars", "-1").exit_code == 2
    assert run_cli("offload", str(SESSION), "--counter", "anthropic").exit_code == 2


def test_as_a_real_process_with_a_pipe(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "offload", "-d", str(tmp_path / "off"), "--counter", "estimate"],
        input=OPENAI.read_bytes(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)[0]["role"] == "system"
    assert b"offloaded" in proc.stderr


def test_help_shows_recipes() -> None:
    result = run_cli("offload", "--help")
    assert result.exit_code == 0
    assert "ctxcompact offload --undo" in result.stdout


QUIET_PROBE = """
import sys
sys.argv = ["ctxcompact", *sys.argv[1:]]
from ctxcompact.__main__ import main
try:
    main()
except SystemExit:
    pass
print(sorted(m for m in ("rich", "tiktoken", "bpe_openai") if m in sys.modules), file=sys.stderr)
"""


def test_quiet_offload_runs_no_tokenizer_and_draws_nothing(tmp_path: Path) -> None:
    # "Tokens freed" is a tokenizer pass over every offloaded content; with -q and no
    # --stats-json nobody reads it, so neither a tokenizer nor rich is even imported.
    argv = ["offload", str(SESSION), "-d", str(tmp_path / "off"), "-o", str(tmp_path / "lean.json")]
    quiet = subprocess.run(
        [sys.executable, "-c", QUIET_PROBE, *argv, "-q"], capture_output=True, text=True, timeout=60
    )
    assert quiet.returncode == 0 and quiet.stderr.strip().splitlines() == ["[]"], quiet.stderr
    assert "[Content offloaded to: ./tool-result-" in (tmp_path / "lean.json").read_text()


def test_quiet_offload_with_stats_json_still_counts_the_tokens_freed(tmp_path: Path) -> None:
    stats = {flag: tmp_path / f"stats{flag}.json" for flag in ("-q", "")}
    for flag, path in stats.items():
        out_dir = tmp_path / f"off{flag}"
        argv = [
            "offload",
            str(SESSION),
            "-d",
            str(out_dir),
            "--stats-json",
            str(path),
            "--counter",
            "estimate",
        ]
        result = run_cli(*argv, *([flag] if flag else []))
        assert result.exit_code == 0, result.stderr
    quiet, loud = (json.loads(p.read_text()) for p in stats.values())
    assert quiet["tokens_freed"] == loud["tokens_freed"] > 0
