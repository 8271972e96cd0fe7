"""``restore-files`` as a core call: the files an agent read last, as message pairs.

:func:`restore_files` finds and re-reads the files (the rules are
:func:`ctxcompact.compaction.restore.restore_recent_files`'s) and builds the restored-file message
pairs the full strategy would append; :func:`appended_transcript` and :func:`dump_pairs`
give the two outputs the command offers. Nothing here prints or writes files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxcompact.compaction.restore import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS_PER_FILE,
    DEFAULT_MAX_TOKENS_TOTAL,
    FileReader,
    PathMap,
    ReadTool,
    RestoreResult,
    WorkDir,
    read_tools_for,
    restore_recent_files,
    work_dir_for,
)
from ctxcompact.compaction.strategies.full import restored_pairs
from ctxcompact.errors import InputError, OptionError
from ctxcompact.ir import Message
from ctxcompact.transcripts.dialects import dialect_named
from ctxcompact.transcripts.dialects.common import NativeCompaction
from ctxcompact.transcripts.io import Conversation, Transcript, dump_records
from ctxcompact.transcripts.jsontext import dumps

_CURRENT_DIR = WorkDir(Path("."))


@dataclass(frozen=True, slots=True)
class RestoreFilesResult:
    """The transcript read, its one conversation, the files restored or skipped (with
    reasons), and the (file, acknowledgement) message pairs in the transcript's dialect."""

    transcript: Transcript
    conversation: Conversation
    restore: RestoreResult
    pairs: tuple[Message, ...]
    work_dir: WorkDir = _CURRENT_DIR

    @property
    def warnings(self) -> tuple[str, ...]:
        """Said for a session when files were found but none could be restored (exit status 0)."""
        from ctxcompact.compaction.strategies.full import nothing_restored_warning

        if self.restore.files or not self.restore.skipped or not self.work_dir.note:
            return ()
        return (nothing_restored_warning(len(self.restore.skipped), self.work_dir.note),)


def restore_files(
    transcript: Transcript,
    *,
    work_dir: str | Path | None = None,
    path_map: PathMap = (),
    read_tools: Sequence[ReadTool] | None = None,
    max_files: int = DEFAULT_MAX_FILES,
    max_tokens_per_file: int = DEFAULT_MAX_TOKENS_PER_FILE,
    max_tokens_total: int = DEFAULT_MAX_TOKENS_TOTAL,
    reader: FileReader | None = None,
    trust_session_cwd: bool = False,
) -> RestoreFilesResult:
    """Re-read the files the transcript's agent read last. ``read_tools`` None: the
    dialect's own (``read_file:path``, plus ``Read:file_path`` for Claude Code).
    ``work_dir`` None: a session's own ``cwd`` when it exists and may be read (inside the
    current directory, re-rooted by ``path_map``, or ``trust_session_cwd``), else the current
    directory; ``path_map`` re-roots the recorded paths. The transcript must hold one conversation."""
    for name, value in (
        ("max_files", max_files),
        ("max_tokens_per_file", max_tokens_per_file),
        ("max_tokens_total", max_tokens_total),
    ):
        if value < 0:
            raise OptionError.about(name, "must not be negative.")
    if len(transcript.conversations) != 1:
        raise InputError(
            f"{transcript.name} holds {len(transcript.conversations)} conversations; restore-files takes one."
        )
    conv = transcript.conversations[0]
    where = work_dir_for(
        conv.dialect,
        conv.records,
        Path(work_dir) if work_dir is not None else None,
        path_map,
        trust_session_cwd=trust_session_cwd,
    )
    result = restore_recent_files(
        conv.messages,
        work_dir=where.path,
        path_map=path_map,
        max_files=max_files,
        max_tokens_per_file=max_tokens_per_file,
        max_tokens_total=max_tokens_total,
        tools=tuple(read_tools) if read_tools else read_tools_for(conv.dialect),
        reader=reader,
        refused=where.refused,
    )
    return RestoreFilesResult(
        transcript, conv, result, _as_the_agent_writes(conv, restored_pairs(result)), where
    )


def _as_the_agent_writes(conv: Conversation, pairs: Sequence[Message]) -> tuple[Message, ...]:
    """The restored-file messages as the session's own agent writes them: a dialect that
    compacts natively (Claude Code) gets them in its layout — no invented acknowledgement,
    which would be an assistant entry without the model, id and usage Claude Code needs."""
    adapter = dialect_named(conv.dialect)
    if not isinstance(adapter, NativeCompaction):
        return tuple(pairs)
    laid = adapter.compaction_layout(pairs)
    return tuple(part for message in laid for part in message.meta.get("parts", (message,)))


def appended_transcript(result: RestoreFilesResult) -> Transcript:
    """The whole transcript with the pairs appended. Refused (exit 2) when the last message
    is a tool call still waiting for its result: appending after it would orphan the call."""
    conv = result.conversation
    last = conv.messages[-1] if conv.messages else None
    if (
        last is not None
        and last.role == "assistant"
        and any(b.get("type") == "tool_use" for b in last.content)
    ):
        raise InputError(
            f"{result.transcript.name}: the last message is a tool call still waiting for its result; "
            "appending after it would orphan the call. Append once the results are in."
        )
    return result.transcript.with_conversations([conv.with_messages([*conv.messages, *result.pairs])])


def dump_pairs(result: RestoreFilesResult) -> bytes:
    """The pairs alone, as records in the transcript's own form: JSONL for JSONL and Claude
    Code sessions, else an indented JSON array. They are made whole as if appended (a
    session's entries get unique uuids chained after its last entry), so they can be."""
    adapter = dialect_named(result.conversation.dialect)
    original = list(result.conversation.records)
    rendered = [r for m in result.pairs for r in adapter.render(m)]
    records = adapter.finalize([*original, *rendered], original)[len(original) :]
    if result.transcript.line_per_record:
        return dump_records(records)
    return dumps(records, indent=True) + b"\n"
