"""Pieces the dialect adapters share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ctxcompact.errors import InputError
from ctxcompact.ir import Block, Message
from ctxcompact.transcripts.dialects.rollout_usage import RolloutUsage
from ctxcompact.transcripts.recorded_usage import RecordedUsage

if TYPE_CHECKING:
    from ctxcompact.transcripts.points import AppendedCompaction, CompactionPoint


@dataclass(frozen=True, slots=True)
class Parsed:
    """A dialect's reading of a conversation's records."""

    messages: tuple[Message, ...]
    #: Indices of records that are not model-visible messages (kept as they are on write).
    passthrough: frozenset[int] = frozenset()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: What a session log records beside its messages: the system prompt it sends, the
    #: model, and the token usage the API reported for the newest call.
    system: tuple[Block, ...] = ()
    model: str | None = None
    recorded: RolloutUsage | None = None
    #: Why the agent would resume this file otherwise than it reads (a session log's broken
    #: ``parentUuid`` chain, an unreachable tail): ``check`` reports each as an error.
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestBody:
    """What a request body (Anthropic's or OpenAI's) holds beside its messages: they count
    towards the prompt, or change its rules, but are not messages."""

    system: tuple[Block, ...] = ()
    tools: tuple[Any, ...] = ()
    model: str | None = None
    #: Extended thinking is on (``"thinking": {"type": "enabled"}``, or ``adaptive``).
    thinking: bool = False

    @classmethod
    def of(cls, body: Mapping[str, Any] | None) -> RequestBody:
        if body is None:
            return cls()
        raw_system = body.get("system")
        system: tuple[Block, ...] = ()
        if isinstance(raw_system, str):
            system = ({"type": "text", "text": raw_system},) if raw_system else ()
        elif isinstance(raw_system, list):
            system = tuple(b for b in raw_system if isinstance(b, Mapping))
        raw_tools = body.get("tools")
        raw_thinking = body.get("thinking")
        return cls(
            system=system,
            tools=tuple(raw_tools) if isinstance(raw_tools, list) else (),
            model=_body_model(body),
            thinking=isinstance(raw_thinking, Mapping)
            and raw_thinking.get("type") in ("enabled", "adaptive"),
        )


def _body_model(body: Mapping[str, Any]) -> str | None:
    """A request body's ``model``, or the one a mini-swe-agent trajectory names in
    ``info.config.model.model_name``."""
    if isinstance(body.get("model"), str):
        return str(body["model"])
    found: Any = body
    for key in ("info", "config", "model", "model_name"):
        found = found.get(key) if isinstance(found, Mapping) else None
    return found if isinstance(found, str) and found else None


class Dialect(Protocol):
    """What ctxcompact needs to know about one way of writing a conversation down.

    Each module of :mod:`ctxcompact.transcripts.dialects` provides one object satisfying this protocol,
    and the registry in ``ctxcompact/dialects/__init__.py`` lists them. Nothing outside the
    dialect modules decides by a dialect's name: readers, writers, the validator and file
    restoration ask the object.
    """

    #: The ``--format`` value, stored in :attr:`Conversation.dialect`.
    name: str
    #: True for a session-log dialect whose records are a whole file's *entries* (Claude
    #: Code): it is detected only on a whole file (JSONL lines, a top-level array or object),
    #: never on a request body's message list, and the file's container is named after it.
    #: False for a dialect of bare API messages.
    owns_file: bool
    #: The API merges or refuses two user (or two assistant) messages in a row.
    alternating_roles: bool
    #: The API accepts a tool id reused in a later turn (a warning, not an error).
    reused_tool_ids: bool
    #: The API takes system (developer) messages anywhere in the list, not only first.
    system_anywhere: bool
    #: The tools the agent reads files with, as ``(tool name, input field with the path)``:
    #: what ``restore-files`` scans when the user names none.
    read_tools: tuple[tuple[str, str], ...]
    #: A rewritten record may carry ctxcompact's size note (``"ctxcompact": {"context": …}``,
    #: :class:`~ctxcompact.transcripts.recorded_usage.SizeNote`), so the next reader sizes it
    #: as the rewrite did; False where the agent's own reader might refuse a field it does not
    #: know (Codex rollout lines).
    size_notes: bool

    def looks_like(self, records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
        """True when ``records`` (and the request ``body`` holding them, if any) are written
        in this dialect. The registry asks the most specific dialect first."""
        ...

    def parse(self, records: Sequence[Any]) -> Parsed:
        """The IR messages of ``records``; raises :class:`InputError` naming the position."""
        ...

    def render(self, message: Message) -> list[Any]:
        """Records for a message a rewrite changed or created (kept ones are never rendered)."""
        ...

    def summary_layout(
        self, messages: Sequence[Message], summary: str, *, keep_user_tokens: int | None
    ) -> tuple[Message, ...] | None:
        """The compacted history this agent itself makes from ``messages`` (everything before
        a kept tail) and a summary, or None for the seed's layout (head + summary pair)."""
        ...

    def finalize(self, records: list[Any], original: Sequence[Any]) -> list[Any]:
        """The output records in file order, after a rewrite, made whole again (links,
        ids); ``original`` are the records read. Unchanged records come back unchanged."""
        ...

    def recorded_usage(self, messages: Sequence[Message]) -> RecordedUsage | None:
        """The last token usage the API reported for these parsed messages (read from their
        ``source`` records), or None when the dialect records none. Whether a rewrite made it
        stale is decided in one place: :func:`ctxcompact.accounting.context_size.context_size`
        (:func:`ctxcompact.transcripts.recorded_usage.rewrite_mark`)."""
        ...


class DialectDefaults:
    """The common answers, for a dialect to inherit and override where it differs: a list of
    messages (not a whole session file) whose roles alternate, unique tool ids, a system prompt
    only at the start, the seed's summary layout, records written back as rendered, no
    recorded usage."""

    owns_file = False
    alternating_roles = True
    reused_tool_ids = False
    system_anywhere = False
    size_notes = True

    def summary_layout(
        self, messages: Sequence[Message], summary: str, *, keep_user_tokens: int | None
    ) -> tuple[Message, ...] | None:
        return None

    def finalize(self, records: list[Any], original: Sequence[Any]) -> list[Any]:
        return records

    def recorded_usage(self, messages: Sequence[Message]) -> RecordedUsage | None:
        return None


@runtime_checkable
class RecordsFolder(Protocol):
    """A session-log dialect whose file records the folder the session ran in (Claude Code's
    ``cwd``, Codex's ``session_meta`` / ``turn_context`` ``cwd``): files are restored from
    there (re-rooted by ``--path-map``) when no ``--work-dir`` is given."""

    def recorded_cwd(self, records: Sequence[Any]) -> str | None:
        """The folder the session ran in, when the file says."""
        ...


@runtime_checkable
class CompactionLog(Protocol):
    """A session-log dialect whose file records its compactions (Claude Code's boundaries,
    Codex's ``compacted`` lines): ``export --points`` lists them."""

    def compaction_points(self, records: Sequence[Any]) -> list[CompactionPoint]:
        """The compactions the file records, oldest first."""
        ...


@runtime_checkable
class NativeCompaction(Protocol):
    """A session-log dialect whose agent compacts by appending to its own file (Claude Code):
    a summary compaction is written its way (see :mod:`ctxcompact.transcripts.points`)."""

    def compaction_layout(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """The compacted context (seed layout: summary, acknowledgement, restored files…)
        laid out as the agent lays it out; what its reader will read back."""
        ...

    def append_compaction(
        self, records: Sequence[Any], live: Sequence[Message], compaction: AppendedCompaction
    ) -> list[Any]:
        """The records appended after ``records`` for the compacted ``live`` messages."""
        ...

    def compaction_points(self, records: Sequence[Any]) -> list[CompactionPoint]:
        """The compactions the file records, oldest first."""
        ...

    def recorded_cwd(self, records: Sequence[Any]) -> str | None:
        """The folder the session ran in, when the file says."""
        ...


def require_mapping(record: Any, where: str) -> Mapping[str, Any]:
    if type(record) is not dict and not isinstance(record, Mapping):  # a dict: no ABC check
        raise InputError(f"{where} is a JSON {json_kind(record)}, expected an object (a message).")
    return record


def json_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


def content_blocks(content: Any, where: str) -> tuple[Block, ...]:
    """Anthropic-style content (a string, a list of blocks, or null) as a tuple of blocks."""
    if content is None:
        return ()
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    if isinstance(content, list):
        # Every message of every file passes here: the common case (dicts, string ids) is
        # checked without building the names an error would need.
        for j, block in enumerate(content):
            if type(block) is not dict and not isinstance(block, Mapping):
                raise InputError(
                    f"{where}: content block {j} is a JSON {json_kind(block)}, expected an object."
                )
            kind = block.get("type")
            key = "id" if kind == "tool_use" else "tool_use_id" if kind == "tool_result" else None
            if key is not None and not isinstance(block.get(key), (str, type(None))):
                require_tool_id(block.get(key), f"{where}, content block {j}: '{key}'")
        return tuple(content)
    raise InputError(f"{where}: 'content' is a JSON {json_kind(content)}, expected a string or a list.")


def plain_text(blocks: tuple[Block, ...]) -> str | None:
    """The text of a message that is exactly one bare text block, else None.

    Such messages are written with string content, the form the seeds use for the messages
    a compaction creates.
    """
    if len(blocks) == 1:
        block = blocks[0]
        if block.get("type") == "text" and set(block) <= {"type", "text"}:
            return str(block.get("text", ""))
    return None


def require_tool_id(value: Any, where: str) -> None:
    """Tool ids pair calls with results: they must be strings (or absent, which the validator
    reports). Anything else — an object, a list, a number — is refused here, by position."""
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where} is a JSON {json_kind(value)}, expected a string id.")


def split_along(originals: Sequence[Sequence[Block]], new: Sequence[Block]) -> list[list[Block]]:
    """A rewritten message's blocks shared out over the raw records it came from (one Claude
    Code entry or Codex line per block group): position by position when the count is
    unchanged; otherwise each block goes to the record holding the identical original block,
    (a tool call or result rebuilt as an equal copy: to the record holding its call id), and a
    block the rewrite created goes with the block before it (or to the first record)."""
    if len(new) == sum(len(o) for o in originals):
        slices, start = [], 0
        for blocks in originals:
            slices.append(list(new[start : start + len(blocks)]))
            start += len(blocks)
        return slices
    home = {id(b): j for j, blocks in enumerate(originals) for b in blocks}
    call_home = {key: j for j, blocks in enumerate(originals) for b in blocks if (key := _call_key(b))}
    assigned: list[list[Block]] = [[] for _ in originals]
    current = 0
    for block in new:
        found = home.get(id(block))
        if found is None and (key := _call_key(block)):
            found = call_home.get(key)
        current = max(current, found) if found is not None else current
        assigned[current].append(block)
    return assigned


def _call_key(block: Block) -> tuple[str, str] | None:
    """A tool call's or result's identity across copies: its type and call id."""
    kind = block.get("type")
    ident = (
        block.get("id") if kind == "tool_use" else block.get("tool_use_id") if kind == "tool_result" else None
    )
    return (str(kind), ident) if isinstance(ident, str) and ident else None
