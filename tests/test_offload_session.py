"""``offload`` on a Claude Code session: references from the session's cwd, and the
``toolUseResult`` duplicate moved with its result (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT / "sample_transcripts" / "claude-code-session.jsonl"
RECORDED_CWD = "/home/dev/invoice"


def _session_in(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    session = tmp_path / "s.jsonl"
    session.write_bytes(SESSION.read_bytes().replace(RECORDED_CWD.encode(), str(project).encode()))
    return session


def _offloaded_entries(data: bytes) -> list[dict[str, object]]:
    return [
        e
        for e in map(json.loads, data.splitlines())
        if isinstance(e.get("toolUseResult"), str) and "Content offloaded" in e["toolUseResult"]
    ]


def test_references_are_paths_from_the_sessions_cwd_and_duplicates_move(tmp_path: Path) -> None:
    session = _session_in(tmp_path)
    out_dir = tmp_path / "project" / ".ctx" / "offload"
    result = run_cli("offload", session, "--out-dir", out_dir, "--min-chars", "200", "-q")
    assert result.exit_code == 0, result.stderr
    entries = _offloaded_entries(result.stdout_bytes)
    assert entries, "the toolUseResult copies were offloaded too"
    for entry in entries:
        (block,) = entry["message"]["content"]  # type: ignore[index]
        reference = block["content"]
        assert reference.startswith("[Content offloaded to: ./.ctx/offload/tool-result-")
        name = reference.split("./.ctx/offload/", 1)[1].rstrip("]")
        assert (tmp_path / "project" / ".ctx" / "offload" / name).is_file()  # opens from the cwd
        assert entry["toolUseResult"] == reference.replace(".md]", "-toolUseResult.md]")
    assert len(result.stdout_bytes) < len(session.read_bytes())
    lean = tmp_path / "lean.jsonl"
    lean.write_bytes(result.stdout_bytes)
    back = run_cli("offload", "--undo", lean, "--out-dir", out_dir, "-q")
    assert back.exit_code == 0, back.stderr
    assert back.stdout_bytes == session.read_bytes()


def test_an_out_dir_outside_the_cwd_is_named_by_its_absolute_path(tmp_path: Path) -> None:
    session = _session_in(tmp_path)
    out_dir = tmp_path / "elsewhere"
    result = run_cli("offload", session, "--out-dir", out_dir, "--min-chars", "200", "-q")
    assert result.exit_code == 0, result.stderr
    (entry, *_) = _offloaded_entries(result.stdout_bytes)
    assert str(entry["toolUseResult"]).startswith(f"[Content offloaded to: {out_dir.resolve()}/tool-result-")


def test_bare_messages_keep_the_seeds_reference(tmp_path: Path) -> None:
    transcript = ROOT / "sample_transcripts" / "anthropic-session.json"
    result = run_cli("offload", transcript, "--out-dir", tmp_path / "od", "--min-chars", "400", "-q")
    assert result.exit_code == 0, result.stderr
    assert "[Content offloaded to: ./tool-result-" in result.stdout


def test_the_duplicates_are_moved_without_counting_their_tokens(tmp_path: Path) -> None:
    # The model never sees toolUseResult: moving it frees no context, so nothing is encoded.
    from ctxcompact.accounting.tokens import EstimateCounter
    from ctxcompact.offload.session import offload_duplicates
    from ctxcompact.offload.tool_results import offload_tool_results
    from ctxcompact.transcripts.io import load_transcript

    messages = load_transcript(SESSION).messages
    out_dir = tmp_path / "off"
    first = offload_tool_results(messages, out_dir=out_dir, min_chars=200, counter=EstimateCounter())
    _, moved = offload_duplicates(first.messages, first, out_dir=out_dir, reference_dir="./")
    assert moved.offloaded_count > 0 and moved.tokens_freed is None
