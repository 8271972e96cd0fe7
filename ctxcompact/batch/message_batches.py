"""A batch's summaries through the Message Batches API (``--summarizer anthropic-batch``).

The Message Batches API answers at half the price, within 24 hours instead of seconds, so a
batch is compacted in rounds instead of file by file:

1. *Collect*: every input is compacted as a dry run with a :class:`ReplayTransport` that knows
   no answer yet. It records each summary request it is asked for (named by ``custom_id``, a
   hash of model, prompt and ``max_tokens``) and answers it with a placeholder, so the whole
   file is walked and every independent request found — all chunks of a long transcript, all
   conversations of a collection. A request built from a placeholder (a chunked summary's
   merge) is not recorded: it waits for the next round.
2. *Submit* the requests as one Message Batch, *poll* it every :data:`POLL_INTERVAL` seconds
   (each look reported to ``on_poll``, the CLI's progress line) until it has ended, and *read*
   its results by ``custom_id``.
3. Repeat until a round finds no new request (a chunked summary needs two; at most
   :data:`MAX_ROUNDS`), then compact the inputs for real with :func:`ctxcompact.batch.files.compact_files`,
   every request now answered from the results. A request that errored or expired — or has no
   result at all — is a non-retryable failure of the summary, so the file falls back like any
   failed summary (``--on-failure``: extractive, skip, or exit 3).

The summarizer runs the same prompts, chunking and merging as ``--summarizer anthropic``
(:class:`~ctxcompact.compaction.summarize.llm.LLMSummarizer`); only the transport differs, so a file gets
the summary the Messages API would have given for the same answers. Files run one after the
other (``--jobs`` is not used: the waiting is the API's). Inputs are read once per round, so
stdin is not accepted.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ctxcompact.accounting.tokens import TokenCounter, make_counter
from ctxcompact.batch.files import FileOptions, batch_targets, compact_file, compact_files, journal_key
from ctxcompact.batch.journal import BatchJournal
from ctxcompact.batch.results import BatchResult, ProgressCallback
from ctxcompact.compaction.summarize.llm import LLMSummarizer
from ctxcompact.errors import OptionError, WorkFailedError
from ctxcompact.llm.transport import BatchAnswer, BatchPoll, BatchRequest, TextReply, TransportFailure

#: Seconds between two looks at a submitted batch (most batches end within an hour).
POLL_INTERVAL = 30.0
#: Collect-and-submit rounds at most: one, plus one per level of chunk merging.
MAX_ROUNDS = 6
#: The API's limit of requests in one Message Batch.
MAX_BATCH_REQUESTS = 100_000
#: What a collecting transport answers before the batch has: never sent anywhere.
PENDING = "ctxcompact-pending-batch-answer-5b1f"
#: The summarizer name summaries made this way report.
BATCH_SUMMARIZER_NAME = "anthropic-batch"


class BatchBackend(Protocol):
    """A Message Batches client (:class:`ctxcompact.llm.anthropic_api.AnthropicBatches`)."""

    def submit(self, requests: Sequence[BatchRequest]) -> str: ...

    def poll(self, batch_id: str) -> BatchPoll: ...

    def results(self, batch_id: str) -> dict[str, BatchAnswer]: ...


def custom_id(*, model: str, system: str, user: str, max_tokens: int) -> str:
    """A request's batch name: a hash of everything that decides its answer (the API allows
    64 characters of ``[A-Za-z0-9_-]``)."""
    digest = hashlib.sha256()
    for part in (model, system, user, str(max_tokens)):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return "ctxc-" + digest.hexdigest()[:48]


class ReplayTransport:
    """A :class:`~ctxcompact.llm.transport.Transport` answering from a batch's results.

    A request with an answer gets it (a failed one raises a non-retryable
    :class:`TransportFailure`). Without one: when ``collect`` is given, the request is recorded
    there (unless it was built from a placeholder) and answered with the placeholder; else it
    fails, non-retryable.
    """

    name = BATCH_SUMMARIZER_NAME

    def __init__(
        self, answers: Mapping[str, BatchAnswer], *, collect: dict[str, BatchRequest] | None = None
    ) -> None:
        self.answers = answers
        self.collect = collect

    def __repr__(self) -> str:
        return f"ReplayTransport({len(self.answers)} answers)"

    def complete(self, *, model: str, system: str, user: str, max_tokens: int, timeout: float) -> TextReply:
        key = custom_id(model=model, system=system, user=user, max_tokens=max_tokens)
        answer = self.answers.get(key)
        if isinstance(answer, TextReply):
            return answer
        if answer is not None:
            raise TransportFailure(answer, retryable=False)
        if self.collect is None:
            raise TransportFailure("the message batch has no answer for this request", retryable=False)
        if PENDING not in user:
            self.collect[key] = BatchRequest(key, model, system, user, max_tokens)
        return TextReply(f"<summary>{PENDING}</summary>")


def run_message_batch(
    requests: Sequence[BatchRequest],
    backend: BatchBackend,
    *,
    poll_interval: float = POLL_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
    on_poll: Callable[[BatchPoll], None] | None = None,
    deadline_at: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, BatchAnswer]:
    """Submit ``requests`` (in batches of at most :data:`MAX_BATCH_REQUESTS`), wait for each
    batch to end, and return every answer by ``custom_id``. A batch still not ended at
    ``deadline_at`` (``--deadline``; a ``time.monotonic()`` value) is
    :class:`~ctxcompact.errors.WorkFailedError`: no file is compacted with half its answers."""
    ids = [
        backend.submit(requests[start : start + MAX_BATCH_REQUESTS])
        for start in range(0, len(requests), MAX_BATCH_REQUESTS)
    ]
    answers: dict[str, BatchAnswer] = {}
    for batch_id in ids:
        status = "submitted"
        while True:
            left = None if deadline_at is None else deadline_at - clock()
            if left is not None and left <= 0:
                raise WorkFailedError(
                    f"message batch {batch_id} was still {status} at the deadline (--deadline); "
                    "nothing was compacted. Run again later, or with a longer --deadline."
                )
            poll = backend.poll(batch_id)
            status = poll.status
            if on_poll is not None:
                on_poll(poll)
            if poll.ended:
                break
            left = None if deadline_at is None else deadline_at - clock()
            sleep(poll_interval if left is None else max(0.0, min(poll_interval, left)))
        answers.update(backend.results(batch_id))
    return answers


def compact_files_in_batches(
    paths: Sequence[str | None],
    *,
    options: FileOptions,
    backend: BatchBackend,
    out_dir: Path | None = None,
    in_place: bool = False,
    names: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    raise_bugs: bool = False,
    journal: BatchJournal | None = None,
    counter: TokenCounter | None = None,
    poll_interval: float = POLL_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
    on_poll: Callable[[BatchPoll], None] | None = None,
) -> BatchResult:
    """:func:`~ctxcompact.batch.files.compact_files` with every summary made through Message
    Batches (see the module docstring); the result is the same kind of :class:`BatchResult`.
    Raises :class:`UsageError` for stdin among the inputs and :class:`WorkFailedError` when a
    batch cannot be submitted or read (from the backend)."""
    if any(path is None for path in paths):
        raise OptionError(
            "{summarizer} anthropic-batch reads its inputs more than once: stdin cannot be one.", "summarizer"
        )
    counter = counter or make_counter(options.counter)
    full = options.compact.full
    answers: dict[str, BatchAnswer] = {}

    def summarizer(transport: ReplayTransport) -> LLMSummarizer:
        from ctxcompact.llm.anthropic_api import DEFAULT_SUMMARY_MODEL

        return LLMSummarizer(
            transport,
            full.summary_model or DEFAULT_SUMMARY_MODEL,
            timeout=full.timeout,
            max_retries=0,
            deadline_at=full.deadline_at,
        )

    rehearsal = replace(options, dry_run=True)
    todo = _unfinished(
        paths, journal, out_dir=out_dir, in_place=in_place, names=names, dry_run=options.dry_run
    )
    # A request still unanswered after the last round fails its summary (the file falls back).
    for _ in range(MAX_ROUNDS):
        wanted: dict[str, BatchRequest] = {}
        collector = summarizer(ReplayTransport(answers, collect=wanted))
        for path in todo:
            try:
                compact_file(path, options=rehearsal, counter=counter, summarizer=collector)
            except Exception:  # reported by the real run below, with the file's name
                continue
        if not wanted:
            break
        answers.update(
            run_message_batch(
                list(wanted.values()),
                backend,
                poll_interval=poll_interval,
                sleep=sleep,
                on_poll=on_poll,
                deadline_at=full.deadline_at,
            )
        )
    return compact_files(
        paths,
        options=options,
        out_dir=out_dir,
        in_place=in_place,
        names=names,
        progress=progress,
        raise_bugs=raise_bugs,
        journal=journal,
        counter=counter,
        summarizer=summarizer(ReplayTransport(answers)),
        jobs=1,
    )


def _unfinished(
    paths: Sequence[str | None],
    journal: BatchJournal | None,
    *,
    out_dir: Path | None,
    in_place: bool,
    names: Sequence[str] | None,
    dry_run: bool,
) -> list[str | None]:
    """The inputs an earlier run of the batch did not finish (``--resume``): only their
    summaries are asked for."""
    if journal is None:
        return list(paths)
    targets = (
        batch_targets(paths, out_dir, names=names)
        if out_dir is not None and not in_place and not dry_run
        else {}
    )
    return [
        path
        for index, path in enumerate(paths)
        if journal.finished(journal_key(path, targets.get(index)), path) is None
    ]
