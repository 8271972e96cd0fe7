"""The compaction pipeline: one or more strategies, then the checks that make it safe.

``compact_conversation`` is what the CLI calls; ``compact_messages`` is the library's one
call (seed 000 §4.3). Steps:

1. count the conversation (system prompt and tools included);
2. with ``auto``, stop here when it is under the threshold: the output is the input;
3. run the strategies in order (``("prune", "full")`` masks old tool output, then
   summarizes what is left — masking first makes the summary cheaper);
4. validate the result: a rewrite that breaks an API invariant is a bug, never output;
5. count again; with ``auto``, a result that is not smaller is dropped (never emit a larger
   transcript); the stats always say plainly when the result is not smaller or still over;
6. archive the raw records of every message that was replaced or removed (F-007) — unless
   ``dry_run`` — before anything is emitted: if that fails, nothing is compacted (exit 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ctxcompact.archive import DEFAULT_ARCHIVE_SUBDIR, write_archive
from ctxcompact.errors import UsageError, WorkFailedError
from ctxcompact.ir import Message, text_of
from ctxcompact.models import Budget
from ctxcompact.restore import FileReader, ReadTool, read_tools_for
from ctxcompact.retention import RetentionReport, check_retention
from ctxcompact.strategies import STRATEGY_NAMES
from ctxcompact.strategies.base import StrategyResult
from ctxcompact.summarize import Summarizer
from ctxcompact.tokens import TokenCounter, cached, make_counter
from ctxcompact.transcript import Conversation, conversation_records
from ctxcompact.usage import MessagesLike, as_conversation, measure_total
from ctxcompact.validate import errors_only, validate_messages

SummarizerName = Literal["auto", "anthropic", "extractive"]


@dataclass(frozen=True, slots=True)
class CompactOptions:
    """Every knob of every strategy, with the seeds' defaults. Zero configuration works."""

    strategies: tuple[str, ...] = ("full",)
    # full (seed 000)
    summarizer: SummarizerName = "auto"
    summary_model: str | None = None
    summary_max_words: int = 1200
    instructions: str | None = None
    on_failure: Literal["fallback", "skip", "error"] = "fallback"
    timeout: float = 60.0
    max_retries: int = 2
    restore: bool = True
    keep_loop: bool = False
    work_dir: Path = Path(".")
    read_tools: tuple[ReadTool, ...] | None = None  # None: by dialect (restore.read_tools_for)
    max_files: int = 5
    max_tokens_per_file: int = 5000
    max_tokens_total: int = 50_000
    archive_dir: Path | None = None  # default: <work_dir>/.ctxcompact/archive
    # prune (Anthropic clear_tool_uses semantics)
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    keep_thinking: int | None = None
    include_loop: bool = False
    # clean-tools (seed 003)
    rounds: int = 2

    def __post_init__(self) -> None:
        unknown = [s for s in self.strategies if s not in STRATEGY_NAMES]
        if unknown or not self.strategies:
            raise UsageError(
                f"unknown strategy {', '.join(unknown) or '(none)'}; expected one or more of {', '.join(STRATEGY_NAMES)} (comma-separated)."
            )
        for name in (
            "summary_max_words",
            "max_files",
            "max_tokens_per_file",
            "max_tokens_total",
            "keep",
            "clear_at_least",
            "rounds",
            "max_retries",
        ):
            if getattr(self, name) < 0:
                raise UsageError(f"--{name.replace('_', '-')} must not be negative.")
        if self.summary_max_words < 1:
            raise UsageError("--summary-max-words must be at least 1.")
        if self.timeout <= 0:
            raise UsageError("--timeout must be positive.")

    @property
    def resolved_archive_dir(self) -> Path:
        return self.archive_dir if self.archive_dir is not None else self.work_dir / DEFAULT_ARCHIVE_SUBDIR


@dataclass(frozen=True, slots=True)
class CompactStats:
    """What happened (seed 000 F-009 fields, plus what a user needs to trust the result)."""

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
    retention: RetentionReport | None = None
    threshold: int | None = None
    reason: str = ""
    warnings: tuple[str, ...] = ()
    steps: tuple[Mapping[str, Any], ...] = ()

    @property
    def compaction_ratio(self) -> float:
        return self.compacted_tokens / self.original_tokens if self.original_tokens else 0.0

    @property
    def still_over_threshold(self) -> bool | None:
        return None if self.threshold is None else self.compacted_tokens >= self.threshold

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the seed's camelCase names for its fields."""
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "compacted": self.compacted,
            "reason": self.reason,
            "originalTokenCount": self.original_tokens,
            "compactedTokenCount": self.compacted_tokens,
            "compactionRatio": round(self.compaction_ratio, 4),
            "compactedMessageCount": self.compacted_message_count,
            "retainedMessageCount": self.retained_message_count,
            "restoredFileCount": self.restored_file_count,
            "restoredTokenCount": self.restored_token_count,
            "summarizer": self.summarizer,
            "attempts": self.attempts,
            "retries": max(0, self.attempts - 1) if self.attempts else 0,
            "archivePath": self.archive_path,
            "threshold": self.threshold,
            "stillOverThreshold": self.still_over_threshold,
            "warnings": list(self.warnings),
            "steps": [dict(s) for s in self.steps],
        }
        if self.retention is not None:
            r = self.retention
            out["retention"] = {
                "summary": r.summary_line(),
                "paths": [r.paths_found, r.paths_total],
                "errors": [r.errors_found, r.errors_total],
                "lastRequest": r.last_request,
                "missingPaths": list(r.missing_paths),
                "missingErrors": list(r.missing_errors),
            }
        return out


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


def _run_strategy(
    name: str,
    messages: Sequence[Message],
    options: CompactOptions,
    *,
    summarizer: Summarizer | None,
    reader: FileReader | None,
    counter: TokenCounter,
    original: Sequence[Message],
    dialect: str,
) -> StrategyResult:
    if name == "full":
        from ctxcompact.strategies.full import full_compaction
        from ctxcompact.summarize import make_summarizer
        from ctxcompact.summarize.extractive import ExtractiveSummarizer

        primary = summarizer or make_summarizer(
            options.summarizer,
            model=options.summary_model,
            timeout=options.timeout,
            max_retries=options.max_retries,
        )
        fallback = None if primary.name == "extractive" else ExtractiveSummarizer()
        return full_compaction(
            messages,
            read_scan=original,
            summarizer=primary,
            fallback=fallback,
            on_failure=options.on_failure,
            max_words=options.summary_max_words,
            instructions=options.instructions,
            restore=options.restore,
            keep_loop=options.keep_loop,
            work_dir=options.work_dir,
            read_tools=options.read_tools or read_tools_for(dialect),
            max_files=options.max_files,
            max_tokens_per_file=options.max_tokens_per_file,
            max_tokens_total=options.max_tokens_total,
            reader=reader,
        )
    if name == "prune":
        from ctxcompact.strategies.prune import prune_tool_outputs

        return prune_tool_outputs(
            messages,
            keep=options.keep,
            clear_at_least=options.clear_at_least,
            exclude_tools=options.exclude_tools,
            clear_tool_inputs=options.clear_tool_inputs,
            keep_thinking=options.keep_thinking,
            protect_loop=not options.include_loop,
            counter=counter,
        )
    if name == "clean-tools":
        from ctxcompact.strategies.clean_tools import clean_tool_calls

        return clean_tool_calls(messages, rounds=options.rounds)
    raise UsageError(f"unknown strategy {name!r}")


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
) -> CompactResult:
    """Compact one conversation (see the module docstring for the steps).

    ``auto`` needs ``budget``. ``summarizer`` overrides the one ``options`` names (tests
    inject fakes; agent loops inject their own). Never mutates ``conversation``.
    """
    options = options or CompactOptions()
    # One cache for the run: the before and after figures and the strategies share it, so
    # each distinct block is encoded once.
    counter = cached(counter or make_counter())
    label = ",".join(options.strategies)
    if auto and budget is None:
        raise UsageError("--auto needs a budget: give --model or --context-window.")
    before = measure_total(conversation, counter)
    threshold = budget.threshold if budget else None

    def unchanged(
        reason: str, warnings: Sequence[str] = (), steps: Sequence[Mapping[str, Any]] = ()
    ) -> CompactResult:
        stats = CompactStats(
            label,
            False,
            before,
            before,
            threshold=threshold,
            reason=reason,
            warnings=tuple(warnings),
            steps=tuple(steps),
        )
        return CompactResult(conversation, stats)

    if auto and budget is not None and before < budget.threshold:
        return unchanged(f"under the threshold ({before:,} < {budget.threshold:,} tokens): nothing to do")

    messages: tuple[Message, ...] = conversation.messages
    warnings: list[str] = []
    steps: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    for name in options.strategies:
        result = _run_strategy(
            name,
            messages,
            options,
            summarizer=summarizer,
            reader=reader,
            counter=counter,
            original=conversation.messages,
            dialect=conversation.dialect,
        )
        warnings.extend(result.warnings)
        step = {
            "strategy": name,
            "changed": result.changed,
            **{k: v for k, v in result.stats.items() if k != "summary"},
        }
        steps.append(step)
        merged.update(result.stats)
        messages = result.messages

    if all(a is b for a, b in zip(messages, conversation.messages, strict=False)) and len(messages) == len(
        conversation.messages
    ):
        return unchanged("no strategy changed anything", warnings, steps)

    _assert_valid(conversation, messages)
    rewritten = conversation.with_messages(messages)
    after = measure_total(rewritten, counter)
    if after >= before:
        warnings.append(f"the result is not smaller than the input ({after:,} ≥ {before:,} tokens)")
        if auto:
            return unchanged(
                "compaction did not make the transcript smaller: input passed through", warnings, steps
            )
    if budget is not None and after >= budget.threshold:
        warnings.append(
            f"still over the threshold after compaction ({after:,} ≥ {budget.threshold:,} tokens)"
        )

    kept = {id(m) for m in messages}
    replaced = tuple(m for m in conversation.messages if id(m) not in kept)
    replacement = "\n".join(text_of(m, include_tool_results=True) for m in messages if m.is_new or m.changed)
    retention = check_retention(replaced, replacement) if replaced else None
    if retention is not None and retention.last_request is False:
        warnings.append(
            "the retention check did not find the last user request in the result: read the summary"
        )

    archive_path = None
    if replaced and not dry_run:
        archive_path = str(
            write_archive(replaced, dialect=conversation.dialect, archive_dir=options.resolved_archive_dir)
        )

    stats = CompactStats(
        strategy=label,
        compacted=True,
        original_tokens=before,
        compacted_tokens=after,
        compacted_message_count=int(merged.get("compacted_message_count", len(replaced))),
        retained_message_count=int(merged.get("kept_loop_message_count", 0))
        + int(
            merged.get(
                "retained_message_count", len(messages) - sum(1 for m in messages if m.is_new or m.changed)
            )
        ),
        restored_file_count=int(merged.get("restored_file_count", 0)),
        restored_token_count=int(merged.get("restored_token_count", 0)),
        summarizer=merged.get("summarizer"),
        attempts=merged.get("attempts"),
        archive_path=archive_path,
        retention=retention,
        threshold=threshold,
        reason="dry run: nothing written" if dry_run else "compacted",
        warnings=tuple(warnings),
        steps=tuple(steps),
    )
    return CompactResult(rewritten, stats, replaced)


def _assert_valid(original: Conversation, messages: Sequence[Message]) -> None:
    """A rewrite may not add API-invariant errors (ones the input already had are compared by
    code and tool id, which do not move with the messages). If it does, that is a bug in a
    strategy: nothing is emitted and the run fails (exit 3) instead of writing a transcript the
    API would reject."""
    before = {
        (v.code, v.subject)
        for v in errors_only(validate_messages(original.messages, dialect=original.dialect))
    }
    new = [
        v
        for v in errors_only(validate_messages(messages, dialect=original.dialect))
        if (v.code, v.subject) not in before
    ]
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
    threshold: float = 0.6,
    output_reserve: int | None = None,
    summarizer: Summarizer | SummarizerName | None = None,
    reader: FileReader | None = None,
    counter: TokenCounter | str = "tiktoken",
    dialect: str | None = None,
    dry_run: bool = False,
    **options: Any,
) -> CompactResult:
    """Compact a message list: the library's one call (seed 000 §4.3).

    ``messages`` are raw dicts in either dialect (or a :class:`Conversation`); the result's
    ``messages`` come back in the same dialect, ``stats`` says what happened. Any
    :class:`CompactOptions` field can be passed as a keyword (``strategies=("prune", "full")``,
    ``work_dir=...``, ``max_files=...``). With no API key the offline extractive summarizer is
    used. Raises :class:`~ctxcompact.errors.CtxcompactError` subclasses on bad input or failure.

    >>> from ctxcompact import compact_messages
    >>> result = compact_messages([{"role": "user", "content": "hi"}], summarizer="extractive")
    >>> result.messages[0]["content"].startswith("[Conversation compressed]")
    True
    """
    from ctxcompact.usage import budget_for

    conv = as_conversation(messages, dialect=dialect)
    if isinstance(summarizer, str):
        options["summarizer"] = summarizer
        summarizer = None
    if "strategy" in options:
        value = options.pop("strategy")
        options["strategies"] = tuple(value.split(",")) if isinstance(value, str) else tuple(value)
    opts = CompactOptions(**options)
    budget = None
    if auto or model or context_window:
        budget = budget_for(
            conv, model=model, context_window=context_window, output_reserve=output_reserve, ratio=threshold
        )
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
    )


async def acompact_messages(messages: MessagesLike, **kwargs: Any) -> CompactResult:
    """:func:`compact_messages` for asyncio agent loops: runs in a worker thread, so the
    event loop keeps serving while the summary is written (the core is pure and keeps no
    shared state, so concurrent calls are safe). Same arguments, same result."""
    import asyncio

    return await asyncio.to_thread(compact_messages, messages, **kwargs)
