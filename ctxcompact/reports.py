"""The JSON shapes of ``count --json`` and ``check --json``: plain data, no rich.

Kept apart from :mod:`ctxcompact.render` so that a ``--json`` run never imports a terminal
library it does not use (start-up time is most of a ``count``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.models import Budget, ModelInfo
from ctxcompact.tokens import TokenReport
from ctxcompact.usage import CheckResult


@dataclass(frozen=True, slots=True)
class CountRow:
    """One conversation's count, with where it came from."""

    label: str
    dialect: str
    report: TokenReport
    model: ModelInfo | None = None


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
    return out


def check_to_json(results: Sequence[CheckResult], budget: Budget) -> dict[str, Any]:
    return {
        "model": budget.model.model,
        "model_known": budget.model.known,
        "model_match": budget.model.match,
        "context_window": budget.model.context_window,
        "output_reserve": budget.output_reserve,
        "ratio": budget.ratio,
        "strategy": budget.label,
        "threshold": budget.threshold,
        "needs_compaction": any(r.needs_compaction for r in results),
        "valid": not any(r.errors for r in results),
        "transcripts": [
            {
                "label": r.label,
                "tokens": r.report.total,
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
            }
            for r in results
        ],
    }
