"""The judge's results: each question's answer and score per run, and the means the reports
show (per strategy, overall and per question kind, over the scores that exist)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxcompact.evaluation.judge import QUESTION_KINDS


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """One probe question, the answer from the compacted context, the judge's 0–5 score (None:
    missing — the request failed or its reply could not be read)."""

    kind: str
    question: str
    answer: str | None
    score: int | None


@dataclass(frozen=True, slots=True)
class JudgeScores:
    """Means of 0–5 scores, overall and per kind (None where nothing was scored)."""

    overall: float | None
    by_kind: tuple[tuple[str, float | None], ...]
    scored: int
    missing: int

    def kind(self, kind: str) -> float | None:
        return dict(self.by_kind).get(kind)


def judge_scores(scores: Sequence[QuestionScore]) -> JudgeScores:
    def mean(values: Sequence[int]) -> float | None:
        return sum(values) / len(values) if values else None

    present = [s for s in scores if s.score is not None]
    return JudgeScores(
        mean([s.score for s in present if s.score is not None]),
        tuple(
            (k, mean([s.score for s in present if s.kind == k and s.score is not None]))
            for k in QUESTION_KINDS
        ),
        len(present),
        len(scores) - len(present),
    )


@dataclass(frozen=True, slots=True)
class RunJudgement:
    """The judge on one strategy run. ``note``: why its scores are missing, if they are."""

    source: str
    strategy: str
    questions: tuple[QuestionScore, ...]
    note: str = ""

    @property
    def scores(self) -> JudgeScores:
        return judge_scores(self.questions)


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """The judge's model and its judgement of every run."""

    model: str
    runs: tuple[RunJudgement, ...]

    def run(self, source: str, strategy: str) -> RunJudgement | None:
        return next((r for r in self.runs if r.source == source and r.strategy == strategy), None)

    def strategy(self, strategy: str) -> JudgeScores:
        """Every question of every run of ``strategy`` together (each question weighs the same)."""
        return judge_scores([q for r in self.runs if r.strategy == strategy for q in r.questions])
