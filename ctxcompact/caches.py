"""Where ctxcompact keeps what it can always rebuild, and how a cache file is read safely.

Apart from :mod:`ctxcompact.config` (settings), and free of dataclasses: the command line reads
its compiled dataclass methods from here before any dataclass is made
(:mod:`ctxcompact.cli.dataclass_cache`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: Overrides where the caches live (else ``$XDG_CACHE_HOME/ctxcompact``, ``~/.cache/ctxcompact``).
CACHE_ENV = "CTXCOMPACT_CACHE_DIR"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where ctxcompact keeps what it can always rebuild (the judge's replies, compiled
    dataclass methods, token ranks): ``$CTXCOMPACT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/ctxcompact``, else ``~/.cache/ctxcompact``."""
    env = os.environ if environ is None else environ
    base = env.get(CACHE_ENV) or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "ctxcompact"
    )
    return Path(base)


def check_own_cache_file(fd: int) -> None:
    """Raise ``PermissionError`` unless the open cache file ``fd`` belongs to this user and no
    other user may write it. The caches feed the process code (compiled dataclass methods)
    and data (token ranks): a file someone else could have planted — a cache directory
    pointed at a shared folder — is ignored and rebuilt, never used. (No check where the
    platform has no user ids.)"""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return
    st = os.fstat(fd)
    if st.st_uid != getuid() or st.st_mode & 0o002:
        raise PermissionError(f"cache file not owned by this user or writable by others (fd {fd})")


def read_own_cache_file(path: Path) -> bytes:
    """The bytes of a cache file that passes :func:`check_own_cache_file` (``OSError`` else).
    A symlink at ``path`` is not followed (``OSError``): a link planted in a shared cache
    folder could point at any file of this user's, which the ownership check would pass."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    with open(fd, "rb") as handle:
        check_own_cache_file(fd)
        return handle.read()
