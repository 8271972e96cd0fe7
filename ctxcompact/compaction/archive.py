"""Raw-message persistence: what a compaction replaces is saved first.

An archive is a JSONL file of the replaced messages' raw records, exactly as they were read
(their own dialect, every field) and nothing else — no stats, no settings, no keys. The file
name is the UTC time plus a short content hash, so two runs never collide and the same
content is recognisable. Written atomically and never over an existing file (a hard link of
the finished temp file): parallel batch jobs sharing an archive dir can never replace each
other's archives; in the unlikely case of a taken name, ``-1``, ``-2``… is appended.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ctxcompact.errors import WorkFailedError
from ctxcompact.ir import Message
from ctxcompact.transcripts.dialects import dialect_named
from ctxcompact.transcripts.fileio import write_new_file
from ctxcompact.transcripts.io import dump_records

#: Below ``$XDG_STATE_HOME`` (default ``~/.local/state``): one archive per user, whatever
#: directory a command runs from (a batch with ``--out-dir`` archives beside its outputs).
ARCHIVE_STATE_SUBDIR = Path("ctxcompact") / "archive"
#: Names tried (``-1``, ``-2``…) when the first one is taken: same microsecond, same hash.
MAX_NAME_ATTEMPTS = 100


def default_archive_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/ctxcompact/archive``; ``~/.local/state/ctxcompact/archive`` when
    ``XDG_STATE_HOME`` is unset, empty or relative (as the XDG spec says to ignore it)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME", "")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / ARCHIVE_STATE_SUBDIR


def archive_records(messages: Sequence[Message], dialect: str) -> list[object]:
    """The raw records of ``messages`` (rendered for messages that were never read)."""
    render = dialect_named(dialect).render
    records: list[object] = []
    for message in messages:
        if message.source is not None and not message.changed:
            records.extend(message.source.records)
        else:
            records.extend(render(message))
    return records


def write_archive(
    messages: Sequence[Message],
    *,
    dialect: str,
    archive_dir: str | os.PathLike[str],
    now: datetime | None = None,
) -> Path:
    """Write ``messages`` to a new JSONL file in ``archive_dir`` and return its path.

    Raises :class:`WorkFailedError` when the directory cannot be created or written, so the
    caller emits nothing: a compaction whose originals are not safe does not happen.
    """
    data = dump_records(archive_records(messages, dialect))
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    import hashlib  # OpenSSL, ~3 ms: only a compaction that archives pays for it

    digest = hashlib.sha256(data).hexdigest()[:10]
    directory = Path(archive_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(MAX_NAME_ATTEMPTS):
            path = directory / (
                f"{stamp}-{digest}.jsonl" if attempt == 0 else f"{stamp}-{digest}-{attempt}.jsonl"
            )
            try:
                write_new_file(path, data)
                return path
            except FileExistsError:
                continue
        raise FileExistsError(f"{MAX_NAME_ATTEMPTS} archive names taken")
    except OSError as exc:
        raise WorkFailedError(
            f"cannot write the archive in {directory} ({exc.strerror or exc}); nothing was compacted."
        ) from None
