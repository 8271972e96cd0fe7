"""Rewriting an input file in place without losing a byte another process writes to it.

``compact --in-place`` reads a file, works for a while (a summary may take a minute), then
writes the result over it. Meanwhile an agent may still be appending to that very file (the
README's own pipeline, ``sessions --over | compact --from - --in-place``, picks sessions that
may be live). What this module guarantees, and how:

* **Appended, never replaced, when the result only adds to the file** (a Claude Code or Codex
  session compacted natively: boundary and summary entries after the history). The new bytes
  go to the end with ``O_APPEND`` through the very fd whose content was just checked: no
  rename, the rest of the file untouched, and whatever the agent appends before or after lands
  whole beside ours. A file without a final newline gets one first. No backup is made: nothing
  is replaced.
* **Otherwise replaced by a rename, after checking that the file still holds exactly the
  bytes read** (size and content). If it changed, :class:`FileChangedError` is raised before
  anything is touched; the caller reads it again and redoes the work
  (:func:`rewrite_in_place` retries a few times, then gives up, file unchanged). The backup is
  a hard link to the original inode taken at the last moment — ``FILE.bak``, or the next free
  ``FILE.bak.N``, claimed atomically, so concurrent runs never collide — so a writer that still
  holds the old file open writes into the backup, never into nothing. Bytes that reached the
  old file in the instant between the check and the rename are carried over: appended to the
  new file when it is written one record per line, else named in a warning (they are in the
  backup).
* **A live session is refused** (:func:`live_reason`): a session log modified in the last
  :data:`LIVE_SECONDS`, whose last line is half-written, or that a process holds open for
  writing (``/proc/*/fd`` on Linux). The caller exits 3 with the reason unless the user passes
  ``--force``. Any other file is refused only when a process holds it open for writing.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ctxcompact.errors import WorkFailedError
from ctxcompact.transcripts.fileio import (
    append_fully,
    unlink_quietly,
    write_fully,
    write_new_file,
    write_temp,
)

#: A session log modified this recently is taken to be in use by its agent.
LIVE_SECONDS = 10.0
#: How many times a rewrite is redone when the file changed under it, and the pauses between.
REWRITE_ATTEMPTS = 3
RETRY_PAUSES = (0.2, 1.0)
#: Backup names tried (``FILE.bak``, ``FILE.bak.1``…) before giving up.
MAX_BACKUPS = 10_000
#: After a rename, the old file is watched for late writes this long per round (see
#: ``_carry_over``), for at most this many rounds.
SETTLE_SECONDS = 0.05
SETTLE_ROUNDS = 20
#: A /proc scan for writers is reused this long (a batch checks many files).
_SCAN_TTL = 1.0
_O_ACCMODE = 3


class FileChangedError(WorkFailedError):
    """The file no longer holds the bytes the work was done on: nothing was written."""


@dataclass(frozen=True, slots=True)
class InPlaceWrite:
    """What :func:`replace_in_place` did: ``backup`` (None when it only appended or nothing
    changed), ``appended`` (the result went to the end of the file), and ``warnings``."""

    backup: Path | None = None
    appended: bool = False
    warnings: tuple[str, ...] = ()


def replace_in_place(path: str | os.PathLike[str], read: bytes, data: bytes, *, lines: bool) -> InPlaceWrite:
    """Make ``path`` (which held ``read`` when it was read) hold ``data``; see the module
    docstring. ``lines``: the file is one record per line (a carried-over tail stays valid).
    Raises :class:`FileChangedError` when the file changed since it was read (nothing was
    written) and :class:`WorkFailedError` when it cannot be written (the file is unchanged)."""
    target = Path(os.path.realpath(path))
    if data == read:
        return InPlaceWrite()
    if len(data) > len(read) and data.startswith(read):
        _append_in_place(target, read, data[len(read) :])
        return InPlaceWrite(appended=True)
    return _replace(target, read, data, lines=lines)


def _append_in_place(target: Path, read: bytes, tail: bytes) -> None:
    try:
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    except OSError as exc:
        raise WorkFailedError(f"{target}: cannot open it to append ({exc.strerror or exc}).") from None
    try:
        if not _holds(fd, read):
            raise _changed(target)
        start = os.fstat(fd).st_size
        try:
            write_fully(fd, tail)
            os.fsync(fd)
        except OSError as exc:
            try:
                if os.fstat(fd).st_size <= start + len(tail):
                    os.ftruncate(fd, start)
            except OSError:
                pass
            raise WorkFailedError(
                f"{target}: cannot append the compaction ({exc.strerror or exc}); the file is as it was."
            ) from None
    finally:
        os.close(fd)


def _replace(target: Path, read: bytes, data: bytes, *, lines: bool) -> InPlaceWrite:
    try:
        tmp = write_temp(target, data)
    except OSError as exc:
        raise WorkFailedError(
            f"{target}: cannot write it ({exc.strerror or exc}); file left unchanged."
        ) from None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        unlink_quietly(tmp)
        raise WorkFailedError(f"{target}: cannot read it again ({exc.strerror or exc}).") from None
    try:
        if not _holds(fd, read):
            unlink_quietly(tmp)
            raise _changed(target)
        backup = _take_backup(target, fd, read, tmp)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            unlink_quietly(tmp)
            raise WorkFailedError(
                f"{target}: cannot replace it ({exc.strerror or exc}); file left unchanged."
            ) from None
        return InPlaceWrite(backup, warnings=_carry_over(target, fd, len(read), backup, lines=lines))
    finally:
        os.close(fd)


def _holds(fd: int, read: bytes) -> bool:
    """Whether the file behind ``fd`` holds exactly ``read`` (size, then every byte)."""
    if os.fstat(fd).st_size != len(read):
        return False
    chunk = 1 << 20
    for start in range(0, len(read), chunk):
        if os.pread(fd, chunk, start) != read[start : start + chunk]:
            return False
    return True


def _changed(target: Path) -> FileChangedError:
    return FileChangedError(
        f"{target}: changed while it was being compacted (another process wrote to it); it was left as it is."
    )


def _take_backup(target: Path, fd: int, read: bytes, tmp: str) -> Path:
    """``FILE.bak`` or the next free ``FILE.bak.N``: a hard link to the inode behind ``fd``
    (a copy of ``read`` where the file system has no hard links). Claimed with an exclusive
    create, so two runs never take the same name."""
    info = os.fstat(fd)
    for n in range(MAX_BACKUPS):
        backup = target.with_name(f"{target.name}.bak" if n == 0 else f"{target.name}.bak.{n}")
        try:
            os.link(target, backup, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                unlink_quietly(tmp)
                raise WorkFailedError(
                    f"{target}: cannot keep a backup at {backup} ({exc.strerror or exc}); file left unchanged."
                ) from None
            try:
                write_new_file(backup, read, mode_of=target)
            except FileExistsError:
                continue
            except OSError as copy_exc:
                unlink_quietly(tmp)
                raise WorkFailedError(
                    f"{target}: cannot keep a backup at {backup} ({copy_exc.strerror or copy_exc}); "
                    "file left unchanged."
                ) from None
            return backup
        linked = os.stat(backup, follow_symlinks=False)
        if (linked.st_dev, linked.st_ino) != (info.st_dev, info.st_ino):
            # The path was swapped for another file between the check and the link.
            unlink_quietly(backup)
            unlink_quietly(tmp)
            raise _changed(target)
        return backup
    unlink_quietly(tmp)
    raise WorkFailedError(
        f"{target}: {MAX_BACKUPS:,} backups exist already; remove some (rm {target}.bak.*)."
    )


def _carry_over(target: Path, fd: int, size: int, backup: Path, *, lines: bool) -> tuple[str, ...]:
    """Bytes another process wrote to the old file after the last check (they reached the
    backup): appended to the new file, whole lines only, when it is line-per-record. A file
    written to in that instant has a writer that may still hold the old file open (it opened
    it before the rename): it is then watched until it has not grown for
    :data:`SETTLE_SECONDS` (at most :data:`SETTLE_ROUNDS` times), and what it gains
    meanwhile is carried over too."""
    extra = b""
    for _ in range(SETTLE_ROUNDS):
        try:
            grown = os.fstat(fd).st_size - size - len(extra)
            more = os.pread(fd, grown, size + len(extra)) if grown > 0 else b""
        except OSError:
            break
        if not more:
            break  # nothing new (at once, on a quiet file: no pause)
        extra += more
        time.sleep(SETTLE_SECONDS)
    if not extra:
        return ()
    whole = extra[: extra.rfind(b"\n") + 1] if lines else b""
    if whole:
        try:
            append_fully(target, whole)
        except OSError:
            whole = b""
    if len(whole) == len(extra):
        return ()
    return (
        f"{target} was written to while it was replaced: {len(extra) - len(whole):,} bytes written "
        f"meanwhile are only in its backup {backup}.",
    )


def cut_in_place(path: str | os.PathLike[str], read: bytes, keep: int) -> None:
    """Cut ``path`` (which held ``read``) back to its first ``keep`` bytes, on the same inode:
    no rename, so a writer holding the file open keeps writing into it. Raises
    :class:`FileChangedError` when the file no longer holds ``read`` (nothing was changed)."""
    target = Path(os.path.realpath(path))
    try:
        fd = os.open(target, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        raise WorkFailedError(f"{target}: cannot open it ({exc.strerror or exc}).") from None
    try:
        if not _holds(fd, read):
            raise _changed(target)
        try:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        except OSError as exc:
            raise WorkFailedError(f"{target}: cannot cut it back ({exc.strerror or exc}).") from None
    finally:
        os.close(fd)


# --- with retries ---------------------------------------------------------------------------


def rewrite_in_place(
    path: str | os.PathLike[str],
    produce: Callable[[], tuple[bytes, bytes, bool]],
    *,
    attempts: int = REWRITE_ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> InPlaceWrite:
    """``produce()`` reads ``path`` and returns ``(bytes read, new bytes, line-per-record)``;
    the result is written with :func:`replace_in_place`. When the file changed meanwhile, the
    whole read-and-work is done again, up to ``attempts`` times; then :class:`WorkFailedError`
    (exit 3), the file as it is."""
    for attempt in range(attempts):
        read, data, lines = produce()
        try:
            return replace_in_place(path, read, data, lines=lines)
        except FileChangedError:
            if attempt + 1 < attempts:
                sleep(RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)])
    raise WorkFailedError(
        f"{path}: kept changing while it was being compacted ({attempts} attempts); it was left as "
        "it is. Run again when nothing is writing to it."
    )


# --- is it live? ----------------------------------------------------------------------------


def live_reason(
    path: str | os.PathLike[str], read: bytes, *, session: bool, now: float | None = None
) -> str | None:
    """Why ``path`` looks like a file something is writing right now, or None: a process
    holds it open for writing; for a ``session`` log also a modification in the last
    :data:`LIVE_SECONDS` or a last line that is not complete JSON."""
    target = os.path.realpath(path)
    writer = _writer_of(target)
    if writer is not None:
        return f"process {writer[0]} ({writer[1]}) has it open for writing"
    if not session:
        return None
    try:
        age = (time.time() if now is None else now) - os.stat(target).st_mtime
    except OSError:
        return None
    if age < LIVE_SECONDS:
        return f"it was modified {max(age, 0):.0f} s ago"
    if read and not read.endswith(b"\n"):
        from ctxcompact.transcripts.jsontext import loads

        _, error = loads(read[read.rfind(b"\n") + 1 :])
        if error is not None:
            return "its last line is incomplete (still being written?)"
    return None


_scan: tuple[float, dict[tuple[int, int], list[tuple[str, str]]]] | None = None


def _writer_of(target: str) -> tuple[int, str] | None:
    """A process other than this one holding ``target`` open for writing: (pid, name)."""
    try:
        info = os.stat(target)
    except OSError:
        return None
    for base, fd in _open_files().get((info.st_dev, info.st_ino), ()):
        if _writable(base, fd):
            return int(base.rsplit("/", 1)[1]), _name(base)
    return None


def _open_files() -> dict[tuple[int, int], list[tuple[str, str]]]:
    """Every regular file another process holds open, by (dev, inode): its ``/proc/PID`` and
    fd number. From ``/proc`` (empty elsewhere, and for processes we may not look into);
    reused for :data:`_SCAN_TTL` seconds."""
    global _scan  # one scan serves a batch's many files
    now = time.monotonic()
    if _scan is not None and now - _scan[0] < _SCAN_TTL:
        return _scan[1]
    found: dict[tuple[int, int], list[tuple[str, str]]] = {}
    me = os.getpid()
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != me]
    except OSError:
        pids = []
    for pid in pids:
        base = f"/proc/{pid}"
        try:
            fds = os.listdir(f"{base}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                opened = os.stat(f"{base}/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(opened.st_mode):
                found.setdefault((opened.st_dev, opened.st_ino), []).append((base, fd))
    _scan = (now, found)
    return found


def _writable(base: str, fd: str) -> bool:
    """Whether fd ``fd`` of the process at ``base`` is open for writing (its fdinfo flags)."""
    try:
        with open(f"{base}/fdinfo/{fd}", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & _O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _name(base: str) -> str:
    try:
        with open(f"{base}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or "?"
    except OSError:
        return "?"
