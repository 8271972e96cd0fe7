"""Every JSON shape ctxcompact writes, in one place: plain data, no rich.

``count --json``, ``check --json``, ``eval --json`` and ``config --json`` on stdout; the
``--stats-json`` of ``compact``, ``restore-files`` and ``offload`` (with ``--undo``);
``compact --report``. Result objects
stay free of serialization: each shape is built here from them, under the seeds' names.
Kept apart from :mod:`ctxcompact.output.rich` so that a ``--json`` run never imports a terminal
library it does not use (start-up time is most of a ``count``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxcompact.accounting.check import CheckResult
from ctxcompact.accounting.context_size import ContextSize, SideEntries
from ctxcompact.accounting.tokens import TokenReport
from ctxcompact.accounting.windows import Budget, ModelInfo
from ctxcompact.transcripts.dialects.recorded import RecordedUsage
from ctxcompact.transcripts.recorded_usage import RecordedUsage as ApiUsage

if TYPE_CHECKING:
    from ctxcompact.accounting.breakdown import Breakdown
    from ctxcompact.accounting.history import Call
    from ctxcompact.accounting.models_table import KnownModel
    from ctxcompact.accounting.prices import Cost
    from ctxcompact.accounting.sessions import SessionInfo
    from ctxcompact.batch.files import BatchItem, BatchResult, FileCompaction
    from ctxcompact.compaction.pipeline import CompactStats
    from ctxcompact.compaction.restore import RestoreResult
    from ctxcompact.config import EffectiveSetting
    from ctxcompact.evaluation.probes import Probe, ProbeReport
    from ctxcompact.evaluation.run import EvalResult, StrategyRun, StrategySummary
    from ctxcompact.offload.store import OrphanCleanup
    from ctxcompact.offload.tool_results import OffloadResult, UndoResult
    from ctxcompact.output.timeline import Timeline


@dataclass(frozen=True, slots=True)
class CountRow:
    """One conversation's count, with where it came from."""

    label: str
    dialect: str
    report: TokenReport
    model: ModelInfo | None = None
    size: ContextSize | None = None
    side: SideEntries | None = None
    #: The usage the agent recorded for its newest API call (Codex), shown beside our count.
    recorded: RecordedUsage | None = None
    #: The real context by category (``count``'s picture).
    breakdown: Breakdown | None = None


# --- count -----------------------------------------------------------------------------------


def count_to_json(rows: Sequence[CountRow], *, top: int) -> dict[str, Any]:
    return {
        "total": sum(r.report.total for r in rows),
        "transcripts": [_count_row_json(r, top=top) for r in rows],
    }


def _count_row_json(row: CountRow, *, top: int) -> dict[str, Any]:
    report = row.report
    out: dict[str, Any] = {
        "label": row.label,
        "dialect": row.dialect,
        "counter": report.counter,
        "encoding": report.encoding,
        "tokenizer": report.tokenizer,
        "total": report.total,
        "exact_total": report.exact_total,
        "per_message_approximate": report.per_message_approximate,
        "message_count": report.message_count,
        "by_role": dict(report.by_role),
        "by_type": dict(report.by_type),
        "largest_messages": [
            {"index": m.index, "role": m.role, "tokens": m.tokens, "preview": m.preview}
            for m in report.largest_messages(top)
        ],
        "largest_tool_results": [
            {
                "message_index": r.message_index,
                "tool_use_id": r.tool_use_id,
                "tool_name": r.tool_name,
                "tokens": r.tokens,
                "preview": r.preview,
            }
            for r in report.largest_tool_results(top)
        ],
    }
    if row.model is not None:
        out["model"] = row.model.model
        out["context_window"] = row.model.context_window
        out["window_share"] = round(report.total / row.model.context_window, 4)
    if row.size is not None:
        out["context"] = context_size_json(row.size)
    if row.side is not None:
        out["sidechain"] = {"entries": row.side.sidechain_entries, "tokens": row.side.sidechain_tokens}
        out["meta"] = {"entries": row.side.meta_entries, "tokens": row.side.meta_tokens}
    if row.recorded is not None:
        out["recorded_usage"] = row.recorded.to_dict()
    if row.breakdown is not None:
        out["breakdown"] = breakdown_json(row.breakdown)
    return out


def breakdown_json(b: Breakdown) -> dict[str, Any]:
    """``count``'s picture as numbers: the parts (summing to ``context``, the real size),
    whether each is estimated, and the budget around them."""
    return {
        "by": b.view,
        "context": b.total,
        "parts": [{"name": p.name, "tokens": p.tokens, "estimated": p.estimated} for p in b.parts],
        "context_window": b.window,
        "free": b.free,
        "output_reserve": b.output_reserve,
        "threshold": b.threshold,
    }


def recorded_usage_json(usage: ApiUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_creation,
        "cache_read_input_tokens": usage.cache_read,
        "output_tokens": usage.output,
        "at_message_index": usage.at_message_index,
        "where": usage.source,
    }


def context_size_json(size: ContextSize) -> dict[str, Any]:
    """The context size a decision was made from, and its source."""
    diff = size.difference
    return {
        "tokens": size.tokens,
        "source": size.source,
        "counted": size.counted,
        "recorded_usage": recorded_usage_json(size.recorded) if size.recorded else None,
        "counted_after_recorded": size.after,
        "difference_percent": round(diff, 1) if diff is not None else None,
        "factor": size.factor,
        "system_tokens": size.system_tokens,
        "overhead": size.overhead,
        "stale_usage": recorded_usage_json(size.stale) if size.stale else None,
    }


def budget_json(budget: Budget) -> dict[str, Any]:
    """The budget a decision was made against: the model, its window, the reserve, the ratio
    and the threshold."""
    return {
        "model": budget.model.model,
        "model_known": budget.model.known,
        "model_match": budget.model.match,
        "context_window": budget.model.context_window,
        "output_reserve": budget.output_reserve,
        "ratio": budget.ratio,
        "strategy": budget.label,
        "threshold": budget.threshold,
    }


def check_to_json(results: Sequence[CheckResult]) -> dict[str, Any]:
    """``check --json``: the verdict over every input, then each conversation with its own
    budget (inputs may name different models)."""
    return {
        "needs_compaction": any(r.needs_compaction for r in results),
        "valid": not any(r.errors for r in results),
        "transcripts": [
            {
                "label": r.label,
                "budget": budget_json(r.status.budget),
                "tokens": r.status.tokens,
                "source": r.size.source if r.size is not None else "count",
                "counted": r.report.total,
                "context": context_size_json(r.size) if r.size is not None else None,
                "counter": r.report.counter,
                "exact_total": r.report.exact_total,
                "remaining": r.status.remaining,
                "usage_of_threshold": round(r.status.usage, 4),
                "usage_of_window": round(r.status.window_share, 4),
                "needs_compaction": r.needs_compaction,
                "violations": [
                    {
                        "code": v.code,
                        "severity": v.severity,
                        "message_index": v.message_index,
                        "detail": v.detail,
                    }
                    for v in r.violations
                ],
                **_recorded_json(r),
            }
            for r in results
        ],
    }


# --- compact --------------------------------------------------------------------------------


def compact_stats_json(stats: CompactStats) -> dict[str, Any]:
    """One conversation's compaction stats, with the seed's camelCase names for its fields."""
    out: dict[str, Any] = {
        "strategy": stats.strategy,
        "compacted": stats.compacted,
        "reason": stats.reason,
        "originalTokenCount": stats.original_tokens,
        "compactedTokenCount": stats.compacted_tokens,
        "compactionRatio": round(stats.compaction_ratio, 4),
        "sizeSource": {"original": stats.size_sources[0], "compacted": stats.size_sources[1]},
        "countedTokens": {"original": stats.counted_before, "compacted": stats.counted_after},
        "compactedMessageCount": stats.compacted_message_count,
        "retainedMessageCount": stats.retained_message_count,
        "restoredFileCount": stats.restored_file_count,
        "restoredTokenCount": stats.restored_token_count,
        "summarizer": stats.summarizer,
        "attempts": stats.attempts,
        "retries": max(0, stats.attempts - 1) if stats.attempts else 0,
        "archivePath": stats.archive_path,
        "threshold": stats.threshold,
        "stillOverThreshold": stats.still_over_threshold,
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
            "lastRequest": r.last_request,
            "missingPaths": list(r.missing_paths),
            "missingErrors": list(r.missing_errors),
        }
    return out


def file_stats_json(done: FileCompaction) -> dict[str, Any] | list[dict[str, Any]]:
    """``compact --stats-json`` for one input: its conversation's stats, or a list of them
    when the file holds several conversations."""
    payload = [compact_stats_json(s) for s in done.stats]
    return payload[0] if len(payload) == 1 else payload


def file_report_json(done: FileCompaction, *, output: str | None) -> dict[str, Any]:
    """``compact --report`` for one input (no batch): the report of a one-item batch."""
    row = {
        "input": done.input,
        "status": done.status,
        "output": output,
        "stats": [compact_stats_json(s) for s in done.stats],
    }
    return {"inputs": [row], "compacted": int(done.status == "compacted"), "failed": 0}


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
    return out


# --- restore-files ----------------------------------------------------------------------------


def restore_files_stats_json(result: RestoreResult) -> dict[str, Any]:
    """``restore-files --stats-json``: what was restored, and what was skipped and why."""
    return {
        "restoredFileCount": len(result.files),
        "restoredTokenCount": result.tokens,
        "files": [{"path": f.path, "resolved": str(f.resolved), "tokens": f.tokens} for f in result.files],
        "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
    }


# --- offload ----------------------------------------------------------------------------------


def offload_stats_json(label: str, results: Sequence[OffloadResult]) -> dict[str, Any]:
    """``offload --stats-json`` under the seed's names, summed over conversations."""
    return {
        "input": label,
        "offloadedCount": sum(r.offloaded_count for r in results),
        "freedChars": sum(r.freed_chars for r in results),
        "files": [f for r in results for f in r.files],
        "tokensFreed": sum(r.tokens_freed or 0 for r in results),
        "reusedFiles": sum(1 for r in results for e in r.entries if e.reused),
        "outDir": results[0].out_dir if results else "",
    }


def undo_stats_json(label: str, results: Sequence[UndoResult]) -> dict[str, Any]:
    """``offload --undo --stats-json``: what was put back, summed over conversations."""
    return {
        "input": label,
        "restoredCount": sum(r.restored_count for r in results),
        "restoredChars": sum(r.restored_chars for r in results),
        "files": [f for r in results for f in r.files],
        "outDir": results[0].out_dir if results else "",
    }


def orphan_cleanup_stats_json(result: OrphanCleanup) -> dict[str, Any]:
    """``offload --clean-orphans --stats-json``: the files removed, and how many are still named."""
    return {
        "outDir": result.out_dir,
        "removedCount": len(result.removed),
        "removed": list(result.removed),
        "referencedCount": result.referenced,
    }


def recorded_text(recorded: RecordedUsage) -> str:
    """One line on the usage an agent recorded: ``count`` and ``check`` show it."""
    last = recorded.last
    window = f" of a {recorded.context_window:,}-token window" if recorded.context_window else ""
    return (
        f"recorded by the agent (line {recorded.line + 1}): {recorded.context_tokens:,} tokens in context"
        f"{window} — last call {last.input_tokens:,} input ({last.cached_input_tokens:,} cached)"
        f" + {last.output_tokens:,} output"
    )


def _recorded_json(result: CheckResult) -> dict[str, Any]:
    """``check --json``'s account of a decision made from the agent's recorded usage."""
    if result.recorded is None:
        return {}
    return {"counted_tokens": result.report.total, "recorded_usage": result.recorded.to_dict()}


# --- sessions --------------------------------------------------------------------------------


def sessions_to_json(rows: Sequence[SessionInfo]) -> list[dict[str, Any]]:
    """``sessions --json``: one object per session, most recent first (``.[].path`` feeds
    ``compact --from -``); ``cost`` is an estimate (:func:`cost_json`)."""
    from ctxcompact.accounting.prices import price_source

    source = price_source()
    return [
        {
            "path": r.path,
            "agent": r.agent,
            "project": r.project,
            "session_id": r.session_id,
            "last_activity": r.last_activity,
            "model": r.model,
            "tokens": r.tokens,
            "source": r.source,
            "compactions": r.compactions,
            "threshold": r.threshold,
            "over_threshold": r.over_threshold,
            "window_known": r.window_known,
            "cost": cost_json(r.cost, source) if r.cost is not None else None,
            "error": r.error,
        }
        for r in rows
    ]


# --- eval ------------------------------------------------------------------------------------


def eval_json(result: EvalResult, *, show_lost: int = 0) -> dict[str, Any]:
    """``eval --json``: the per-strategy summary, then every run; ``show_lost`` lost probes each."""
    from ctxcompact.evaluation.probes import CATEGORIES, PROBE_KINDS  # not on the count/check start-up path

    return {
        "strategies": [_summary_dict(s, show_lost) for s in result.summaries()],
        "runs": [_run_dict(r, show_lost) for r in result.runs],
        "probeKinds": list(PROBE_KINDS),
        "categories": {name: list(kinds) for name, kinds in CATEGORIES.items()},
    }


def _scores(report: ProbeReport | None) -> dict[str, Any]:
    from ctxcompact.evaluation.probes import CATEGORIES

    if report is None:
        return {}
    return {
        "score": _round(report.mean),
        "overall": _round(report.overall),
        "kept": report.kept,
        "total": report.total,
        "byCategory": {
            c.kind: {"kept": c.kept, "total": c.total, "score": _round(c.score)}
            for c in (report.category(name) for name in CATEGORIES)
        },
        "byKind": {
            k.kind: {"kept": k.kept, "total": k.total, "score": _round(k.score)} for k in report.kinds
        },
    }


def _lost(probes: Sequence[Probe], limit: int) -> list[dict[str, str]]:
    return [{"kind": p.kind, "text": p.text} for p in probes[:limit]]


def _summary_dict(s: StrategySummary, show_lost: int) -> dict[str, Any]:
    return {
        "strategy": s.strategy,
        "runs": s.runs,
        "skipped": s.skipped,
        "tokensBefore": s.tokens_before,
        "tokensAfter": s.tokens_after,
        "ratio": _round(s.ratio),
        "seconds": round(s.seconds, 3),
        "score": _round(s.score),
        "fitting": s.fitting,
        "budgeted": s.budgeted,
        "retention": _scores(s.report),
        "lost": _lost(s.report.lost, show_lost),
    }


def _run_dict(r: StrategyRun, show_lost: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input": r.source,
        "strategy": r.strategy,
        "tokensBefore": r.tokens_before,
        "tokensAfter": r.tokens_after,
        "ratio": _round(r.ratio),
        "seconds": round(r.seconds, 3),
        "threshold": r.threshold,
        "fits": r.fits,
        "retention": _scores(r.report),
        "lost": _lost(r.report.lost, show_lost) if r.report else [],
    }
    if r.skipped:
        out["skipped"] = r.skipped
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# --- config ----------------------------------------------------------------------------------


def config_json(rows: Sequence[EffectiveSetting], *, file: Path | None) -> dict[str, Any]:
    """``config --json`` (and what ``config`` renders): the file found, then every setting."""
    return {
        "file": str(file) if file else None,
        "settings": [
            {"key": r.key, "value": _plain(r.value), "source": r.source, "commands": list(r.commands)}
            for r in rows
        ],
    }


def _plain(value: Any) -> Any:
    """A value as JSON holds it (paths and enums as text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


# --- count --timeline, models ----------------------------------------------------------------


def timeline_json(timelines: Sequence[Timeline]) -> dict[str, Any]:
    """``count --timeline --json``: per session every main-thread call (context, tokens by
    kind), the subagent calls apart, the compactions with the context before and after, and
    the estimated cost with its source."""
    return {"timelines": [_timeline_json(t) for t in timelines]}


def _timeline_json(t: Timeline) -> dict[str, Any]:
    history = t.history
    return {
        "label": t.label,
        "agent": history.agent,
        "model": history.model,
        "context_window": t.window,
        "threshold": t.threshold,
        "calls": [_call_json(c) for c in history.main],
        "subagent_calls": [_call_json(c) for c in history.calls if c.sidechain],
        "compactions": [
            {
                "line": p.line,
                "timestamp": p.timestamp,
                "trigger": p.trigger,
                "after_call": p.calls_before,
                "tokens_before": p.pre_tokens,
                "tokens_after": after,
            }
            for p, after in history.drops()
        ],
        "cost": cost_json(t.cost, t.cost_source),
    }


def _call_json(call: Call) -> dict[str, Any]:
    u = call.tokens
    return {
        "line": call.line,
        "timestamp": call.timestamp,
        "model": call.model,
        "context": call.context,
        "input_tokens": u.input,
        "cache_write_tokens": u.cache_write,
        "cache_read_tokens": u.cache_read,
        "output_tokens": u.output,
    }


def cost_json(cost: Cost | None, source: str) -> dict[str, Any] | None:
    """An estimated cost: USD at list prices, the calls it covers, and where prices came from."""
    if cost is None:
        return None
    return {
        "usd": round(cost.dollars, 6),
        "estimate": True,
        "priced_calls": cost.priced_calls,
        "unpriced_calls": cost.unpriced_calls,
        "priced_as": list(cost.priced_as),
        "source": source,
        "prices_at": "each call's date",
    }


def models_json(rows: Sequence[KnownModel], *, source: str) -> dict[str, Any]:
    """``models --json``: each known model's window and its source, and its list prices (USD
    per million tokens) with the table they come from."""
    return {
        "price_source": source,
        "models": [
            {
                "model": r.model,
                "context_window": r.context_window,
                "window_source": r.window_source,
                "price": None
                if r.price is None
                else {
                    "priced_as": r.price.priced_as,
                    "provider": r.price.provider,
                    "input_per_mtok": r.price.input,
                    "output_per_mtok": r.price.output,
                    "cache_read_per_mtok": r.price.cache_read,
                    "cache_write_per_mtok": r.price.cache_write,
                    "tiered": r.price.tiered,
                    "at": r.price.at.isoformat(),
                },
            }
            for r in rows
        ],
    }
