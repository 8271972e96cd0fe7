"""A batch's result you can trust: a file that grew or did not change is flagged as such, a
totals row, ``--fail-on-growth``, plain lines with whole paths on a CI log, and
``--output-format github`` (annotations on stdout, a Markdown summary in $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import plain_rows, run_cli
from conftest import SAMPLES

from ctxcompact.batch.results import BatchItem, BatchResult, Gates
from ctxcompact.output.batch_table import annotation, github_annotations, step_summary
from ctxcompact.status import ExitStatus

SESSION = SAMPLES / "anthropic-session.json"
#: Three messages: a full summary of them is larger than they are.
TINY = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
    {"role": "user", "content": "fix the bug in app.py please"},
]
OFFLINE = ("--summarizer", "extractive", "--no-restore")


@pytest.fixture(name="inputs")
def _inputs(tmp_path: Path) -> Path:
    root = tmp_path / "a-folder-with-a-rather-long-name-so-that-paths-would-wrap" / "sessions"
    root.mkdir(parents=True)
    shutil.copy(SESSION, root / "big.json")
    (root / "tiny.json").write_text(json.dumps(TINY))
    return root


def test_a_file_that_grew_is_flagged_and_totals_follow(inputs: Path, tmp_path: Path) -> None:
    out = run_cli("compact", inputs, "--out-dir", tmp_path / "out", *OFFLINE, "--report", tmp_path / "r.json")
    assert out.exit_code == 0, out.stderr  # growth is flagged, not fatal, unless asked
    # On a log (stderr not a terminal): one plain line per file, paths whole, no box.
    assert not any(ch in out.stderr for ch in "│┃━─")
    rows = {row[0]: row for row in plain_rows(out.stderr, "file ")}
    big, tiny = (str(inputs / name) for name in ("big.json", "tiny.json"))
    assert rows[big][4] == "compacted" and rows[tiny][4].startswith("grew (+")
    total = next(r for r in rows.values() if r[0] == "2 files")
    before, after = (int(x.replace(",", "")) for x in total[1].split(" → "))
    assert total[3] == "1 compacted, 1 grew" and after < before
    assert "1 file(s) grew" in out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["outcomes"] == {"compacted": 1, "grew": 1, "unchanged": 0, "failed": 0}
    assert report["totals"]["before"] == before and report["totals"]["after"] == after
    assert {r["input"]: r["outcome"] for r in report["inputs"]} == {big: "compacted", tiny: "grew"}


def test_fail_on_growth_exits_1(inputs: Path, tmp_path: Path) -> None:
    out = run_cli("compact", inputs, "--out-dir", tmp_path / "out", *OFFLINE, "--fail-on-growth")
    assert out.status == ExitStatus.OVER_THRESHOLD, out.stderr
    assert "(--fail-on-growth: exit 1)" in out.stderr
    (inputs / "tiny.json").unlink()
    again = run_cli("compact", inputs, "--out-dir", tmp_path / "out2", *OFFLINE, "--fail-on-growth")
    assert again.exit_code == 0, again.stderr


def test_unchanged_is_not_called_compacted() -> None:
    same = BatchItem("s.json", "compacted", before=100, after=100)
    assert (same.outcome, BatchItem("g.json", "compacted", before=1, after=2).outcome) == (
        "unchanged",
        "grew",
    )
    assert BatchItem("k.json", "compacted", before=9, after=3).outcome == "compacted"
    assert BatchItem("f.json", "failed", error="x").outcome == "failed"


def test_github_format_annotates_and_writes_the_step_summary(inputs: Path, tmp_path: Path) -> None:
    (inputs / "bad.json").write_text("{nope")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    out = run_cli(
        "compact",
        inputs,
        "--out-dir",
        tmp_path / "out",
        *OFFLINE,
        "--output-format",
        "github",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert out.status == ExitStatus.BAD_INPUT
    lines = out.stdout.splitlines()
    bad, tiny = str(inputs / "bad.json"), str(inputs / "tiny.json")
    assert lines[0].startswith(f"::error file={bad},title=ctxcompact%3A failed::")
    assert lines[1].startswith(
        f"::warning file={tiny},title=ctxcompact%3A grew::the compacted file is larger"
    )
    assert len(lines) == 2  # the compacted file needs no annotation
    text = summary.read_text()
    assert text.startswith("earlier step\n### ctxcompact compact: 3 files, failed (exit 2)")
    assert "| 3 |" in text and f"| `{bad}` |" in text and "grew (+" in text


def test_github_format_needs_a_batch(tmp_path: Path) -> None:
    out = run_cli("compact", SESSION, *OFFLINE, "--output-format", "github")
    assert out.exit_code == 2 and "--output-format github reports a batch" in out.stderr


def test_annotations_escape_what_the_runner_reads_as_syntax() -> None:
    line = annotation("error", "a,b:c.json", "t: x", "50% done\nnext")
    assert line == "::error file=a%2Cb%3Ac.json,title=t%3A x::50%25 done%0Anext"
    batch = BatchResult((BatchItem("s.json", "compacted", before=10, after=8),))
    assert github_annotations(batch, Gates(fail_over=0.5)) == [
        "::error file=s.json,title=ctxcompact%3A above --fail-over::tokens after / before 80.0%25 > 0.5 "
        "(10 → 8 tokens, 80.0%25)"
    ]
    assert "Gate: `--fail-over 0.5` — 1 file(s) above." in step_summary(
        batch, Gates(fail_over=0.5), exit_code=1
    )
