"""File restoration: re-read the files the agent read last.

A full compaction drops every message after the head, including the file contents the agent
was working from. This module finds the files the agent read most recently (its ``read_file``
tool calls) and reads them again from disk, so the compacted transcript can carry their
*current* contents as ``"[Restored after compact] {path}:\\n{content}"`` messages.

The rules, in the seed's order (``docs/decisions/0001-reference-designs.md``):

1. Scan the ``tool_use`` blocks of assistant messages whose tool name and input field match
   one of ``tools`` (default ``read_file`` / ``path``). A file read several times counts once,
   at its last read. Newest first.
2. Take the newest ``max_files`` paths *first*; then check each one. A path that turns out to
   be invalid (missing, unreadable, binary, not UTF-8, outside the work dir, over the
   per-file limit) is skipped and is **not** replaced by an older one.
3. Paths are resolved against ``work_dir`` (absolute ones are taken as they are), symlinks
   included, and must stay inside the resolved ``work_dir``: ``../``, absolute paths elsewhere
   and symlinks pointing out are refused. A symlink pointing inside is fine: the file read is
   its resolved target. :class:`DiskFileReader` then opens that resolved path component by
   component without following any symlink and reads the fd it opened, so a directory swapped
   for a symlink between the check and the read is refused, never followed.
4. Tokens are counted with ``counter`` (default: the seed's ``estimateTokens``,
   :func:`ctxcompact.accounting.tokens.estimate_tokens`). A file over ``max_tokens_per_file`` is
   skipped; when the next file would take the total over ``max_tokens_total``, restoration
   stops there. An empty file is restored (0 tokens).

5. A session recorded elsewhere is re-rooted with ``path_map`` (``OLD=NEW`` prefixes, whole
   path components): a read path under OLD is looked up under NEW. Without ``--work-dir``, a
   session's own ``cwd`` (mapped too) is the work dir when that folder exists and may be read:
   it lies inside the current directory, the user re-rooted it or passed
   ``--trust-session-cwd`` (:func:`session_work_dir`: a transcript never chooses what is read).
   A file skipped because it lies in an untrusted session folder says so.

Nothing here prints: every file not restored comes back in :attr:`RestoreResult.skipped` with
its reason, for the caller to show as a warning. Disk access goes through a
:class:`FileReader` so tests can inject files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ctxcompact.accounting.tokens import TokenCounter, estimate_tokens
from ctxcompact.errors import OptionError, UsageError
from ctxcompact.ir import READ_PATHS, Message
from ctxcompact.markers import restored_file_paths, restored_text
from ctxcompact.transcripts.dialects import dialect_named
from ctxcompact.transcripts.fileio import (
    FileTooLargeError,
    NotRegularFileError,
    SymlinkRefusedError,
    read_beneath,
)

DEFAULT_MAX_FILES = 5
DEFAULT_MAX_TOKENS_PER_FILE = 5000
DEFAULT_MAX_TOKENS_TOTAL = 50000
#: A file with a NUL byte in its first 8 KiB is binary (git's heuristic).
BINARY_SNIFF_BYTES = 8192
#: DiskFileReader refuses larger files without reading them (no transcript needs them whole).
DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024

# Reasons a file is skipped (the text after the path in a warning).
REASON_MISSING = "missing"
REASON_NOT_A_FILE = "not a regular file"
REASON_UNREADABLE = "unreadable"
REASON_BINARY = "binary"
REASON_NOT_UTF8 = "not UTF-8"
REASON_OUTSIDE = "outside work dir"
REASON_UNTRUSTED = "in the session's folder"
REASON_INVALID_PATH = "invalid path"
REASON_TOO_LARGE = "over per-file limit"
REASON_TOTAL = "total limit reached"
REASON_SWAPPED = "a symlink appeared after the check"


@dataclass(frozen=True, slots=True)
class ReadTool:
    """A tool that reads a file: its name and the input field that holds the path."""

    tool: str
    field: str

    def __str__(self) -> str:
        return f"{self.tool}:{self.field}"


def parse_read_tool(spec: str) -> ReadTool:
    """``"TOOL:FIELD"`` (e.g. ``read_file:path``, ``Read:file_path``) as a :class:`ReadTool`."""
    tool, sep, name = spec.strip().rpartition(":")
    if not sep or not tool.strip() or not name.strip():
        raise UsageError(
            f"read tool {spec!r} is not TOOL:FIELD (for example read_file:path or Read:file_path)."
        )
    return ReadTool(tool.strip(), name.strip())


DEFAULT_READ_TOOLS: tuple[ReadTool, ...] = (ReadTool("read_file", "path"),)
#: Claude Code's file reader.
CLAUDE_CODE_READ_TOOLS: tuple[ReadTool, ...] = (ReadTool("Read", "file_path"),)
#: Named sets of read tools. An OpenAI function call needs no special entry: its
#: ``arguments`` JSON is already parsed into the tool_use ``input``.
READ_TOOL_PRESETS: Mapping[str, tuple[ReadTool, ...]] = {
    "default": DEFAULT_READ_TOOLS,
    "claude-code": CLAUDE_CODE_READ_TOOLS,
    "all": DEFAULT_READ_TOOLS + CLAUDE_CODE_READ_TOOLS,
}


def read_tools_for(dialect: str) -> tuple[ReadTool, ...]:
    """The read tools to scan when the user names none, as the dialect says: the seed's
    ``read_file:path``, plus Claude Code's ``Read:file_path`` for Claude Code sessions."""
    return tuple(ReadTool(tool, name) for tool, name in dialect_named(dialect).read_tools)


# --- reading files ---------------------------------------------------------------------------


class FileReader(Protocol):
    """Reads a file's bytes; raises ``OSError`` (``FileNotFoundError``…) when it cannot."""

    def read_bytes(self, path: Path) -> bytes: ...


@dataclass(frozen=True, slots=True)
class DiskFileReader:
    """Reads regular files from disk. Anything else (a directory, a FIFO that would block, a
    device) is refused, and so are files over ``max_bytes`` (``None``: no limit), unread.

    The path must already be resolved (:func:`restore_recent_files` passes the realpath it
    checked): it is opened from ``/`` one component at a time, relative to the parent's fd and
    with ``O_NOFOLLOW``, then ``fstat``-ed and read through that same fd. A symlink found on the
    way means the path changed since it was checked: :class:`SymlinkRefusedError`, not a read.
    """

    max_bytes: int | None = DEFAULT_MAX_FILE_BYTES

    def read_bytes(self, path: Path) -> bytes:
        absolute = Path(os.path.abspath(path))
        return read_beneath(absolute.anchor, absolute.relative_to(absolute.anchor), max_bytes=self.max_bytes)


@dataclass(frozen=True, slots=True)
class InMemoryFileReader:
    """Files from a mapping of path → bytes (for tests and embedding). Paths are compared
    after ``Path.resolve(strict=False)``, as :func:`restore_recent_files` passes them."""

    files: Mapping[str | Path, bytes] = field(default_factory=dict)

    def read_bytes(self, path: Path) -> bytes:
        wanted = path.resolve(strict=False)
        for key, data in self.files.items():
            if Path(key).resolve(strict=False) == wanted:
                return data
        raise FileNotFoundError(str(path))


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestoredFile:
    """``path`` as the transcript wrote it; ``resolved`` the absolute file read."""

    path: str
    resolved: Path
    content: str
    tokens: int


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file ``restore-files`` did not restore, and why."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """Files restored (newest read first) and files not restored, with reasons."""

    files: tuple[RestoredFile, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()

    @property
    def tokens(self) -> int:
        return sum(f.tokens for f in self.files)


def restored_message_text(restored: RestoredFile) -> str:
    """The seed's restored-file message: ``"[Restored after compact] {path}:\\n{content}"``."""
    return restored_text(restored.path, restored.content)


# --- the scan and the restore ----------------------------------------------------------------


def find_recent_reads(
    messages: Sequence[Message], *, tools: Sequence[ReadTool] = DEFAULT_READ_TOOLS
) -> list[str]:
    """Paths read by the ``tools`` calls of assistant messages, newest first, each once (at
    its last read). Non-string or empty path values are ignored.

    A file restored by an earlier compaction (a user message ``[Restored after compact]
    {path}:``) counts as read where that message stands: after a second compaction the
    files come back again, though no read call survived the first.
    """
    fields_by_tool: dict[str, list[str]] = {}
    for t in tools:
        fields_by_tool.setdefault(t.tool, []).append(t.field)
    last_read: dict[str, int] = {}
    order = 0
    for message in messages:
        if message.role == "user":
            for path in restored_file_paths(message):
                last_read.pop(path, None)
                last_read[path] = order
                order += 1
            continue
        if message.role != "assistant":
            continue
        for block in message.content:
            if block.get("type") != "tool_use":
                continue
            for value in block.get(READ_PATHS) or ():
                if isinstance(value, str) and value.strip():
                    last_read.pop(value, None)
                    last_read[value] = order
                    order += 1
            names = fields_by_tool.get(str(block.get("name")))
            tool_input = block.get("input")
            if not names or not isinstance(tool_input, Mapping):
                continue
            for name in names:
                value = tool_input.get(name)
                if isinstance(value, str) and value.strip():
                    last_read.pop(value, None)  # re-insert: dict order = read order
                    last_read[value] = order
                    order += 1
                    break
    return list(reversed(last_read))


PathMap = tuple[tuple[str, str], ...]


def parse_path_map(specs: Sequence[str]) -> PathMap:
    """``--path-map OLD=NEW`` specs as pairs; :class:`UsageError` for a malformed one."""
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        old, sep, new = spec.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise OptionError(
                "{path_map} takes OLD=NEW (two path prefixes), got {spec!r}.", "path_map", spec=spec
            )
        pairs.append((old.strip().rstrip("/") or "/", new.strip().rstrip("/") or "/"))
    return tuple(pairs)


def map_path(path: str, path_map: PathMap) -> str:
    """``path`` with the first matching OLD prefix (a whole component) replaced by its NEW; a
    path already under a NEW prefix is left as it is (an earlier compaction restored the file
    under the name it mapped it to: ``/=ROOT`` would otherwise root it twice)."""
    if any(_under(path, new) for _, new in path_map):
        return path
    for old, new in path_map:
        if path == old:
            return new
        prefix = old if old.endswith("/") else old + "/"
        if path.startswith(prefix):
            return new.rstrip("/") + "/" + path[len(prefix) :]
    return path


def _under(path: str, prefix: str) -> bool:
    return prefix != "/" and (path == prefix or path.startswith(prefix.rstrip("/") + "/"))


@dataclass(frozen=True, slots=True)
class WorkDir:
    """Where files are restored from. For a session that records its folder, ``note`` says
    what to tell the user when no file could be restored: the folder used, or the one looked
    for and not found (the current directory is used instead); None for other transcripts,
    whose skipped files are reported one by one."""

    path: Path
    note: str | None = None
    #: The session's folder, when it exists but was not trusted (see :func:`session_work_dir`):
    #: a file skipped because it lies there says so.
    refused: Path | None = None


def session_work_dir(
    given: Path | None,
    recorded_cwd: str | None,
    path_map: PathMap = (),
    *,
    trust_session_cwd: bool = False,
    here: Path | None = None,
) -> WorkDir:
    """``given`` (``--work-dir``) when set; else the session's ``cwd`` (mapped by
    ``path_map``) when that folder exists and may be read; else the current directory, with a
    note.

    A transcript does not choose what is read: a session's ``cwd`` is only a place to read from
    when it lies inside the current directory (``here``), when the user re-rooted it with
    ``path_map`` (and so named the folder) or passed ``trust_session_cwd``. Otherwise a session
    saying ``"cwd": "/"`` and a read of ``/etc/passwd`` would copy that file into the output."""
    if recorded_cwd is None:
        return WorkDir(given if given is not None else Path("."))
    if given is not None:
        return WorkDir(given, f"looked in --work-dir {given}")
    cwd = map_path(recorded_cwd, path_map)
    if Path(cwd).is_dir():
        named = cwd != recorded_cwd  # re-rooted by --path-map: the user named the folder
        if trust_session_cwd or named or _within(Path(cwd), here or Path.cwd()):
            return WorkDir(Path(cwd), f"looked in the session's folder {cwd}")
        return WorkDir(
            Path("."),
            f"the session's folder {cwd} is outside the current directory and a transcript does "
            "not choose what is read: files were looked up in the current directory (pass "
            "--trust-session-cwd to read from the session's folder, or --work-dir)",
            refused=Path(cwd),
        )
    return WorkDir(
        Path("."),
        f"the session's folder {cwd} does not exist here, so files were looked up in the current "
        "directory (give --work-dir, or --path-map OLD=NEW to re-root the session)",
    )


def _within(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False


def work_dir_for(
    dialect: str,
    records: Sequence[object],
    given: Path | None,
    path_map: PathMap = (),
    *,
    trust_session_cwd: bool = False,
) -> WorkDir:
    """:func:`session_work_dir` for a conversation: its dialect says which folder, if any, the
    session recorded (Claude Code's and Codex's ``cwd``)."""
    from ctxcompact.transcripts.dialects.common import RecordsFolder

    adapter = dialect_named(dialect)
    cwd = adapter.recorded_cwd(records) if isinstance(adapter, RecordsFolder) else None
    return session_work_dir(given, cwd, path_map, trust_session_cwd=trust_session_cwd)


def resolve_inside(path: str, work_dir: Path) -> Path | None:
    """``path`` resolved against the already-resolved ``work_dir`` (symlinks followed), or
    ``None`` when the result is outside it. Raises ``ValueError``/``OSError`` for a path
    that cannot be resolved (a NUL byte, a symlink loop)."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = work_dir / candidate
    resolved = candidate.resolve(strict=False)
    return resolved if resolved.is_relative_to(work_dir) else None


def restore_recent_files(
    messages: Sequence[Message],
    *,
    work_dir: str | Path = ".",
    max_files: int = DEFAULT_MAX_FILES,
    max_tokens_per_file: int = DEFAULT_MAX_TOKENS_PER_FILE,
    max_tokens_total: int = DEFAULT_MAX_TOKENS_TOTAL,
    tools: Sequence[ReadTool] = DEFAULT_READ_TOOLS,
    reader: FileReader | None = None,
    counter: TokenCounter | None = None,
    path_map: PathMap = (),
    refused: Path | None = None,
) -> RestoreResult:
    """Re-read the most recently read files (see the module docstring for the rules).

    Returns what was restored and what was skipped, with reasons. Never raises for a file
    problem; never reads outside ``work_dir``; never mutates ``messages``.
    """
    if max_files <= 0:
        return RestoreResult()
    reader = reader or DiskFileReader()
    root = Path(work_dir).resolve(strict=False)

    # Newest first; spellings of one file ("a.py", "./a.py") count once, at the newest.
    chosen: list[tuple[str, Path | None, str | None]] = []
    seen: set[Path] = set()
    for path in find_recent_reads(messages, tools=tools):
        if len(chosen) == max_files:
            break
        path = map_path(path, path_map)  # a re-rooted session's files are named where they are
        try:
            resolved = resolve_inside(path, root)
        except (OSError, ValueError, RuntimeError):
            chosen.append((path, None, REASON_INVALID_PATH))
            continue
        if resolved is None:
            chosen.append((path, None, _outside_reason(path, refused)))
            continue
        if resolved in seen:
            continue
        seen.add(resolved)
        chosen.append((path, resolved, None))

    files: list[RestoredFile] = []
    skipped: list[SkippedFile] = []
    total = 0
    for position, (path, resolved, problem) in enumerate(chosen):
        if problem is not None or resolved is None:
            skipped.append(SkippedFile(path, problem or REASON_INVALID_PATH))
            continue
        content, problem = _read_text(reader, resolved)
        if content is None:
            skipped.append(SkippedFile(path, problem or REASON_UNREADABLE))
            continue
        tokens = _count(content, counter)
        if tokens > max_tokens_per_file:
            skipped.append(
                SkippedFile(path, f"{REASON_TOO_LARGE} ({tokens:,} > {max_tokens_per_file:,} tokens)")
            )
            continue
        if total + tokens > max_tokens_total:
            # Stop (seed: 停止): neither this file nor the older chosen ones are read.
            reason = f"{REASON_TOTAL} ({max_tokens_total:,} tokens)"
            skipped.append(SkippedFile(path, reason))
            skipped.extend(SkippedFile(p, why or reason) for p, _, why in chosen[position + 1 :])
            break
        total += tokens
        files.append(RestoredFile(path, resolved, content, tokens))
    return RestoreResult(tuple(files), tuple(skipped))


def _outside_reason(path: str, refused: Path | None) -> str:
    """Why a path outside the work dir is skipped: said apart when it lies in the session's
    own folder, which was not trusted (``--trust-session-cwd``)."""
    if refused is not None:
        try:
            if resolve_inside(path, refused.resolve()) is not None:
                return f"{REASON_UNTRUSTED} {refused}, read only with --trust-session-cwd"
        except (OSError, ValueError, RuntimeError):
            pass
    return REASON_OUTSIDE


def _read_text(reader: FileReader, path: Path) -> tuple[str | None, str | None]:
    """``(content, None)`` or ``(None, reason)``."""
    try:
        data = reader.read_bytes(path)
    except FileNotFoundError:
        return None, REASON_MISSING
    except (IsADirectoryError, NotADirectoryError, NotRegularFileError):
        return None, REASON_NOT_A_FILE
    except SymlinkRefusedError:
        return None, REASON_SWAPPED
    except FileTooLargeError as exc:
        return None, f"{REASON_TOO_LARGE} ({exc.strerror or exc})"
    except OSError as exc:
        return None, f"{REASON_UNREADABLE} ({exc.strerror or type(exc).__name__})"
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None, REASON_BINARY
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, REASON_NOT_UTF8


def _count(text: str, counter: TokenCounter | None) -> int:
    if not text:
        return 0
    if counter is None:
        return estimate_tokens(text)
    return counter.count_batch([text])[0]
