"""Full compaction: summary of everything after the head, plus restored files (seed 000).

Assembly (F-006), with the seed's exact strings::

    [...head]
    user:      "[Conversation compressed]\\n\\n{summary}"
    assistant: "Understood. I have the context from the compressed conversation. Continuing work."
    for each restored file (newest read first):
        user:      "[Restored after compact] {path}:\\n{content}"
        assistant: "Noted, file content restored."

User and assistant strictly alternate. With ``keep_loop`` the last user request and everything after it (its tool loop) follow the
restored files unchanged, so a request body about to be sent still asks its question and an
assistant turn in the middle of a tool loop keeps its thinking blocks.

Repeated compaction (UC-005) needs nothing special: an
earlier summary and earlier restored files are ordinary messages of the rest, so they are
summarized again and the files restored afresh.

Failure handling (F-008, UC-006): the summarizer does its own bounded retries; when it still
fails, ``on_failure`` decides — ``fallback`` (default) summarizes with the offline extractive
summarizer, ``skip`` returns the input unchanged with a warning, ``error`` raises
:class:`~ctxcompact.summarize.SummaryFailed` (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxcompact.ir import Message, current_loop_start, new_message
from ctxcompact.markers import RESTORED_ACK, SUMMARY_ACK, SUMMARY_PREFIX
from ctxcompact.names import OnFailure
from ctxcompact.partition import Partition, partition_messages
from ctxcompact.restore import (
    DEFAULT_READ_TOOLS,
    FileReader,
    ReadTool,
    RestoreResult,
    restore_recent_files,
    restored_message_text,
)
from ctxcompact.strategies.base import StrategyResult
from ctxcompact.summarize import Summarizer, SummaryFailed
from ctxcompact.tokens import TokenCounter


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


def full_compaction(
    messages: Sequence[Message],
    *,
    summarizer: Summarizer,
    fallback: Summarizer | None = None,
    on_failure: OnFailure = OnFailure.fallback,
    max_words: int = 1200,
    instructions: str | None = None,
    restore: bool = True,
    keep_loop: bool = False,
    work_dir: str | Path = ".",
    read_tools: Sequence[ReadTool] = DEFAULT_READ_TOOLS,
    max_files: int = 5,
    max_tokens_per_file: int = 5000,
    max_tokens_total: int = 50_000,
    reader: FileReader | None = None,
    file_counter: TokenCounter | None = None,
    read_scan: Sequence[Message] | None = None,
) -> StrategyResult:
    """Replace everything after the head with a summary and the recently read files.

    Files are looked up in the *whole* list (F-005: head and rest), relative to ``work_dir``;
    ``read_scan`` is the list to scan instead — in a pipeline, the transcript as read, since an
    earlier step (``prune --clear-tool-inputs``) may have blanked the read calls' inputs.
    Stats: ``compacted_message_count``, ``retained_message_count``, ``restored_file_count``,
    ``restored_token_count``, ``summarizer``, ``attempts``, ``chunks``, ``summary``,
    ``skipped_files`` and, when the LLM failed, ``summary_error``.
    """
    part = partition_messages(messages)
    kept_tail: tuple[Message, ...] = ()
    if keep_loop:
        # The live request and its tool loop stay verbatim after the summary (seed 004: the
        # current loop is never compacted), so the result is still a request to send.
        start = max(current_loop_start(messages), len(part.head))
        kept_tail = tuple(messages[start:])
        part = Partition(part.head, tuple(messages[len(part.head) : start]))
    if not part.rest:
        return StrategyResult(
            tuple(messages),
            False,
            {"compacted_message_count": 0},
            (
                "nothing to compact before the current request (--keep-loop)"
                if keep_loop
                else "nothing to compact: no message after the system prompt",
            ),
        )

    warnings: list[str] = []
    stats: dict[str, Any] = {}
    try:
        summary = summarizer.summarize(part.rest, max_words=max_words, instructions=instructions)
    except SummaryFailed as exc:
        stats["summary_error"] = str(exc)
        if on_failure == "error" or (on_failure == "fallback" and fallback is None):
            raise
        if on_failure == "skip":
            return StrategyResult(
                tuple(messages),
                False,
                {"summary_error": str(exc), "compacted_message_count": 0},
                (f"summarizer failed ({exc}); compaction skipped, transcript unchanged",),
            )
        assert fallback is not None
        warnings.append(f"summarizer failed ({exc}); used the {fallback.name} summarizer instead")
        summary = fallback.summarize(part.rest, max_words=max_words, instructions=instructions)
        stats["attempts_failed"] = getattr(exc, "attempts", None)

    restored = RestoreResult((), ())
    if restore and max_files > 0:
        restored = restore_recent_files(
            messages if read_scan is None else read_scan,
            work_dir=work_dir,
            max_files=max_files,
            max_tokens_per_file=max_tokens_per_file,
            max_tokens_total=max_tokens_total,
            tools=read_tools,
            reader=reader,
            counter=file_counter,
        )
        warnings.extend(f"file not restored: {s.path} ({s.reason})" for s in restored.skipped)

    if not summary.text.strip():
        warnings.append("the summary is empty")
    out = assemble(part.head, summary.text, restored) + kept_tail
    stats.update(
        {
            "compacted_message_count": len(part.rest),
            "kept_loop_message_count": len(kept_tail),
            "retained_message_count": len(part.head),
            "restored_file_count": len(restored.files),
            "restored_token_count": restored.tokens,
            "restored_files": [f.path for f in restored.files],
            "skipped_files": [{"path": s.path, "reason": s.reason} for s in restored.skipped],
            "summarizer": summary.summarizer,
            "summary_model": summary.model,
            "attempts": summary.attempts,
            "chunks": summary.chunks,
            "summary": summary.text,
        }
    )
    return StrategyResult(out, True, stats, tuple(warnings))
