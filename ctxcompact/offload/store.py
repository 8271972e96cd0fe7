"""Where offloaded tool output lives: file I/O, safe names, content encoding, the manifest.

Split from :mod:`ctxcompact.offload.tool_results` (which decides *what* to offload and rewrites the
messages): this module only knows files.

* Writes go through :class:`OffloadWriter` so tests can inject failures; :class:`DiskWriter`
  creates a file with ``O_EXCL``, which can never replace an existing file;
  :meth:`DiskWriter.sync` then makes the whole batch durable at once.
* :func:`safe_id` turns any tool_use id into a file-name-safe one (``A-Z a-z 0-9 _ . -``, no
  leading dot, at most 100 characters, plus a short hash whenever anything was changed, so two
  ids never share a name); :func:`path_inside` refuses any name that resolves outside the
  directory.
* ``offload-manifest.json`` records, per file name, the tool_use id, the file's sha256 and how
  the content is stored (``text``: the file is the string in UTF-8; ``json``: the file is the
  JSON of the content, for block lists and strings UTF-8 cannot hold).
* Runs sharing a directory take turns: :meth:`DiskWriter.lock` holds an exclusive ``flock``
  while one run reads the manifest, writes its files and writes the manifest back, so no run's
  entries are lost (unlocked, 16 parallel runs once kept 44 of 108). The kernel drops the lock
  when the process ends, ``kill -9`` included, so a dead run never blocks the next one.
* A run killed before its manifest write leaves files no entry names: :func:`clean_orphans`
  removes those (and only files of our own naming pattern), under the same lock.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import orjson

from ctxcompact.errors import OptionError, WorkFailedError
from ctxcompact.transcripts.fileio import (
    FileTooLargeError,
    read_beneath,
    sync_files,
    unlink_quietly,
    write_temp,
)
from ctxcompact.transcripts.jsontext import dumps, loads

try:
    import fcntl
except ImportError:  # not POSIX: runs sharing a directory are not serialized
    fcntl = None  # type: ignore[assignment]

MANIFEST_NAME = "offload-manifest.json"
#: A manifest entry takes ~200 bytes: this is a million offloaded files, read in ~1 GB.
MAX_MANIFEST_BYTES = 256 * 1024 * 1024


MANIFEST_FORMAT = "ctxcompact-offload-manifest"


MANIFEST_VERSION = 1


FILE_PREFIX = "tool-result-"


MAX_ID_LENGTH = 100


_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


#: The files offload writes, and the temp files it writes them through (``fileio.write_temp``).
OFFLOAD_FILE_RE = re.compile(r"tool-result-[A-Za-z0-9_.-]+\.md")
_TEMP_FILE_RE = re.compile(
    r"\.(?:tool-result-[A-Za-z0-9_.-]+\.md|offload-manifest\.json)\.(?:\d+-)?[A-Za-z0-9_]+\.tmp"
)


#: Where a directory cannot be locked itself (flock on a directory fd fails on some network
#: file systems), this file in it is locked instead. It is empty and harmless when left behind.
LOCK_FILE_NAME = ".offload.lock"


#: How long a run waits for another one working in the same directory before giving up.
LOCK_TIMEOUT_SECONDS = 120.0


StoredAs = Literal["text", "json"]


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One offloaded file as the manifest records it.

    ``reused`` is True when an identical file was already there (nothing was written).
    """

    file_name: str
    path: str
    tool_use_id: str | None
    sha256: str
    stored_as: StoredAs
    chars: int
    reused: bool = False
    #: Digests of the tool calls whose results the file holds (:func:`call_digest`; a file
    #: reused for identical content answers several): ``--undo`` puts content back only where
    #: one of them stands, so a tool output that merely looks like a reference (the same text,
    #: even the same id) is never replaced by another transcript's content.
    calls: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "tool_use_id": self.tool_use_id,
            "sha256": self.sha256,
            "stored_as": self.stored_as,
            "chars": self.chars,
        }
        if self.calls:
            record["calls"] = list(self.calls)
        return record


def call_digest(call: Mapping[str, Any] | None) -> str | None:
    """A short digest of a ``tool_use`` block's name and input (an OpenAI call's ``arguments``
    as written); None without a call."""
    if call is None:
        return None
    arguments = call.get("arguments")
    payload = (
        arguments
        if isinstance(arguments, str)
        else dumps(call.get("input", {})).decode("utf-8", "surrogatepass")
    )
    digest = hashlib.sha256(f"{call.get('name')}\0{payload}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


class OffloadWriter(Protocol):
    """The file operations offload needs; tests inject fakes that fail on purpose."""

    def make_dir(self, directory: Path) -> None:
        """Create ``directory`` and its parents (no error if it exists)."""

    def read(self, path: Path, max_bytes: int | None = None) -> bytes | None:
        """The bytes of ``path``, or None when it does not exist; never through a symlink.
        A file over ``max_bytes`` raises :class:`~ctxcompact.transcripts.fileio.FileTooLargeError`
        without being read."""

    def create(self, path: Path, data: bytes) -> bool:
        """Write a new file, never replacing one; False (and nothing written) when ``path``
        exists. A failed write leaves no file behind."""

    def replace(self, path: Path, data: bytes) -> None:
        """Write ``path`` atomically, replacing it if it exists (the manifest)."""

    def remove(self, path: Path) -> None:
        """Delete ``path`` (used to roll back files created by a failed call)."""

    def lock(self, directory: Path) -> AbstractContextManager[None]:
        """Hold ``directory`` exclusively (other runs wait) for a read-merge-write of the
        manifest and the files it names."""

    def sync(self, directory: Path) -> None:
        """Make every file created or replaced in ``directory`` so far durable, and the
        directory's entries: the commit point, once per batch."""


class DiskWriter:
    """The real file system: new files created exclusively, the manifest through a temp file
    and a rename; a failure leaves no partial file behind.

    Like a database commit, files are not fsynced one by one: :meth:`sync` makes the batch
    durable at once (the files, then the directory) before anyone is told they exist.
    """

    def _unsynced(self) -> list[Path]:
        # Created on first use, so subclasses need not call __init__.
        pending: list[Path] | None = self.__dict__.get("_pending_sync")
        if pending is None:
            pending = self.__dict__["_pending_sync"] = []
        return pending

    def make_dir(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)

    def read(self, path: Path, max_bytes: int | None = None) -> bytes | None:
        # Relative to the directory's fd, with O_NOFOLLOW, reading the fd it checked: a file
        # swapped for a symlink after path_inside() is refused, never followed (undo included).
        try:
            return read_beneath(path.parent, path.name, max_bytes=max_bytes)
        except FileNotFoundError:
            return None

    def create(self, path: Path, data: bytes) -> bool:
        # O_EXCL: never replaces a file and never follows a symlink, even against a race; one
        # open per file (a temp file linked into place costs three directory operations).
        # Nobody reads the file before the manifest and the transcript name it, which happens
        # only after sync(); a failed write removes it.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags, 0o666)
        except FileExistsError:
            return False
        try:
            try:
                view = memoryview(data)  # os.write: no buffered file object per file
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except BaseException:
            unlink_quietly(path)
            raise
        self._unsynced().append(path)
        return True

    def replace(self, path: Path, data: bytes) -> None:
        tmp = write_temp(path, data, sync=False)
        try:
            os.replace(tmp, path)
            self._unsynced().append(path)
        finally:
            unlink_quietly(tmp)

    def sync(self, directory: Path) -> None:
        unsynced = self._unsynced()
        pending = [p for p in unsynced if p.parent == directory]
        if pending:
            sync_files(directory, pending)
            unsynced[:] = [p for p in unsynced if p.parent != directory]

    def remove(self, path: Path) -> None:
        unlink_quietly(path)

    def lock(self, directory: Path) -> AbstractContextManager[None]:
        return directory_lock(directory)


@contextmanager
def directory_lock(directory: Path, *, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """An exclusive ``flock`` on ``directory`` (or on its :data:`LOCK_FILE_NAME` where a
    directory cannot be locked), held for the ``with`` block and released when it ends or the
    process dies. Waits up to ``timeout`` seconds for another holder, then raises
    :class:`WorkFailedError` (as it does when the directory cannot be opened or locked at all).
    A no-op where ``fcntl`` does not exist."""
    if fcntl is None:
        yield
        return
    deadline = time.monotonic() + timeout
    fd = -1
    try:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
            if not _flock_until(fd, deadline, directory):
                # EBADF, ENOLCK…: this file system cannot flock a directory; lock a file in it.
                os.close(fd)
                fd = -1
                flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
                fd = os.open(directory / LOCK_FILE_NAME, flags, 0o666)
                if not _flock_until(fd, deadline, directory):
                    raise OSError(errno.ENOLCK, "file locking is not supported here")
        except OSError as exc:
            raise WorkFailedError(f"cannot lock {directory}: {os_reason(exc)}.") from None
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # the only fd of this open file: closing it releases the lock


def _flock_until(fd: int, deadline: float, directory: Path) -> bool:
    """Take the lock, polling until ``deadline``; False when ``fd`` cannot be flocked."""
    assert fcntl is not None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise WorkFailedError(
                    f"gave up waiting for another ctxcompact run using {directory}; "
                    "try again when it has finished."
                ) from None
            time.sleep(0.01)
        except OSError:
            return False


def safe_id(tool_use_id: Any) -> str:
    """A tool_use id made safe for a file name.

    Keeps ``[A-Za-z0-9_.-]``, replaces anything else (``/``, ``\\``, NUL, control characters,
    spaces, non-ASCII) with ``_``, turns leading dots and ``..`` runs into ``_`` and caps the
    length at :data:`MAX_ID_LENGTH`. When anything had to change, 8 hex digits of the
    original's sha256 are appended so that two different ids never share a name.
    """
    original = "" if tool_use_id is None else str(tool_use_id)
    cleaned = _UNSAFE_ID_CHARS.sub("_", original)
    cleaned = cleaned.replace("..", "__")
    if cleaned.startswith("."):
        cleaned = "_" + cleaned[1:]
    if len(cleaned) > MAX_ID_LENGTH:
        cleaned = cleaned[:MAX_ID_LENGTH]
    if cleaned != original or not cleaned:
        digest = hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        cleaned = f"{cleaned}-{digest}" if cleaned else f"none-{digest}"
    return cleaned


def file_name_for(tool_use_id: Any, attempt: int) -> str:
    """``tool-result-{id}.md`` for the first file of an id, then ``-1``, ``-2``…."""
    base = f"{FILE_PREFIX}{safe_id(tool_use_id)}"
    return f"{base}.md" if attempt == 0 else f"{base}-{attempt}.md"


def encode_content(content: Any) -> tuple[bytes, StoredAs]:
    """File bytes for a content, and how to read them back exactly.

    A string is stored as itself in UTF-8, readable by people and by the agent. A block list
    (or a string UTF-8 cannot hold, such as one with a lone surrogate) is stored as JSON.
    """
    if isinstance(content, str):
        try:
            return content.encode("utf-8"), "text"
        except UnicodeEncodeError:
            pass
    # Numbers as they were read (an integer past 64 bits, NaN); a lone surrogate as \u escapes.
    return dumps(content, indent=True), "json"


def decode_content(data: bytes, stored_as: str) -> Any:
    """The content :func:`encode_content` stored; ``ValueError`` for bytes that do not hold one."""
    if stored_as == "text":
        return data.decode("utf-8")
    value, error = loads(data)
    if error is not None:
        raise ValueError(str(error))
    return value


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolved_dir(writer: OffloadWriter, out_dir: str | os.PathLike[str]) -> Path:
    directory = Path(out_dir)
    try:
        writer.make_dir(directory)
    except OSError as exc:
        raise WorkFailedError(f"cannot create the offload directory {directory}: {os_reason(exc)}.") from None
    return directory.resolve()


def path_inside(root: Path, name: str) -> Path:
    """``root / name`` (``root`` already resolved), refusing a name that is not one plain
    component. Checked by spelling, not ``Path.resolve`` (a dozen system calls per file): a
    symlink at the name is never followed anyway — reads open it with ``O_NOFOLLOW`` relative
    to the directory, and ``link`` does not write through one."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        # Unreachable with names from safe_id(); a guard against future changes.
        raise WorkFailedError(f"refusing to use {name!r}: it resolves outside {root}.")
    return root / name


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def read_manifest(writer: OffloadWriter, root: Path) -> dict[str, dict[str, Any]]:
    """The manifest's file entries (empty when there is none yet)."""
    path = root / MANIFEST_NAME
    try:
        raw = writer.read(path, max_bytes=MAX_MANIFEST_BYTES)
    except FileTooLargeError:
        raise WorkFailedError(
            f"{path} is over {MAX_MANIFEST_BYTES:,} bytes, more than any offload manifest needs; "
            "it was not read."
        ) from None
    except OSError as exc:
        raise WorkFailedError(f"cannot read {path}: {os_reason(exc)}.") from None
    if raw is None:
        return {}
    try:
        data = _load_manifest(raw)
    except (UnicodeDecodeError, ValueError):
        raise WorkFailedError(f"{path} is not valid JSON; it is ctxcompact's offload manifest.") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise WorkFailedError(f"{path} is not a ctxcompact offload manifest (no 'files' object).")
    return {str(k): v for k, v in files.items() if isinstance(v, dict)}


def _load_manifest(raw: bytes) -> Any:
    value, error = loads(raw)  # what only the stdlib reads (a BOM) too; bounded depth
    if error is not None:
        raise ValueError(str(error))
    return value


def manifest_bytes(files: Mapping[str, Mapping[str, Any]]) -> bytes:
    """The manifest file: ``json.dumps(indent=2, ensure_ascii=False)``'s bytes, made by orjson
    (the same bytes for every manifest it can encode, ten times faster: a manifest grows with
    every run sharing the directory); the stdlib for the rest (lone surrogates in an id)."""
    body = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "files": dict(sorted(files.items()))}
    try:
        return orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n"
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"


def remove_entries(writer: OffloadWriter, root: Path, entries: Sequence[ManifestEntry]) -> None:
    """Remove ``entries``' files and their manifest records (the manifest itself when it is
    left empty), under the directory's lock. Best effort: errors are ignored, since the caller
    is already reporting a failure."""
    try:
        with writer.lock(root):
            manifest = read_manifest(writer, root)
            for entry in entries:
                writer.remove(Path(entry.path))
                manifest.pop(entry.file_name, None)
            if manifest:
                writer.replace(root / MANIFEST_NAME, manifest_bytes(manifest))
            else:
                writer.remove(root / MANIFEST_NAME)
            writer.sync(root)
    except (OSError, WorkFailedError):
        pass


# --- orphans -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OrphanCleanup:
    """What :func:`clean_orphans` did: ``removed`` file names (offload files no manifest entry
    names, and temp files of interrupted writes), ``referenced`` the count of files kept."""

    out_dir: str
    removed: tuple[str, ...] = ()
    referenced: int = 0


def clean_orphans(out_dir: str | os.PathLike[str], *, writer: OffloadWriter | None = None) -> OrphanCleanup:
    """Remove the offload files of ``out_dir`` that no manifest entry names — what a run killed
    between writing its files and its manifest leaves — and the temp files of interrupted
    writes. Nothing else is ever removed: only regular files named ``tool-result-*.md`` (or
    ``.tool-result-*.md.*.tmp`` / ``.offload-manifest.json.*.tmp``), never a symlink, a
    directory or another name. Holds the directory's lock, so files of a run still in progress
    are not touched. Raises :class:`WorkFailedError` when the manifest cannot be read (it then
    removes nothing) and :class:`UsageError` when ``out_dir`` is not a directory."""
    writer = writer or DiskWriter()
    root = Path(out_dir)
    if not root.is_dir():
        raise OptionError("{out_dir} {root} is not a directory; nothing to clean.", "out_dir", root=root)
    root = root.resolve()
    removed: list[str] = []
    with writer.lock(root):
        manifest = read_manifest(writer, root)
        try:
            names = sorted(os.listdir(root))
        except OSError as exc:
            raise WorkFailedError(f"cannot list {root}: {os_reason(exc)}.") from None
        offloaded = [n for n in names if OFFLOAD_FILE_RE.fullmatch(n)]
        if offloaded and not (root / MANIFEST_NAME).exists():
            # Without a manifest nothing tells an orphan from the only copy of content a
            # transcript still refers to (a lost or deleted manifest): remove nothing.
            raise WorkFailedError(
                f"{root} has {len(offloaded):,} offloaded file(s) but no {MANIFEST_NAME}: ctxcompact "
                "cannot tell orphans from files a transcript still refers to, so nothing was removed."
            )
        for name in names:
            ours = OFFLOAD_FILE_RE.fullmatch(name) and name not in manifest
            if not (ours or _TEMP_FILE_RE.fullmatch(name)) or not _is_regular(root / name):
                continue
            try:
                os.unlink(root / name)
            except OSError as exc:
                raise WorkFailedError(f"cannot remove {root / name}: {os_reason(exc)}.") from None
            removed.append(name)
        referenced = sum(1 for name in manifest if (root / name).exists())
    return OrphanCleanup(str(root), tuple(removed), referenced)


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
