"""The JSON of the commands that rewrite: ``compact`` (``--stats-json``, ``--report``, a
batch's report), ``restore-files`` and ``offload`` (``--stats-json``), ``export --points``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxcompact.output.json.document import document

if TYPE_CHECKING:
    from ctxcompact.batch.files import BatchItem, BatchResult, FileCompaction
    from ctxcompact.compaction.pipeline import CompactStats
    from ctxcompact.compaction.restore import RestoreResult
    from ctxcompact.offload.store import OrphanCleanup
    from ctxcompact.offload.tool_results import OffloadResult, UndoResult
    from ctxcompact.transcripts.points.export import ExportedConversation


# --- compact --------------------------------------------------------------------------------


def compact_stats_json(stats: CompactStats) -> dict[str, Any]:
    """One conversation's compaction stats (a part of the documents below: no version)."""
    out: dict[str, Any] = {
        "strategy": stats.strategy,
        "compacted": stats.compacted,
        "reason": stats.reason,
        "original_token_count": stats.original_tokens,
        "compacted_token_count": stats.compacted_tokens,
        "compaction_ratio": round(stats.compaction_ratio, 4),
        "size_source": {"original": stats.size_sources[0], "compacted": stats.size_sources[1]},
        "counted_tokens": {"original": stats.counted_before, "compacted": stats.counted_after},
        "compacted_message_count": stats.compacted_message_count,
        "retained_message_count": stats.retained_message_count,
        "restored_file_count": stats.restored_file_count,
        "restored_token_count": stats.restored_token_count,
        "summarizer": stats.summarizer,
        "attempts": stats.attempts,
        "retries": max(0, stats.attempts - 1) if stats.attempts else 0,
        "archive_path": stats.archive_path,
        "threshold": stats.threshold,
        "still_over_threshold": stats.still_over_threshold,
        "warnings": list(stats.warnings),
        "steps": [dict(s) for s in stats.steps],
    }
    if stats.appended:
        out["appended"] = True
    if stats.retention is not None:
        r = stats.retention
        out["retention"] = {
            "summary": r.summary_line(),
            "paths": [r.paths_found, r.paths_total],
            "errors": [r.errors_found, r.errors_total],
            "last_request": r.last_request,
            "missing_paths": list(r.missing_paths),
            "missing_errors": list(r.missing_errors),
        }
    return out


def file_stats_json(done: FileCompaction) -> dict[str, Any]:
    """``compact --stats-json`` for one input: its conversation's stats, or under
    ``conversations`` each one's when the file holds several."""
    payload = [compact_stats_json(s) for s in done.stats]
    return document(payload[0] if len(payload) == 1 else {"conversations": payload})


def file_report_json(done: FileCompaction, *, output: str | None) -> dict[str, Any]:
    """``compact --report`` for one input (no batch): the report of a one-item batch."""
    row = {
        "input": done.input,
        "status": done.status,
        "output": output,
        "stats": [compact_stats_json(s) for s in done.stats],
    }
    return document({"inputs": [row], "compacted": int(done.status == "compacted"), "failed": 0})


def batch_item_json(item: BatchItem, *, fail_over: float | None = None) -> dict[str, Any]:
    """One input of a batch: its figures once it was compacted, its output once written,
    its error and exit code when it failed (a failed write keeps the figures); ``resumed``
    when an earlier run finished it (figures from the journal, no stats)."""
    row: dict[str, Any] = {"input": item.input, "status": item.status, "outcome": item.outcome}
    if item.before is not None:
        row.update(before=item.before, after=item.after, ratio=item.ratio)
    if item.stats is not None:
        row["stats"] = [compact_stats_json(s) for s in item.stats]
    if item.resumed:
        row["resumed"] = True
    if fail_over is not None:
        row["over_fail_over"] = item.over_ratio(fail_over)
    if item.output is not None:
        row["output"] = item.output
    if item.error is not None:
        row.update(error=item.error, exit_code=item.exit_code)
    return row


def batch_report_json(
    batch: BatchResult, *, fail_over: float | None = None, fail_on_growth: bool = False
) -> dict[str, Any]:
    """``compact --report`` (and ``--stats-json``) of a batch: every input, then the counts
    (by ``outcome`` too: a file whose tokens went up is ``grew``), the totals and, with
    ``--fail-over``, the limit, the files above it and the exit code it gives."""
    before, after = batch.totals
    out: dict[str, Any] = {
        "inputs": [batch_item_json(item, fail_over=fail_over) for item in batch.items],
        "compacted": batch.compacted,
        "failed": batch.failed,
        "outcomes": {
            k: sum(i.outcome == k for i in batch.items) for k in ("compacted", "grew", "unchanged", "failed")
        },
        "totals": {"before": before, "after": after, "ratio": after / before if before else None},
    }
    if fail_over is not None:
        out.update(fail_over=fail_over, over_fail_over=len(batch.over_ratio(fail_over)))
    if fail_on_growth:
        out["fail_on_growth"] = True
    out["exit_code"] = int(batch.gate(fail_over, fail_on_growth=fail_on_growth))
    return document(out)


# --- restore-files ----------------------------------------------------------------------------


def restore_files_stats_json(result: RestoreResult) -> dict[str, Any]:
    """``restore-files --stats-json``: what was restored, and what was skipped and why."""
    return document(
        {
            "restored_file_count": len(result.files),
            "restored_token_count": result.tokens,
            "files": [
                {"path": f.path, "resolved": str(f.resolved), "tokens": f.tokens} for f in result.files
            ],
            "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
        }
    )


# --- offload ----------------------------------------------------------------------------------


def offload_stats_json(label: str, results: Sequence[OffloadResult]) -> dict[str, Any]:
    """``offload --stats-json``, summed over conversations."""
    return document(
        {
            "input": label,
            "offloaded_count": sum(r.offloaded_count for r in results),
            "freed_chars": sum(r.freed_chars for r in results),
            "files": [f for r in results for f in r.files],
            "tokens_freed": sum(r.tokens_freed or 0 for r in results),
            "reused_files": sum(1 for r in results for e in r.entries if e.reused),
            "out_dir": results[0].out_dir if results else "",
        }
    )


def undo_stats_json(label: str, results: Sequence[UndoResult]) -> dict[str, Any]:
    """``offload --undo --stats-json``: what was put back, summed over conversations."""
    return document(
        {
            "input": label,
            "restored_count": sum(r.restored_count for r in results),
            "restored_chars": sum(r.restored_chars for r in results),
            "files": [f for r in results for f in r.files],
            "out_dir": results[0].out_dir if results else "",
        }
    )


def orphan_cleanup_stats_json(result: OrphanCleanup) -> dict[str, Any]:
    """``offload --clean-orphans --stats-json``: the files removed, and how many are still named."""
    return document(
        {
            "out_dir": result.out_dir,
            "removed_count": len(result.removed),
            "removed": list(result.removed),
            "referenced_count": result.referenced,
        }
    )


# --- export --points ---------------------------------------------------------------------------


def points_json(done: Sequence[ExportedConversation]) -> dict[str, Any]:
    """``export --points``: each conversation's compaction points, oldest first (the summary's
    and the boundary's message ids, when it was made); one conversation's directly, several
    under ``conversations``."""
    listing = [
        {
            "conversation": d.label,
            "points": [
                {
                    "summary_message_id": p.summary_id,
                    "boundary_message_id": p.boundary_id,
                    "created_at": p.created_at,
                }
                for p in d.points
            ],
        }
        for d in done
    ]
    return document(listing[0] if len(listing) == 1 else {"conversations": listing})
