"""``make demo``'s main job, step by step as the Makefile runs it: the sample is over gpt-4's
threshold, ``compact --model gpt-4`` (the default strategy, offline) brings it under, and
``check`` on the result agrees. A summary or restored files that outgrow a small window made
the demo's last step fail once (the summary's word limit rose; restoration took its full
share): with a threshold, ``full`` sizes both to what the kept messages leave under it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"


def test_the_makefile_demo_compacts_the_sample_under_gpt_4s_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = MAKEFILE.read_text(encoding="utf-8").split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "compact sample_transcripts/anthropic-session.json" in demo and "--model gpt-4" in demo
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    sample = SAMPLES / "anthropic-session.json"
    assert run_cli("check", sample, "--model", "gpt-4").exit_code == 1  # due
    out = tmp_path / "compacted.json"
    compacted = run_cli(
        "compact", sample, "--work-dir", SAMPLES / "workspace", "--archive-dir", tmp_path / "archive",
        "--model", "gpt-4", "--stats-json", tmp_path / "stats.json", "-o", out,
    )  # fmt: skip
    assert compacted.exit_code == 0, compacted.stderr
    assert "now under it" in compacted.stderr and "files restored" in compacted.stderr
    checked = run_cli("check", out, "--model", "gpt-4")
    assert checked.exit_code == 0, checked.stdout + checked.stderr
    restored = re.search(r"files restored (\d+)", compacted.stderr)
    assert restored and int(restored.group(1)) >= 1  # room was shared, not taken from the files
