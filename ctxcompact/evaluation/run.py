"""``eval``: run strategies on transcripts and measure what each costs and what each keeps.

For every conversation and strategy: tokens before and after, the ratio, the wall time, and
the retention of the probes (:mod:`ctxcompact.evaluation.probes`) scored against the whole
compacted context. The probes are read once per conversation, from all of it (its leading
system messages aside): every strategy answers the same questions, as it would for a judge,
and one that changed nothing keeps them all. Strategies run through the
compaction pipeline (:func:`ctxcompact.compaction.pipeline.compact_conversation`) as ``dry_run`` (no
archive is written), so every strategy in the table is evaluated the same way; ``offload``
runs through the offload core into a temporary directory that is removed afterwards.

Pure core: nothing printed, nothing written outside temporary directories, inputs untouched.
The default strategies (:func:`default_strategies`) are every registered one, ``offload``, and
``auto`` (what ``compact --auto`` does: nothing under the threshold, else its strategies);
the summary is ``extractive`` unless the caller names another summarizer, so an evaluation
needs no API key. A strategy that cannot run (a summarizer without its key) is reported as
skipped with the reason, not as a failure of the whole run.

*In parallel*: with ``jobs`` and without the runs' messages (``keep_context``), a
conversation's strategies are shared out over forked processes once it is read, counted and
probed (:func:`run_strategies`); the runs are the same, in the same order.

*The budget* (:class:`BudgetSpec`: ``--model``, ``--context-window``, ``--output-reserve``,
``--threshold``, ``--models-file``, as ``compact`` takes them) is worked out per conversation
as ``compact`` does, and every strategy runs with it, so a row is what ``compact -w N
--strategy X`` writes; ``auto`` always has one (the transcript's own model's when none is
given). Without budget options the other strategies run as plain ``compact --strategy X``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ctxcompact.accounting.check import BudgetSpec, conversation_model, measure, measure_total
from ctxcompact.accounting.context_size import context_size
from ctxcompact.accounting.counters import shared_cache
from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.shared_runs import SharedRuns, shared_runs
from ctxcompact.compaction.strategies import AUTO_STRATEGIES, STRATEGY_NAMES
from ctxcompact.compaction.summarize.facts import shared_facts
from ctxcompact.errors import CtxcompactError, UsageError
from ctxcompact.evaluation.probes import (
    PROBE_KINDS,
    KindScore,
    Probe,
    ProbeReport,
    ProbeSet,
    extract_probes,
)
from ctxcompact.ir import Message, remembered_passes, tool_pairs, turn_starts
from ctxcompact.transcripts.io import Conversation, Transcript

OFFLOAD = "offload"
AUTO = "auto"
DEFAULT_CONVERSATIONS = 3


def default_strategies() -> tuple[str, ...]:
    """Every strategy of the table, then ``offload`` and ``auto``."""
    return (*STRATEGY_NAMES, OFFLOAD, AUTO)


def check_eval_strategies(names: Sequence[str]) -> tuple[str, ...]:
    known = default_strategies()
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise UsageError(
            f"unknown strategy {', '.join(unknown) or '(none)'}; eval knows {', '.join(known)} (comma-separated)."
        )
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class StrategyRun:
    """One strategy on one conversation. ``skipped``: why it could not run (then no figures)."""

    source: str
    strategy: str
    tokens_before: int = 0
    tokens_after: int = 0
    seconds: float = 0.0
    report: ProbeReport | None = None
    skipped: str = ""
    #: The budget's threshold the run had (None: no budget).
    threshold: int | None = None
    #: The conversation's messages, the compacted context, and the messages it replaced (for
    #: the LLM judge, :mod:`ctxcompact.evaluation.judge`); references to the run's own objects.
    original: Sequence[Message] = field(default=(), repr=False, compare=False)
    messages: Sequence[Message] = field(default=(), repr=False, compare=False)
    replaced: Sequence[Message] = field(default=(), repr=False, compare=False)

    @property
    def ratio(self) -> float | None:
        return self.tokens_after / self.tokens_before if self.tokens_before and not self.skipped else None

    @property
    def fits(self) -> bool | None:
        """Whether the result is under the threshold (None without a budget or figures)."""
        if self.threshold is None or self.skipped:
            return None
        return self.tokens_after < self.threshold


@dataclass(frozen=True, slots=True)
class StrategySummary:
    """A strategy over every conversation evaluated: sums, so big transcripts weigh more."""

    strategy: str
    runs: int
    skipped: int
    tokens_before: int
    tokens_after: int
    seconds: float
    report: ProbeReport
    #: Runs whose result is under their threshold, and runs that had one.
    fitting: int = 0
    budgeted: int = 0
    #: The mean of the runs' :attr:`ProbeReport.mean` (each conversation weighs the same).
    score: float | None = None

    @property
    def ratio(self) -> float | None:
        return self.tokens_after / self.tokens_before if self.tokens_before else None


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Every run of ``eval``: the strategies in order and each strategy's run on each input."""

    strategies: tuple[str, ...]
    runs: tuple[StrategyRun, ...]

    def summaries(self) -> tuple[StrategySummary, ...]:
        return tuple(
            _summarize(name, [r for r in self.runs if r.strategy == name]) for name in self.strategies
        )


def evaluate_transcripts(
    transcripts: Sequence[Transcript],
    *,
    strategies: Sequence[str] | None = None,
    summarizer: str = "extractive",
    work_dir: Path | None = None,
    max_conversations: int = DEFAULT_CONVERSATIONS,
    budget: BudgetSpec | None = None,
    target_tokens: int | None = None,
    target_ratio: float | None = None,
    counter: TokenCounter | None = None,
    clock: Callable[[], float] = time.perf_counter,
    deadline_at: float | None = None,
    jobs: int = 1,
    keep_context: bool = True,
) -> EvalResult:
    """Every strategy on the first ``max_conversations`` conversations of each transcript.

    ``work_dir``: where ``full`` restores files from (default: an empty temporary directory,
    so nothing of the local disk leaks into a score). ``budget``: see the module docstring;
    ``target_tokens`` / ``target_ratio``: the size a run with a budget aims at, as ``compact``'s
    options of those names. ``keep_context``: each run keeps the conversation's messages, its
    compacted context and the messages it replaced (``eval --judge`` reads them), else the
    figures only. ``jobs``: the processes a conversation's strategies may run in, at most one
    per core this process may use (:func:`run_strategies`; without ``keep_context`` only).
    """
    names = check_eval_strategies(strategies or default_strategies())
    runs: list[StrategyRun] = []
    with tempfile.TemporaryDirectory(prefix="ctxcompact-eval-") as scratch:
        root = work_dir or Path(scratch)
        for transcript in transcripts:
            convs = transcript.conversations[:max_conversations]
            for i, conv in enumerate(convs):
                source = transcript.name if len(convs) == 1 else f"{transcript.name}#{i}"
                # The facts of each part the probes and the strategies summarize, read once; a
                # strategy run on the same input again (auto above its threshold: hybrid), run
                # once; the passes over the conversation's list (tool blocks, pins), made once.
                with shared_facts(), shared_runs(clock) as memo, remembered_passes(conv.messages):
                    probes = ProbeSet(conversation_probes(conv))  # read once, for every strategy
                    # One cache for the conversation's strategies: each block is encoded once.
                    shared = shared_cache(counter)
                    _read_for_all(conv, shared)

                    run = partial(
                        evaluate_strategy,
                        conv,
                        source=source,
                        summarizer=summarizer,
                        work_dir=root,
                        budget=budget,
                        target_tokens=target_tokens,
                        target_ratio=target_ratio,
                        counter=shared,
                        clock=clock,
                        deadline_at=deadline_at,
                        probes=probes,
                        memo=memo,
                    )
                    if keep_context:
                        runs += run_strategies(names, run, jobs=1)
                    else:
                        runs += run_strategies(names, partial(_figures_only, run), jobs=jobs)
    return EvalResult(names, tuple(runs))


#: The strategies by their cost in ``eval``, costliest first (measured on the bench's
#: generated sessions): :func:`run_strategies` starts them in this order, so no process is
#: left with a long one at the end. A wrong order costs wall time, never a different result.
COSTLIEST_FIRST = ("hybrid", AUTO, "prune", OFFLOAD, "key-messages", "full", "clean-tools", "selective")


def run_strategies(
    names: Sequence[str], run: Callable[[str], StrategyRun], *, jobs: int
) -> list[StrategyRun]:
    """``[run(name) for name in names]``, in up to ``jobs`` processes where this process may
    use that many cores (:func:`ctxcompact.batch.workers.share_out`: forked after the
    conversation was read, counted and probed, so none of that is done again). ``auto`` runs
    in the same process as the strategies it runs (:data:`AUTO_STRATEGIES`), after them: the
    summary's facts of the part they both summarize are read once. The results are the same,
    in the same order, whatever ``jobs`` is (their ``seconds`` aside)."""
    from ctxcompact.batch.workers import default_jobs, share_out

    partners = [n for n in names if n in AUTO_STRATEGIES] if AUTO in names else []
    units = [[n] for n in names if n not in partners and n != AUTO]
    if AUTO in names:
        units.append([*partners, AUTO])
    rank = {name: i for i, name in enumerate(COSTLIEST_FIRST)}
    units.sort(key=lambda u: min(rank.get(n, len(rank)) for n in u))
    processes = min(jobs, default_jobs())
    if processes > 1:
        _load_strategies(names)
    done = share_out(units, lambda unit: [run(n) for n in unit], processes=processes)
    by_name = {r.strategy: r for batch in done for r in batch}
    return [by_name[n] for n in names]


def _load_strategies(names: Sequence[str]) -> None:
    """Import the code of the strategies ``names`` before the processes fork: each process
    would import the modules of its own strategies, and those several share (the masking,
    the previews) twice."""
    from ctxcompact.compaction.strategies import STRATEGIES, LazyRun

    for name in {*names, *(AUTO_STRATEGIES if AUTO in names else ())} - {AUTO}:
        if name == OFFLOAD:
            import ctxcompact.offload.tool_results  # noqa: F401 (loaded for the processes)
        elif isinstance(run := STRATEGIES[name].run, LazyRun):
            run.load()


def evaluate_strategy(
    conversation: Conversation,
    strategy: str,
    *,
    source: str,
    summarizer: str = "extractive",
    work_dir: Path,
    budget: BudgetSpec | None = None,
    target_tokens: int | None = None,
    target_ratio: float | None = None,
    counter: TokenCounter,
    clock: Callable[[], float] = time.perf_counter,
    deadline_at: float | None = None,
    probes: ProbeSet | None = None,
    memo: SharedRuns | None = None,
) -> StrategyRun:
    """One strategy on one conversation (see the module docstring); ``probes``: the
    conversation's (:func:`conversation_probes`, made a :class:`ProbeSet` that every strategy
    of the conversation scores with), read here when not given. ``memo``: the conversation's
    :func:`~ctxcompact.compaction.pipeline.shared_runs`; a run it serves is charged the seconds
    the run it reuses took, so ``seconds`` is what the strategy costs, not what it adds."""
    start = clock()
    reused = memo.reused_seconds if memo is not None else 0.0
    budget = budget or BudgetSpec()
    limits = budget.resolve(conversation)[0] if budget.given or strategy == AUTO else None
    threshold = limits.threshold if limits is not None else None
    try:
        if strategy == OFFLOAD:
            before, after, messages = _offload(conversation, counter)
        else:
            auto = strategy == AUTO
            options = CompactOptions.from_keywords(
                strategies=AUTO_STRATEGIES if auto else (strategy,),
                work_dir=work_dir,
                summarizer=summarizer,
                deadline_at=deadline_at,
                target_tokens=target_tokens,
                target_ratio=target_ratio,
                check_retention=False,  # eval scores the result with its own probes
            )
            result = compact_conversation(
                conversation, options=options, budget=limits, auto=auto, dry_run=True, counter=counter
            )
            before, after = result.stats.original_tokens, result.stats.compacted_tokens
            messages = result.conversation.messages
    except CtxcompactError as exc:
        return StrategyRun(source, strategy, skipped=str(exc), threshold=threshold)
    seconds = clock() - start + (memo.reused_seconds - reused if memo is not None else 0.0)
    kept = {id(m) for m in messages}
    replaced = [m for m in conversation.messages if id(m) not in kept]
    if probes is None:
        probes = ProbeSet(conversation_probes(conversation))
    report = probes.score(messages)  # the files restored in them count
    return StrategyRun(
        source,
        strategy,
        before,
        after,
        seconds,
        report,
        threshold=threshold,
        original=conversation.messages,
        messages=tuple(messages),
        replaced=tuple(replaced),
    )


def conversation_probes(conversation: Conversation) -> tuple[Probe, ...]:
    """The probes of a conversation: read from every message after its leading system ones."""
    messages = conversation.messages
    head = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    return extract_probes(messages[head:])


def _read_for_all(conversation: Conversation, counter: TokenCounter) -> None:
    """What every strategy reads of ``conversation``, read now: before the clock (no strategy
    is charged for it) and before :func:`run_strategies` forks (no process reads it again).
    Its count (the report every compaction starts from; each message's total is kept by the
    shared cache for the results' counts) and the passes over its list (tool pairs and
    blocks, turns)."""
    measure(conversation, counter, breakdown=False)
    tool_pairs(conversation.messages)
    turn_starts(conversation.messages)


def _figures_only(run: Callable[[str], StrategyRun], name: str) -> StrategyRun:
    """``run(name)`` without its messages (nothing but the figures travels between processes)."""
    return replace(run(name), original=(), messages=(), replaced=())


def _offload(conversation: Conversation, counter: TokenCounter) -> tuple[int, int, Sequence[Message]]:
    """``offload`` measured as the compaction pipeline measures a strategy: the context size
    before, and the same size of the rewrite (:meth:`ContextSize.resized`); no file written
    (what it leaves in the context is all a score reads)."""
    from ctxcompact.offload.tool_results import offload_tool_results

    size = context_size(
        conversation, measure(conversation, counter, breakdown=False), model=conversation_model(conversation)
    )
    result = offload_tool_results(conversation.messages, out_dir=OFFLOAD, files=False)
    after = size.resized(measure_total(conversation.with_messages(result.messages), counter))
    return size.tokens, after, result.messages


def _summarize(name: str, runs: Sequence[StrategyRun]) -> StrategySummary:
    done = [r for r in runs if not r.skipped]
    kinds = tuple(
        KindScore(
            kind,
            sum(k.kept for r in done if r.report for k in r.report.kinds if k.kind == kind),
            sum(k.total for r in done if r.report for k in r.report.kinds if k.kind == kind),
        )
        for kind in PROBE_KINDS
    )
    lost = tuple(p for r in done if r.report for p in r.report.lost)
    means = [m for r in done if r.report and (m := r.report.mean) is not None]
    return StrategySummary(
        name,
        len(done),
        len(runs) - len(done),
        sum(r.tokens_before for r in done),
        sum(r.tokens_after for r in done),
        sum(r.seconds for r in done),
        ProbeReport(kinds, lost),
        fitting=sum(1 for r in done if r.fits),
        budgeted=sum(1 for r in done if r.fits is not None),
        score=sum(means) / len(means) if means else None,
    )
