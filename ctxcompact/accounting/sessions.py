"""The agent sessions on this machine: where they are, how big, whether they are due.

``ctxcompact sessions`` lists the Claude Code sessions under a folder (default
``~/.claude/projects``; each project folder holds ``<session>.jsonl`` files, subagent runs
live in ``<session>/subagents/`` and are not sessions of their own) and the Codex CLI rollouts
(default ``~/.codex/sessions``, ``YYYY/MM/DD/rollout-*.jsonl``). Fast on hundreds of Claude Code
sessions: a file is read once as bytes and only the lines that matter are parsed — the tail
back to the last recorded usage, the compact boundaries, the first ``cwd``. A session with no
usage recorded is read in full and estimated as ``check`` would. A Codex rollout is read in
full and sized exactly as ``check`` sizes it (its newest ``token_count`` usage + our count of
what came after it).

Pure apart from reading the files: returns frozen :class:`SessionInfo` rows, prints nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from ctxcompact.accounting.check import BudgetSpec, check_conversation, conversation_model, measure
from ctxcompact.accounting.context_size import (
    CLAUDE_TOKEN_FACTOR,
    SizeSource,
    context_size,
    entries_tokens,
    is_claude_model,
)
from ctxcompact.accounting.history import HISTORY_MARKERS, UsageHistory, usage_history
from ctxcompact.accounting.prices import Cost
from ctxcompact.accounting.tokens import MESSAGE_OVERHEAD, TokenCounter, make_counter
from ctxcompact.errors import CtxcompactError, InputError, UsageError
from ctxcompact.transcripts.dialects.codex.read import session_cwd
from ctxcompact.transcripts.dialects.detect import looks_like_codex
from ctxcompact.transcripts.fileio import DEFAULT_MAX_INPUT_BYTES, read_bytes
from ctxcompact.transcripts.io import load_transcript
from ctxcompact.transcripts.recorded_usage import token_field

#: Where Claude Code keeps its sessions.
CLAUDE_PROJECTS = Path("~/.claude/projects")
#: Where Codex CLI keeps its rollouts (``YYYY/MM/DD/rollout-*.jsonl``).
CODEX_SESSIONS = Path("~/.codex/sessions")

Agent = Literal["claude-code", "codex"]

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session file: what ``sessions`` lists (``--json`` writes these fields)."""

    path: str
    project: str
    session_id: str
    last_activity: str | None
    model: str | None
    tokens: int
    source: SizeSource
    compactions: int
    threshold: int
    error: str | None = None
    agent: Agent = "claude-code"
    #: The estimated cost of every API call the file records (subagents' too); None when it
    #: records none or cannot be read.
    cost: Cost | None = None
    #: False when neither the session nor the options name a model whose window is known:
    #: the threshold then rests on the default window, a guess.
    window_known: bool = True

    @property
    def over_threshold(self) -> bool:
        return self.error is None and self.tokens >= self.threshold


def default_folders() -> list[Path]:
    """The folders ``sessions`` lists without a ``DIR``: ``~/.claude/projects`` and
    ``~/.codex/sessions``, those present (``~/.claude/projects`` when neither is, so the error
    names it)."""
    folders = [f.expanduser() for f in (CLAUDE_PROJECTS, CODEX_SESSIONS)]
    return [f for f in folders if f.is_dir()] or folders[:1]


def session_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The session files under ``folder``: ``*.jsonl`` in it and in each project folder one
    level down (not subagent files), and Codex rollouts (``rollout-*.jsonl``) at any depth;
    never under hidden folders."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise InputError(f"{root}: no such folder of sessions.")
    found = {p for p in root.glob("*.jsonl") if p.is_file()}
    for project in sorted(root.iterdir()):
        if project.is_dir() and not project.name.startswith("."):
            found.update(p for p in project.glob("*.jsonl") if p.is_file())
    for rollout in root.rglob("rollout-*.jsonl"):
        hidden = any(part.startswith(".") for part in rollout.relative_to(root).parts[:-1])
        if rollout.is_file() and not hidden:
            found.add(rollout)
    return sorted(found)


Folders = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def list_sessions(
    folder: Folders,
    *,
    budget: BudgetSpec | None = None,
    system_tokens: int | None = None,
    counter: TokenCounter | None = None,
    on_progress: ProgressCallback | None = None,
    since: datetime | None = None,
    max_bytes: int = DEFAULT_MAX_INPUT_BYTES,
) -> list[SessionInfo]:
    """Every session under ``folder`` (or each of several folders), most recent activity
    first; with ``since``, only those active at or after it (a file not modified since is not
    read). ``budget`` is ``check``'s (its model defaults to each session's own). A file that
    cannot be read — or is not a regular file, or is over ``max_bytes`` — is listed with its
    ``error``, never stops the listing."""
    files = all_session_files(folder)
    options = _Options(budget or BudgetSpec(), system_tokens, max_bytes)
    counter = counter or make_counter()
    rows: list[SessionInfo] = []
    for done, path in enumerate(files, 1):
        if since is None or not _untouched_since(path, since):
            row = _row(path, options, counter)
            if since is None or row.error is not None or _active_since(row.last_activity, since):
                rows.append(row)
        if on_progress is not None:
            on_progress(done, len(files))
    rows.sort(key=lambda r: r.last_activity or "", reverse=True)
    return rows


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """``--since``: a date (``2026-11-01``), a date and time (``2026-11-01T12:00``, UTC unless
    it names a zone), or a span back from now: ``30m``, ``24h``, ``7d``, ``2w``."""
    from datetime import timedelta

    value = text.strip()
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    if value[:-1].isdigit() and value[-1:].lower() in units:
        span = timedelta(**{units[value[-1].lower()]: int(value[:-1])})
        return (now or datetime.now(tz=UTC)) - span
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {text!r}: expected a date (2026-11-01), a date and time, or a span such as 24h or 7d."
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _untouched_since(path: Path, since: datetime) -> bool:
    """Whether the file was last modified before ``since`` (so no entry in it is later)."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC) < since
    except OSError:
        return False


def _active_since(stamp: str | None, since: datetime) -> bool:
    if not stamp:
        return True
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return True
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) >= since


def all_session_files(folder: Folders) -> list[Path]:
    """:func:`session_files` of one folder, or of several (each file once)."""
    if isinstance(folder, str | os.PathLike):
        return session_files(folder)
    return sorted({p for f in folder for p in session_files(f)})


@dataclass(frozen=True, slots=True)
class _Options:
    """What sizing one session file takes from the command's options."""

    budget: BudgetSpec
    system_tokens: int | None
    max_bytes: int = DEFAULT_MAX_INPUT_BYTES


def _row(path: Path, options: _Options, counter: TokenCounter) -> SessionInfo:
    """One file's row: a Codex rollout sized as ``check`` sizes it, a Claude Code session from
    the few lines that matter."""
    agent: Agent = "claude-code"
    history = None
    try:
        raw = read_bytes(path, max_bytes=options.max_bytes)[1]
        if is_rollout(raw):
            agent = "codex"
            return _codex_row(path, raw, options, counter)
        history = usage_history(
            _parse(line) for line in raw.splitlines() if any(m in line for m in HISTORY_MARKERS)
        )
        scan = scan_session(raw, counter=counter)
        if scan.tokens is None:
            scan = _estimate(
                path,
                raw,
                scan,
                model=options.budget.model,
                system_tokens=options.system_tokens,
                counter=counter,
            )
    except (OSError, CtxcompactError) as exc:
        scan = _Scan(error=str(exc))
    budget = options.budget.for_model(scan.model)
    return SessionInfo(
        path=str(path),
        project=scan.cwd or path.parent.name,
        session_id=scan.session_id or path.stem,
        last_activity=scan.timestamp or _mtime(path),
        model=scan.model or (history.model if history is not None else None),
        tokens=scan.tokens or 0,
        source=scan.source,
        compactions=scan.compactions,
        threshold=budget.threshold,
        window_known=budget.model.known,
        error=scan.error,
        agent=agent,
        cost=_cost(history) if scan.error is None else None,
    )


def _cost(history: UsageHistory | None) -> Cost | None:
    return history.cost() if history is not None and history.calls else None


def is_rollout(raw: bytes) -> bool:
    """Whether a file's bytes are a Codex rollout: its first line is a rollout line."""
    first = next((line for line in raw.splitlines() if line.strip()), b"")
    return looks_like_codex([_parse(first)]) if b'"payload"' in first else False


def _codex_row(path: Path, raw: bytes, options: _Options, counter: TokenCounter) -> SessionInfo:
    """A rollout read in full: project from ``session_meta`` (its ``cwd``), live tokens and
    budget exactly as ``check`` decides them, ``compacted`` lines so far."""
    [conv] = load_transcript(path, data=raw).conversations
    records = conv.records
    meta: Mapping[str, Any] = next((r["payload"] for r in records if _line_type(r) == "session_meta"), {})
    budget, _warnings = options.budget.resolve(conv)
    checked = check_conversation(
        conv, budget=budget, counter=counter, validate=False, system_tokens=options.system_tokens
    )
    timestamp = next(
        (t for r in reversed(records) if isinstance(r, Mapping) and (t := _str(r.get("timestamp")))), None
    )
    return SessionInfo(
        path=str(path),
        project=_str(meta.get("cwd")) or session_cwd(records) or path.parent.name,
        session_id=_str(meta.get("id")) or path.stem,
        last_activity=timestamp or _mtime(path),
        model=conversation_model(conv),
        tokens=checked.status.tokens,
        source=checked.size.source if checked.size is not None else "count",
        compactions=sum(1 for r in records if _line_type(r) == "compacted"),
        threshold=budget.threshold,
        window_known=budget.model.known,
        agent="codex",
        cost=_cost(usage_history(records)),
    )


def _line_type(record: Any) -> str | None:
    return (
        record.get("type")
        if isinstance(record, Mapping) and isinstance(record.get("payload"), Mapping)
        else None
    )


@dataclass(frozen=True, slots=True)
class _Scan:
    """What :func:`scan_session` reads of one session file."""

    tokens: int | None = None
    source: SizeSource = "recorded"
    model: str | None = None
    cwd: str | None = None
    session_id: str | None = None
    timestamp: str | None = None
    compactions: int = 0
    error: str | None = None


def scan_session(raw: bytes, *, counter: TokenCounter) -> _Scan:
    """What the listing needs from one session file's bytes, parsing as few lines as it can:
    the compact boundaries, the first ``cwd`` / ``sessionId``, the last timestamp, and the last
    main-thread usage after the last boundary plus our count of the entries after it
    (``tokens`` is None when no usage is recorded there)."""
    lines = raw.splitlines()
    compactions = sum(1 for line in lines if b'"compact_boundary"' in line and _is_boundary(_parse(line)))
    cwd = session_id = None
    for line in lines[:50]:
        entry = _parse(line)
        cwd = cwd or _str(entry.get("cwd"))
        session_id = session_id or _str(entry.get("sessionId"))
        if cwd and session_id:
            break
    timestamp = next(
        (t for line in reversed(lines) if (t := _str(_parse(line).get("timestamp"))) is not None), None
    )
    for line in reversed(lines):
        if b'"compact_boundary"' in line and _is_boundary(_parse(line)):
            break
        if b'"ctxcompact"' in line and "ctxcompact" in _parse(line):
            # A rewrite of ours is live: which usage still holds, and the size it wrote
            # down, are context_size's to read (the full path).
            return _Scan(None, "count", None, cwd, session_id, timestamp, compactions)
    after: list[Mapping[str, Any]] = []
    for line in reversed(lines):
        entry = _parse(line)
        if _is_boundary(entry):
            break
        if entry.get("isSidechain") or entry.get("type") not in ("user", "assistant"):
            continue
        usage = _usage(entry)
        if usage is None:
            after.append(entry)
            continue
        inner = entry["message"]
        same = inner.get("id")
        # Later entries of the same response (its other blocks) are in its output already.
        after = [e for e in after if same is None or e["message"].get("id") != same]
        output = token_field(usage.get("output_tokens"))
        prompt = sum(
            token_field(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        model = _str(inner.get("model"))
        counted = entries_tokens(after, counter) + MESSAGE_OVERHEAD * _messages(after)
        scale = CLAUDE_TOKEN_FACTOR if is_claude_model(model) else 1.0
        tokens = prompt + output + round(counted * scale)
        return _Scan(tokens, "recorded", model, cwd, session_id, timestamp, compactions)
    return _Scan(None, "count", None, cwd, session_id, timestamp, compactions)


def _estimate(
    path: Path,
    raw: bytes,
    scan: _Scan,
    *,
    model: str | None,
    system_tokens: int | None,
    counter: TokenCounter,
) -> _Scan:
    """A session with no usage recorded: parsed in full and sized as ``check`` does."""
    transcript = load_transcript(path, data=raw)
    tokens = 0
    source: SizeSource = "count"
    own = None
    for conv in transcript.conversations:
        own = own or conversation_model(conv)
        size = context_size(conv, measure(conv, counter), model=model or own, system_tokens=system_tokens)
        tokens += size.tokens
        source = size.source
    return _Scan(tokens, source, own, scan.cwd, scan.session_id, scan.timestamp, scan.compactions)


def _messages(entries: list[Mapping[str, Any]]) -> int:
    """How many messages entries make, as the dialect groups them: a run of user entries is one
    message, and so are the entries of one assistant response (shared ``message.id``)."""
    count, previous = 0, None
    for entry in reversed(entries):  # file order
        key = (entry.get("type"), entry["message"].get("id") if entry.get("type") == "assistant" else None)
        if key != previous or (key[0] == "assistant" and key[1] is None):
            count += 1
        previous = key
    return count


def _parse(line: bytes) -> Mapping[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _is_boundary(entry: Mapping[str, Any]) -> bool:
    return entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"


def _usage(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A real recorded usage on an assistant entry (not a synthetic all-zero one)."""
    inner = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(inner, Mapping):
        return None
    usage = inner.get("usage")
    if not isinstance(usage, Mapping):
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return usage if any(token_field(usage.get(k)) for k in keys) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _mtime(path: Path) -> str | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).isoformat().replace("+00:00", "Z")
    except OSError:
        return None
