"""The JSON of ``eval``: the per-strategy summary and every run, and with ``--judge`` the
judge's scores in each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxcompact.output.json.document import document

if TYPE_CHECKING:
    from ctxcompact.evaluation.judge.result import JudgeResult, JudgeScores, RunJudgement
    from ctxcompact.evaluation.probes import Probe, ProbeReport
    from ctxcompact.evaluation.run import EvalResult, StrategyRun, StrategySummary


# --- eval ------------------------------------------------------------------------------------


def eval_json(result: EvalResult, *, show_lost: int = 0) -> dict[str, Any]:
    """``eval --json``: the per-strategy summary, then every run; ``show_lost`` lost probes each."""
    from ctxcompact.evaluation.probes import CATEGORIES, PROBE_KINDS  # not on the count/check start-up path

    return document(
        {
            "strategies": [_summary_dict(s, show_lost) for s in result.summaries()],
            "runs": [_run_dict(r, show_lost) for r in result.runs],
            "probe_kinds": list(PROBE_KINDS),
            "categories": {name: list(kinds) for name, kinds in CATEGORIES.items()},
        }
    )


def _scores(report: ProbeReport | None) -> dict[str, Any]:
    from ctxcompact.evaluation.probes import CATEGORIES

    if report is None:
        return {}
    return {
        "score": _round(report.mean),
        "overall": _round(report.overall),
        "kept": report.kept,
        "total": report.total,
        "by_category": {
            c.kind: {"kept": c.kept, "total": c.total, "score": _round(c.score)}
            for c in (report.category(name) for name in CATEGORIES)
        },
        "by_kind": {
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
        "tokens_before": s.tokens_before,
        "tokens_after": s.tokens_after,
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
        "tokens_before": r.tokens_before,
        "tokens_after": r.tokens_after,
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


# --- --judge ---------------------------------------------------------------------------------


def _round3(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def scores_json(scores: JudgeScores) -> dict[str, Any]:
    return {
        "overall": _round3(scores.overall),
        "by_kind": {k: _round3(v) for k, v in scores.by_kind},
        "scored": scores.scored,
        "missing": scores.missing,
    }


def run_json(run: RunJudgement) -> dict[str, Any]:
    out = scores_json(run.scores)
    if run.note:
        out["note"] = run.note
    out["questions"] = [
        {"kind": q.kind, "question": q.question, "answer": q.answer, "score": q.score} for q in run.questions
    ]
    return out


def add_judge_json(data: dict[str, Any], judge: JudgeResult) -> dict[str, Any]:
    """``eval --json``'s ``data`` with a ``judge`` object in each strategy and each run (None
    for a run the judge had nothing to ask about) and the judge's model and kinds on top."""
    for entry in data["strategies"]:
        entry["judge"] = scores_json(judge.strategy(entry["strategy"]))
    for entry in data["runs"]:
        found = judge.run(entry["input"], entry["strategy"])
        entry["judge"] = run_json(found) if found is not None else None
    from ctxcompact.evaluation.judge import QUESTION_KINDS  # only with --judge

    data["judge"] = {"model": judge.model, "scale": [0, 5], "question_kinds": list(QUESTION_KINDS)}
    return data
