"""Where offloaded tool output lives: file I/O, safe names, content encoding, the manifest.

Split from :mod:`ctxcompact.offload` (which decides *what* to offload and rewrites the
messages): this module only knows files.

* Writes go through :class:`OffloadWriter` so tests can inject failures; :class:`DiskWriter`
  creates a file by hard-linking a fully written, fsynced temp file into place, which can
  never replace an existing file.
* :func:`safe_id` turns any tool_use id into a file-name-safe one (``A-Z a-z 0-9 _ . -``, no
  leading dot, at most 100 characters, plus a short hash whenever anything was changed, so two
  ids never share a name); :func:`path_inside` refuses any name that resolves outside the
  directory.
* ``offload-manifest.json`` records, per file name, the tool_use id, the file's sha256 and how
  the content is stored (``text``: the file is the string in UTF-8; ``json``: the file is the
  JSON of the content, for block lists and strings UTF-8 cannot hold).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from ctxcompact.errors import WorkFailedError
from ctxcompact.fileio import read_beneath, unlink_quietly, write_temp

MANIFEST_NAME = "offload-manifest.json"


MANIFEST_FORMAT = "ctxcompact-offload-manifest"


MANIFEST_VERSION = 1


FILE_PREFIX = "tool-result-"


MAX_ID_LENGTH = 100


_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


StoredAs = Literal["text", "json"]


class OffloadWriter(Protocol):
    """The file operations offload needs; tests inject fakes that fail on purpose."""

    def make_dir(self, directory: Path) -> None:
        """Create ``directory`` and its parents (no error if it exists)."""

    def read(self, path: Path) -> bytes | None:
        """The bytes of ``path``, or None when it does not exist; never through a symlink."""

    def create(self, path: Path, data: bytes) -> bool:
        """Write a new file atomically; False (and nothing written) when ``path`` exists."""

    def replace(self, path: Path, data: bytes) -> None:
        """Write ``path`` atomically, replacing it if it exists (the manifest)."""

    def remove(self, path: Path) -> None:
        """Delete ``path`` (used to roll back files created by a failed call)."""


class DiskWriter:
    """The real file system: temp file in the same directory, fsync, then link or rename, so a
    reader never sees half a file and a failure leaves no partial file behind."""

    def make_dir(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)

    def read(self, path: Path) -> bytes | None:
        # Relative to the directory's fd, with O_NOFOLLOW, reading the fd it checked: a file
        # swapped for a symlink after path_inside() is refused, never followed (undo included).
        try:
            return read_beneath(path.parent, path.name)
        except FileNotFoundError:
            return None

    def create(self, path: Path, data: bytes) -> bool:
        tmp = write_temp(path, data)
        try:
            try:
                # link() refuses to replace an existing file: no-clobber even against a race.
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError:
                # File systems without hard links: check, then rename (best effort).
                if path.exists():
                    return False
                os.replace(tmp, path)
            return True
        finally:
            unlink_quietly(tmp)

    def replace(self, path: Path, data: bytes) -> None:
        tmp = write_temp(path, data)
        try:
            os.replace(tmp, path)
        finally:
            unlink_quietly(tmp)

    def remove(self, path: Path) -> None:
        unlink_quietly(path)


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
    """``tool-result-{id}.md`` for the first file of an id, then ``-1``, ``-2``… (seed 001)."""
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
    try:
        return json.dumps(content, ensure_ascii=False, indent=2).encode("utf-8"), "json"
    except UnicodeEncodeError:
        return json.dumps(content, ensure_ascii=True, indent=2).encode("ascii"), "json"


def decode_content(data: bytes, stored_as: str) -> Any:
    if stored_as == "text":
        return data.decode("utf-8")
    return json.loads(data.decode("utf-8"))


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
    """``root / name``, refusing anything that would resolve outside ``root``."""
    path = (root / name).resolve()
    if path.parent != root:
        # Unreachable with names from safe_id(); a guard against future changes and symlinks.
        raise WorkFailedError(f"refusing to use {name!r}: it resolves outside {root}.")
    return path


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def read_manifest(writer: OffloadWriter, root: Path) -> dict[str, dict[str, Any]]:
    """The manifest's file entries (empty when there is none yet)."""
    path = root / MANIFEST_NAME
    try:
        raw = writer.read(path)
    except OSError as exc:
        raise WorkFailedError(f"cannot read {path}: {os_reason(exc)}.") from None
    if raw is None:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WorkFailedError(f"{path} is not valid JSON; it is ctxcompact's offload manifest.") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise WorkFailedError(f"{path} is not a ctxcompact offload manifest (no 'files' object).")
    return {str(k): v for k, v in files.items() if isinstance(v, dict)}


def manifest_bytes(files: Mapping[str, Mapping[str, Any]]) -> bytes:
    body = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "files": dict(sorted(files.items()))}
    return json.dumps(body, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
