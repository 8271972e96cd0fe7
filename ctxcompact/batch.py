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

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ctxcompact.compact import CompactOptions, CompactResult, CompactStats, compact_conversation
from ctxcompact.errors import CtxcompactError, InputError, UsageError
from ctxcompact.fileio import write_file, write_new_file
from ctxcompact.models import DEFAULT_RATIO
from ctxcompact.names import LocalCounterName
from ctxcompact.status import ExitStatus
from ctxcompact.summarize import Summarizer
from ctxcompact.tokens import TokenCounter, make_counter
from ctxcompact.transcript import DEFAULT_MAX_INPUT_BYTES, Transcript, dump_transcript, load_transcript
from ctxcompact.usage import budget_for, unknown_model_warning

#: How an input read from stdin is named in reports and messages.
STDIN_NAME = "<stdin>"

ItemStatus = Literal["compacted", "unchanged", "failed"]


@dataclass(frozen=True, slots=True)
class FileOptions:
    """Everything :func:`compact_file` needs besides the path (plain data, picklable).

    The budget (``model``, ``context_window``, ``output_reserve``, ``ratio``, ``registry``)
    is worked out per conversation, from the transcript's own model when ``model`` is None;
    it is only used with ``auto`` or when a model or window is given.
    """

    compact: CompactOptions = field(default_factory=CompactOptions)
    dialect: str | None = None  # None: detect
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    auto: bool = False
    dry_run: bool = False
    model: str | None = None
    context_window: int | None = None
    output_reserve: int | None = None
    ratio: float = DEFAULT_RATIO
    registry: Mapping[str, int] | None = None
    counter: LocalCounterName = LocalCounterName.tiktoken
    system_tokens: int | None = None  # --auto's estimate overhead; None: the dialect's default

    @property
    def wants_budget(self) -> bool:
        return self.auto or bool(self.model) or bool(self.context_window)


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


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One input of a batch. ``before``/``after`` (tokens) and ``stats`` once it was
    compacted — kept when writing the result then failed; ``output`` once written;
    ``error`` and ``exit_code`` when it failed."""

    input: str
    status: ItemStatus
    before: int | None = None
    after: int | None = None
    stats: tuple[CompactStats, ...] | None = None
    output: str | None = None
    error: str | None = None
    exit_code: ExitStatus = ExitStatus.SUCCESS

    @property
    def ratio(self) -> float | None:
        return self.after / self.before if self.before and self.after is not None else None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Every input's outcome, in input order, and the budget warnings of the whole batch."""

    items: tuple[BatchItem, ...]
    warnings: tuple[str, ...] = ()

    @property
    def compacted(self) -> int:
        return sum(item.status == "compacted" for item in self.items)

    @property
    def failed(self) -> int:
        return sum(item.status == "failed" for item in self.items)

    @property
    def exit_code(self) -> ExitStatus:
        """The worst failure's exit code, or success."""
        return max((i.exit_code for i in self.items if i.status == "failed"), default=ExitStatus.SUCCESS)


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """Reported before each input (``item`` None) and after it (``item`` its outcome)."""

    index: int
    total: int
    input: str
    item: BatchItem | None = None


ProgressCallback = Callable[[BatchProgress], None]


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
    counter = counter or make_counter(options.counter)
    warnings: list[str] = []
    results: list[CompactResult] = []
    try:
        for conv in transcript.conversations:
            budget = None
            if options.wants_budget:
                budget = budget_for(
                    conv,
                    model=options.model,
                    context_window=options.context_window,
                    output_reserve=options.output_reserve,
                    ratio=options.ratio,
                    registry=options.registry,
                )
                warning = unknown_model_warning(budget.model)
                if warning:
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
) -> BatchResult:
    """Compact every input; write each result to ``out_dir`` under the input's name (a
    repeated name gets ``-1``, ``-2``…) or, with ``in_place``, over the input (keeping a
    backup). ``dry_run`` writes nothing. ``progress`` hears about each input before and
    after its work. Never raises for a bad input; ``raise_bugs`` lets bugs propagate."""
    counter = counter or make_counter(options.counter)
    targets = (
        batch_targets(paths, out_dir) if out_dir is not None and not in_place and not options.dry_run else {}
    )
    items: list[BatchItem] = []
    warnings: list[str] = []
    for index, path in enumerate(paths):
        name = path or STDIN_NAME
        if progress is not None:
            progress(BatchProgress(index, len(paths), name))
        item, found = _compact_item(
            path,
            targets.get(index),
            options=options,
            in_place=in_place,
            counter=counter,
            summarizer=summarizer,
            raise_bugs=raise_bugs,
        )
        items.append(item)
        warnings.extend(found)
        if progress is not None:
            progress(BatchProgress(index, len(paths), name, item))
    return BatchResult(tuple(items), tuple(dict.fromkeys(warnings)))


def batch_targets(paths: Sequence[str | None], out_dir: Path) -> dict[int, Path]:
    """Each input's output file in ``out_dir``, decided before any work (so nothing is
    summarized or archived for an input whose result could not be written): the input's own
    file name (stdin: ``stdin.json``), numbered ``-1``, ``-2``… when an earlier input took it."""
    used: set[str] = set()
    targets: dict[int, Path] = {}
    for index, path in enumerate(paths):
        base = Path(path).name if path is not None else "stdin.json"
        candidate = base
        n = 1
        while candidate in used:
            stem, dot, suffix = base.partition(".")
            candidate = f"{stem}-{n}{dot}{suffix}"
            n += 1
        used.add(candidate)
        targets[index] = out_dir / candidate
    return targets


def _compact_item(
    path: str | None,
    target: Path | None,
    *,
    options: FileOptions,
    in_place: bool,
    counter: TokenCounter,
    summarizer: Summarizer | None,
    raise_bugs: bool,
) -> tuple[BatchItem, tuple[str, ...]]:
    """One input, start to finish; every error it meets becomes its failed item."""
    name = path or STDIN_NAME
    done: FileCompaction | None = None
    warnings: list[str] = []
    try:
        if path is not None and target is not None and target.resolve() == Path(path).resolve():
            raise UsageError(f"{target} is the input itself; use --in-place to overwrite inputs.")
        done = compact_file(
            path, options=options, counter=counter, summarizer=summarizer, on_warning=warnings.append
        )
        output = None
        if not options.dry_run:
            data = dump_transcript(done.transcript)
            if in_place and path is not None:
                replace_keeping_backup(Path(path), data)
                output = path
            elif target is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                write_file(target, data)
                output = str(target)
        return _item(name, done, done.status, output=output), tuple(warnings)
    except CtxcompactError as exc:
        return _item(name, done, "failed", error=str(exc), exit_code=exc.exit_code), tuple(warnings)
    except Exception as exc:  # a bug on one input must not cost the others their results
        if raise_bugs:
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
    return BatchItem(name, status, before, after, done.stats, output, error, exit_code)


def replace_keeping_backup(path: Path, data: bytes) -> None:
    """Rewrite ``path`` atomically after saving its current bytes as ``FILE.bak`` — or, when
    that exists from an earlier run, ``FILE.bak.1``, ``.bak.2``…: a backup is never replaced."""
    path = Path(os.path.realpath(path))  # a symlinked input: back up and rewrite its target
    backup = path.with_name(path.name + ".bak")
    n = 0
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.bak.{n}")
    try:
        write_new_file(backup, path.read_bytes(), mode_of=path)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot keep a backup at {backup} ({exc.strerror or exc}); file left unchanged."
        ) from None
    write_file(path, data)
