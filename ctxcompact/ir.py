"""The internal representation every command works on.

A transcript, whatever its dialect, becomes a list of :class:`Message` whose ``content`` is a
tuple of Anthropic-shaped block dicts (``{"type": "text", "text": ...}``, ``tool_use``,
``tool_result``, ``thinking``, ``redacted_thinking``, ``image``, ``document``; any other type is
carried through untouched). Roles are ``system``, ``user`` and ``assistant``: an OpenAI
``role: "tool"`` message becomes a ``tool_result`` block of a user message, and ``tool_calls``
become ``tool_use`` blocks.

Lossless by design: a message keeps the raw input records it came from in ``source``. A
strategy returns *the very same object* for a message it keeps, and a new object (built with
:meth:`Message.with_content`) for one it changes, so the writer can emit kept messages
byte-for-byte as they were read. Block dicts are shared, never mutated: code that changes a
block builds a new dict.

This module is the one home of the conversation-structure rules: tool pairs, tool interaction
blocks, rounds and the current tool loop.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from operator import is_
from typing import Any, Literal, TypeVar

Block = Mapping[str, Any]
Role = Literal["system", "user", "assistant"]
#: A ``tool_use`` block's list of the files that call read or wrote, when its dialect can tell
#: (Codex reads through shell commands): file restoration counts them as read. Not sent to the
#: model and not counted; a dialect writes the call back without it.
READ_PATHS = "read_paths"
#: On a ``tool_use`` block of an agent that writes its action in its reply's text (mini-swe-agent,
#: SWE-agent): the call is that text's, so it is neither counted nor written on its own.
TEXT_ACTION = "text_action"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a message came from: its raw records and their positions in the container.

    ``records`` are the parsed JSON values exactly as read (one Anthropic message; an OpenAI
    run of ``tool`` messages; several Claude Code entries sharing a ``message.id``).
    ``indices`` are their positions in the conversation's record list, used for error
    messages ("message 12") and to keep non-message records in place when writing.
    """

    records: tuple[Any, ...]
    indices: tuple[int, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Message:
    """One model-visible message. Identity matters: ``eq=False`` so that "kept" means "is".

    ``changed`` is True for a message a rewrite built from an existing one (it keeps the
    ``source`` as a template for fields we do not model, such as ids or metadata); a message
    with no ``source`` is new (a summary, a restored file).
    """

    role: Role
    content: tuple[Block, ...]
    source: Source | None = None
    changed: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)

    def with_content(self, content: Iterable[Block]) -> Message:
        """A changed copy with new content; role, source and meta carried over."""
        return Message(self.role, tuple(content), self.source, True, self.meta)

    @property
    def index(self) -> int | None:
        """Position of this message's first raw record in its file, if it was read from one."""
        return self.source.indices[0] if self.source else None

    @property
    def is_new(self) -> bool:
        return self.source is None


def new_message(role: Role, text: str, **meta: Any) -> Message:
    """A message created by a rewrite (summary, acknowledgement, restored file)."""
    return Message(role, ({"type": "text", "text": text},), None, True, meta)


def same_objects(a: Sequence[Message], b: Sequence[Message]) -> bool:
    """True when two message lists hold the very same objects in the same order (a rewrite
    that kept everything)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


# --- block helpers ---------------------------------------------------------------------------


def tool_uses(message: Message) -> list[Block]:
    return [b for b in message.content if b.get("type") == "tool_use"]


def tool_results(message: Message) -> list[Block]:
    return [b for b in message.content if b.get("type") == "tool_result"]


def has_user_text(message: Message) -> bool:
    """True for a user message that carries the user's own words, not only tool results.

    This is what starts a *round*. Images and documents count as the user's input too.
    """
    if message.role != "user":
        return False
    for block in message.content:
        kind = block.get("type")
        if kind == "text" and str(block.get("text", "")).strip():
            return True
        if kind in ("image", "document", "image_url", "input_audio", "file"):
            return True
    return False


def text_of(message: Message, *, include_tool_results: bool = False) -> str:
    """The plain text of a message's text blocks (and, optionally, its tool results)."""
    parts: list[str] = []
    for block in message.content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_result" and include_tool_results:
            parts.append(tool_result_text(block))
    return "\n".join(p for p in parts if p)


def tool_result_text(block: Block) -> str:
    """The text inside a tool_result (string content, or the text of its blocks)."""
    content = block.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        ]
        return "\n".join(texts)
    return str(content)


def replace_blocks(
    messages: Sequence[Message], changes: Mapping[tuple[int, int], Block | None]
) -> tuple[Message, ...]:
    """Apply block edits: ``changes[(message_index, block_index)]`` is the new block, or None
    to drop it. Messages without edits are returned as the very same objects (so they are
    written back untouched); edited ones are new objects made with ``with_content``."""
    by_message: dict[int, dict[int, Block | None]] = {}
    for (i, j), block in changes.items():
        by_message.setdefault(i, {})[j] = block
    out: list[Message] = []
    for i, message in enumerate(messages):
        edits = by_message.get(i)
        if not edits:
            out.append(message)
            continue
        new = (edits.get(j, block) for j, block in enumerate(message.content))
        out.append(message.with_content(b for b in new if b is not None))
    return tuple(out)


# --- answers remembered per message list ----------------------------------------------------

T = TypeVar("T")

#: How many message lists :func:`per_list` holds answers for: a compaction's input, its copies
#: (thinking dropped, results masked) and the summary's input; ``eval`` runs every strategy
#: on one input (a list the scope holds, besides these: :func:`remembered_passes`).
LISTS_REMEMBERED = 4
_Remembered = list[tuple[tuple["Message", ...], dict[Hashable, Any]]]


@dataclass(slots=True)
class _Scope:
    """An open :func:`remembered_passes` scope: the lists it holds for its whole length, and
    the most recently asked others (the most recent first, :data:`LISTS_REMEMBERED` at most)."""

    held: _Remembered
    recent: _Remembered


#: The open :func:`remembered_passes` scope (None: no scope, nothing kept).
_PASSES: ContextVar[_Scope | None] = ContextVar("ctxcompact_remembered_passes", default=None)


@contextmanager
def remembered_passes(*held: Sequence[Message]) -> Iterator[None]:
    """Within it, :func:`per_list` remembers its answers; when it closes they are dropped, so
    nothing outlives the call that opened it (a library host's agent loop keeps none of its
    transcripts alive through us). A compaction (:func:`ctxcompact.compaction.pipeline.compact_conversation`)
    opens one for its run, ``eval`` one per conversation; a scope opened inside another is the
    outer one. A ``ContextVar``: threads and tasks each see their own.

    ``held``: lists whose answers are kept for the whole scope, however many other lists are
    asked about meanwhile (``eval`` holds the conversation every strategy reads: a strategy's
    own copies of it would otherwise push it out before the next strategy asks)."""
    if _PASSES.get() is not None:
        yield
        return
    token = _PASSES.set(_Scope([(tuple(messages), {}) for messages in held], []))
    try:
        yield
    finally:
        _PASSES.reset(token)


def per_list(messages: Sequence[Message], key: Hashable, compute: Callable[[Sequence[Message]], T]) -> T:
    """``compute(messages)``, remembered under ``key`` for the very same messages while a
    :func:`remembered_passes` scope is open: a later call with a list that holds the same
    message objects in the same order gets the same answer without the pass (``eval`` asks a
    dozen passes of one list of thousands of messages). Outside a scope: ``compute(messages)``.

    Sound because what a pass reads is the message objects: a message is immutable (frozen,
    its content a tuple of blocks that are never mutated, its raw records as read), and a
    rewrite makes a new object for any message it changes, so a list with one message replaced
    is another list. The scope's held lists and the last :data:`LISTS_REMEMBERED` others are
    held (so no id is reused while its answers are); ``compute`` must return a value its
    callers do not mutate.
    """
    scope = _PASSES.get()
    if scope is None:
        return compute(messages)
    for held, answers in scope.held:
        if _holds(held, messages):
            if key not in answers:
                answers[key] = compute(messages)
            return answers[key]
    remembered = scope.recent
    for entry in remembered:
        held, answers = entry
        if _holds(held, messages):
            if key not in answers:
                answers[key] = compute(messages)
            if entry is not remembered[0]:  # the most recently asked first
                remembered.remove(entry)
                remembered.insert(0, entry)
            return answers[key]
    value = compute(messages)
    remembered.insert(0, (tuple(messages), {key: value}))
    del remembered[LISTS_REMEMBERED:]
    return value


def _holds(held: tuple[Message, ...], messages: Sequence[Message]) -> bool:
    """Whether ``messages`` are the very objects of ``held``, in its order."""
    return len(held) == len(messages) and all(map(is_, held, messages))


# --- structure: pairs, tool interaction blocks, rounds, the current loop ---------------------


def tool_names_by_id(messages: Sequence[Message]) -> dict[str, str]:
    """Map every tool_use id to its tool name (used to label tool results)."""
    names: dict[str, str] = {}
    for message in messages:
        if message.role != "assistant":
            continue
        for block in message.content:
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                names[block["id"]] = str(block.get("name", ""))
    return names


def round_starts(messages: Sequence[Message]) -> list[int]:
    """Indices of the user messages that carry user text: each one opens a round."""
    return [i for i, m in enumerate(messages) if has_user_text(m)]


def current_loop_start(messages: Sequence[Message]) -> int:
    """Index of the last user message with user text: the live loop starts there.

    That message and everything after it is the live request and its tool loop: local
    strategies never touch it. With no user text at all, the whole list is the loop (0) —
    except leading system messages, which are never in a loop.
    """
    for i in range(len(messages) - 1, -1, -1):  # from the end: the loop is short
        if has_user_text(messages[i]):
            return i
    return leading_system_count(messages)


def live_start(messages: Sequence[Message]) -> int:
    """Where the part the model has not answered yet starts (live tool results are
    untouchable): the last assistant turn whose tool results end the list (the model has not
    seen them), or a last user request (with the turn whose calls it answers, if it answers
    any). A list that ends with an assistant turn ends with what the next request builds on
    (a prefill, a ``pause_turn`` to continue, or the agent's last words): that turn.

    A strategy keeps this part whole: it may offload it or refuse, never summarize it.
    """
    n = len(messages)
    if not n:
        return n
    if messages[-1].role == "assistant":
        return n - 1
    if messages[-1].role != "user":
        return n
    start = n - 1
    while start > 0 and messages[start - 1].role == "user":
        start -= 1  # OpenAI: one tool message per result
    return block_start_at(messages, start)


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Where each assistant turn starts, with what it answers: the index of each assistant
    message, widened back to a user message that opens its round (the request the turn
    answers); tool interaction blocks are never split."""
    return list(per_list(messages, "turns", _turn_starts))


def _turn_starts(messages: Sequence[Message]) -> tuple[int, ...]:
    at = block_starts(messages)  # one pass: a block_start_at per message made this quadratic
    starts: list[int] = []
    last = -1
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        start = at[i]
        if start > 0 and at[start - 1] == start - 1 and has_user_text(messages[start - 1]):
            start -= 1
        if start > last:
            starts.append(start)
            last = start
    return tuple(starts)


def leading_system_count(messages: Sequence[Message]) -> int:
    """How many messages at the start are system messages (the *head*)."""
    n = 0
    for message in messages:
        if message.role != "system":
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open range ``[start, end)`` of message indices."""

    start: int
    end: int

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and self.start <= index < self.end

    def __len__(self) -> int:
        return self.end - self.start


def tool_interaction_blocks(messages: Sequence[Message]) -> list[Span]:
    """Spans of *tool interaction blocks*: an assistant message with tool uses plus the user
    message(s) right after it that hold their results: taken or left whole.

    A strategy keeps or drops such a span whole, which is what keeps pairs valid.
    """
    return list(per_list(messages, "blocks", _tool_interaction_blocks))


def _tool_interaction_blocks(messages: Sequence[Message]) -> tuple[Span, ...]:
    # One pass, every read inline (no comprehension or generator per message): this runs a
    # dozen times per compaction over lists of thousands of messages.
    spans: list[Span] = []
    i = 0
    n = len(messages)
    while i < n:
        message = messages[i]
        i += 1
        if message.role != "assistant":
            continue
        ids: set[Any] | None = None
        for block in message.content:
            if block.get("type") == "tool_use":
                if ids is None:
                    ids = {block.get("id")}
                else:
                    ids.add(block.get("id"))
        if ids is None:
            continue
        start = i - 1
        # Results answer the immediately preceding assistant message; OpenAI tool messages
        # may be followed by more tool messages for the same call set.
        while i < n:
            answer = messages[i]
            if answer.role != "user":
                break
            for block in answer.content:
                if block.get("type") == "tool_result" and block.get("tool_use_id") in ids:
                    break
            else:
                break
            i += 1
        spans.append(Span(start, i))
    return tuple(spans)


def block_start_at(messages: Sequence[Message], index: int) -> int:
    """Where the tool interaction block holding message ``index`` starts; ``index`` itself when
    no block holds it or one starts there. Cutting a list at ``index`` keeps every tool pair
    whole only when this returns ``index``: a user message that answers a tool_use *and* adds
    text opens a round, yet its results belong with the assistant message before it."""
    for span in tool_interaction_blocks(messages):
        if span.start < index < span.end:
            return span.start
    return index


def block_starts(messages: Sequence[Message]) -> list[int]:
    """:func:`block_start_at` of every index, from one pass over the blocks."""
    starts = list(range(len(messages)))
    for span in tool_interaction_blocks(messages):
        for index in range(span.start + 1, span.end):
            starts[index] = span.start
    return starts


@dataclass(frozen=True, slots=True)
class ToolPair:
    """One tool use and the results answering it, as ``(message index, block index)``
    positions; ``span`` is its tool interaction block."""

    use: tuple[int, int]
    results: tuple[tuple[int, int], ...]
    name: str
    span: Span


def tool_pairs(messages: Sequence[Message]) -> list[ToolPair]:
    """Every tool use in order, with the positions of the results that answer it (in the same
    tool interaction block). The one walk strategies use to keep or change pairs together."""
    return list(per_list(messages, "pairs", _tool_pairs))


def _tool_pairs(messages: Sequence[Message]) -> tuple[ToolPair, ...]:
    pairs: list[ToolPair] = []
    for span in tool_interaction_blocks(messages):
        results: dict[Any, list[tuple[int, int]]] = {}
        for i in range(span.start + 1, span.end):
            for j, block in enumerate(messages[i].content):
                if block.get("type") == "tool_result":
                    results.setdefault(block.get("tool_use_id"), []).append((i, j))
        for j, block in enumerate(messages[span.start].content):
            if block.get("type") == "tool_use":
                found = tuple(results.get(block.get("id"), ()))
                pairs.append(ToolPair((span.start, j), found, str(block.get("name") or ""), span))
    return tuple(pairs)
