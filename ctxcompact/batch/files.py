"""Compacting transcript files: one (:func:`compact_file`) or a batch (:func:`compact_files`).

The core of ``compact``'s file handling, pipx's ``uninstall_all`` pattern: the batch composes
one frozen :class:`BatchItem` per input, and the CLI only renders the :class:`BatchResult`.
Per-item work depends on nothing but the input path, its output target and the picklable
:class:`FileOptions`, and the targets are all decided before any work starts — so items can
later run in worker processes (``--jobs``), be skipped when already done (``--resume``) or be
split across machines (``--shard``) without changing what each one produces.

A batch never stops at a bad input: each failure is recorded with its message and exit code,
and the batch's exit code is the worst of them. A bug (an unexpected exception) is recorded
the same way as exit 70, unless ``raise_bugs`` asks for it to propagate with its traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ctxcompact.accounting.check import BudgetSpec
from ctxcompact.accounting.tokens import TokenCounter, make_counter
from ctxcompact.batch.results import (
    STDIN_NAME,
    BatchItem,
    BatchProgress,
    BatchResult,
    ItemStatus,
    ProgressCallback,
)
from ctxcompact.batch.workers import DEFAULT_LLM_CONCURRENCY, run_in_workers
from ctxcompact.compaction.pipeline import CompactOptions, CompactResult, CompactStats, compact_conversation
from ctxcompact.compaction.summarize import Summarizer
from ctxcompact.errors import CtxcompactError, OptionError, UsageError, WorkFailedError
from ctxcompact.names import LocalCounterName
from ctxcompact.status import ExitStatus
from ctxcompact.transcripts.fileio import make_parent_dir, same_file, write_file
from ctxcompact.transcripts.inplace import live_reason, rewrite_in_place
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES, Transcript, dump_transcript, load_transcript

if TYPE_CHECKING:  # a journal only with --resume: its module loads then
    from ctxcompact.batch.journal import BatchJournal


@dataclass(frozen=True, slots=True)
class FileOptions:
    """Everything :func:`compact_file` needs besides the path (plain data, picklable).

    The budget is worked out per conversation (``budget.resolve``), from the transcript's own
    model when none is named; it is only used with ``auto`` or when a model or window is given.
    """

    compact: CompactOptions = field(default_factory=CompactOptions)
    dialect: str | None = None  # None: detect
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    auto: bool = False
    dry_run: bool = False
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    counter: LocalCounterName = LocalCounterName.tiktoken
    system_tokens: int | None = None  # --auto's estimate overhead; None: the dialect's default
    force: bool = False  # --force: rewrite a session in place even while it looks live

    @property
    def wants_budget(self) -> bool:
        return self.auto or self.budget.given


@dataclass(frozen=True, slots=True)
class FileCompaction:
    """One input compacted: the rewritten transcript (written by the caller), one result per
    conversation, and the warnings about the budget (deduplicated)."""

    input: str
    transcript: Transcript
    results: tuple[CompactResult, ...]
    warnings: tuple[str, ...] = ()

    @property
    def status(self) -> ItemStatus:
        return "compacted" if any(r.compacted for r in self.results) else "unchanged"

    @property
    def stats(self) -> tuple[CompactStats, ...]:
        return tuple(r.stats for r in self.results)


def compact_file(
    path: str | None,
    *,
    options: FileOptions,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> FileCompaction:
    """Read ``path`` (None: stdin), compact each of its conversations, return the result;
    writes nothing but the archive of replaced messages (unless ``dry_run``). An error names
    the file, so a message in a batch or a script says which input it is about.
    ``on_warning`` hears each warning as it is found, so a caller keeps the warnings of a
    file whose compaction then fails."""
    transcript = load_transcript(path, dialect=options.dialect, max_bytes=options.max_input_bytes)
    return compact_transcript(
        transcript, path, options=options, counter=counter, summarizer=summarizer, on_warning=on_warning
    )


def compact_transcript(
    transcript: Transcript,
    path: str | None,
    *,
    options: FileOptions,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> FileCompaction:
    """:func:`compact_file` of a transcript already read from ``path``."""
    counter = counter or make_counter(options.counter)
    warnings: list[str] = []
    results: list[CompactResult] = []
    try:
        for conv in transcript.conversations:
            budget = None
            if options.wants_budget:
                budget, said = options.budget.resolve(conv)
                for warning in said:
                    warnings.append(warning)
                    if on_warning is not None:
                        on_warning(warning)
            results.append(
                compact_conversation(
                    conv,
                    options=options.compact,
                    budget=budget,
                    auto=options.auto,
                    dry_run=options.dry_run,
                    counter=counter,
                    summarizer=summarizer,
                    system_tokens=options.system_tokens,
                )
            )
    except CtxcompactError as exc:
        if str(exc).startswith(transcript.name):
            raise
        if isinstance(exc, OptionError):
            raise exc.within(transcript.name) from None
        named = CtxcompactError(f"{transcript.name}: {exc}")
        named.exit_code = exc.exit_code
        raise named from None
    new = transcript.with_conversations([r.conversation for r in results])
    return FileCompaction(path or STDIN_NAME, new, tuple(results), tuple(dict.fromkeys(warnings)))


def compact_files(
    paths: Sequence[str | None],
    *,
    options: FileOptions,
    out_dir: Path | None = None,
    in_place: bool = False,
    progress: ProgressCallback | None = None,
    raise_bugs: bool = False,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    names: Sequence[str] | None = None,
    jobs: int = 1,
    llm_concurrency: int = DEFAULT_LLM_CONCURRENCY,
    journal: BatchJournal | None = None,
) -> BatchResult:
    """Compact every input; write each result to ``out_dir`` under the input's ``names`` entry
    (its path relative to its root, so the input tree is mirrored; default its file name; a
    repeated name gets ``-1``, ``-2``…) or, with ``in_place``, over the input (keeping a
    backup). ``dry_run`` writes nothing. ``progress`` hears about each input before and after
    its work. Never raises for a bad input; ``raise_bugs`` lets bugs propagate.

    ``jobs`` > 1 runs the inputs in that many processes, this one among them where the OS
    forks (:func:`~ctxcompact.batch.workers.run_in_workers`; each builds its counter and
    summarizer from ``options``: ``counter`` and ``summarizer`` are then not used), with
    at most ``llm_concurrency`` summary requests in flight across them. ``journal`` skips the
    inputs an earlier run finished and records each one this run finishes (``--resume``).
    The result lists the inputs in input order whatever order they finished in."""
    targets = (
        batch_targets(paths, out_dir, names=names)
        if out_dir is not None and not in_place and not options.dry_run
        else {}
    )
    items: dict[int, BatchItem] = {}
    warnings: list[str] = []
    todo: list[tuple[int, _Task]] = []
    for index, path in enumerate(paths):
        earlier = (
            journal.finished(journal_key(path, targets.get(index)), path) if journal is not None else None
        )
        if earlier is not None:
            items[index] = earlier
            if progress is not None:
                progress(BatchProgress(index, len(paths), earlier.input, earlier))
        else:
            todo.append((index, _Task(path, targets.get(index), options, in_place, raise_bugs)))

    def started(index: int) -> None:
        if progress is not None:
            progress(BatchProgress(index, len(paths), paths[index] or STDIN_NAME))

    def finished(index: int, outcome: tuple[BatchItem, tuple[str, ...]]) -> None:
        item, found = outcome
        items[index] = item
        warnings.extend(found)
        if journal is not None:
            journal.record(journal_key(paths[index], targets.get(index)), paths[index], item)
        if progress is not None:
            progress(BatchProgress(index, len(paths), item.input, item))

    jobs = min(jobs, len(todo))
    if jobs > 1:
        run_in_workers(
            todo,
            _work,
            jobs=jobs,
            llm_concurrency=llm_concurrency,
            on_start=started,
            on_done=finished,
            warm_up=functools.partial(_warm_up, options),
        )
    else:
        counter = counter or make_counter(options.counter)
        for index, task in todo:
            started(index)
            finished(index, _compact_item(task, counter=counter, summarizer=summarizer))
    return BatchResult(tuple(items[i] for i in range(len(paths))), tuple(dict.fromkeys(warnings)))


def batch_targets(
    paths: Sequence[str | None], out_dir: Path, *, names: Sequence[str] | None = None
) -> dict[int, Path]:
    """Each input's output file in ``out_dir``, decided before any work (so nothing is
    summarized or archived for an input whose result could not be written): the input's
    ``names`` entry (a relative path: the tree below an input directory is mirrored) or its
    own file name (stdin: ``stdin.json``), numbered ``-1``, ``-2``… when an earlier input
    took it."""
    used: set[str] = set()
    targets: dict[int, Path] = {}
    for index, path in enumerate(paths):
        base = Path(path).name if path is not None else "stdin.json"
        if names is not None:
            base = names[index]
        folder, slash, file = base.rpartition("/")
        candidate = base
        n = 1
        while candidate in used:
            stem, dot, suffix = file.partition(".")
            candidate = f"{folder}{slash}{stem}-{n}{dot}{suffix}"
            n += 1
        used.add(candidate)
        targets[index] = out_dir / candidate
    return targets


def journal_key(path: str | None, target: Path | None) -> str:
    """An input's journal key: where it is read from and where its result goes."""
    return f"{path or STDIN_NAME}\0{target or ''}"


@dataclass(frozen=True, slots=True)
class _Task:
    """One input's work, as sent to a worker process (plain data)."""

    path: str | None
    target: Path | None
    options: FileOptions
    in_place: bool
    raise_bugs: bool


@functools.cache
def _worker_counter(name: LocalCounterName) -> TokenCounter:
    return make_counter(name)


def _warm_up(options: FileOptions) -> None:
    """Load here, once, what every worker would otherwise load for itself, before they are
    forked (they inherit it): the counter with its tokenizer, the code of the strategies the
    options run, and the offline summarizer. ~0.13 s a worker on this project's machine: with
    ``--jobs 2`` a batch paid it twice instead of once."""
    from ctxcompact.compaction.strategies import AUTO_STRATEGIES, LazyRun, strategy_for
    from ctxcompact.names import SummarizerName

    _worker_counter(options.counter).count_batch(["warm up"])
    for step in (*options.compact.strategies, *(AUTO_STRATEGIES if options.auto else ())):
        run = strategy_for(step).run
        if isinstance(run, LazyRun):
            run.load()
    if options.compact.full.summarizer == SummarizerName.extractive:
        options.compact.full.make_summarizer()


def _work(task: _Task) -> tuple[BatchItem, tuple[str, ...]]:
    """One input in a worker process (its counter built once per process)."""
    return _compact_item(task, counter=_worker_counter(task.options.counter), summarizer=None)


def _compact_item(
    task: _Task, *, counter: TokenCounter, summarizer: Summarizer | None
) -> tuple[BatchItem, tuple[str, ...]]:
    """One input, start to finish; every error it meets becomes its failed item."""
    path, target, options, in_place = task.path, task.target, task.options, task.in_place
    name = path or STDIN_NAME
    done: FileCompaction | None = None
    warnings: list[str] = []
    try:
        if path is not None and target is not None and same_file(target, path):
            raise UsageError(f"{target} is the input itself; use --in-place to overwrite inputs.")
        output = None
        if in_place and path is not None and not options.dry_run:
            done = compact_in_place(
                path, options=options, counter=counter, summarizer=summarizer, on_warning=warnings.append
            )
            output = path
        else:
            done = compact_file(
                path, options=options, counter=counter, summarizer=summarizer, on_warning=warnings.append
            )
        if target is not None and not options.dry_run:
            make_parent_dir(target)
            write_file(target, dump_transcript(done.transcript))
            output = str(target)
        return _item(name, done, done.status, output=output), tuple(warnings)
    except CtxcompactError as exc:
        return _item(name, done, "failed", error=str(exc), exit_code=exc.exit_code), tuple(warnings)
    except Exception as exc:  # a bug on one input must not cost the others their results
        if task.raise_bugs:
            raise
        error = f"internal error: {type(exc).__name__}: {exc} (a bug in ctxcompact; please report it)"
        return _item(name, done, "failed", error=error, exit_code=ExitStatus.INTERNAL_ERROR), tuple(warnings)


def _item(
    name: str,
    done: FileCompaction | None,
    status: ItemStatus,
    *,
    output: str | None = None,
    error: str | None = None,
    exit_code: ExitStatus = ExitStatus.SUCCESS,
) -> BatchItem:
    if done is None:
        return BatchItem(name, status, output=output, error=error, exit_code=exit_code)
    before = sum(s.original_tokens for s in done.stats)
    after = sum(s.compacted_tokens for s in done.stats)
    within = (
        status == "unchanged"
        and bool(done.stats)
        and all(s.threshold is not None and s.original_tokens < s.threshold for s in done.stats)
    )
    return BatchItem(name, status, before, after, done.stats, output, error, exit_code, within_budget=within)


def compact_in_place(
    path: str,
    *,
    options: FileOptions,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> FileCompaction:
    """:func:`compact_file` with the result written over ``path``
    (:func:`ctxcompact.transcripts.inplace.rewrite_in_place`: appended when it only adds to the
    file, else replaced keeping ``FILE.bak`` / ``FILE.bak.N``; redone when another process
    changed the file meanwhile, so nothing it wrote is lost). A session its agent is writing
    is refused (exit 3) unless ``options.force``."""
    done: list[FileCompaction] = []

    def produce() -> tuple[bytes, bytes, bool]:
        transcript = load_transcript(path, dialect=options.dialect, max_bytes=options.max_input_bytes)
        raw = transcript.raw or b""
        if not options.force:
            reason = live_reason(path, raw, session=transcript.is_session_log)
            if reason is not None:
                raise WorkFailedError(
                    f"{path}: looks live — {reason}; rewriting it now could lose what its agent "
                    "writes next. Try again when it is idle, or pass --force."
                )
        done.append(
            compact_transcript(
                transcript,
                path,
                options=options,
                counter=counter,
                summarizer=summarizer,
                on_warning=on_warning,
            )
        )
        return raw, dump_transcript(done[-1].transcript), transcript.line_per_record

    written = rewrite_in_place(path, produce)
    if not written.warnings:
        return done[-1]
    if on_warning is not None:
        for warning in written.warnings:
            on_warning(warning)
    return replace(done[-1], warnings=(*done[-1].warnings, *written.warnings))
