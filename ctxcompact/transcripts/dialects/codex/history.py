"""What a Codex rollout records beside its items, and the history Codex compacts to.

* :func:`recorded_usage`: the API's own token usage from the newest ``event_msg`` of type
  ``token_count`` (``info.last_token_usage``, ``info.total_token_usage``,
  ``info.model_context_window``) — the figure ``count`` shows beside ours and ``check`` can
  decide from. Usage recorded before the newest ``compacted`` line no longer describes the
  live history and is not returned.
* :func:`compacted_history`: the message list Codex's ``build_compacted_history`` makes — the
  initial context (developer messages and Codex's injected user context), the newest real user
  messages verbatim up to ``keep_user_tokens`` approximate tokens (the one crossing the budget
  cut in the middle), then the summary as a user message with Codex's summary prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.ir import Message, new_message, text_of
from ctxcompact.markers import restored_file_paths
from ctxcompact.transcripts.dialects.codex.read import (
    CODEX_SUMMARY_PREFIX,
    KEEP_USER_TOKENS,
    is_session_prefix,
    is_summary,
    select_user_texts,
)
from ctxcompact.transcripts.dialects.rollout_usage import RolloutUsage, TokenUsage
from ctxcompact.transcripts.points import CompactionPoint, epoch_ms


def recorded_usage(records: Sequence[Any]) -> RolloutUsage | None:
    """The newest ``token_count`` usage after the newest ``compacted`` line, if any."""
    for i in range(len(records) - 1, -1, -1):
        record = records[i]
        if not isinstance(record, Mapping):
            continue
        if record.get("type") == "compacted":
            return None
        payload = record.get("payload")
        if record.get("type") != "event_msg" or not isinstance(payload, Mapping):
            continue
        if payload.get("type") != "token_count" or not isinstance(payload.get("info"), Mapping):
            continue
        info = payload["info"]
        last = TokenUsage.of(info.get("last_token_usage"))
        if last is None:
            continue
        window = info.get("model_context_window")
        return RolloutUsage(
            last=last,
            total=TokenUsage.of(info.get("total_token_usage")),
            context_window=window if isinstance(window, int) and not isinstance(window, bool) else None,
            line=i,
        )
    return None


def compaction_points(records: Sequence[Any]) -> list[CompactionPoint]:
    """Every ``compacted`` line (Codex's compactions and ours), oldest first: named by position
    (``#N``, the line's index) as a message list's points are — the summary is that line, the
    boundary the line before it — with the line's time."""
    return [
        CompactionPoint(f"#{i}", f"#{i - 1}", epoch_ms(record.get("timestamp")))
        for i, record in enumerate(records)
        if isinstance(record, Mapping) and record.get("type") == "compacted"
    ]


def _is_context(message: Message) -> bool:
    if message.role == "system":
        return True
    return message.role == "user" and is_session_prefix(text_of(message))


def _is_user_turn(message: Message) -> bool:
    """A message the user wrote: not a tool output, Codex's injected context, a summary, or a
    file an earlier compaction restored (restoration brings back the current ones; keeping
    them as user messages would pile them up compaction after compaction)."""
    if message.role != "user" or any(b.get("type") == "tool_result" for b in message.content):
        return False
    if restored_file_paths(message):
        return False
    text = text_of(message)
    return bool(text.strip()) and not is_session_prefix(text) and not is_summary(text)


def compacted_history(
    messages: Sequence[Message], summary: str, *, keep_user_tokens: int = KEEP_USER_TOKENS
) -> tuple[Message, ...]:
    """Codex's compacted history for ``messages`` with ``summary`` (see the module docstring).

    Messages kept whole are the very same objects (written back from their raw items); a user
    message cut to the budget and the summary are new.
    """
    context = [m for m in messages if _is_context(m)]
    turns = [m for m in messages if _is_user_turn(m)]
    texts = [text_of(m) for m in turns]
    selected = select_user_texts(texts, keep_user_tokens) if keep_user_tokens > 0 else []
    kept: list[Message] = []
    # select_user_texts returns the newest ones, oldest first; the first may be cut.
    for message, text in zip(turns[len(turns) - len(selected) :], selected, strict=True):
        kept.append(message if text == text_of(message) else new_message("user", text))
    body = summary if summary else "(no summary available)"
    return (
        *context,
        *kept,
        new_message("user", f"{CODEX_SUMMARY_PREFIX}\n{body}", kind="summary"),
    )
