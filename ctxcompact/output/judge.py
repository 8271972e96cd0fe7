"""The judge's scores in ``eval``'s reports: extra table columns (mean 0–5 score overall and
per question kind), a ``judge`` object per strategy and per run in ``--json``, and a section
of the HTML page with every question, answer and score. Without a judge nothing here runs, so
the reports stay as they were."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from html import escape

from ctxcompact.evaluation.judge import QUESTION_KINDS
from ctxcompact.evaluation.judge.result import JudgeResult, JudgeScores
from ctxcompact.evaluation.run import EvalResult
from ctxcompact.output.eval_table import best_cells
from ctxcompact.output.table import Column, Table

JUDGE_HEADERS = ("judge", *(f"j.{k}" for k in QUESTION_KINDS))


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _values(scores: JudgeScores) -> list[float | None]:
    return [scores.overall, *(scores.kind(k) for k in QUESTION_KINDS)]


def judge_table(table: Table, result: EvalResult, judge: JudgeResult) -> Table:
    """``table`` (one row per strategy, in ``result.strategies`` order) with the judge's
    columns appended, their best values marked."""
    per_row = [_values(judge.strategy(name)) for name in result.strategies]
    rows = tuple((*row, *(_cell(v) for v in values)) for row, values in zip(table.rows, per_row, strict=True))
    offset = len(table.headers)
    best = {(r, c + offset) for r, c in best_cells(per_row)}
    columns = (*table.columns, *(Column(h, drop=4) for h in JUDGE_HEADERS))
    return replace(table, columns=columns, rows=rows, best=table.best | frozenset(best))


def judge_html(judge: JudgeResult, strategies: Sequence[str]) -> str:
    """A section of the HTML page: per strategy, each run's questions, answers and scores."""
    parts = [f"<h2>LLM judge ({escape(judge.model)}): answers from the compacted context, scored 0–5</h2>"]
    for name in strategies:
        runs = [r for r in judge.runs if r.strategy == name]
        if not runs:
            continue
        parts.append(f"<h3>{escape(name)} — mean {_cell(judge.strategy(name).overall)}</h3><ul>")
        parts.extend(
            f"<li>[{escape(r.source)}] <b>{escape(q.kind)}</b> {escape(q.question)} → "
            f"{escape(q.answer or '(no answer)')} <b>{q.score if q.score is not None else '—'}</b></li>"
            for r in runs
            for q in r.questions
        )
        parts.append("</ul>")
    return "".join(parts)


def judge_notes(judge: JudgeResult) -> list[str]:
    """One line per run whose scores are missing, for stderr."""
    return [f"{r.source}: {r.strategy}: judge: {r.note}" for r in judge.runs if r.note]
