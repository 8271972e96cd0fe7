"""Session backups and the record of each agent compaction, kept in the archive.

Everything of one session lives in one folder of the archive
(``ARCHIVE/sessions/AGENT/SESSION_ID/``, the archive being ``compact``'s, by default
``$XDG_STATE_HOME/ctxcompact/archive``):

* ``UTC-TRIGGER.jsonl``: a byte-for-byte copy of the session file taken just before the
  agent compacted it (written atomically, never over another file);
* ``compactions.jsonl``: one JSON line per hook call — what was backed up, whether our own
  compaction replaced the agent's, the agent's summary and how many of the history's probes
  it kept, what was re-injected after it. Appended with ``O_APPEND``, so hooks of parallel
  sessions never interleave a line.

Records are plain JSON objects with an ``event`` key (``pre-compact``, ``post-compact``,
``session-start``) and an ``at`` time; readers skip lines they cannot parse.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxcompact.errors import InputError, WorkFailedError
from ctxcompact.transcripts.fileio import append_fully, write_new_file

SESSIONS_SUBDIR = "sessions"
RECORDS_NAME = "compactions.jsonl"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def session_folder(archive_dir: Path, agent: str, session_id: str) -> Path:
    """The session's folder in the archive; a session id that could leave it is refused."""
    if not _SAFE_ID.match(session_id) or ".." in session_id:
        raise InputError(f"hook: session id {session_id!r} is not a plain name; nothing was written.")
    return archive_dir / SESSIONS_SUBDIR / agent / session_id


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def back_up(
    raw: bytes, *, archive_dir: Path, agent: str, session_id: str, label: str, moment: datetime
) -> Path:
    """Write ``raw`` (the session file's bytes) as a new backup and return its path."""
    folder = session_folder(archive_dir, agent, session_id)
    stamp = moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(100):
            path = folder / (f"{stamp}-{label}.jsonl" if n == 0 else f"{stamp}-{label}-{n}.jsonl")
            try:
                write_new_file(path, raw)
                return path
            except FileExistsError:
                continue
    except OSError as exc:
        raise WorkFailedError(f"{folder}: cannot back the session up ({exc.strerror or exc}).") from None
    raise WorkFailedError(f"{folder}: 100 backup names taken at {stamp}.")


def add_record(archive_dir: Path, agent: str, session_id: str, record: Mapping[str, Any]) -> None:
    """Append ``record`` as one line of the session's ``compactions.jsonl``."""
    import orjson

    folder = session_folder(archive_dir, agent, session_id)
    line = orjson.dumps(dict(record)) + b"\n"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        append_fully(folder / RECORDS_NAME, line, sync=False, create=True)
    except OSError as exc:
        raise WorkFailedError(f"{folder / RECORDS_NAME}: cannot record ({exc.strerror or exc}).") from None


def read_records(archive_dir: Path, agent: str, session_id: str) -> list[dict[str, Any]]:
    """Every record of the session, oldest first ([] when there is none)."""
    import orjson

    try:
        folder = session_folder(archive_dir, agent, session_id)
        data = (folder / RECORDS_NAME).read_bytes()
    except (OSError, InputError):
        return []
    out: list[dict[str, Any]] = []
    for line in data.splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def last_record(records: Sequence[Mapping[str, Any]], event: str) -> Mapping[str, Any] | None:
    return next((r for r in reversed(records) if r.get("event") == event), None)


def latest_backup(records: Sequence[Mapping[str, Any]]) -> Path | None:
    """The backup the newest ``pre-compact`` record names, when it still exists."""
    pre = last_record(records, "pre-compact")
    backup = pre.get("backup") if pre else None
    if isinstance(backup, str) and os.path.isfile(backup):
        return Path(backup)
    return None


def scored_compactions(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ``post-compact`` records that carry a score, oldest first."""
    return [r for r in records if r.get("event") == "post-compact" and isinstance(r.get("total"), int)]
