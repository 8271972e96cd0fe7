"""One run of the strategies for compactions that would run them on the same input again.

:func:`shared_runs` opens a memo (a ``ContextVar``: nothing is kept outside it) in which the
compaction pipeline (:func:`ctxcompact.compaction.pipeline.compact_conversation`) looks up its
strategies' run — the pipeline and its fallback ladder — before running them, keyed on all the
run reads (:func:`_run_key`). ``eval`` opens one per conversation: ``--auto`` above its
threshold runs ``hybrid`` with ``hybrid``'s budget (and a ``keep_recent_tokens`` that
``hybrid`` does not read under a target), so its run is ``hybrid``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, is_dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ctxcompact.compaction.strategies import StrategyContext, StrategyResult, strategy_for
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import Conversation

if TYPE_CHECKING:
    from ctxcompact.compaction.options import CompactOptions
    from ctxcompact.compaction.summarize import Summarizer

#: A run's outcome: the messages, the pipeline's result, the steps and the warnings.
Ran = tuple[tuple[Message, ...], StrategyResult, list[dict[str, Any]], list[str]]
Run = Callable[[Conversation, "CompactOptions", StrategyContext], Ran]


@dataclass(slots=True)
class SharedRuns:
    """:func:`shared_runs`' memo: each run's key (:func:`_run_key`) -> what the key names by
    identity (held, so no id is reused while the memo lives), the run's outcome and the seconds
    it took by ``clock``."""

    clock: Callable[[], float] = perf_counter
    runs: dict[Hashable, tuple[object, Ran, float]] = field(default_factory=dict)
    #: The seconds of the runs served from the memo so far (the run each replaced took them):
    #: a caller that times its compactions adds them to the compaction that was served.
    reused_seconds: float = 0.0


_SHARED_RUNS: ContextVar[SharedRuns | None] = ContextVar("ctxcompact_shared_runs", default=None)


@contextmanager
def shared_runs(clock: Callable[[], float] = perf_counter) -> Iterator[SharedRuns]:
    """Within it, a compaction whose strategies would run again on the same message objects,
    with the same options (but those its strategies declare unread under its target:
    :attr:`~ctxcompact.compaction.strategies.Strategy.unread_with_target`), target, limit,
    pins, budget, work dir, summarizer, file reader and token counter, gets the first run's
    messages, result, steps and warnings (the run is a function of those). Everything after
    the strategies (validation, the count after, the checks) runs as ever. ``clock`` times
    each run, for :attr:`SharedRuns.reused_seconds`."""
    memo = SharedRuns(clock)
    token = _SHARED_RUNS.set(memo)
    try:
        yield memo
    finally:
        _SHARED_RUNS.reset(token)


def served(
    run: Run,
    conversation: Conversation,
    options: CompactOptions,
    context: StrategyContext,
    summarizer: Summarizer | None,
) -> Ran:
    """``run(conversation, options, context)``, or the open memo's outcome of the same run."""
    memo = _SHARED_RUNS.get()
    key = None if memo is None else _run_key(conversation, options, context, summarizer)
    if memo is None or key is None:
        return run(conversation, options, context)
    known = memo.runs.get(key)
    if known is None:
        started = memo.clock()
        ran = run(conversation, options, context)
        held = (conversation.messages, context.original, context.counter, context.reader, summarizer)
        known = memo.runs[key] = (held, ran, memo.clock() - started)
    else:
        memo.reused_seconds += known[2]
    messages, result, steps, warnings = known[1]
    return messages, result, [dict(s) for s in steps], list(warnings)  # the caller's to extend


#: :class:`StrategyContext` fields keyed by identity (their objects are held beside the run),
#: and fields keyed with the options they come from.
_BY_IDENTITY = frozenset({"counter", "reader", "original"})
_FROM_OPTIONS = frozenset({"summarizer", "configured"})
_UNREAD = object()


def _run_key(
    conversation: Conversation,
    options: CompactOptions,
    context: StrategyContext,
    summarizer: Summarizer | None,
) -> Hashable | None:
    """What a run of the strategies reads: the message objects and the conversation's warnings,
    every option (but those every strategy of the run declares unread under the run's target),
    every field of the context (the counter, the file reader and the messages as read by
    identity) and the summarizer given (else the one the options name). None when a part
    cannot be hashed (a library caller's own option): no memo then."""
    target = context.message_target()
    rows = [strategy_for(s) for s in options.strategies]
    unread = (
        frozenset.intersection(*(r.unread_with_target for r in rows)) if target is not None else frozenset()
    )
    settings = tuple((f.name, getattr(options, f.name)) for f in fields(options) if f.name != "configured")
    configured = tuple(_options_key(o, unread) for o in options.configured)
    shared = tuple(
        (f.name, _identity(value) if f.name in _BY_IDENTITY else value)
        for f in fields(context)
        if f.name not in _FROM_OPTIONS
        for value in (getattr(context, f.name),)
    )
    key = (
        tuple(map(id, conversation.messages)),
        conversation.warnings,
        settings,
        configured,
        shared,
        id(summarizer),
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _options_key(options: object, unread: frozenset[str]) -> object:
    """A strategy's options, field by field (every one, ``compare=False`` ones too), those in
    ``unread`` left out."""
    if not is_dataclass(options) or isinstance(options, type):
        return options
    return (
        type(options),
        tuple((f.name, _UNREAD if f.name in unread else getattr(options, f.name)) for f in fields(options)),
    )


def _identity(value: object) -> object:
    if isinstance(value, tuple):
        return tuple(map(id, value))
    return id(value)
