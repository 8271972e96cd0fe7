"""batch_journal.py: what a killed batch leaves behind is enough to resume, and never too much."""

from __future__ import annotations

import shutil
from pathlib import Path

from cli_helpers import run_cli
from conftest import SAMPLES

from ctxcompact.batch.journal import BatchJournal
from ctxcompact.batch.results import BatchItem


def test_a_torn_last_line_is_ignored_and_complete_lines_are_kept(tmp_path: Path) -> None:
    src = tmp_path / "a.json"
    src.write_text("[]")
    out = tmp_path / "out.json"
    out.write_text("[]")
    path = tmp_path / "journal.jsonl"
    journal = BatchJournal.open(path, options="opts", resume=False)
    journal.record("a", str(src), BatchItem(str(src), "compacted", 100, 40, output=str(out)))
    journal.record("b", str(src), BatchItem(str(src), "failed", error="bad"))  # failures: not recorded
    with path.open("ab") as fh:
        fh.write(b'{"key": "c", "input": "c.json", "sta')  # killed mid-write
    again = BatchJournal.open(path, options="opts", resume=True)
    item = again.finished("a", str(src))
    assert item is not None and (item.status, item.before, item.after, item.resumed) == (
        "compacted",
        100,
        40,
        True,
    )
    assert again.finished("b", str(src)) is None and again.finished("c", "c.json") is None
    out.unlink()  # the output is gone: done again
    assert again.finished("a", str(src)) is None


def test_other_options_or_no_resume_start_afresh(tmp_path: Path) -> None:
    src = tmp_path / "a.json"
    src.write_text("[]")
    path = tmp_path / "journal.jsonl"
    BatchJournal.open(path, options="one", resume=False).record(
        "a", str(src), BatchItem(str(src), "unchanged", 5, 5)
    )
    assert BatchJournal.open(path, options="one", resume=True).finished("a", str(src)) is not None
    assert BatchJournal.open(path, options="two", resume=True).finished("a", str(src)) is None
    assert (
        BatchJournal.open(path, options="one", resume=True).finished("a", str(src)) is None
    )  # rewritten by "two"


def test_in_place_keeps_its_journal_beside_the_report_and_resume_leaves_done_files_alone(
    tmp_path: Path,
) -> None:
    files = []
    for name in ("a.json", "b.json"):
        shutil.copy(SAMPLES / "anthropic-session.json", tmp_path / name)
        files.append(tmp_path / name)
    report = tmp_path / "report.json"
    args = ["compact", *files, "--in-place", "--report", report, "--summarizer", "extractive", "--no-restore"]
    assert run_cli(*args, "--jobs", "1").exit_code == 0
    assert (tmp_path / "report.json.journal").is_file()
    compacted = [f.read_bytes() for f in files]
    result = run_cli(*args, "--jobs", "1", "--resume")
    assert result.exit_code == 0, result.stderr
    assert [f.read_bytes() for f in files] == compacted  # not compacted a second time
    assert not list(tmp_path.glob("*.bak.1"))
