"""The JSON of the commands that read and report: ``count`` (and ``--timeline``), ``check``,
``sessions``, ``models``, ``config``. Plain data, built from result objects (which carry no
serialization of their own)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxcompact.accounting.check import CheckResult
from ctxcompact.accounting.context_size import ContextSize, SideEntries
from ctxcompact.accounting.tokens import TokenReport
from ctxcompact.accounting.windows import Budget, ModelInfo
from ctxcompact.output.json.document import document
from ctxcompact.transcripts.dialects.rollout_usage import RolloutUsage
from ctxcompact.transcripts.recorded_usage import RecordedUsage

if TYPE_CHECKING:
    from ctxcompact.accounting.breakdown import Breakdown
    from ctxcompact.accounting.history import Call
    from ctxcompact.accounting.models_table import KnownModel
    from ctxcompact.accounting.prices import Cost
    from ctxcompact.accounting.sessions import SessionInfo
    from ctxcompact.config import EffectiveSetting
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
    recorded: RolloutUsage | None = None
    #: The real context by category (``count``'s picture).
    breakdown: Breakdown | None = None


# --- count -----------------------------------------------------------------------------------


def count_to_json(rows: Sequence[CountRow], *, top: int) -> dict[str, Any]:
    """``count --json``: the total, then each conversation counted."""
    return document(
        {
            "total": sum(r.report.total for r in rows),
            "transcripts": [_count_row_json(r, top=top) for r in rows],
        }
    )


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
        out["recorded_usage"] = rollout_usage_json(row.recorded)
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


def rollout_usage_json(usage: RolloutUsage) -> dict[str, Any]:
    """The usage a Codex rollout recorded (its last ``token_count`` event), as ``count`` and
    ``check`` print it."""
    return {
        "context_tokens": usage.context_tokens,
        "input_tokens": usage.last.input_tokens,
        "cached_input_tokens": usage.last.cached_input_tokens,
        "output_tokens": usage.last.output_tokens,
        "reasoning_output_tokens": usage.last.reasoning_output_tokens,
        "session_total_tokens": usage.total.total_tokens if usage.total else None,
        "model_context_window": usage.context_window,
        "line": usage.line + 1,
    }


def recorded_usage_json(usage: RecordedUsage) -> dict[str, Any]:
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
    return document(
        {
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
    )


def _recorded_json(result: CheckResult) -> dict[str, Any]:
    """``check --json``'s account of a decision made from the agent's recorded usage."""
    if result.recorded is None:
        return {}
    return {"counted_tokens": result.report.total, "recorded_usage": rollout_usage_json(result.recorded)}


# --- sessions --------------------------------------------------------------------------------


def sessions_to_json(rows: Sequence[SessionInfo]) -> dict[str, Any]:
    """``sessions --json``: one object per session, most recent first (``.sessions[].path``
    feeds ``compact --from -``); ``cost`` is an estimate (:func:`cost_json`)."""
    from ctxcompact.accounting.prices import price_source

    source = price_source()
    sessions = [
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
    return document({"sessions": sessions})


# --- config ----------------------------------------------------------------------------------


def config_json(rows: Sequence[EffectiveSetting], *, file: Path | None) -> dict[str, Any]:
    """``config --json`` (and what ``config`` renders): the file found, then every setting."""
    return document(
        {
            "file": str(file) if file else None,
            "settings": [
                {"key": r.key, "value": _plain(r.value), "source": r.source, "commands": list(r.commands)}
                for r in rows
            ],
        }
    )


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
    return document({"timelines": [_timeline_json(t) for t in timelines]})


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
    return document(
        {
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
    )
