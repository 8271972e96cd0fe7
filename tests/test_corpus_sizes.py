"""Every corpus file: ``count``, ``check`` and ``compact --auto`` read it, and where its agent
recorded the API's usage, what we would say without that record (our count, scaled for Claude
models, plus the calibrated system prompt and tools a session file does not hold) is within
25 % of it — or the file is named here with the reason it is not (issue 20)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import corpus_files

from ctxcompact.accounting.check import conversation_model, measure
from ctxcompact.accounting.context_size import (
    CLAUDE_TOKEN_FACTOR,
    DEFAULT_SYSTEM_TOKENS,
    context_size,
    is_claude_model,
)
from ctxcompact.accounting.tokens import make_counter
from ctxcompact.errors import InputError
from ctxcompact.transcripts.io import load_transcript

MAX_GAP_PERCENT = 25
#: Files whose estimate misses their recorded usage by more, and why.
REASONS = {
    "ccviewer-fe5e1c67-v1.0.98.jsonl": (
        "Claude Code 1.0.98 sent a smaller system prompt and tool list than the 24,000 tokens "
        "calibrated on 2.x sessions (its first call: ~15,000 outside the messages)"
    ),
    "entire-198393f2-compact-small.jsonl": (
        "its session sent ~44,000 tokens outside the messages (CLAUDE.md and MCP tools on top of "
        "the system prompt), not the calibrated 24,000"
    ),
}
#: Formats no dialect reads (refused by name: tests/test_corpus.py).
FOREIGN = ("gemini-cli-", "openhands-")

FILES = [
    p for p in corpus_files("anthropic", "openai", "claude-code", "other") if not p.name.startswith(FOREIGN)
]


def _estimate_gap(path: Path) -> float | None:
    """Our estimate of what the recorded usage covers against it, in percent; None when the
    file records no usage."""
    counter = make_counter(encoding="cl100k_base")
    [conv, *_] = load_transcript(path).conversations
    report = measure(conv, counter)
    model = conversation_model(conv)
    size = context_size(conv, report, model=model)
    if size.source != "recorded" or size.recorded is None or not size.recorded.context:
        return None
    claude = is_claude_model(model)
    covered = size.counted - size.after
    estimate = round(covered * (CLAUDE_TOKEN_FACTOR if claude else 1.0))
    estimate += DEFAULT_SYSTEM_TOKENS.get(conv.dialect, 0) if claude else 0
    return (estimate - size.recorded.context) / size.recorded.context * 100


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_recorded_and_counted_agree_or_the_reason_is_stated(path: Path) -> None:
    gap = _estimate_gap(path)
    if gap is None:
        return
    if path.name in REASONS:
        assert abs(gap) >= MAX_GAP_PERCENT, f"{path.name} is within {MAX_GAP_PERCENT}% now: drop its reason"
        return
    assert abs(gap) < MAX_GAP_PERCENT, f"{path.name}: {gap:+.1f}%"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_count_and_check_read_every_corpus_file(path: Path) -> None:
    assert run_cli("count", path, "--json").exit_code == 0
    assert run_cli("check", path, "--json").exit_code in (0, 1)


@pytest.mark.parametrize("path", [p for p in FILES if p.stat().st_size < 1_000_000], ids=lambda p: p.name)
def test_compact_auto_then_check_fits(tmp_path: Path, path: Path) -> None:
    out = tmp_path / path.name
    args = [
        "compact",
        path,
        "--auto",
        "--summarizer",
        "extractive",
        "-o",
        out,
        "--archive-dir",
        tmp_path / "a",
    ]
    result = run_cli(*args, "-q")
    if result.exit_code == 3:
        # Nothing can fit (a request whose one live turn is over the threshold: issue 19 item
        # 4): said, and nothing written.
        assert "could not bring the context under the threshold" in result.stderr
        assert not out.exists()
        return
    assert result.exit_code == 0, result.stderr
    assert run_cli("check", out).exit_code == 0


def test_foreign_files_stay_refused() -> None:
    for path in corpus_files("other"):
        if path.name.startswith(FOREIGN):
            with pytest.raises(InputError):
                load_transcript(path)
