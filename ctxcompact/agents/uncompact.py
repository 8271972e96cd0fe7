"""Undo a compaction: take ours out of a session, or fork a session from before the agent's.

**Ours** (:func:`remove_ours`): ctxcompact only ever appends its compaction to a session
(a boundary and the entries after it, or one ``compacted`` line), so removing it gives the
file back as it was. When nothing was written after it, the file is cut back on its own inode
(no rename: an agent holding it open keeps writing into it) and is then byte for byte what it
was before we compacted it — a final newline we had added included. When the agent wrote
after it, those lines are kept (a Claude Code entry that continued our chain is linked to the
entry before our boundary instead) and the file is replaced by a rename, keeping
``FILE.bak``, only while it still holds what was read.

**The agent's** (:func:`fork_session`): an agent's compaction cannot be taken out of a file
the agent owns, and need not be: the history before it is still there. A fork is a new
session (a new id, in the agent's own layout and naming) holding the file's lines before the
chosen compaction, so resuming it (``claude --resume ID``, ``codex resume ID``) starts from
the context the agent had just before compacting. Nothing of the original is changed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxcompact.agents.compactions import Compaction, Line, find_compactions, history_before, split_lines
from ctxcompact.agents.events import CODEX
from ctxcompact.errors import InputError, WorkFailedError
from ctxcompact.transcripts.fileio import read_bytes, write_new_file
from ctxcompact.transcripts.inplace import cut_in_place, live_reason, rewrite_in_place
from ctxcompact.transcripts.jsontext import dumps, loads


@dataclass(frozen=True, slots=True)
class Removed:
    """What :func:`remove_ours` did: the compaction taken out, how many lines written after
    it were kept, and the backup when the file had to be replaced."""

    path: Path
    compaction: Compaction
    kept_after: int
    backup: Path | None


@dataclass(frozen=True, slots=True)
class Fork:
    """A new session made by :func:`fork_session`: its file and id, the compaction it was
    cut before, and its live context against the model's window."""

    source: Path
    path: Path
    session_id: str
    agent: str
    compaction: Compaction
    tokens: int
    context_window: int
    model: str | None

    @property
    def over_window(self) -> bool:
        return self.tokens > self.context_window


@dataclass(frozen=True, slots=True)
class NewSession:
    """A session written by :func:`write_new_session`: its file, id and bytes."""

    path: Path
    session_id: str
    data: bytes


def list_compactions(path: str | os.PathLike[str]) -> list[Compaction]:
    """The compactions of a session file, oldest first."""
    _, raw = read_bytes(path)
    return find_compactions(split_lines(raw))


def remove_ours(path: str | os.PathLike[str], *, force: bool = False) -> Removed:
    """Take ctxcompact's last compaction out of ``path`` (see the module docstring)."""
    target = Path(path)
    _, raw = read_bytes(target)
    lines = split_lines(raw)
    found = find_compactions(lines)
    ours = [c for c in found if c.ours]
    if not ours:
        raise InputError(
            f"{target}: holds no compaction of ctxcompact's"
            + (" (only the agent's: fork before one with --fork)." if found else ".")
        )
    last = ours[-1]
    if last is not found[-1]:
        raise InputError(
            f"{target}: the agent compacted it again after ctxcompact did (compaction {found[-1].number}); "
            f"fork before compaction {last.number} instead (--fork --at {last.number})."
        )
    if not force:
        reason = live_reason(target, raw, session=True)
        if reason is not None:
            raise WorkFailedError(
                f"{target}: looks live — {reason}; changing it now could lose what its agent writes "
                "next. Try again when it is idle, or pass --force."
            )
    after = lines[last.last + 1 :]
    if not any(line.record is not None or raw[line.start : line.end].strip() for line in after):
        cut_in_place(target, raw, len(history_before(raw, last)))
        return Removed(target, last, 0, None)
    return _remove_with_later_lines(target, last)


def _remove_with_later_lines(target: Path, last: Compaction) -> Removed:
    kept: list[int] = []

    def produce() -> tuple[bytes, bytes, bool]:
        _, raw = read_bytes(target)
        lines = split_lines(raw)
        found = find_compactions(lines)
        if not found or not found[-1].ours or found[-1].start != last.start:
            raise InputError(f"{target}: changed while it was read; run uncompact again.")
        mine = found[-1]
        relink = _relink_map(lines, mine)
        tail = [_relinked(raw, line, relink) for line in lines[mine.last + 1 :]]
        kept[:] = [len(tail)]
        return raw, raw[: mine.start] + b"".join(tail), True

    written = rewrite_in_place(target, produce)
    return Removed(target, last, kept[0] if kept else 0, written.backup)


def _relink_map(lines: list[Line], ours: Compaction) -> dict[str, Any]:
    """Our entries' uuids → the entry before our boundary (Claude Code); {} for Codex."""
    boundary = lines[ours.first].record or {}
    parent = boundary.get("logicalParentUuid")
    uuids = {
        str(line.record["uuid"])
        for line in lines[ours.first : ours.last + 1]
        if line.record is not None and isinstance(line.record.get("uuid"), str)
    }
    return dict.fromkeys(uuids, parent)


def _relinked(raw: bytes, line: Line, relink: Mapping[str, Any]) -> bytes:
    text = raw[line.start : line.end]
    record = line.record
    if record is None or record.get("parentUuid") not in relink:
        return text
    value, error = loads(text)
    if error is not None or not isinstance(value, dict):
        return text
    value["parentUuid"] = relink[str(record["parentUuid"])]
    return dumps(value) + b"\n"


# --- forks -------------------------------------------------------------------------------------


def fork_session(
    path: str | os.PathLike[str],
    *,
    at: int | None = None,
    model: str | None = None,
    now: datetime | None = None,
    new_id: str | None = None,
) -> Fork:
    """A new session holding ``path``'s lines before compaction ``at`` (1 = the oldest;
    default the agent's newest), written beside it in the agent's layout."""
    source = Path(path)
    _, raw = read_bytes(source)
    lines = split_lines(raw)
    found = find_compactions(lines)
    chosen = _chosen(source, found, at)
    head = history_before(raw, chosen)
    agent = CODEX if _is_rollout(lines) else "claude-code"
    copy = write_new_session(source, head, agent, now=now, new_id=new_id)
    tokens, window, used_model = _live_size(copy.data, str(copy.path), model)
    return Fork(source, copy.path, copy.session_id, agent, chosen, tokens, window, used_model)


def write_new_session(
    source: Path, data: bytes, agent: str, *, now: datetime | None = None, new_id: str | None = None
) -> NewSession:
    """``data`` (lines of the session ``source``) written as a new session of ``agent`` beside
    ``source``: a new id (Codex: a UUID v7) where the agent records it, the agent's naming and
    folders (Claude Code: ``NEW_ID.jsonl`` in the same project folder; Codex:
    ``sessions/YYYY/MM/DD/rollout-TIME-NEW_ID.jsonl``). Never replaces a file."""
    moment = now or datetime.now(UTC)
    session_id = new_id or (_uuid7(moment) if agent == CODEX else str(uuid.uuid4()))
    data = _with_session_id(data, split_lines(data), session_id, agent)
    target = _fork_path(source, session_id, agent, moment)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_new_file(target, data, mode_of=source)
    except FileExistsError:
        raise WorkFailedError(f"{target}: exists already; nothing was written.") from None
    except OSError as exc:
        raise WorkFailedError(f"{target}: cannot write the new session ({exc.strerror or exc}).") from None
    return NewSession(target, session_id, data)


def _chosen(source: Path, found: list[Compaction], at: int | None) -> Compaction:
    if not found:
        raise InputError(f"{source}: has not been compacted; there is nothing to fork before.")
    if at is None:
        agents = [c for c in found if not c.ours]
        return agents[-1] if agents else found[-1]
    if not 1 <= at <= len(found):
        raise InputError(f"{source}: has {len(found)} compaction(s); --at takes 1 to {len(found)}.")
    return found[at - 1]


def _is_rollout(lines: list[Line]) -> bool:
    first = next((line.record for line in lines if line.record is not None), None)
    return first is not None and first.get("type") == "session_meta"


def _with_session_id(raw: bytes, lines: list[Line], session_id: str, agent: str) -> bytes:
    """``raw`` with the session id changed where the agent records it: every Claude Code
    entry's ``sessionId``; a Codex rollout's ``session_meta`` ``payload.id`` and (Codex 0.169,
    which resumes a rollout under it) ``payload.session_id``. Other lines are kept byte for
    byte."""
    out: list[bytes] = []
    for line in lines:
        text = raw[line.start : line.end]
        record = line.record
        wanted = record is not None and (
            ("sessionId" in record)
            if agent != CODEX
            else record.get("type") == "session_meta" and isinstance(record.get("payload"), Mapping)
        )
        if not wanted:
            out.append(text)
            continue
        value, error = loads(text)
        if error is not None or not isinstance(value, dict):
            out.append(text)
            continue
        if agent == CODEX:
            ids = {"id": session_id} | (
                {"session_id": session_id} if "session_id" in value["payload"] else {}
            )
            value["payload"] = {**value["payload"], **ids}
        else:
            value["sessionId"] = session_id
        out.append(dumps(value) + (b"\n" if text.endswith(b"\n") else b""))
    return b"".join(out)


def _fork_path(source: Path, session_id: str, agent: str, moment: datetime) -> Path:
    if agent != CODEX:
        return source.with_name(f"{session_id}.jsonl")
    name = f"rollout-{moment.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"
    parents = source.parents
    dated = len(parents) >= 4 and all(p.name.isdigit() for p in (parents[0], parents[1], parents[2]))
    if dated:
        return parents[3] / moment.strftime("%Y") / moment.strftime("%m") / moment.strftime("%d") / name
    return source.with_name(name)


def _uuid7(moment: datetime) -> str:
    """A UUID version 7 (time-ordered, as Codex's thread ids are)."""
    millis = int(moment.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (
        (millis << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    )
    return str(uuid.UUID(int=value))


def _live_size(data: bytes, name: str, model: str | None) -> tuple[int, int, str | None]:
    """The fork's live context as ``check`` sizes it, and the model's window."""
    from ctxcompact.accounting.check import budget_for, check_conversation
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.transcripts.io import parse_transcript

    conversation = parse_transcript(data, name=name).conversations[0]
    budget = budget_for(conversation, model=model)
    result = check_conversation(conversation, budget=budget, counter=make_counter(), validate=False)
    tokens = result.size.tokens if result.size is not None else result.report.total
    return tokens, budget.model.context_window, budget.model.model
