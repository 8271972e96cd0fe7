"""Offload on a session log (Claude Code): references the agent can open, duplicates moved too.

Two things differ from offloading a bare message list (:mod:`ctxcompact.offload.tool_results`):

* **The reference is a path from the session's cwd.** The agent resumes in the folder the
  session records (``cwd``), not where ``offload`` ran, so ``./tool-result-…md`` would point
  nowhere. The reference names the out dir relative to that cwd when it lies inside it
  (``./.ctxcompact/offload/tool-result-…md``), else by its absolute path.
* **The ``toolUseResult`` duplicate moves with its result.** A Claude Code user entry holding
  a ``tool_result`` keeps a second copy of the output in the entry-level ``toolUseResult``
  field (the model never sees it, but it is most of the file's size). When the result is
  offloaded, that copy is offloaded too, as its own file ``tool-result-{id}-toolUseResult.md``
  in the same out dir and manifest (so ``--undo`` puts it back byte for byte, and the same
  rules hold: never overwritten, sha256-checked), and the field becomes the reference string.

Bare message lists are untouched by this module: their behaviour is the seed's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxcompact.ir import Message, Source
from ctxcompact.offload.store import OffloadWriter
from ctxcompact.offload.tool_results import (
    REFERENCE_RE,
    SEED_REFERENCE_DIR,
    OffloadResult,
    UndoResult,
    offload_tool_results,
    undo_offload,
)
from ctxcompact.transcripts.dialects import dialect_named
from ctxcompact.transcripts.dialects.common import RecordsFolder
from ctxcompact.transcripts.io import Conversation

FIELD = "toolUseResult"
#: The duplicate of tool_use id X is offloaded as if it were the result of ``X + SUFFIX``.
SUFFIX = "-toolUseResult"


def reference_dir_for(conversation: Conversation, out_dir: str | os.PathLike[str]) -> str:
    """How references name ``out_dir``: ``./`` for bare messages; for a session log
    that records its folder (Claude Code, Codex), ``./REL/`` when ``out_dir`` is inside the
    session's cwd, else its absolute path."""
    adapter = dialect_named(conversation.dialect)
    if not isinstance(adapter, RecordsFolder):
        return SEED_REFERENCE_DIR
    root = Path(out_dir).resolve()
    cwd = adapter.recorded_cwd(conversation.records)
    if cwd and Path(cwd).is_dir():
        try:
            rel = root.relative_to(Path(cwd).resolve())
        except ValueError:
            pass
        else:
            return "./" if rel == Path(".") else f"./{rel.as_posix()}/"
    return f"{root.as_posix().rstrip('/')}/"


def _duplicates(messages: Sequence[Message], wanted: Any) -> list[tuple[int, int, str, Any]]:
    """``(message, record, tool_use_id, toolUseResult)`` for each entry whose duplicate
    ``wanted(record, tool_use_id)`` selects."""
    found: list[tuple[int, int, str, Any]] = []
    for i, message in enumerate(messages):
        if message.source is None or message.role != "user":
            continue
        for k, record in enumerate(message.source.records):
            if not isinstance(record, Mapping) or FIELD not in record:
                continue
            inner = record.get("message")
            content = inner.get("content") if isinstance(inner, Mapping) else None
            ids: list[str] = [
                str(b["tool_use_id"])
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, Mapping)
                and b.get("type") == "tool_result"
                and isinstance(b.get("tool_use_id"), str)
            ]
            if len(ids) == 1 and wanted(record, ids[0]):
                found.append((i, k, ids[0], record[FIELD]))
    return found


def _with_fields(
    messages: Sequence[Message], found: Sequence[tuple[int, int, str, Any]], values: Sequence[Any]
) -> tuple[Message, ...]:
    """``messages`` with the duplicates at ``found`` set to ``values`` (changed copies)."""
    edits: dict[int, dict[int, Any]] = {}
    for (i, k, _, before), after in zip(found, values, strict=True):
        if after is not before:
            edits.setdefault(i, {})[k] = after
    out = list(messages)
    for i, by_record in edits.items():
        message = messages[i]
        assert message.source is not None
        records = tuple(
            {**r, FIELD: by_record[k]} if k in by_record else r for k, r in enumerate(message.source.records)
        )
        out[i] = Message(
            message.role, message.content, Source(records, message.source.indices), True, message.meta
        )
    return tuple(out)


def offload_duplicates(
    messages: Sequence[Message],
    offloaded: OffloadResult,
    *,
    out_dir: str | os.PathLike[str],
    reference_dir: str,
    writer: OffloadWriter | None = None,
) -> tuple[tuple[Message, ...], OffloadResult]:
    """Offload the ``toolUseResult`` duplicates of the results ``offloaded`` moved; returns
    the messages and the result of that second offload (for stats, and to discard it)."""
    ids = {e.tool_use_id for e in offloaded.entries}
    found = _duplicates(messages, lambda record, tool_id: tool_id in ids)
    blocks = tuple(
        {"type": "tool_result", "tool_use_id": tool_id + SUFFIX, "content": value}
        for _, _, tool_id, value in found
    )
    if not blocks:
        return tuple(messages), OffloadResult((), out_dir=str(Path(out_dir).resolve()))
    # The model never sees these copies: their tokens are not "freed", so none are counted.
    moved = offload_tool_results(
        [Message("user", blocks)],
        out_dir=out_dir,
        min_chars=1,
        reference_dir=reference_dir,
        writer=writer,
        measure_tokens=False,
    )
    values = [b.get("content") for b in moved.messages[0].content]
    return _with_fields(messages, found, values), moved


def undo_duplicates(
    messages: Sequence[Message], *, out_dir: str | os.PathLike[str], writer: OffloadWriter | None = None
) -> tuple[tuple[Message, ...], UndoResult]:
    """Put offloaded ``toolUseResult`` duplicates back (``offload --undo``)."""

    def is_reference(record: Mapping[str, Any], tool_id: str) -> bool:
        value = record.get(FIELD)
        match = REFERENCE_RE.match(value) if isinstance(value, str) else None
        return match is not None and SUFFIX in match.group("name")

    found = _duplicates(messages, is_reference)
    if not found:
        return tuple(messages), UndoResult((), out_dir=str(Path(out_dir).resolve()))
    blocks = tuple(
        {"type": "tool_result", "tool_use_id": tool_id + SUFFIX, "content": value}
        for _, _, tool_id, value in found
    )
    undone = undo_offload([Message("user", blocks)], out_dir=out_dir, writer=writer)
    values = [b.get("content") for b in undone.messages[0].content]
    return _with_fields(messages, found, values), undone
