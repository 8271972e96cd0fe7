"""The three hooks: before the agent compacts, after it compacted, when it starts again.

* :func:`pre_compact` backs the session file up into the archive (always: one copy of its
  bytes) and, with ``replace``, compacts the session itself — ctxcompact's strategy and
  summarizer, written the agent's own way: appended to a Codex rollout, into a new Claude
  Code session (see :func:`_replace`) — and answers with a block, so the agent's compaction
  does not run and resuming the session the answer names starts from ours.
* :func:`post_compact` records the agent's summary and scores it with ``eval``'s probes
  against the history it replaced (the backup, else the file before its last compaction).
* :func:`session_start` (source ``compact``) re-injects what must survive
  (:mod:`ctxcompact.agents.survive`) and the new context lost.

Each returns a :class:`HookAnswer` (the JSON for stdout, lines for stderr) and writes only
into the archive (and, for ``replace``, the rollout or the new session). The new context is
only trusted when the session file already holds a compaction newer than the history it is
scored against; otherwise the summary the agent handed over (or recorded) is the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxcompact.agents.compactions import find_compactions, history_before, split_lines
from ctxcompact.agents.events import (
    CLAUDE_CODE,
    HookEvent,
    block_answer,
    context_answer,
    resume_command,
    transcript_of,
)
from ctxcompact.agents.store import (
    add_record,
    back_up,
    iso,
    last_record,
    latest_backup,
    now_utc,
    read_records,
)
from ctxcompact.agents.survive import (
    MAX_CONTEXT_CHARS,
    check_items,
    file_items,
    pinned_items,
    reinjection_text,
)
from ctxcompact.batch.files import FileOptions
from ctxcompact.compaction.pins import PinOptions
from ctxcompact.errors import CtxcompactError, WorkFailedError
from ctxcompact.evaluation.probes import context_text, extract_probes, restored_paths, score_probes
from ctxcompact.ir import Message
from ctxcompact.transcripts.fileio import read_bytes
from ctxcompact.transcripts.io import parse_transcript

#: How many lost probes a ``post-compact`` note names on stderr (all are recorded).
NOTE_LOST = 5


@dataclass(frozen=True, slots=True)
class HookSettings:
    """``archive_dir``: where backups and records go; ``pins`` and ``survive`` (file specs):
    what must survive; ``replace``: our compaction for ``pre-compact`` (None: back up only)."""

    archive_dir: Path
    pins: PinOptions = field(default_factory=PinOptions)
    survive: tuple[str, ...] = ()
    replace: FileOptions | None = None
    max_context_chars: int = MAX_CONTEXT_CHARS


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What the hook answers: ``output`` (the JSON object for stdout; None: nothing) and
    ``notes`` (lines for stderr, which the agents show in their logs)."""

    output: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()


def pre_compact(event: HookEvent, settings: HookSettings, *, moment: datetime | None = None) -> HookAnswer:
    """Back the session up; with ``settings.replace``, compact it ourselves and block the agent."""
    moment = moment or now_utc()
    path = transcript_of(event)
    _, raw = read_bytes(path)
    trigger = event.trigger or "manual"
    backup = back_up(
        raw,
        archive_dir=settings.archive_dir,
        agent=event.agent,
        session_id=event.session_id,
        label=f"pre-compact-{trigger}",
        moment=moment,
    )
    record: dict[str, Any] = {
        "event": "pre-compact",
        "at": iso(moment),
        "trigger": trigger,
        "transcript": str(path),
        "backup": str(backup),
        "bytes": len(raw),
        "replaced": False,
    }
    notes = [f"ctxcompact: session backed up to {backup}"]
    answer = None
    if settings.replace is not None:
        answer, note = _replace(event, path, settings.replace, record)
        notes.append(note)
    add_record(settings.archive_dir, event.agent, event.session_id, record)
    return HookAnswer(answer, tuple(notes))


def _replace(
    event: HookEvent, path: Path, options: FileOptions, record: dict[str, Any]
) -> tuple[dict[str, Any] | None, str]:
    """Our compaction of the session, written where the agent resumes it from; the block
    answer when it compacted.

    The agent goes on from the context it holds in memory, writing on. Codex only appends to
    its rollout, and resumes from the newest ``compacted`` line and the items after it, so
    ours is appended to the rollout (``O_APPEND``,
    :func:`~ctxcompact.transcripts.inplace.replace_in_place`: a result that would rewrite the
    file is left unwritten, and the agent compacts as usual). Claude Code chains each entry
    to the one before it in memory and resumes from its newest entries: everything it writes
    after the block descends from its last entry before the compaction, and a compaction
    appended to its session would never be resumed. Ours goes into a new session beside it
    (:func:`~ctxcompact.agents.uncompact.write_new_session`: the session's lines, then our
    boundary and summary), which Claude Code does not write to."""
    from ctxcompact.agents.uncompact import write_new_session
    from ctxcompact.batch.files import compact_transcript
    from ctxcompact.transcripts.inplace import replace_in_place
    from ctxcompact.transcripts.io import dump_transcript

    target, session_id = path, event.session_id
    try:
        transcript = parse_transcript(read_bytes(path)[1], name=str(path))
        raw = transcript.raw or b""
        done = compact_transcript(transcript, str(path), options=options)
        result = done.results[0] if done.results else None
        if result is not None and result.compacted:
            data = dump_transcript(done.transcript)
            if event.agent == CLAUDE_CODE:
                new = write_new_session(path, data, CLAUDE_CODE)
                target, session_id = new.path, new.session_id
            elif data.startswith(raw):
                replace_in_place(path, raw, data, lines=True)
            else:
                raise WorkFailedError("its compaction would rewrite the session rather than append to it")
    except CtxcompactError as exc:
        record["error"] = str(exc)
        return None, f"ctxcompact: our compaction failed, the agent compacts as usual: {exc}"
    if result is None or not result.compacted:
        reason = result.stats.reason if result is not None else "nothing to compact"
        record["error"] = reason
        return None, f"ctxcompact: nothing compacted ({reason}); the agent compacts as usual."
    stats = result.stats
    record.update(
        replaced=True,
        tokens_before=stats.original_tokens,
        tokens_after=stats.compacted_tokens,
        session=str(target),
        session_id=session_id,
    )
    where = (
        f"its summary is appended to {path.name}"
        if target == path
        else f"into a new session, {session_id}: this session's history, then ctxcompact's summary"
    )
    reason = (
        f"ctxcompact compacted this session itself ({stats.original_tokens:,} → "
        f"{stats.compacted_tokens:,} tokens; {where}), so the agent's own compaction was "
        f"skipped. To continue from ctxcompact's summary, resume "
        f"{'the session' if target == path else 'that session'}: "
        f"{resume_command(event.agent, session_id)}"
    )
    return block_answer(event.agent, reason), f"ctxcompact: {reason}"


def post_compact(event: HookEvent, settings: HookSettings, *, moment: datetime | None = None) -> HookAnswer:
    """Record the agent's summary and what of the history it kept."""
    moment = moment or now_utc()
    view = _SessionView.read(event, settings.archive_dir)
    summary = event.compact_summary or view.codex_summary()
    record: dict[str, Any] = {
        "event": "post-compact",
        "at": iso(moment),
        "trigger": event.trigger or "manual",
    }
    if summary:
        record["summary"] = summary
    context, restored = view.new_context(summary)
    if context is None:
        record["error"] = "no summary found to score"
        add_record(settings.archive_dir, event.agent, event.session_id, record)
        return HookAnswer(notes=("ctxcompact: no summary of this compaction found; nothing scored.",))
    report = score_probes(extract_probes(view.history), context, restored=restored)
    record.update(
        kept=report.kept,
        total=report.total,
        by_kind={k.kind: [k.kept, k.total] for k in report.kinds if k.total},
        lost=[{"kind": p.kind, "text": p.text} for p in report.lost],
        backup=str(view.backup) if view.backup else None,
    )
    add_record(settings.archive_dir, event.agent, event.session_id, record)
    if not report.total:
        return HookAnswer(notes=("ctxcompact: the compacted history held no probes to score.",))
    shown = "; ".join(f"{p.kind} {p.text[:60]!r}" for p in report.lost[:NOTE_LOST])
    more = f" (+{len(report.lost) - NOTE_LOST} more)" if len(report.lost) > NOTE_LOST else ""
    note = f"ctxcompact: the agent's summary kept {report.kept} of {report.total} facts of the history"
    return HookAnswer(notes=(note + (f"; lost: {shown}{more}" if report.lost else "."),))


def session_start(event: HookEvent, settings: HookSettings, *, moment: datetime | None = None) -> HookAnswer:
    """After a compaction (source ``compact``): re-inject what must survive and was lost."""
    if event.source != "compact":
        return HookAnswer()
    moment = moment or now_utc()
    view = _SessionView.read(event, settings.archive_dir)
    items = pinned_items(view.history, settings.pins)
    found, warnings = file_items(settings.survive, cwd=Path(event.cwd) if event.cwd else None)
    items.extend(found)
    notes = [f"ctxcompact: {w}" for w in warnings]
    if not items:
        return HookAnswer(notes=tuple(notes))
    recorded = last_record(view.records, "post-compact")
    summary = recorded.get("summary") if recorded else None
    context, _ = view.new_context(summary if isinstance(summary, str) else view.codex_summary())
    # Without the new context nothing can be checked: everything is brought back.
    check = check_items(items, context) if context is not None else None
    lost = check.lost if check is not None else tuple(items)
    add_record(
        settings.archive_dir,
        event.agent,
        event.session_id,
        {
            "event": "session-start",
            "at": iso(moment),
            "reinjected": [i.label for i in lost],
            "held": [i.label for i in check.held] if check is not None else [],
        },
    )
    if not lost:
        notes.append(f"ctxcompact: the new context holds all {len(items)} items that must survive.")
        return HookAnswer(notes=tuple(notes))
    notes.append(
        f"ctxcompact: re-injected {len(lost)} of {len(items)} items: {', '.join(i.label for i in lost)}"
    )
    return HookAnswer(context_answer(reinjection_text(lost, limit=settings.max_context_chars)), tuple(notes))


@dataclass(frozen=True, slots=True)
class _SessionView:
    """A session file read for a hook: its compactions now, and the history compacted last
    (the newest backup, else the file before its newest compaction)."""

    raw: bytes
    compactions_now: int
    history: tuple[Message, ...]
    history_compactions: int
    backup: Path | None
    records: tuple[dict[str, Any], ...]
    name: str

    @classmethod
    def read(cls, event: HookEvent, archive_dir: Path) -> _SessionView:
        path = transcript_of(event)
        _, raw = read_bytes(path)
        records = read_records(archive_dir, event.agent, event.session_id)
        now = find_compactions(split_lines(raw))
        backup = latest_backup(records)
        if backup is not None:
            _, before = read_bytes(backup)
            count = len(find_compactions(split_lines(before)))
        elif now:
            before, count = history_before(raw, now[-1]), len(now) - 1
        else:
            before, count = raw, 0
        history = _messages(before, str(backup or path))
        return cls(raw, len(now), history, count, backup, tuple(records), str(path))

    def new_context(self, summary: str | None) -> tuple[str | None, tuple[str, ...]]:
        """The context after the compaction (text, restored files), or None when unknown."""
        parts: list[str] = []
        restored: tuple[str, ...] = ()
        if self.compactions_now > self.history_compactions:
            live = _messages(self.raw, self.name)
            parts.append(context_text(live))
            restored = restored_paths(live)
        if summary and not any(summary in p for p in parts):
            parts.append(summary)
        return ("\n".join(parts), restored) if parts else (None, ())

    def codex_summary(self) -> str | None:
        """The summary of the newest ``compacted`` line of a rollout, if any."""
        lines = split_lines(self.raw)
        for c in reversed(find_compactions(lines)):
            record = lines[c.first].record or {}
            payload = record.get("payload")
            if record.get("type") == "compacted" and isinstance(payload, dict):
                message = payload.get("message")
                return message if isinstance(message, str) and message else None
        return None


def _messages(raw: bytes, name: str) -> tuple[Message, ...]:
    if not raw.strip():
        return ()
    transcript = parse_transcript(raw, name=name)
    return tuple(m for conv in transcript.conversations[:1] for m in conv.messages)
