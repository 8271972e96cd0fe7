"""``eval`` over many transcripts: each file read and evaluated in a worker (``eval --jobs N``).

A worker reads its file itself (no transcript is pickled to it) and sends back only the
figures (:class:`~ctxcompact.evaluation.run.StrategyRun`), so the parent's memory stays flat however
many files there are — except for ``eval --judge`` (``keep_context``), whose requests are made
in the parent from every run's messages. Results are filed under each input's index, so the table, the JSON and
the lost probes keep input order whatever order the workers finish in: a run with ``--jobs 4``
reports what ``--jobs 1`` reports, wall times aside. A file that cannot be read is reported
with its error and the others are still evaluated, as :func:`ctxcompact.cli.common.load_all`
does for one process.

Pure core: nothing printed; the caller renders the progress events and the errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ctxcompact.accounting.check import BudgetSpec
from ctxcompact.errors import InputError
from ctxcompact.evaluation.run import (
    DEFAULT_CONVERSATIONS,
    EvalResult,
    StrategyRun,
    check_eval_strategies,
    evaluate_transcripts,
)
from ctxcompact.transcripts.fileio import DEFAULT_MAX_INPUT_BYTES


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """What every input is evaluated with (plain data: it travels to the workers)."""

    strategies: tuple[str, ...]
    summarizer: str = "extractive"
    work_dir: Path | None = None
    max_conversations: int = DEFAULT_CONVERSATIONS
    dialect: str | None = None
    max_bytes: int = DEFAULT_MAX_INPUT_BYTES
    #: Send back each run's messages too (``eval --judge`` needs them); else the figures only.
    keep_context: bool = False
    #: ``time.monotonic()`` after which a summarizer sends nothing (``--deadline``).
    deadline_at: float | None = None
    #: The budget every strategy runs with (``-m``, ``-w``, ``-t``… as ``compact`` takes them).
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    #: The size a run with a budget aims at (``--target-tokens`` / ``--target-ratio``).
    target_tokens: int | None = None
    target_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class InputOutcome:
    """One input evaluated: its runs, or ``error`` (why it could not be read)."""

    runs: tuple[StrategyRun, ...] = ()
    error: str = ""


@dataclass(frozen=True, slots=True)
class EvalBatch:
    """Every input's outcome, in input order; ``result`` holds the runs of those read."""

    result: EvalResult
    errors: tuple[str, ...] = field(default=())

    inputs: int = 0

    @property
    def failed(self) -> int:
        return len(self.errors)

    def fatal_error(self) -> InputError | None:
        """The command's error when no input could be read: the only input's own error, or
        a count of them (each was reported on its own first)."""
        if not self.errors or self.failed < self.inputs:
            return None
        if self.inputs == 1:
            return InputError(self.errors[0])
        return InputError(f"none of the {self.inputs} inputs could be read (see above).")


#: Called with the input's index when it is done (for a progress bar).
OnDone = Callable[[int, InputOutcome], None]


def evaluate_input(path: str | None, settings: EvalSettings, *, jobs: int = 1) -> InputOutcome:
    """Read one transcript (``None``: stdin) and evaluate every strategy on it, its
    strategies in up to ``jobs`` processes (:func:`~ctxcompact.evaluation.run.run_strategies`)."""
    from ctxcompact.transcripts.io import load_transcript

    try:
        transcript = load_transcript(path, dialect=settings.dialect, max_bytes=settings.max_bytes)
    except InputError as exc:
        return InputOutcome(error=str(exc))
    result = evaluate_transcripts(
        [transcript],
        strategies=settings.strategies,
        summarizer=settings.summarizer,
        work_dir=settings.work_dir,
        max_conversations=settings.max_conversations,
        deadline_at=settings.deadline_at,
        budget=settings.budget,
        target_tokens=settings.target_tokens,
        target_ratio=settings.target_ratio,
        jobs=jobs,
        keep_context=settings.keep_context,
    )
    return InputOutcome(runs=result.runs)


def _evaluate_task(task: tuple[str | None, EvalSettings]) -> InputOutcome:
    return evaluate_input(*task)


def evaluate_inputs(
    paths: Sequence[str | None],
    settings: EvalSettings,
    *,
    jobs: int = 1,
    on_done: OnDone | None = None,
) -> EvalBatch:
    """Every input evaluated, in ``jobs`` worker processes when there are several files
    (stdin is always read here); else each input's strategies share them out. Inputs that cannot be read are in ``errors`` (see
    :meth:`EvalBatch.fatal_error`); unknown strategies raise a usage error before any work."""
    settings = replace(settings, strategies=check_eval_strategies(settings.strategies))
    outcomes: dict[int, InputOutcome] = {}

    def done(index: int, outcome: InputOutcome) -> None:
        outcomes[index] = outcome
        if on_done is not None:
            on_done(index, outcome)

    if jobs > 1 and len(paths) > 1 and None not in paths:
        from ctxcompact.batch.workers import run_in_workers

        tasks = ((i, (p, settings)) for i, p in enumerate(paths))
        run_in_workers(
            tasks, _evaluate_task, jobs=min(jobs, len(paths)), on_start=lambda _: None, on_done=done
        )
    else:  # one input (or stdin): its strategies are what runs in parallel
        for i, path in enumerate(paths):
            done(i, evaluate_input(path, settings, jobs=jobs))
    ordered = [outcomes[i] for i in range(len(paths))]
    errors = tuple(o.error for o in ordered if o.error)
    runs = tuple(run for o in ordered for run in o.runs)
    return EvalBatch(EvalResult(settings.strategies, runs), errors, len(paths))
