"""Full compaction: summary of everything after the head, plus restored files.

Assembly, with fixed strings (:mod:`ctxcompact.markers`: earlier summaries and restored files
are recognised by them)::

    [...head]
    user:      "[Conversation compressed]\\n\\n{summary}"
    assistant: "Understood. I have the context from the compressed conversation. Continuing work."
    for each restored file (newest read first):
        user:      "[Restored after compact] {path}:\\n{content}"
        assistant: "Noted, file content restored."

User and assistant strictly alternate. With ``keep_loop`` the last user request and everything
after it (its tool loop) follow the restored files unchanged, so a request body about to be sent
still asks its question and an assistant turn in the middle of a tool loop keeps its thinking
blocks. When that request also answers tool uses (a user message holding tool results *and*
text), the assistant message with those tool uses is kept too — a pair is never cut — and it
takes the place of the last acknowledgement, so the roles still alternate.

Repeated compaction needs nothing special: an
earlier summary and earlier restored files are ordinary messages of the rest, so they are
summarized again and the files restored afresh.

Failure handling: the summarizer does its own bounded retries; when it still
fails, ``on_failure`` decides — ``fallback`` (default) summarizes with the offline extractive
summarizer, ``skip`` returns the input unchanged with a warning, ``error`` raises
:class:`~ctxcompact.compaction.summarize.SummaryFailed` (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxcompact.accounting.tokens import count_tokens
from ctxcompact.compaction.pins import PinOptions, first_task_index, pinned_indices
from ctxcompact.compaction.restore import (
    RestoreResult,
    read_tools_for,
    restore_recent_files,
    restored_message_text,
)
from ctxcompact.compaction.retention import TASK_HELD_SHARE, line_share
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyResult
from ctxcompact.compaction.strategies.options import DEFAULT_ON_FAILURE as DEFAULT_ON_FAILURE
from ctxcompact.compaction.strategies.options import DEFAULT_SUMMARIZER as DEFAULT_SUMMARIZER
from ctxcompact.compaction.strategies.options import DEFAULT_SUMMARY_MAX_WORDS as DEFAULT_SUMMARY_MAX_WORDS
from ctxcompact.compaction.strategies.options import FullOptions as FullOptions
from ctxcompact.compaction.strategies.survivors import insert_after_summary, kept_verbatim, recent_start
from ctxcompact.compaction.summarize import Summarizer, Summary, SummaryFailed
from ctxcompact.ir import (
    Message,
    block_start_at,
    current_loop_start,
    leading_system_count,
    new_message,
    text_of,
)
from ctxcompact.markers import RESTORED_ACK, SUMMARY_ACK, SUMMARY_PREFIX
from ctxcompact.transcripts.dialects import dialect_named

ACK_KINDS = ("summary_ack", "restored_ack")


@dataclass(frozen=True, slots=True)
class Partition:
    """The head a full compaction keeps (the leading ``system`` messages; a request body's
    top-level ``system`` is not in the message list at all) and the rest it summarizes."""

    head: tuple[Message, ...]
    rest: tuple[Message, ...]


def partition_messages(messages: Sequence[Message]) -> Partition:
    """Split at the first non-system message. No system message → all rest; only system
    messages → empty rest (nothing to compact); empty list → both empty."""
    n = leading_system_count(messages)
    return Partition(tuple(messages[:n]), tuple(messages[n:]))


@dataclass(frozen=True, slots=True)
class SummaryFailure:
    """The summarizer's error, and how many requests it had sent when it gave up."""

    error: str
    attempts: int | None = None


@dataclass(frozen=True, slots=True)
class FullSkipped:
    """Nothing summarized: nothing before the kept part, or ``on_failure="skip"``."""

    summary_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.summary_error is None else {"summary_error": self.summary_error}
        out["compacted_message_count"] = 0
        return out


@dataclass(frozen=True, slots=True)
class FullDetails:
    """A summary written; ``failure`` set when the fallback summarizer wrote it."""

    compacted_message_count: int
    kept_loop_message_count: int
    retained_message_count: int
    restored: RestoreResult
    summary: Summary
    failure: SummaryFailure | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.failure is not None:
            out["summary_error"] = self.failure.error
            out["attempts_failed"] = self.failure.attempts
        out |= {
            "compacted_message_count": self.compacted_message_count,
            "kept_loop_message_count": self.kept_loop_message_count,
            "retained_message_count": self.retained_message_count,
            "restored_file_count": len(self.restored.files),
            "restored_token_count": self.restored.tokens,
            "restored_files": [f.path for f in self.restored.files],
            "skipped_files": [{"path": s.path, "reason": s.reason} for s in self.restored.skipped],
            "summarizer": self.summary.summarizer,
            "summary_model": self.summary.model,
            "attempts": self.summary.attempts,
            "chunks": self.summary.chunks,
        }
        return out


def assemble(head: Sequence[Message], summary: str, restored: RestoreResult) -> tuple[Message, ...]:
    """Head + summary pair + one (file, acknowledgement) pair per restored file."""
    return (
        *head,
        new_message("user", SUMMARY_PREFIX + summary, kind="summary"),
        new_message("assistant", SUMMARY_ACK, kind="summary_ack"),
        *restored_pairs(restored),
    )


def restored_pairs(result: RestoreResult) -> list[Message]:
    """The seed's (``[Restored after compact] {path}:…``, acknowledgement) pair per file."""
    pairs: list[Message] = []
    for f in result.files:
        pairs.append(new_message("user", restored_message_text(f), kind="restored_file", path=f.path))
        pairs.append(new_message("assistant", RESTORED_ACK, kind="restored_ack"))
    return pairs


def split_for_summary(
    messages: Sequence[Message], *, keep_loop: bool, recent: int | None = None
) -> tuple[Partition, tuple[Message, ...]]:
    """(head and the part to summarize, the tail kept verbatim after the summary).

    With ``keep_loop`` the live request and its tool loop stay verbatim (the current
    loop is never compacted), so the result is still a request to send; a request that also
    answers tool uses keeps the assistant message holding them, so no pair is cut.
    """
    part = partition_messages(messages)
    starts = [block_start_at(messages, current_loop_start(messages))] if keep_loop else []
    if recent is not None:  # ``--keep-recent-tokens``: a round start outside any tool block
        starts.append(recent)
    if not starts:
        return part, ()
    start = max(min(starts), len(part.head))
    return Partition(part.head, tuple(messages[len(part.head) : start])), tuple(messages[start:])


#: Below this share of a session log's context before the kept loop, ``--keep-loop`` has too
#: little to compact: the summary would replace a sliver while the file gets a copy of the
#: loop appended (a Codex rollout grew 78 % for a 1 % smaller context).
MIN_COMPACTED_SHARE = 0.10


def _nothing_to_compact(
    part: Partition, kept_tail: Sequence[Message], options: FullOptions, context: StrategyContext
) -> str | None:
    """Why a summary compaction would not be worth writing, or None."""
    if not part.rest:
        if options.keep_loop:
            return "nothing to compact before the current request (--keep-loop)"
        return "nothing to compact: no message after the system prompt"
    appends = dialect_named(context.dialect).owns_file  # a session log appends the kept loop again
    if appends and options.keep_loop and kept_tail and options.keep_recent_tokens is None:
        before = count_tokens(part.rest, counter=context.counter).total
        kept = count_tokens(kept_tail, counter=context.counter).total
        if before < MIN_COMPACTED_SHARE * (before + kept):
            return (
                f"the current request and its tool loop are {kept / (before + kept):.0%} of the context: "
                "--keep-loop leaves too little before it to compact (--keep-recent-tokens N keeps less)"
            )
    return None


#: Words a summary may use per token of room (English prose runs ~1.3 tokens a word).
WORDS_PER_TOKEN = 0.7
#: A summary gets at least this many words, however small the room.
MIN_SUMMARY_WORDS = 200
#: The share of the room left after the kept messages that restored files may take.
RESTORE_SHARE = 1 / 3


def split_room(room: int, *, max_restore: int, max_words: int) -> tuple[int, int]:
    """(restored-file tokens, summary words) for ``room`` tokens left after the messages kept
    verbatim: restored files at most :data:`RESTORE_SHARE` of it, the summary the rest — never
    under :data:`MIN_SUMMARY_WORDS`, never over ``max_words``."""
    restore = min(max_restore, int(max(room, 0) * RESTORE_SHARE))
    words = max(MIN_SUMMARY_WORDS, min(int((room - restore) * WORDS_PER_TOKEN), max_words))
    return restore, words


def run_full(messages: Sequence[Message], options: FullOptions, context: StrategyContext) -> StrategyResult:
    """Replace everything after the head with a summary and the recently read files.

    Files are looked up in the *whole* list (head and rest), relative to
    ``context.work_dir``; in a pipeline ``context.original`` (the transcript as read) is scanned
    instead, since an earlier step (``prune --clear-tool-inputs``) may have blanked the read
    calls' inputs. Details: :class:`FullDetails`, or :class:`FullSkipped` when nothing was
    summarized. Raises :class:`~ctxcompact.compaction.summarize.SummaryFailed` when the summarizer fails
    under ``on_failure="error"``.
    """
    recent = recent_start(messages, options.keep_recent_tokens, context.counter)
    part, kept_tail = split_for_summary(messages, keep_loop=options.keep_loop, recent=recent)
    limit = context.message_limit()
    if limit is None:
        return summarize_before(messages, len(messages) - len(kept_tail), options, context)
    # With a threshold, the summary and the restored files share what the kept messages leave
    # under it (never more than the options give them): a small window gets a shorter summary
    # and fewer restored lines instead of a result still over it.
    kept = count_tokens([*part.head, *kept_tail], counter=context.counter).total
    restore, words = split_room(
        limit - kept, max_restore=options.max_tokens_total, max_words=options.summary_max_words
    )
    fitted = replace(options, max_tokens_total=restore)
    return summarize_before(messages, len(messages) - len(kept_tail), fitted, context, max_words=words)


def summarize_before(
    messages: Sequence[Message],
    cut: int,
    options: FullOptions,
    context: StrategyContext,
    *,
    max_words: int | None = None,
) -> StrategyResult:
    """Summarize ``messages`` from the head up to ``cut`` and keep ``messages[cut:]`` verbatim
    after the summary (and the restored files): ``run_full``'s work once it has chosen its cut,
    and ``hybrid``'s once its budget has. ``max_words``: the summary's budget (default
    ``options.summary_max_words``). A pinned task the summary already holds is not written
    again after it; one it does not hold opens the summary verbatim.
    """
    part = partition_messages(messages)
    cut = max(cut, len(part.head))
    part = Partition(part.head, tuple(messages[len(part.head) : cut]))
    kept_tail = tuple(messages[cut:])
    reason = _nothing_to_compact(part, kept_tail, options, context)
    if reason is not None:
        return StrategyResult(tuple(messages), False, FullSkipped(), (reason,), compacted_message_count=0)

    warnings: list[str] = []
    words = options.summary_max_words if max_words is None else max_words
    primary = context.summarizer()
    apart = _task_written_apart(messages, part, context)
    try:
        summary = _summarize(primary, part.rest, words, options.instructions, task_apart=apart)
        failure = None
    except SummaryFailed as exc:
        if options.on_failure == "error" or (
            options.on_failure == "fallback" and primary.name == "extractive"
        ):
            raise
        if options.on_failure == "skip":
            warning = f"summarizer failed ({exc}); compaction skipped, transcript unchanged"
            return StrategyResult(
                tuple(messages), False, FullSkipped(str(exc)), (warning,), compacted_message_count=0
            )
        summary, failure = (
            _fallback_summary(part.rest, options, words, task_apart=apart),
            SummaryFailure(str(exc), getattr(exc, "attempts", None)),
        )
        warnings.append(f"summarizer failed ({exc}); used the {summary.summarizer} summarizer instead")

    restored = _restore(messages, options, context)
    warnings.extend(f"file not restored: {s.path} ({s.reason})" for s in restored.skipped)
    if restored.skipped and not restored.files and context.work_dir_note:  # a session's
        warnings.append(nothing_restored_warning(len(restored.skipped), context.work_dir_note))
    if not summary.text.strip():
        warnings.append("the summary is empty")
    text, task = _task_in_summary(apart, summary.text, context)
    out = _laid_out(messages, part, kept_tail, text, restored, options, replace(context, pins=task))
    if kept_tail and kept_tail[0].role == "assistant" and out[-1].meta.get("kind") in ACK_KINDS:
        out = out[:-1]  # the kept assistant turn answers the summary in place of the last ack
    details = FullDetails(len(part.rest), len(kept_tail), len(part.head), restored, summary, failure)
    return StrategyResult(
        out + kept_tail,
        True,
        details,
        tuple(warnings),
        compacted_message_count=details.compacted_message_count,
        retained_message_count=details.retained_message_count,
        kept_loop_message_count=details.kept_loop_message_count,
        restored_file_count=len(restored.files),
        restored_token_count=restored.tokens,
        summarizer=summary.summarizer,
        attempts=summary.attempts,
        summary=text,
    )


#: Opens a summary that does not hold the pinned task itself (the pinned task is never
#: written again after a summary, where it would read as a new request).
TASK_HEADING = "The task, as the user gave it:"


def _task_written_apart(messages: Sequence[Message], part: Partition, context: StrategyContext) -> str | None:
    """The statement of a task pinned by default inside the summarized part — it goes *into*
    the summary, written whole before it unless the summary holds it — else None (no task,
    not summarized, not pinned, or pinned by the user: kept verbatim after the summary)."""
    task = first_task_index(messages)
    rest = range(len(part.head), len(part.head) + len(part.rest))
    if task is None or task not in rest or not context.pins.first_pinned(False):
        return None
    unpinned = PinOptions(context.pins.patterns, False)
    if task in pinned_indices(messages, unpinned, first_default=False):
        return None  # pinned by the user (--pin, a marker): kept as asked
    return text_of(messages[task])


def _task_in_summary(statement: str | None, summary: str, context: StrategyContext) -> tuple[str, PinOptions]:
    """The summary text, and the pins to keep verbatim after it: the statement of a pinned
    task inside the summarized part (:func:`_task_written_apart`) goes *into* the summary
    (verbatim, unless the summary already holds it) instead of after it."""
    if statement is None:
        return summary, context.pins
    unpinned = PinOptions(context.pins.patterns, False)
    if line_share(statement, summary) >= TASK_HELD_SHARE:
        return summary, unpinned
    return f"{TASK_HEADING}\n{statement}\n\n{summary}", unpinned


def _laid_out(
    messages: Sequence[Message],
    part: Partition,
    kept_tail: Sequence[Message],
    summary: str,
    restored: RestoreResult,
    options: FullOptions,
    context: StrategyContext,
) -> tuple[Message, ...]:
    """The compacted messages before the kept tail: the dialect's own layout (Codex), else the
    seed's head + summary pair (+ pinned and kept user messages) + restored-file pairs."""
    layout = dialect_named(context.dialect).summary_layout(
        messages[: len(messages) - len(kept_tail)], summary, keep_user_tokens=options.keep_user_tokens
    )
    if layout is not None:
        return (*layout, *restored_pairs(restored))
    rest = range(len(part.head), len(part.head) + len(part.rest))
    middle = kept_verbatim(
        messages,
        rest,
        pins=context.pins,
        keep_user_tokens=options.keep_user_tokens or 0,
        counter=context.counter,
    )
    return insert_after_summary(assemble(part.head, summary, restored), len(part.head), middle)


def _summarize(
    summarizer: Summarizer,
    rest: Sequence[Message],
    max_words: int,
    instructions: str | None,
    *,
    task_apart: str | None,
) -> Summary:
    """``summarizer``'s summary of ``rest``; the extractive one is told of a task statement
    written whole before it (``task_apart``), so it does not spend its words on a clipped copy."""
    if task_apart is not None and summarizer.name == "extractive":
        from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer

        if isinstance(summarizer, ExtractiveSummarizer):
            return summarizer.summarize(
                rest, max_words=max_words, instructions=instructions, task_apart=task_apart
            )
    return summarizer.summarize(rest, max_words=max_words, instructions=instructions)


def _fallback_summary(
    rest: Sequence[Message], options: FullOptions, max_words: int, *, task_apart: str | None
) -> Summary:
    """The offline extractive summary written when the LLM failed (``on_failure="fallback"``)."""
    from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer

    return _summarize(ExtractiveSummarizer(), rest, max_words, options.instructions, task_apart=task_apart)


def _restore(messages: Sequence[Message], options: FullOptions, context: StrategyContext) -> RestoreResult:
    if not options.restore or options.max_files <= 0:
        return RestoreResult((), ())
    return restore_recent_files(
        context.original or messages,
        work_dir=context.work_dir,
        max_files=options.max_files,
        max_tokens_per_file=options.max_tokens_per_file,
        max_tokens_total=options.max_tokens_total,
        tools=options.read_tools or read_tools_for(context.dialect),
        reader=context.reader,
        path_map=context.path_map,
        refused=context.session_dir_refused,
    )


def nothing_restored_warning(skipped: int, note: str) -> str:
    """The sentence saying no file of a session came back (the exit status stays 0: the
    summary stands), and where the files were looked for."""
    return f"no file could be restored: all {skipped} recently read files were skipped; {note}"
