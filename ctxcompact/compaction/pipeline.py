"""The compaction pipeline: one or more strategies, then the checks that make it safe.

``compact_conversation`` is what the CLI calls; ``compact_messages`` is the library's one
call. The passes its strategies share over one list (tool interaction blocks, pins) are
made once for the run (:func:`~ctxcompact.ir.remembered_passes`) and forgotten with it. Steps:

1. count the conversation (system prompt and tools included) and size it as ``check`` does
   (:func:`~ctxcompact.accounting.context_size.context_size`: recorded usage when the
   transcript has it) — the one measure the run decides by, aims at and reports;
2. with ``auto``, stop here when it is under the threshold: the output is the input;
3. run the strategies in order, each found by name in the table
   (:data:`ctxcompact.compaction.strategies.STRATEGIES`) and given its own options and one shared
   :class:`~ctxcompact.compaction.strategies.StrategyContext` (target budget, summarizer, counter...);
   ``("prune", "full")`` masks old tool output, then summarizes what is left — masking first
   makes the summary cheaper. The run's figures are the steps' typed counters;
4. validate the result: a rewrite that breaks an API invariant is a bug, never output;
5. count again and size the result by the same measure (the input's overhead outside the
   messages, our count of the messages now: :meth:`ContextSize.resized`), written on the
   records the rewrite made (:class:`~ctxcompact.transcripts.recorded_usage.SizeNote`) where
   the transcript records usage, so ``check`` reads the same figure; with ``auto``, a result
   that is not smaller is dropped (never emit a larger transcript); the stats always say
   plainly when the result is not smaller or still over;
6. archive the raw records of every message that was replaced or removed — unless
   ``dry_run``, or when written as a compaction point after the history (a session's summary
   compaction, ``append``: :mod:`ctxcompact.transcripts.points`) — before anything is emitted:
   if that fails, nothing is compacted (exit 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from time import monotonic
from typing import TYPE_CHECKING, Any, TypeVar

from ctxcompact.accounting.check import (
    BudgetSpec,
    MessagesLike,
    as_conversation,
    budget_for,
    conversation_model,
    measure,
    measure_total,
)
from ctxcompact.accounting.context_size import ContextSize, context_size, with_size_note
from ctxcompact.accounting.tokens import TokenCounter, TokenReport, cached, make_counter
from ctxcompact.accounting.windows import DEFAULT_RATIO, Budget
from ctxcompact.compaction.archive import write_archive
from ctxcompact.compaction.options import CompactOptions as CompactOptions  # re-exported
from ctxcompact.compaction.restore import FileReader, work_dir_for
from ctxcompact.compaction.shared_runs import served
from ctxcompact.compaction.strategies import (
    AUTO_STRATEGIES,
    TARGETED,
    StrategyContext,
    StrategyResult,
    strategy_name,
)
from ctxcompact.compaction.strategies.ladder import auto_recent_tokens, ladder_if_over
from ctxcompact.compaction.strategies.options import PruneOptions
from ctxcompact.compaction.strategies.pipeline import PipelineOptions, run_pipeline
from ctxcompact.compaction.summarize import Summarizer
from ctxcompact.errors import OptionError, WorkFailedError
from ctxcompact.ir import Message, remembered_passes, same_objects, text_of
from ctxcompact.names import SummarizerName
from ctxcompact.transcripts.io import Conversation, conversation_records
from ctxcompact.transcripts.points.append import point_layout
from ctxcompact.transcripts.validate import errors_only, validate_messages

if TYPE_CHECKING:
    from ctxcompact.compaction.retention import RetentionReport

T = TypeVar("T")
#: The options ``auto`` needs one of (named in its error).
NEEDS_BUDGET = ("auto", "model", "context_window")
D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class CompactStats:
    """What happened (token counts, restored files, plus what a user needs to trust the result).

    ``original_tokens`` and ``compacted_tokens`` are the context size ``check`` decides by
    (``size_sources``: recorded usage, rescaled, estimate or our count); ``counted_*`` our own
    count of the messages, system prompt and tools, for comparison.
    """

    strategy: str
    compacted: bool
    original_tokens: int
    compacted_tokens: int
    compacted_message_count: int = 0
    retained_message_count: int = 0
    restored_file_count: int = 0
    restored_token_count: int = 0
    summarizer: str | None = None
    attempts: int | None = None
    archive_path: str | None = None
    appended: bool = False  # written after the history as a compaction point
    retention: RetentionReport | None = None
    threshold: int | None = None
    reason: str = ""
    warnings: tuple[str, ...] = ()
    steps: tuple[Mapping[str, Any], ...] = ()
    #: Where the size before and after comes from (``check``'s sources: recorded, rescaled…).
    size_sources: tuple[str, str] = ("count", "count")
    counted_before: int | None = None
    counted_after: int | None = None

    @property
    def compaction_ratio(self) -> float:
        return self.compacted_tokens / self.original_tokens if self.original_tokens else 0.0

    @property
    def still_over_threshold(self) -> bool | None:
        return None if self.threshold is None else self.compacted_tokens >= self.threshold


@dataclass(frozen=True, slots=True)
class CompactResult:
    """The rewritten conversation and its stats. ``messages`` are raw records in the input's
    dialect (kept ones are the very objects read), ready to send or to write."""

    conversation: Conversation
    stats: CompactStats
    replaced: tuple[Message, ...] = field(default=())

    @property
    def messages(self) -> list[Any]:
        return conversation_records(self.conversation)

    @property
    def compacted(self) -> bool:
        return self.stats.compacted


@remembered_passes()
def compact_conversation(
    conversation: Conversation,
    *,
    options: CompactOptions | None = None,
    budget: Budget | None = None,
    auto: bool = False,
    dry_run: bool = False,
    summarizer: Summarizer | None = None,
    reader: FileReader | None = None,
    counter: TokenCounter | None = None,
    system_tokens: int | None = None,
) -> CompactResult:
    """Compact one conversation (see the module docstring for the steps).

    ``auto`` needs ``budget``; its threshold is the target every strategy is given. The
    strategies run from the table (:data:`ctxcompact.compaction.strategies.STRATEGIES`), each with its own
    options from ``options`` and one shared :class:`~ctxcompact.compaction.strategies.StrategyContext`.
    ``summarizer`` overrides the one ``options.full`` names (tests inject fakes; agent loops
    inject their own). ``auto`` decides as ``check`` does. Never mutates ``conversation``.
    """
    options, started = options or CompactOptions(), monotonic()
    # One cache for the run: the before and after figures and the strategies share it, so
    # each distinct block is encoded once.
    counter = cached(counter)
    if auto and budget is None:
        raise OptionError("{auto} needs a budget: give {model} or {context_window}.", *NEEDS_BUDGET)
    report = measure(conversation, counter, breakdown=False)
    budget, options = _targets(conversation, options, budget, auto=auto)
    model = budget.model.model if budget else conversation_model(conversation)
    size = context_size(conversation, report, model=model, system_tokens=system_tokens)
    before = size.tokens
    threshold = budget.threshold if budget else None
    label = ",".join(strategy_name(s) for s in options.strategies)
    unchanged = partial(_unchanged, conversation, label, size, threshold)
    if auto and (reason := _under_threshold(size, budget)) is not None:
        return unchanged(reason)
    aimed, why = _reachable(budget, size.resized(_fixed(report)), size, auto=auto)
    context = _context(
        conversation, options, aimed, size, report, summarizer=summarizer, reader=reader, counter=counter
    )
    # The strategies, unless an open shared_runs() holds this very run already (eval's auto).
    messages, result, steps, warnings = served(_run_with_ladder, conversation, options, context, summarizer)
    if why is not None:
        warnings.insert(0, why)
    if same_objects(messages, conversation.messages):
        _auto_must_fit(auto, threshold, before, warnings)
        return unchanged("no strategy changed anything", warnings, steps)

    layout = point_layout(conversation, messages, append=options.append)  # written as a point?
    messages = layout.messages if layout else messages
    _assert_valid(conversation, messages)
    rewritten = conversation.with_messages(messages)
    counted = measure_total(rewritten, counter)
    after = size.resized(counted)
    rewritten = with_size_note(rewritten, size, after)
    if layout:
        rewritten = layout.mark(rewritten, auto=auto, before=before, after=after, started=started)
    _auto_must_fit(auto, threshold, after, warnings)
    if counted >= report.total:
        warnings.append(f"the result is not smaller than the input ({after:,} ≥ {before:,} tokens)")
    if threshold is not None and after >= threshold:
        warnings.append(f"still over the threshold after compaction ({after:,} ≥ {threshold:,} tokens)")

    replaced, retention, archive_path = _check_and_archive(
        conversation, messages, options, dry_run=dry_run or layout is not None, warnings=warnings
    )
    stats = replace(
        _counters(result, messages, replaced, strategy=label, before=before, after=after),
        archive_path=archive_path,
        appended=layout is not None,
        retention=retention,
        threshold=threshold,
        reason="dry run: nothing written" if dry_run else "compacted",
        warnings=tuple(warnings),
        steps=tuple(steps),
        size_sources=(size.source, "rescaled" if rewritten.note is not None else size.source),
        counted_before=report.total,
        counted_after=counted,
    )
    return CompactResult(rewritten, stats, replaced)


def _fixed(report: TokenReport) -> int:
    """Our count of what no compaction of the messages changes (the system prompt, tools)."""
    return report.total - sum(m.tokens for m in report.messages)


def _reachable(
    budget: Budget | None, outside: int, size: ContextSize, *, auto: bool
) -> tuple[Budget | None, str | None]:
    """The budget the strategies aim at, and why it is not ``budget``. When the context outside
    the messages (``outside``, the real size's measure) alone is at or over the threshold, no
    rewrite of them can end under it: ``--auto`` writes nothing and says so (exit 3: its result
    must end under); otherwise the run aims at the window's usable room instead (a rewrite
    under it can still be sent), or, when that is too small as well, at nothing — each
    strategy runs as without a budget. A summary squeezed towards a target of zero would lose
    the task and still not fit."""
    if budget is None or outside < budget.threshold:
        return budget, None
    _auto_must_fit(auto, budget.threshold, outside, [_outside_messages(size, outside)])
    said = f"{_outside_messages(size, outside)} under the threshold ({budget.threshold:,})"
    if outside < budget.usable:
        aimed = replace(budget, threshold=budget.usable)
        return aimed, f"{said}; the strategies aimed at the window's usable room ({budget.usable:,}) instead"
    return (
        None,
        f"{said} nor in the window's usable room ({budget.usable:,}); the strategies ran without a target",
    )


def _outside_messages(size: ContextSize, outside: int) -> str:
    where = "as the recorded usage shows it" if size.source in ("recorded", "rescaled") else "as estimated"
    return (
        f"the context outside the messages (system prompt, tool definitions; {where}) alone counts "
        f"{outside:,} tokens: no compaction of the messages can fit"
    )


def _auto_must_fit(auto: bool, threshold: int | None, after: int, warnings: Sequence[str]) -> None:
    """``--auto`` ends under the threshold (so ``check`` then exits 0) or writes nothing and
    says why (exit 3): a transcript still over it would only be compacted again and again."""
    if not auto or threshold is None or after < threshold:
        return
    why = next(
        (w for w in reversed(warnings) if "ladder" in w or "outside the messages" in w),
        "no strategy could free enough",
    )
    raise WorkFailedError(
        f"--auto could not bring the context under the threshold ({after:,} ≥ {threshold:,} tokens): "
        f"{why}. Nothing was written. Raise --context-window or --threshold, unpin messages, or "
        "move bulky tool output to files first (ctxcompact offload)."
    )


def _check_and_archive(
    conversation: Conversation,
    messages: Sequence[Message],
    options: CompactOptions,
    *,
    dry_run: bool,
    warnings: list[str],
) -> tuple[tuple[Message, ...], RetentionReport | None, str | None]:
    """The messages a rewrite replaced, the retention check of what replaced them (unless the
    options say not to), and where their raw records were archived (before anything is
    emitted; not on a dry run)."""
    kept = {id(m) for m in messages}
    replaced = tuple(m for m in conversation.messages if id(m) not in kept)
    checked = None
    if replaced and options.check_retention:
        # its patterns cost ~3 ms to compile: not on an --auto run that changes nothing
        from ctxcompact.compaction.retention import check_retention

        replacement = "\n".join(
            text_of(m, include_tool_results=True) for m in messages if m.is_new or m.changed
        )
        checked = check_retention(replaced, replacement)
    if checked is not None and checked.last_request is False:
        warnings.append(
            "the retention check did not find the last user request in the result: read the summary"
        )
    archive_path = None
    if replaced and not dry_run:
        archive_path = str(
            write_archive(replaced, dialect=conversation.dialect, archive_dir=options.resolved_archive_dir)
        )
    return replaced, checked, archive_path


def _context(
    conversation: Conversation,
    options: CompactOptions,
    budget: Budget | None,
    size: ContextSize,
    report: TokenReport,
    *,
    summarizer: Summarizer | None,
    reader: FileReader | None,
    counter: TokenCounter,
) -> StrategyContext:
    """What every strategy of this run shares; the summarizer is made once, when first asked.
    The target (the run's aim: :meth:`CompactOptions.aim`, of the room the messages have above
    what no compaction changes — the system prompt and tools, ``report``, and the overhead the
    recorded usage shows) and the limit (the threshold) are in our count: the counts whose size
    (``size``'s measure) is under them."""
    work_dir = work_dir_for(
        conversation.dialect,
        conversation.records,
        options.work_dir,
        options.path_map,
        trust_session_cwd=options.trust_session_cwd,
    )
    fixed = _fixed(report)
    aim = options.aim(budget.threshold, fixed=size.resized(fixed)) if budget else None
    return StrategyContext(
        counter=counter,
        summarizer=(lambda: summarizer) if summarizer is not None else cache(options.full.make_summarizer),
        target_tokens=size.counted_for(aim) if aim is not None else None,
        limit_tokens=size.counted_for(budget.threshold) if budget else None,
        budget=budget,
        reader=reader,
        original=conversation.messages,
        dialect=conversation.dialect,
        work_dir=work_dir.path,
        configured=options.strategy_options,
        path_map=options.path_map,
        work_dir_note=work_dir.note,
        session_dir_refused=work_dir.refused,
        pins=options.pins,
        fixed_tokens=fixed,
        include_loop=options.options_for(PruneOptions).include_loop,
    )


def _under_threshold(size: ContextSize, budget: Budget | None) -> str | None:
    """Why ``--auto`` leaves the conversation alone, or None when it is due. Decided from the
    real context size (recorded usage when the transcript has it), as ``check`` does."""
    if budget is None or size.tokens >= budget.threshold:
        return None
    source = "" if size.source == "count" else f" by {size.source} size"
    return f"under the threshold ({size.tokens:,} < {budget.threshold:,} tokens{source}): nothing to do"


def _targets(
    conversation: Conversation, options: CompactOptions, budget: Budget | None, *, auto: bool
) -> tuple[Budget | None, CompactOptions]:
    """Strategies that aim at a target get the transcript model's budget when none was given;
    ``--auto`` keeps a recent tail after a summary unless ``--keep-recent-tokens`` says."""
    if budget is None and TARGETED.intersection(s for s in options.strategies if isinstance(s, str)):
        budget = budget_for(conversation)
    if auto and budget is not None and options.full.keep_recent_tokens is None:
        recent = auto_recent_tokens(budget.threshold)
        options = options.with_options(replace(options.full, keep_recent_tokens=recent))
    return budget, options


def _run_with_ladder(
    conversation: Conversation, options: CompactOptions, context: StrategyContext
) -> tuple[tuple[Message, ...], StrategyResult, list[dict[str, Any]], list[str]]:
    """The strategies (one pipeline of them), then the fallback ladder when the result is
    still over the target: the messages, the pipeline's result, the steps and the warnings
    (the conversation's own, read with it, first)."""
    result = run_pipeline(conversation.messages, PipelineOptions(options.strategies), context)
    messages = result.messages
    steps = [dict(s) for s in result.stats["steps"]]
    warnings = [*conversation.warnings, *result.warnings]
    messages, ladder, missed = ladder_if_over(
        messages, target_tokens=context.message_limit(), counter=context.counter, pins=options.pins
    )
    if ladder and ladder["pins_over_target"] and options.full.on_failure == "error":
        raise WorkFailedError(f"{ladder['reason']}: unpin some (--pin, --no-pin-first) or raise the budget.")
    steps += [ladder] if ladder else []
    warnings += [missed] if missed else []
    return messages, result, steps, warnings


def _unchanged(
    conversation: Conversation,
    label: str,
    size: ContextSize,
    threshold: int | None,
    reason: str,
    warnings: Sequence[str] = (),
    steps: Sequence[Mapping[str, Any]] = (),
) -> CompactResult:
    """The input passed through, and why."""
    stats = CompactStats(
        label,
        False,
        size.tokens,
        size.tokens,
        threshold=threshold,
        reason=reason,
        warnings=tuple(warnings),
        steps=tuple(steps),
        size_sources=(size.source, size.source),
        counted_before=size.counted,
        counted_after=size.counted,
    )
    return CompactResult(conversation, stats)


def _counters(
    result: StrategyResult,
    messages: Sequence[Message],
    replaced: Sequence[Message],
    *,
    strategy: str,
    before: int,
    after: int,
) -> CompactStats:
    """The run's figures: each the last one a step reported (the pipeline's result carries
    them), else derived from the messages."""
    untouched = len(messages) - sum(1 for m in messages if m.is_new or m.changed)
    return CompactStats(
        strategy=strategy,
        compacted=True,
        original_tokens=before,
        compacted_tokens=after,
        compacted_message_count=_or(result.compacted_message_count, len(replaced)),
        retained_message_count=_or(result.kept_loop_message_count, 0)
        + _or(result.retained_message_count, untouched),
        restored_file_count=_or(result.restored_file_count, 0),
        restored_token_count=_or(result.restored_token_count, 0),
        summarizer=result.summarizer,
        attempts=result.attempts,
    )


def _or(value: T | None, default: D) -> T | D:
    return default if value is None else value


def _assert_valid(original: Conversation, messages: Sequence[Message]) -> None:
    """A rewrite may not add API-invariant errors (ones the input already had are compared by
    code and tool id, which do not move with the messages): nothing is emitted and the run
    fails (exit 3) instead of writing a request ``check`` — and the API — would reject. A
    thinking-enabled request that the rewrite would end with an assistant turn is a limit of
    the API's rules, said as such; anything else is a bug in a strategy."""
    dialect, thinking = original.dialect, original.thinking
    found = errors_only(validate_messages(messages, dialect=dialect, thinking=thinking))
    if not found:  # the common case: the input's own errors need not be looked for
        return
    before = {
        (v.code, v.subject)
        for v in errors_only(validate_messages(original.messages, dialect=dialect, thinking=thinking))
    }
    new = [v for v in found if (v.code, v.subject) not in before]
    if new and new[0].code == "assistant_last_with_thinking":
        raise WorkFailedError(
            "the request turns extended thinking on, and this compaction would end it with an "
            "assistant turn, which the API refuses (assistant_last_with_thinking); nothing was "
            "written. Keep the live turn: --keep-loop, or --auto (it never summarizes what the "
            "model has not seen)."
        )
    if new:
        raise WorkFailedError(
            f"the rewrite would break an API invariant ({new[0]}); nothing was written. "
            "This is a bug in ctxcompact: please report it."
        )


def compact_messages(
    messages: MessagesLike,
    *,
    model: str | None = None,
    auto: bool = False,
    context_window: int | None = None,
    threshold: float = DEFAULT_RATIO,
    output_reserve: int | None = None,
    summarizer: Summarizer | SummarizerName | None = None,
    reader: FileReader | None = None,
    counter: TokenCounter | str = "tiktoken",
    dialect: str | None = None,
    dry_run: bool = False,
    system_tokens: int | None = None,
    **options: Any,
) -> CompactResult:
    """Compact a message list: the library's one call.

    ``messages`` are raw dicts in either dialect (or a :class:`Conversation`); the result's
    ``messages`` come back in the same dialect, ``stats`` says what happened. Any
    :class:`CompactOptions` field, or field of a strategy's options (``FullOptions``,
    ``PruneOptions``, ``CleanToolsOptions``), can be passed as a flat keyword
    (``strategies=("prune", "full")``, ``work_dir=...``, ``max_files=...``, ``keep=...``); an
    unknown one is a :class:`~ctxcompact.errors.UsageError`. With no API key the offline extractive summarizer is
    used. Raises :class:`~ctxcompact.errors.CtxcompactError` subclasses on bad input or failure.

    **It writes one file**: before returning, the raw records of every message a rewrite
    replaced or removed are archived as JSONL in ``archive_dir`` — by default
    ``$XDG_STATE_HOME/ctxcompact/archive/`` (``~/.local/state/ctxcompact/archive/``), never the
    current directory — and ``result.stats.archive_path`` names the file. Pass ``archive_dir=`` to
    choose the folder, or ``dry_run=True`` to write nothing. A compaction appended as a point
    (``append=True``, Claude Code sessions) archives nothing: the history stays in the result.

    >>> from ctxcompact import compact_messages
    >>> result = compact_messages([{"role": "user", "content": "hi"}], summarizer="extractive")
    >>> result.messages[0]["content"].startswith("[Conversation compressed]")
    True
    """
    conv = as_conversation(messages, dialect=dialect)
    if isinstance(summarizer, str):
        options["summarizer"] = summarizer
        summarizer = None
    if "strategy" in options:
        value = options.pop("strategy")
        options["strategies"] = tuple(value.split(",")) if isinstance(value, str) else tuple(value)
    if auto:
        options.setdefault("strategies", AUTO_STRATEGIES)
    opts = CompactOptions.from_keywords(**options)
    spec = BudgetSpec(model, context_window, output_reserve, threshold)
    budget = spec.resolve(conv)[0] if auto or spec.given else None
    chosen = make_counter(counter) if isinstance(counter, str) else counter
    return compact_conversation(
        conv,
        options=opts,
        budget=budget,
        auto=auto,
        dry_run=dry_run,
        summarizer=summarizer,
        reader=reader,
        counter=chosen,
        system_tokens=system_tokens,
    )


async def acompact_messages(messages: MessagesLike, **kwargs: Any) -> CompactResult:
    """:func:`compact_messages` for asyncio agent loops: runs in a worker thread, so the
    event loop keeps serving while the summary is written (the core is pure and keeps no
    shared state, so concurrent calls are safe). Same arguments, same result."""
    import asyncio

    return await asyncio.to_thread(compact_messages, messages, **kwargs)
