"""Claude Code session files (``~/.claude/projects/*/<session>.jsonl``).

Each line is an *entry*. Entries of type ``user`` / ``assistant`` carry an API message in
``message``; everything else (``summary``, ``progress``, ``file-history-snapshot``,
``queue-operation``, ``system``, ``pr-link``…) is kept exactly where it was but is not a
message. What the model sees, and so what becomes IR messages:

* only entries after the last ``system`` entry with ``subtype: "compact_boundary"`` (Claude
  Code keeps pre-compaction lines in the file but no longer sends them; the
  ``isCompactSummary`` user entry after the boundary *is* sent), and the latest messages
  before it that the boundary's ``preservedSegment`` names, sent right after that summary;
* only main-thread entries (``isSidechain: false``) when the file has any; a subagent file
  (``<session>/subagents/agent-*.jsonl``) is all sidechain and is read as its own thread;
* one assistant response is written as several entries sharing ``message.id`` (a thinking
  line, a text line, a tool_use line): they form one IR message; consecutive user entries
  (the results of parallel tool calls) form one user message, as Claude Code sends them.

The top-level ``toolUseResult`` duplicate is never counted: the model does not see it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import Block, Message, Source
from ctxcompact.transcripts.dialects import claude_code_compact
from ctxcompact.transcripts.dialects.common import (
    DialectDefaults,
    Parsed,
    content_blocks,
    json_kind,
    plain_text,
    split_along,
)
from ctxcompact.transcripts.dialects.detect import CLAUDE_CODE_MESSAGE_TYPES as MESSAGE_TYPES
from ctxcompact.transcripts.dialects.detect import looks_like_claude_code as looks_like
from ctxcompact.transcripts.points import AppendedCompaction, CompactionPoint, ctxcompact_field, epoch_ms
from ctxcompact.transcripts.recorded_usage import RecordedUsage, token_field

NAME = "claude-code"


def parse_records(records: Sequence[Any]) -> Parsed:
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InputError(
                f"line {i + 1} is a JSON {json_kind(record)}, expected a Claude Code entry (an object)."
            )
        if "role" in record and "message" not in record:
            # Only reachable with --format claude-code: reading bare messages as entries would
            # find no message at all and report 0 tokens.
            raise InputError(
                f"line {i + 1} is a bare API message (it has 'role'), not a Claude Code entry; "
                "drop --format claude-code or choose anthropic/openai."
            )

    if records and not looks_like(records):
        # Only reachable with --format claude-code: another format would read as no message at all.
        kind = records[0].get("type")
        raise InputError(
            f"line 1 is not a Claude Code entry (its type is {kind!r}) and no line of the first 50 is; "
            "this is not a Claude Code session: drop --format claude-code."
        )
    visible, problems = live_entries(records)

    groups: list[list[int]] = []
    for i in visible:
        entry = records[i]
        if groups and entry_role(entry) == "user" and entry_role(records[groups[-1][-1]]) == "user":
            groups[-1].append(i)
            continue
        if entry.get("type") == "assistant":
            target = _open_response(records, groups, entry["message"].get("id"))
            if target is not None:
                target.append(i)
                continue
        groups.append([i])

    messages: list[Message] = []
    for group in groups:
        role = entry_role(records[group[0]])
        if role not in MESSAGE_TYPES:
            raise InputError(f"line {group[0] + 1}: message role {role!r} is not 'user' or 'assistant'.")
        blocks: list[Block] = []
        for i in group:
            blocks.extend(content_blocks(entry_content(records[i]), f"line {i + 1}"))
        source = Source(tuple(records[i] for i in group), tuple(group))
        messages.append(Message(role, tuple(blocks), source))

    in_messages = {i for group in groups for i in group}
    passthrough = frozenset(i for i in range(len(records)) if i not in in_messages)
    return Parsed(tuple(messages), passthrough, (), model=session_model(records), problems=problems)


#: Entry types Claude Code links into its ``parentUuid`` chain (its loader keeps these by uuid).
CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system", "progress"})


def live_entries(records: Sequence[Mapping[str, Any]]) -> tuple[list[int], tuple[str, ...]]:
    """The positions of the message entries Claude Code sends when it resumes this file, in
    the order it sends them (file order, but for a compaction's preserved entries), and what makes the file resume otherwise than it reads (a broken chain, an
    unreachable tail). Claude Code's loader:

    1. keeps every chain entry by ``uuid`` and finds the leaves (entries no entry names as its
       ``parentUuid``), each walked back to its nearest message entry;
    2. resumes from the conversation thread's last leaf in the file (not the newest by
       ``timestamp``: the real client resumes our compaction, written later in the file but
       stamped earlier under ``SOURCE_DATE_EPOCH``) and walks ``parentUuid`` back until a
       parent is missing;
    3. starts the context after the last ``compact_boundary`` on that chain, and splices the
       entries that boundary preserved
       (:func:`~ctxcompact.transcripts.dialects.claude_code_compact.preserved_segment`) in after its summary;
    4. gathers, from the whole file, every entry of a response on the chain (same
       ``message.id``: one response is written as several entries, each linked to the one
       before, so parallel tool calls branch) and the tool results answering them (linked to
       the entry of their call).

    A file whose entries are not linked (no ``uuid`` / ``parentUuid``: not written by Claude
    Code) is read in file order after its last boundary."""
    entries = [r for r in records if r.get("type") in MESSAGE_TYPES and isinstance(r.get("message"), Mapping)]
    sidechain = bool(entries) and all(r.get("isSidechain") for r in entries)
    by_uuid: dict[str, int] = {}
    for i, record in enumerate(records):
        uid = _link(record, "uuid")
        if uid is not None and record.get("type") in CHAIN_TYPES:
            by_uuid[uid] = i

    def in_thread(i: int) -> bool:
        record = records[i]
        return is_message_entry(record) and bool(record.get("isSidechain")) == sidechain

    linked = any(_link(records[i], "parentUuid") for i in by_uuid.values())
    leaf = _last_leaf(records, by_uuid, in_thread) if linked else None
    if leaf is None:
        return _file_order(records, in_thread), ()
    chain: list[int] = []
    seen: set[int] = set()
    at: int | None = leaf
    missing: str | None = None
    while at is not None and at not in seen:
        seen.add(at)
        chain.append(at)
        parent = _link(records[at], "parentUuid")
        at = by_uuid.get(parent) if parent is not None else None
        if parent is not None and at is None:
            missing = parent
    chain.reverse()
    boundary = max(
        (k for k, i in enumerate(chain) if claude_code_compact.is_boundary(records[i])), default=-1
    )
    live = {i for i in chain[boundary + 1 :] if in_thread(i)}
    anchor, preserved = claude_code_compact.preserved_segment(records, by_uuid, chain, boundary)
    live |= {i for i in preserved if in_thread(i)}
    response_ids = {_response_id(records[i]) for i in live} - {None}
    live |= {i for i in range(len(records)) if in_thread(i) and _response_id(records[i]) in response_ids}
    calls = {_link(records[i], "uuid") for i in live if records[i].get("type") == "assistant"}
    live |= {
        i
        for i in range(len(records))
        if in_thread(i)
        and records[i].get("type") == "user"
        and _link(records[i], "parentUuid") in calls
        and _only_tool_results(records[i])
    }
    since = chain[boundary] if boundary >= 0 else -1
    # The preserved entries (and their responses' other entries and results) are in the file
    # before the boundary; Claude Code sends them right after the anchor.
    visible = sorted(live, key=lambda i: (anchor, i) if anchor is not None and i < since else (i, -1))
    thread = [i for i in range(len(records)) if in_thread(i)]
    newer = [i for i in thread if i > since and i not in live and _later(records[i], records[leaf])]
    return visible, _chain_problems(visible, thread, chain[0], leaf, missing if boundary < 0 else None, newer)


def _chain_problems(
    visible: Sequence[int],
    thread: Sequence[int],
    first: int,
    leaf: int,
    missing: str | None,
    newer: Sequence[int],
) -> tuple[str, ...]:
    """Why Claude Code resumes the file otherwise than its lines read: its chain (from line
    ``first`` to ``leaf``) stops at a ``missing`` parent with message entries of the thread
    before it; or message entries written after the one it resumes from (``newer``: later
    ``timestamp``, after its boundary) are on no chain it follows — an unreachable tail."""
    problems: list[str] = []
    live = set(visible)
    dropped = [i for i in thread if i < first and i not in live]
    if missing is not None and dropped:
        problems.append(
            f"line {first + 1}: its parentUuid {missing} is not in the file, so Claude Code resumes "
            f"from this entry and drops the {len(dropped)} message entries before it (a broken "
            "parentUuid chain: an entry was removed without relinking its children)"
        )
    if newer:
        problems.append(
            f"line {newer[0] + 1}: {len(newer)} message entries written after line {leaf + 1}, the "
            "entry Claude Code resumes from, are not on its parentUuid chain: it never sends them "
            "(an unreachable tail)"
        )
    return tuple(problems)


def _later(entry: Mapping[str, Any], than: Mapping[str, Any]) -> bool:
    """``entry`` was written after ``than`` (both ``timestamp`` readable)."""
    mine, theirs = epoch_ms(entry.get("timestamp")), epoch_ms(than.get("timestamp"))
    return bool(mine and theirs and mine > theirs)


def _last_leaf(
    records: Sequence[Mapping[str, Any]], by_uuid: Mapping[str, int], in_thread: Any
) -> int | None:
    """The message entry Claude Code resumes from (see :func:`live_entries`), if any."""
    parents = {_link(records[i], "parentUuid") for i in by_uuid.values()}
    leaves: set[int] = set()
    for uid, i in by_uuid.items():
        if uid in parents:
            continue
        at: int | None = i
        steps = 0
        while at is not None and steps <= len(by_uuid):
            if records[at].get("type") in MESSAGE_TYPES:
                leaves.add(at)
                break
            parent = _link(records[at], "parentUuid")
            at = by_uuid.get(parent) if parent is not None else None
            steps += 1
    return max((i for i in leaves if in_thread(i)), default=None)


def _file_order(records: Sequence[Mapping[str, Any]], in_thread: Any) -> list[int]:
    """Message entries after the file's last compact boundary, in file order."""
    boundary = max((i for i, r in enumerate(records) if claude_code_compact.is_boundary(r)), default=-1)
    return [i for i in range(boundary + 1, len(records)) if in_thread(i)]


def _response_id(record: Mapping[str, Any]) -> str | None:
    inner = record.get("message") if record.get("type") == "assistant" else None
    value = inner.get("id") if isinstance(inner, Mapping) else None
    return value if isinstance(value, str) and value else None


def session_model(records: Sequence[Any]) -> str | None:
    """The model of the session's newest response (``message.model``, not Claude Code's
    ``<synthetic>`` error answers), before the boundary too: a session just compacted still
    runs on the model its history names."""
    for record in reversed(records):
        inner = record.get("message") if record.get("type") == "assistant" else None
        model = inner.get("model") if isinstance(inner, Mapping) else None
        if isinstance(model, str) and model and not model.startswith("<"):
            return model
    return None


def _open_response(records: Sequence[Any], groups: list[list[int]], message_id: Any) -> list[int] | None:
    """The assistant group this entry continues, if any.

    Claude Code writes each block of one response as its own entry, and the results of
    parallel tool calls can land between them. An entry continues the most recent assistant
    group with the same ``message.id`` when only tool-result entries came after that group.
    """
    if message_id is None:
        return None
    for group in reversed(groups):
        first = records[group[0]]
        if first.get("type") == "assistant":
            return group if first["message"].get("id") == message_id else None
        if not all(_only_tool_results(records[i]) for i in group):
            return None
    return None


def is_local_command(entry: Mapping[str, Any]) -> bool:
    """A ``system`` entry of subtype ``local_command`` (a slash command's output): Claude Code
    sends it to the model as a user message (unless it is ``isDisplayOnly``)."""
    return (
        entry.get("type") == "system"
        and entry.get("subtype") == "local_command"
        and isinstance(entry.get("content"), str)
        and not entry.get("isDisplayOnly")
    )


def is_message_entry(entry: Mapping[str, Any]) -> bool:
    """An entry Claude Code sends as (part of) a message."""
    return (
        entry.get("type") in MESSAGE_TYPES and isinstance(entry.get("message"), Mapping)
    ) or is_local_command(entry)


def entry_role(entry: Mapping[str, Any]) -> Any:
    """The role an entry is sent with."""
    if is_local_command(entry):
        return "user"
    inner = entry.get("message")
    return (inner.get("role") if isinstance(inner, Mapping) else None) or entry.get("type")


def entry_content(entry: Mapping[str, Any]) -> Any:
    """The content an entry sends: its ``message.content``, a local command's ``content``."""
    if is_local_command(entry):
        return entry.get("content")
    inner = entry.get("message")
    return inner.get("content") if isinstance(inner, Mapping) else None


def _only_tool_results(entry: Mapping[str, Any]) -> bool:
    content = entry_content(entry)
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    )


def render_message(message: Message) -> list[Any]:
    """Entries for a changed or new message.

    A changed message keeps its entries: when a rewrite changed blocks in place (prune,
    offload), each entry gets its own slice of the new content and an entry whose blocks are
    untouched is emitted as it was; when blocks were removed (clean-tools), each surviving
    block stays in the entry it came from and entries left empty are dropped (their children
    are re-linked by :func:`finalize_records`). ``toolUseResult`` duplicates are kept: the
    model never sees them and they are the user's data. A new message becomes one fresh entry.
    """
    templates = message.source.records if message.source else ()
    if not templates:
        text = plain_text(message.content)
        inner = {
            "role": message.role,
            "content": text if text is not None else [dict(b) for b in message.content],
        }
        return [
            {
                "type": message.role,
                "message": inner,
                "uuid": _derived_uuid(None, inner),
                **claude_code_compact.new_entry_flags(message),
                _NEW_MARK: True,
            }
        ]
    originals = [content_blocks(entry_content(t), "entry") for t in templates]
    new = list(message.content)
    slices = split_along(originals, new)
    out: list[Any] = []
    for template, before, after in zip(templates, originals, slices, strict=True):
        if not after:
            continue
        if len(after) == len(before) and all(a is b for a, b in zip(after, before, strict=True)):
            out.append(template)
            continue
        entry = dict(template)
        if is_local_command(template):
            entry["content"] = "\n".join(str(b.get("text", "")) for b in after if b.get("type") == "text")
            out.append(entry)
            continue
        inner = dict(entry.get("message") or {})
        text = plain_text(tuple(after)) if isinstance(inner.get("content"), str) else None
        inner["content"] = text if text is not None else [dict(b) for b in after]
        entry["message"] = inner
        out.append(entry)
    return out


def finalize_records(records: list[Any], original: Sequence[Any]) -> list[Any]:
    """Keep the ``parentUuid`` chain whole after a rewrite.

    Claude Code rebuilds a conversation by following ``parentUuid`` links back from the last
    entry, so:

    * an entry whose parent was removed is re-linked to its nearest ancestor still in the
      file (or, failing that, to the thread's entry before it);
    * a new entry joins *the conversation's own thread* — the main thread, or for a subagent
      file the subagent's — after the thread's entry before it, never after an inline
      subagent (``isSidechain``) entry of a 1.x file; it takes that entry's session fields
      (``sessionId``, ``cwd``, ``version``, ``gitBranch``, ``isSidechain``, ``agentId``…) and
      timestamp, and a uuid derived from its parent and content (same input, same output);
    * new entries after the last message go after the entries Claude Code writes on the chain
      when a turn ends (``system`` stop-hook summaries and turn durations): Claude Code resumes
      from the last entry, so entries before those would be off the chain it walks, never sent.

    Untouched files come back unchanged: nothing is re-linked when every parent is present.
    """
    records = _new_entries_last(records)
    present = {_link(r, "uuid") for r in records if isinstance(r, Mapping) and _link(r, "uuid")}
    parents = {
        _link(r, "uuid"): _link(r, "parentUuid")
        for r in original
        if isinstance(r, Mapping) and _link(r, "uuid")
    }
    entries = [r for r in original if isinstance(r, Mapping) and r.get("type") in MESSAGE_TYPES]
    sidechain_thread = bool(entries) and all(r.get("isSidechain") for r in entries)

    def in_thread(record: Mapping[str, Any]) -> bool:
        return (
            _link(record, "uuid") is not None
            and record.get("type") in ("user", "assistant", "system")
            and bool(record.get("isSidechain")) == sidechain_thread
        )

    template: Mapping[str, Any] = next((r for r in original if isinstance(r, Mapping) and in_thread(r)), {})
    out: list[Any] = []
    last_uuid: str | None = None
    for record in records:
        if not isinstance(record, Mapping):
            out.append(record)
            continue
        if record.get(_NEW_MARK):
            entry = {k: template[k] for k in _SESSION_FIELDS if k in template}
            entry.update({k: v for k, v in record.items() if k != _NEW_MARK})
            mark = record.get("ctxcompact")
            entry["ctxcompact"] = {**ctxcompact_field(), **(mark if isinstance(mark, Mapping) else {})}
            entry.setdefault("isSidechain", sidechain_thread)
            entry["parentUuid"] = last_uuid
            entry["uuid"] = _derived_uuid(last_uuid, entry.get("message"))
            if template.get("timestamp"):
                entry["timestamp"] = template["timestamp"]
            record = entry
        else:
            parent = _link(record, "parentUuid")
            # Only links this rewrite broke: a parent that was in the file and is gone now.
            if parent is not None and parent not in present and parent in parents:
                ancestor: str | None = parent
                seen: set[Any] = set()
                while ancestor is not None and ancestor not in present and ancestor not in seen:
                    seen.add(ancestor)
                    ancestor = parents.get(ancestor)
                record = {**record, "parentUuid": ancestor if ancestor in present else last_uuid}
        out.append(record)
        if in_thread(record):
            last_uuid = _link(record, "uuid")
            template = record
    return claude_code_compact.keep_preserved_segments(out, present, parents)


def _new_entries_last(records: list[Any]) -> list[Any]:
    """``records`` with the new entries of its tail (after the last original message entry)
    moved behind the tail's last entry on a chain (one with a ``uuid``: Claude Code's
    ``system`` entries); records off the chain (file snapshots) stay after them."""
    start = len(records)
    while start > 0:
        record = records[start - 1]
        if isinstance(record, Mapping) and not record.get(_NEW_MARK) and record.get("type") in MESSAGE_TYPES:
            break
        start -= 1
    tail = records[start:]
    new = [r for r in tail if isinstance(r, Mapping) and r.get(_NEW_MARK)]
    rest = [r for r in tail if not (isinstance(r, Mapping) and r.get(_NEW_MARK))]
    chained = max(
        (k + 1 for k, r in enumerate(rest) if isinstance(r, Mapping) and _link(r, "uuid")), default=0
    )
    return [*records[:start], *rest[:chained], *new, *rest[chained:]]


def _link(record: Mapping[str, Any], key: str) -> str | None:
    """A ``uuid`` / ``parentUuid`` that can link entries: a non-empty string, else None."""
    value = record.get(key)
    return value if isinstance(value, str) and value else None


def _derived_uuid(parent: Any, message: Any) -> str:
    import hashlib  # here: loading OpenSSL (~7 ms) is paid by the runs that make a digest

    digest = hashlib.sha256(
        json.dumps([parent, message], sort_keys=True, ensure_ascii=True).encode()
    ).hexdigest()
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ctxcompact:{digest}"))


#: Marks an entry :func:`render_message` created, until :func:`finalize_records` links it.
_NEW_MARK = "__ctxcompact_new__"
_SESSION_FIELDS = claude_code_compact.SESSION_FIELDS


class ClaudeCodeDialect(DialectDefaults):
    """Claude Code session files: entries, not messages; the file is the container."""

    name = NAME
    owns_file = True
    #: The seed's read_file as well as Claude Code's own Read tool.
    read_tools: tuple[tuple[str, str], ...] = (("read_file", "path"), ("Read", "file_path"))

    def looks_like(self, records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
        return looks_like(records, body)

    def parse(self, records: Sequence[Any]) -> Parsed:
        return parse_records(records)

    def render(self, message: Message) -> list[Any]:
        return render_message(message)

    def finalize(self, records: list[Any], original: Sequence[Any]) -> list[Any]:
        return finalize_records(records, original)

    # A summary compaction appends, as Claude Code's /compact does (claude_code_compact).
    def compaction_layout(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        return claude_code_compact.native_layout(messages)

    def append_compaction(
        self, records: Sequence[Any], live: Sequence[Message], compaction: AppendedCompaction
    ) -> list[Any]:
        return claude_code_compact.append_entries(records, live, compaction, _derived_uuid, render_message)

    def compaction_points(self, records: Sequence[Any]) -> list[CompactionPoint]:
        return claude_code_compact.session_points(records)

    def recorded_cwd(self, records: Sequence[Any]) -> str | None:
        return claude_code_compact.recorded_cwd(records)

    def recorded_usage(self, messages: Sequence[Message]) -> RecordedUsage | None:
        return recorded_usage(messages)


def recorded_usage(messages: Sequence[Message]) -> RecordedUsage | None:
    """The last ``message.usage`` of the live main thread (the parsed messages: after the last
    compact boundary, sidechains excluded). One response is written as several entries; the
    prompt fields come from its last entry with usage and the output is the largest any of
    them records (earlier entries hold streaming snapshots). Synthetic responses (API errors,
    all zeros) are skipped. Whether it still holds after a rewrite is decided by
    :func:`ctxcompact.accounting.context_size.context_size`."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "assistant" or message.source is None:
            continue
        found: tuple[Mapping[str, Any], int] | None = None
        output = 0
        for record, position in zip(message.source.records, message.source.indices, strict=True):
            inner = record.get("message") if isinstance(record, Mapping) else None
            usage = inner.get("usage") if isinstance(inner, Mapping) else None
            if isinstance(usage, Mapping):
                output = max(output, token_field(usage.get("output_tokens")))
                found = (usage, position)
        if found is None:
            continue
        usage, position = found
        recorded = RecordedUsage(
            input=token_field(usage.get("input_tokens")),
            cache_creation=token_field(usage.get("cache_creation_input_tokens")),
            cache_read=token_field(usage.get("cache_read_input_tokens")),
            output=output,
            at_message_index=index,
            source=f"message.usage, entry {position + 1}",
        )
        if recorded.prompt:
            return recorded
    return None


DIALECT = ClaudeCodeDialect()
