"""Judge replies cached by content hash, so a rerun of ``eval --judge`` costs nothing.

A request's key is :func:`ctxcompact.batch.message_batches.custom_id` of (model, system, user,
max_tokens) — everything that decides its answer; the reply's text is stored in
``<dir>/<key>.txt``, written atomically and fsynced (a crash leaves the old entry or none, never
half of one). Only reply texts are stored: never the request, a header or the API key.
An entry is used only when it is a regular file of this user's that no other user may write,
and a new one is renamed into place, never written through a symlink: a cache directory
pointed at a shared folder can neither feed the judge's scores nor redirect a write.
The default directory is ``$CTXCOMPACT_CACHE_DIR/judge``, else
``$XDG_CACHE_HOME/ctxcompact/judge``, else ``~/.cache/ctxcompact/judge``.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ctxcompact.caches import cache_dir, read_own_cache_file
from ctxcompact.errors import UsageError
from ctxcompact.transcripts.fileio import replace_cache_file

_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    return cache_dir(env) / "judge"


class JudgeCache:
    """Reply texts by request key in one directory (created on first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"

    def _path(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a request key: {key!r}")
        return self.directory / f"{key}.txt"

    def check_writable(self) -> None:
        """Create the directory and make sure a file can be written there (exit 2 if not), so
        no paid-for reply is lost to an unwritable cache."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.directory):
                pass
        except OSError as exc:
            raise self._unwritable(exc) from None

    def _unwritable(self, exc: OSError) -> UsageError:
        return UsageError(
            f"cannot write the judge cache in {self.directory}: {exc.strerror or exc}; "
            "give another directory with --judge-cache."
        )

    def get(self, key: str) -> str | None:
        """The cached reply, or None (also when the entry cannot be read, is a symlink, or is
        not this user's alone)."""
        try:
            return read_own_cache_file(self._path(key)).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put(self, key: str, text: str) -> None:
        """Store ``text`` for ``key``; a directory that cannot be written is exit 2."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            replace_cache_file(self._path(key), text.encode("utf-8", "surrogatepass"), durable=True)
        except OSError as exc:
            raise self._unwritable(exc) from None
