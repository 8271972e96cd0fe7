"""reports.py: every JSON shape the CLI writes, field names and key order included (scripts
parse them; the golden digests pin the bytes, these pin what each field means)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import same_json

from ctxcompact.batch.files import BatchItem, BatchResult
from ctxcompact.compaction.pipeline import CompactStats
from ctxcompact.compaction.restore import RestoredFile, RestoreResult, SkippedFile
from ctxcompact.compaction.retention import RetentionReport
from ctxcompact.offload.tool_results import OffloadResult, UndoResult
from ctxcompact.output.json import (
    batch_item_json,
    batch_report_json,
    compact_stats_json,
    offload_stats_json,
    restore_files_stats_json,
    undo_stats_json,
)
from ctxcompact.status import ExitStatus

STATS = CompactStats(
    "prune,full",
    True,
    1000,
    333,
    compacted_message_count=7,
    retained_message_count=2,
    restored_file_count=1,
    restored_token_count=40,
    summarizer="extractive",
    attempts=3,
    archive_path="/a/x.jsonl",
    retention=RetentionReport(1, 2, 0, 0, True, missing_paths=("b.py",)),
    threshold=500,
    reason="compacted",
    warnings=("w",),
    steps=({"strategy": "prune", "changed": True, "cleared": 4},),
    size_sources=("recorded", "rescaled"),
    counted_before=800,
    counted_after=260,
)


def test_compact_stats_use_the_seed_names_in_order() -> None:
    expected = {
        "strategy": "prune,full",
        "compacted": True,
        "reason": "compacted",
        "original_token_count": 1000,
        "compacted_token_count": 333,
        "compaction_ratio": 0.333,
        "size_source": {"original": "recorded", "compacted": "rescaled"},
        "counted_tokens": {"original": 800, "compacted": 260},
        "compacted_message_count": 7,
        "retained_message_count": 2,
        "restored_file_count": 1,
        "restored_token_count": 40,
        "summarizer": "extractive",
        "attempts": 3,
        "retries": 2,
        "archive_path": "/a/x.jsonl",
        "threshold": 500,
        "still_over_threshold": False,
        "warnings": ["w"],
        "steps": [{"strategy": "prune", "changed": True, "cleared": 4}],
        "retention": {
            "summary": "paths 1/2, errors 0/0, last request yes",
            "paths": [1, 2],
            "errors": [0, 0],
            "last_request": True,
            "missing_paths": ["b.py"],
            "missing_errors": [],
        },
    }
    assert same_json(compact_stats_json(STATS), expected)
    from ctxcompact import compact_stats_json as facade

    assert facade(STATS) == expected  # the library's spelling of the same shape


def test_unchanged_stats_have_no_retention_and_no_retries() -> None:
    data = compact_stats_json(CompactStats("full", False, 10, 10, reason="nothing to do"))
    assert "retention" not in data
    assert (data["retries"], data["attempts"], data["still_over_threshold"]) == (0, None, None)


def test_a_batch_report_lists_each_input_then_the_counts() -> None:
    ok = BatchItem("a.json", "compacted", 1000, 333, (STATS,), output="out/a.json")
    bad = BatchItem("b.json", "failed", error="b.json: broken", exit_code=ExitStatus.BAD_INPUT)
    # a write that failed after the work keeps the figures, and has no output
    late = BatchItem("c.json", "failed", 10, 5, (), error="cannot write", exit_code=ExitStatus.WORK_FAILED)
    report = batch_report_json(BatchResult((ok, bad, late)))
    assert list(report) == ["version", "inputs", "compacted", "failed", "outcomes", "totals", "exit_code"]
    assert (report["compacted"], report["failed"], report["exit_code"]) == (1, 2, 3)  # the worst
    assert report["totals"] == {"before": 1010, "after": 338, "ratio": 338 / 1010}
    first, second, third = report["inputs"]
    assert list(first) == ["input", "status", "outcome", "before", "after", "ratio", "stats", "output"]
    assert first["ratio"] == 0.333 and first["stats"] == [compact_stats_json(STATS)]
    written = orjson.loads(orjson.dumps(second))  # the exit code is written as a plain number
    assert same_json(
        written,
        {
            "input": "b.json",
            "status": "failed",
            "outcome": "failed",
            "error": "b.json: broken",
            "exit_code": 2,
        },
    )
    assert list(third) == [
        "input",
        "status",
        "outcome",
        "before",
        "after",
        "ratio",
        "stats",
        "error",
        "exit_code",
    ]


def test_a_batch_report_with_fail_over_names_the_files_above_it_and_the_gate() -> None:
    small = BatchItem("a.json", "compacted", 1000, 300, (STATS,))
    big = BatchItem("b.json", "compacted", 1000, 800, (STATS,))
    report = batch_report_json(BatchResult((small, big)), fail_over=0.5)
    assert [row["over_fail_over"] for row in report["inputs"]] == [False, True]
    assert (report["fail_over"], report["over_fail_over"], report["exit_code"]) == (0.5, 1, 1)
    assert batch_report_json(BatchResult((small,)), fail_over=0.5)["exit_code"] == 0


def test_an_unchanged_input_with_no_tokens_has_no_ratio() -> None:
    assert batch_item_json(BatchItem("e.json", "unchanged", 0, 0, ()))["ratio"] is None


def test_restore_files_stats_say_what_was_restored_and_why_others_were_not() -> None:
    result = RestoreResult(
        (RestoredFile("src/a.py", Path("/w/src/a.py"), "x = 1\n", 4),),
        (SkippedFile("big.bin", "binary"),),
    )
    assert same_json(
        restore_files_stats_json(result),
        {
            "version": 1,
            "restored_file_count": 1,
            "restored_token_count": 4,
            "files": [{"path": "src/a.py", "resolved": "/w/src/a.py", "tokens": 4}],
            "skipped": [{"path": "big.bin", "reason": "binary"}],
        },
    )


def test_offload_and_undo_stats_sum_over_conversations() -> None:
    one = OffloadResult((), 2, 300, ("/o/1.md", "/o/2.md"), 80, (), "/o")
    two = OffloadResult((), 1, 100, ("/o/3.md",), 20, (), "/o")
    assert same_json(
        offload_stats_json("t.json", [one, two]),
        {
            "version": 1,
            "input": "t.json",
            "offloaded_count": 3,
            "freed_chars": 400,
            "files": ["/o/1.md", "/o/2.md", "/o/3.md"],
            "tokens_freed": 100,
            "reused_files": 0,
            "out_dir": "/o",
        },
    )
    undone = [UndoResult((), 2, 300, ("/o/1.md", "/o/2.md"), "/o")]
    assert same_json(
        undo_stats_json("t.json", undone),
        {
            "version": 1,
            "input": "t.json",
            "restored_count": 2,
            "restored_chars": 300,
            "files": ["/o/1.md", "/o/2.md"],
            "out_dir": "/o",
        },
    )
    assert offload_stats_json("t.json", [])["out_dir"] == ""
