"""Writing files so that nothing is ever half-written or clobbered by accident.

A file is first written in full to a temp file in the target's directory and fsynced; then
:func:`write_atomic` renames it over the target (a reader sees the old file or the new one,
never a mix), while :mod:`ctxcompact.offload_store` hard-links it into place (which fails
rather than replace an existing file). Either way the new file gets the mode a plain
``open(path, "w")`` would give it — the old file's mode when it replaces one — not the 0600 of
a temp file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ctxcompact.errors import WorkFailedError


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_temp(target: Path, data: bytes, *, mode_of: Path | None = None) -> str:
    """Write ``data`` to a new fsynced temp file beside ``target``; return its path.

    Its mode is that of ``mode_of`` (or of ``target``) when it exists, else what the umask
    gives a new file. On failure the temp file is removed and the error re-raised.
    """
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        try:
            mode = os.stat(mode_of or target).st_mode & 0o7777
        except OSError:
            mode = _default_mode()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        unlink_quietly(tmp)
        raise
    return tmp


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


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`write_atomic` for a command's product: a failure is exit 3 (the work could not
    be done) with a message naming the file; the old file, if any, is intact."""
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise WorkFailedError(f"{path}: cannot write it ({exc.strerror or exc}).") from None


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
