"""Every JSON document a command prints or writes: an object, ``"version": 1`` first, every
key in snake_case (README, "JSON output")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import ROOT

SAMPLE = ROOT / "sample_transcripts" / "anthropic-session.json"
WORKSPACE = ROOT / "sample_transcripts" / "workspace"
CAMEL = re.compile(r"[a-z][A-Z]")


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _document(text: str) -> dict[str, Any]:
    data = json.loads(text)
    assert isinstance(data, dict) and next(iter(data)) == "version" and data["version"] == 1, text[:200]
    assert not [k for k in _keys(data) if CAMEL.search(k)], sorted(k for k in _keys(data) if CAMEL.search(k))
    return data


@pytest.mark.parametrize(
    "argv",
    [
        ["count", str(SAMPLE), "--json"],
        ["check", str(SAMPLE), "--json", "-m", "gpt-4"],
        ["sessions", str(ROOT / "sample_transcripts"), "--json"],
        ["models", "--json"],
        ["config", "--json"],
        ["export", str(SAMPLE), "--points"],
        ["eval", str(SAMPLE), "--strategy", "prune,full", "--json"],
    ],
)
def test_a_document_on_stdout_is_versioned_and_snake_case(argv: list[str]) -> None:
    out = run_cli(*argv)
    assert out.exit_code in (0, 1), out.stderr
    _document(out.stdout)


def test_stats_files_are_versioned_and_snake_case(tmp_path: Path) -> None:
    stats = tmp_path / "stats.json"
    common = ["--stats-json", stats, "-o", tmp_path / "out.json"]
    run = run_cli("compact", SAMPLE, "--summarizer", "extractive", "--archive-dir", tmp_path, *common)
    assert run.exit_code == 0, run.stderr
    assert "original_token_count" in _document(stats.read_text())
    report = tmp_path / "report.json"
    run = run_cli(
        "compact",
        SAMPLE,
        "--strategy",
        "prune",
        "--archive-dir",
        tmp_path,
        "--report",
        report,
        "-o",
        tmp_path / "o2.json",
    )
    assert _document(report.read_text())["inputs"]
    run = run_cli("offload", SAMPLE, "--out-dir", tmp_path / "off", "--min-chars", "400", *common)
    assert "offloaded_count" in _document(stats.read_text())
    run = run_cli("restore-files", SAMPLE, "--work-dir", WORKSPACE, *common)
    assert "restored_file_count" in _document(stats.read_text())
