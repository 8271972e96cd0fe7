"""Writing files so that nothing is ever half-written or clobbered by accident; reading
input so that nothing is read without bound.

A file is first written in full to a temp file in the target's directory and fsynced; then
:func:`write_atomic` renames it over the target (a reader sees the old file or the new one,
never a mix), while :mod:`ctxcompact.offload.store` hard-links it into place (which fails
rather than replace an existing file). Either way the new file gets the mode a plain
``open(path, "w")`` would give it — the old file's mode when it replaces one — not the 0600 of
a temp file.

Reading is the mirror image: :func:`read_beneath` opens a file below a directory one component
at a time, relative to the directory's fd and never following a symlink, then checks and reads
that same fd — so a path checked earlier cannot be swapped for a symlink before it is read.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Any, BinaryIO

from ctxcompact.errors import InputError, WorkFailedError

_CHUNK = 1 << 20
_SPECIAL_FILES = (
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def special_file_kind(mode: int) -> str:
    """What a file that is neither regular nor a directory is, for a message."""
    return next((kind for test, kind in _SPECIAL_FILES if test(mode)), "special file")


def read_capped(stream: BinaryIO, max_bytes: int, size: int | None = None) -> bytes | None:
    """All of ``stream`` if it holds at most ``max_bytes``, else None after reading at most
    ``max_bytes + 1`` bytes. ``size`` (a regular file's, from ``fstat``) refuses a larger
    file without reading it and reads a smaller one in one go; a stream of unknown size is
    read in chunks, so an endless one (``/dev/zero`` on stdin) costs ``max_bytes`` at most."""
    if size is not None and size > max_bytes:
        return None
    parts: list[bytes] = []
    total = 0
    want = min(size + 1 if size is not None else _CHUNK, max_bytes + 1)
    while chunk := stream.read(want):
        parts.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            return None
        want = min(_CHUNK, max_bytes + 1 - total)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_temp(
    target: Path, data: bytes, *, mode_of: Path | None = None, sync: bool = True, keep_mode: bool = True
) -> str:
    """Write ``data`` to a new fsynced temp file beside ``target``; return its path.

    Its mode is that of ``mode_of`` (or of ``target``) when it exists, else (or with
    ``keep_mode=False``) what the umask gives a new file. On failure the temp file is removed
    and the error re-raised. ``sync=False`` skips the fsync: the caller makes a batch durable
    with :func:`sync_files`.
    """
    directory = target.parent if str(target.parent) else Path(".")
    clean_dead_temps(directory)
    fd, tmp = _new_temp(directory, f".{target.name}.{os.getpid()}-")
    try:
        try:
            if not keep_mode:
                raise FileNotFoundError
            mode = os.stat(mode_of or target).st_mode & 0o7777
        except OSError:
            mode = _default_mode()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
    except BaseException:
        unlink_quietly(tmp)
        raise
    return tmp


def _new_temp(directory: Path, prefix: str) -> tuple[int, str]:
    """A new empty file ``PREFIX`` + 8 random characters + ``.tmp`` in ``directory``, created
    exclusively and private, as ``tempfile.mkstemp`` makes one — without importing tempfile
    and random, ~4 ms of a command that writes one file."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    folder = os.path.abspath(directory)
    for _ in range(100):
        name = "".join(_TEMP_CHARACTERS[b % len(_TEMP_CHARACTERS)] for b in os.urandom(8))
        path = os.path.join(folder, f"{prefix}{name}.tmp")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no unused temporary file name in {folder}")


#: The random part's characters (``mkstemp``'s).
_TEMP_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789_"
#: A temp file of :func:`write_temp`: ``.NAME.PID-RANDOM.tmp`` (8 random characters).
TEMP_FILE_RE = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)-[a-z0-9_]{8}\.tmp")
#: A temp file is left alone this long after its last write even when its process is gone (a
#: process in another PID namespace sharing the directory may still be writing it).
STALE_TEMP_SECONDS = 60.0
_cleaned_dirs: set[str] = set()


def clean_dead_temps(directory: Path) -> list[str]:
    """Remove the temp files that a process killed mid-write (``kill -9``, a power cut) left in
    ``directory``: regular files named as :func:`write_temp` names them whose process no longer
    exists and which were last written :data:`STALE_TEMP_SECONDS` ago or more. Done once per
    directory and process, before the first write there; best effort (errors are ignored).
    Returns the names removed."""
    key = os.path.abspath(directory)
    if key in _cleaned_dirs:
        return []
    _cleaned_dirs.add(key)
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        match = TEMP_FILE_RE.fullmatch(name)
        if match is None or _process_alive(int(match.group("pid"))):
            continue
        try:
            info = os.lstat(os.path.join(directory, name))
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime >= STALE_TEMP_SECONDS:
                os.unlink(os.path.join(directory, name))
                removed.append(name)
        except OSError:
            continue
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or a pid we cannot ask about): keep its file
    return True


def write_fully(fd: int, data: bytes) -> None:
    """``os.write`` until every byte of ``data`` is written: a short write (a full disk, a
    quota) continues where it stopped, so the error it leads to is raised, never swallowed."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def append_fully(
    path: str | os.PathLike[str], data: bytes, *, sync: bool = True, create: bool = False
) -> None:
    """Append ``data`` to ``path`` with ``O_APPEND`` in one write, whole or not at all: the rest
    of the file is never touched, and what another process appends at the same time is kept
    (each ``write`` lands at the end). On failure what was appended of ``data`` is cut off again
    (when nobody appended after it) and the ``OSError`` re-raised. ``sync`` False skips the
    fsync (a journal line that a power cut loses only means redoing a file); ``create`` makes
    the file when it is missing (else that is ``FileNotFoundError``)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | _flag("O_NOFOLLOW") | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, 0o666)
    try:
        start = os.fstat(fd).st_size
        try:
            write_fully(fd, data)
            if sync:
                os.fsync(fd)
        except OSError:
            _take_back(fd, start, len(data), appending=True)
            raise
    finally:
        os.close(fd)


def write_stream(stream: Any, data: bytes, *, name: str = "stdout") -> None:
    """All of ``data`` to ``stream`` (``sys.stdout``), through its fd when it has one.

    A write that cannot finish (a full disk under a redirect, a quota) is
    :class:`WorkFailedError` (exit 3) naming the stream and the file behind it; when that is
    a regular file the part written is taken back (truncated to where it stood), so no
    partial output is left. A closed pipe stays ``BrokenPipeError`` (the caller's quiet exit).
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None  # an in-memory stream (tests): its buffer takes everything or raises
    if fd is None:
        target = getattr(stream, "buffer", stream)
        target.write(data)
        target.flush()
        return
    stream.flush()
    where = _stream_mark(fd)
    try:
        write_fully(fd, data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        undone = where is not None and _take_back(fd, where[0], len(data), appending=where[1])
        behind = _fd_path(fd)
        raise WorkFailedError(
            f"{name}{f' ({behind})' if behind else ''}: cannot write the output "
            f"({exc.strerror or exc}); "
            + ("nothing of it was left there." if undone else "what reached it is incomplete.")
        ) from None


def _stream_mark(fd: int) -> tuple[int, bool] | None:
    """Where a regular file behind ``fd`` ends before we write, and whether it is appended to
    (``>>``); None for a pipe, a terminal or a file we write into the middle of."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        import fcntl

        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
            return info.st_size, True
        offset = os.lseek(fd, 0, os.SEEK_CUR)
    except (OSError, ImportError):
        return None
    return (offset, False) if offset >= info.st_size else None


def _take_back(fd: int, start: int, length: int, *, appending: bool) -> bool:
    """Cut the file behind ``fd`` back to ``start`` after a failed write of ``length`` bytes
    from there; when appending, only if nobody else appended since (its size is at most
    ``start + length``). True when it was cut."""
    try:
        if appending and os.fstat(fd).st_size > start + length:
            return False
        os.ftruncate(fd, start)
        if not appending:
            os.lseek(fd, start, os.SEEK_SET)
    except OSError:
        return False
    return True


def _fd_path(fd: int) -> str | None:
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith("/") else None


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename; a failure leaves the old file as it was.

    A symlink is followed: its target is replaced and the link stays. A path that is not a
    regular file (``/dev/stdout``, a FIFO, a device) is written through as it is, since it
    cannot be replaced without destroying it.
    """
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as handle:
            handle.write(data)
        return
    tmp = write_temp(target, data)
    try:
        os.replace(tmp, target)
    except BaseException:
        unlink_quietly(tmp)
        raise


def replace_cache_file(path: Path, data: bytes, *, durable: bool = False) -> None:
    """A cache file's new content. Written to a new temp file with the umask's mode — never
    the old file's, which may be one a shared cache folder let someone else write — and
    renamed over ``path``: over a symlink too, never through it, so a link planted there
    cannot redirect the write to another file. No fsync (a cache can be rebuilt) unless
    ``durable``: an entry that cost money to make (a judge's reply)."""
    tmp = write_temp(path, data, sync=durable, keep_mode=False)
    try:
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise


def sync_files(directory: Path, paths: Sequence[Path]) -> None:
    """Make ``paths`` (files in ``directory``, written without fsync) and the directory's
    entries durable: one commit for a batch instead of an fsync per file.

    On Linux one ``syncfs`` flushes the file system holding ``directory`` (970 files: ~0.15 s
    here, against ~4 s for an fsync each); elsewhere, or if it fails, each file is fsynced.
    Then the directory itself is fsynced, so the new names survive a crash too.
    """
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        if not _syncfs(fd):
            for path in paths:
                file_fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
                try:
                    os.fsync(file_fd)
                finally:
                    os.close(file_fd)
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs(fd: int) -> bool:
    """``syncfs(fd)`` where the C library has it; False when it does not or it fails."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.syncfs(fd)) == 0
    except (OSError, AttributeError):
        return False


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`write_atomic` for a command's product: a failure is exit 3 (the work could not
    be done) with a message naming the file; the old file, if any, is intact."""
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise WorkFailedError(f"{path}: cannot write it ({exc.strerror or exc}).") from None


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one existing file (through symlinks, ``..`` or hard links)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def make_parent_dir(path: Path) -> None:
    """Create ``path``'s directory (and parents); :class:`WorkFailedError` naming it when that
    cannot be done (a read-only file system, a file in the way)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkFailedError(
            f"{path}: cannot create its directory {path.parent} ({exc.strerror or exc})."
        ) from None


def unlink_quietly(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_new_file(path: str | os.PathLike[str], data: bytes, *, mode_of: Path | None = None) -> None:
    """Create ``path`` with ``data``, atomically; fails with ``FileExistsError`` rather than
    replace an existing file (a hard link of the finished temp file cannot clobber). The new
    file takes the mode of ``mode_of`` when given (a backup keeps its original's mode)."""
    target = Path(path)
    tmp = write_temp(target, data, mode_of=mode_of)
    try:
        os.link(tmp, target)
    finally:
        unlink_quietly(tmp)


class NotRegularFileError(OSError):
    """A directory, FIFO, socket or device where a regular file was expected."""


class FileTooLargeError(OSError):
    """A file over the reader's byte limit (refused before it is read)."""


class SymlinkRefusedError(OSError):
    """A symlink met below the anchor directory: :func:`read_beneath` never follows one."""


def _flag(name: str) -> int:
    return int(getattr(os, name, 0))  # POSIX flags; 0 where the platform lacks one


#: The anchor directory: opened as given (following a symlink is the caller's choice).
_ROOT_FLAGS = os.O_RDONLY | _flag("O_DIRECTORY") | _flag("O_CLOEXEC")
#: The directories walked through: search only where the OS allows it (O_PATH), and never
#: through a symlink (with O_DIRECTORY, a symlink fails instead of being followed).
_DIR_FLAGS = _ROOT_FLAGS | _flag("O_NOFOLLOW") | (_flag("O_PATH") or _flag("O_SEARCH"))
#: The file itself: no symlink, and a FIFO must not block the open (it is refused after fstat).
_FILE_FLAGS = os.O_RDONLY | _flag("O_NOFOLLOW") | _flag("O_NONBLOCK") | _flag("O_NOCTTY") | _flag("O_CLOEXEC")
#: What O_NOFOLLOW reports for a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD), EFTYPE
#: (NetBSD), ENOTDIR (with O_DIRECTORY — also what a regular file mid-path gives).
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR, getattr(errno, "EFTYPE", errno.ELOOP)})


def read_beneath(
    root: str | os.PathLike[str], relative: str | PurePath, *, max_bytes: int | None = None
) -> bytes:
    """The bytes of the regular file ``root/relative``, never following a symlink below ``root``.

    ``root`` itself is opened as given (it is the caller's trust anchor, already resolved);
    every component of ``relative`` is then opened relative to the previous one's fd with
    ``O_NOFOLLOW``, and the file is ``fstat``-ed and read through the very fd that was opened.
    A symlink anywhere below ``root`` raises :class:`SymlinkRefusedError` — for a path that
    was resolved (symlinks followed) and checked before, that means it changed since: the read
    fails closed. Raises :class:`NotRegularFileError` for anything but a regular file (``root``
    itself, for an empty ``relative``), :class:`FileTooLargeError` past ``max_bytes`` (unread),
    ``ValueError`` for an absolute ``relative`` or one with ``..``, and ``OSError``
    (``FileNotFoundError``…) otherwise.
    """
    rel = PurePath(relative)
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"{str(relative)!r} is not a plain relative path")
    if not rel.parts:
        raise NotRegularFileError(errno.EISDIR, "a directory", str(root))
    dir_fd = os.open(root, _ROOT_FLAGS)
    try:
        for name in rel.parts[:-1]:
            next_fd = _open_at(name, _DIR_FLAGS, dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        fd = _open_at(rel.parts[-1], _FILE_FLAGS, dir_fd)
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", str(rel))
        if max_bytes is not None and info.st_size > max_bytes:
            raise FileTooLargeError(errno.EFBIG, f"{info.st_size:,} bytes", str(rel))
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:  # it grew after the fstat
        raise FileTooLargeError(errno.EFBIG, f"over {max_bytes:,} bytes", str(rel))
    return data


def _open_at(name: str, flags: int, dir_fd: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        # ENOTDIR may also be a regular file mid-path, ELOOP a real loop: lstat tells them apart.
        if exc.errno in _SYMLINK_ERRNOS:
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            if is_link:
                raise SymlinkRefusedError(errno.ELOOP, "a symlink (not followed)", name) from None
        raise


# --- reading a transcript's bytes ---------------------------------------------------------------

STDIN_NAME = "<stdin>"
_TRANSCRIPT = "a transcript file, or '-' to read stdin"
#: The default of ``--max-input-bytes``: far above any real session (the largest Claude Code
#: sessions are tens of MB), far below what parsing would need memory for (~10× the bytes).
DEFAULT_MAX_INPUT_BYTES = 512 * 1024 * 1024


def read_bytes(
    path: str | os.PathLike[str] | None,
    stdin: BinaryIO | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_INPUT_BYTES,
    what: str = _TRANSCRIPT,
    limit_hint: str = "raise --max-input-bytes to read it",
) -> tuple[str, bytes]:
    """Bytes of a path, or of stdin for ``None`` / ``"-"``; returns ``(display name, data)``.

    Only regular files are read: a FIFO (which could block forever), a device (``/dev/zero``
    never ends) or a directory is refused before any read. Stdin may be anything, a pipe
    included. Input over ``max_bytes`` is refused after reading at most ``max_bytes + 1``.
    ``what`` and ``limit_hint`` word the messages (what to give instead; what to do about size).
    """
    if path is None or str(path) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return STDIN_NAME, _capped(STDIN_NAME, stream, max_bytes, hint=limit_hint)
    p = Path(path)
    in_it = "give the transcript files in it" if what == _TRANSCRIPT else f"give {what}"
    try:
        # O_NONBLOCK: opening a FIFO without a writer returns at once (and is refused below).
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{p}: no such file.") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory; {in_it}.") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read it ({exc.strerror or exc}).") from None
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{p}: is a directory; {in_it}.")
        if not stat.S_ISREG(mode):
            raise InputError(f"{p}: is a {special_file_kind(mode)}, not a regular file; give {what}.")
        with os.fdopen(fd, "rb", closefd=False) as stream:
            return str(p), _capped(str(p), stream, max_bytes, info.st_size, hint=limit_hint)
    except OSError as exc:
        raise InputError(f"{p}: cannot read it ({exc.strerror or exc}).") from None
    finally:
        os.close(fd)


def _capped(name: str, stream: BinaryIO, max_bytes: int, size: int | None = None, *, hint: str) -> bytes:
    data = read_capped(stream, max_bytes, size)
    if data is None:
        raise InputError(f"{name}: larger than the input limit of {max_bytes:,} bytes; {hint}.")
    return data
