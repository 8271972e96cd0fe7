"""What survives every strategy verbatim: pins, the live loop, the head.

A message is *pinned* when

* one of its raw records carries ``"ctxcompact_pin": true`` (:data:`PIN_FIELD`; the writer
  keeps unknown fields, so the marker stays on output),
* its text matches one of the ``--pin REGEX`` patterns (``re.search``), or
* it is the first real user message — the task — when ``pin_first`` is True
  (``--pin-first``/``--no-pin-first``); None leaves it to the caller's ``first_default``: the
  local strategies, ``hybrid`` and the fallback ladder pin the task by default, ``full`` on
  its own does not (its summary opens with the task). "Real" means it carries the user's own words and is not an earlier
  compaction summary or a restored file.

Pins are widened to whole tool interaction blocks (a pinned tool result keeps its tool use),
so a strategy that keeps every protected index never splits a pair. Earlier compaction
summaries (ours, Claude Code's ``isCompactSummary``) are recognised here too: every local
strategy keeps them, with the assistant acknowledgement that follows ours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxcompact.accounting.tokens import TokenCounter, message_totals
from ctxcompact.errors import OptionError
from ctxcompact.ir import (
    Message,
    current_loop_start,
    has_user_text,
    leading_system_count,
    live_start,
    per_list,
    round_starts,
    text_of,
    tool_interaction_blocks,
)
from ctxcompact.markers import (
    EARLIER_SUMMARY_PREFIXES,
    OUR_ACKS,
    SUMMARY_ACK,
    SUMMARY_PREFIX,
    restored_file_path,
)

#: The per-message marker field: ``{"role": "user", "content": "…", "ctxcompact_pin": true}``.
PIN_FIELD = "ctxcompact_pin"


@dataclass(frozen=True, slots=True)
class PinOptions:
    """``patterns``: ``--pin REGEX`` (repeatable); ``pin_first``: pin the task (None: the
    strategy's default)."""

    patterns: tuple[str, ...] = ()
    pin_first: bool | None = None

    def first_pinned(self, default: bool = True) -> bool:
        return default if self.pin_first is None else self.pin_first

    def __post_init__(self) -> None:
        for pattern in self.patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise OptionError(
                    "{pin} {pattern!r} is not a valid regular expression: {error}.",
                    "pin",
                    pattern=pattern,
                    error=exc,
                ) from None


#: Pins by default: the first real user message only.
DEFAULT_PINS = PinOptions()


def has_pin_marker(message: Message) -> bool:
    """True when a raw record of ``message`` carries ``"ctxcompact_pin": true`` (at the top
    level, or inside a Claude Code entry's ``message``)."""
    source = message.source
    if source is None:
        return False
    # Inline (no generator): every pass over the pins asks this of every message.
    for record in source.records:
        # type() first: a dict (every parsed record) skips the Mapping ABC's slower check.
        if type(record) is not dict and not isinstance(record, Mapping):
            continue
        if record.get(PIN_FIELD) is True:
            return True
        inner = record.get("message")
        if inner is None:
            continue  # most records (the Mapping ABC's check of None is slow)
        if (type(inner) is dict or isinstance(inner, Mapping)) and inner.get(PIN_FIELD) is True:
            return True
    return False


def is_earlier_summary(message: Message, following: Message | None = None) -> bool:
    """An earlier compaction summary: one our writer marked, Claude Code's (``isCompactSummary``
    or its whole opening sentence), Codex's (its summary prefix) — or a user message opening
    with ours, ``[Conversation compressed]``, when ``following`` is our acknowledgement. Those
    three words alone are no proof: a user may type them, and a summary is kept whatever its
    size (a 28-times-the-budget "summary" was once protected so)."""
    if message.meta.get("kind") == "summary":
        return True
    for record in message.source.records if message.source is not None else ():
        if (type(record) is dict or isinstance(record, Mapping)) and record.get("isCompactSummary") is True:
            return True
    if message.role != "user":
        return False
    for block in message.content:
        if block.get("type") == "text":
            break
    else:
        return False  # no text: no prefix (none of the prefixes is empty)
    text = text_of(message).lstrip()
    if text.startswith(SUMMARY_PREFIX.rstrip()):
        return (
            following is not None
            and following.role == "assistant"
            and text_of(following).strip() == SUMMARY_ACK
        )
    return text.startswith(EARLIER_SUMMARY_PREFIXES)


def summary_at(messages: Sequence[Message], index: int) -> bool:
    """:func:`is_earlier_summary` of ``messages[index]``, with the message after it."""
    following = messages[index + 1] if index + 1 < len(messages) else None
    return is_earlier_summary(messages[index], following)


def first_task_index(messages: Sequence[Message]) -> int | None:
    """Index of the first real user message (the task), or None."""
    for i, message in enumerate(messages):
        if has_user_text(message) and not summary_at(messages, i) and restored_file_path(message) is None:
            return i
    return None


def pinned_indices(
    messages: Sequence[Message], options: PinOptions = DEFAULT_PINS, *, first_default: bool = True
) -> frozenset[int]:
    """Indices of the pinned messages, widened to whole tool interaction blocks."""
    return per_list(
        messages, ("pins", options, first_default), lambda ms: _pinned(ms, options, first_default)
    )


def _pinned(messages: Sequence[Message], options: PinOptions, first_default: bool) -> frozenset[int]:
    compiled = [re.compile(p) for p in options.patterns]
    pinned: set[int] = set()
    for i, message in enumerate(messages):
        if has_pin_marker(message):
            pinned.add(i)
        elif compiled:
            text = text_of(message, include_tool_results=True)
            if any(p.search(text) for p in compiled):
                pinned.add(i)
    if options.first_pinned(first_default):
        first = first_task_index(messages)
        if first is not None:
            pinned.add(first)
    return widen_to_blocks(messages, pinned)


def summary_indices(messages: Sequence[Message]) -> frozenset[int]:
    """Earlier summaries and the acknowledgement right after each (kept as a pair)."""
    out: set[int] = set()
    n = len(messages)
    for i, message in enumerate(messages):
        nxt = messages[i + 1] if i + 1 < n else None
        if is_earlier_summary(message, nxt):
            out.add(i)
            if nxt is not None and nxt.role == "assistant" and text_of(nxt).strip() in OUR_ACKS:
                out.add(i + 1)
    return frozenset(out)


def widen_to_blocks(messages: Sequence[Message], indices: Iterable[int]) -> frozenset[int]:
    """``indices`` plus every message of a tool interaction block any of them is in."""
    out = set(indices)
    if not any(_may_be_in_a_block(messages[i]) for i in out if 0 <= i < len(messages)):
        return frozenset(out)  # no block to find (a pinned task, most often, or nothing)
    for span in tool_interaction_blocks(messages):
        if any(i in span for i in out):
            out.update(range(span.start, span.end))
    return frozenset(out)


def _may_be_in_a_block(message: Message) -> bool:
    """A tool interaction block is an assistant message with tool uses and the messages of
    their results: a message with neither kind of block is in none."""
    return any(block.get("type") in ("tool_use", "tool_result") for block in message.content)


@dataclass(frozen=True, slots=True)
class Protected:
    """What a local strategy must keep verbatim: ``head`` (leading system messages), the
    live loop from ``loop_start`` (the last user request and its tool loop, never compacted; with ``include_loop`` only its live part, and the ``request`` that opened it),
    ``pins`` and earlier ``summaries``. ``indices`` is their union."""

    head: int
    loop_start: int
    pins: frozenset[int]
    summaries: frozenset[int]
    request: frozenset[int] = frozenset()

    @property
    def indices(self) -> frozenset[int]:
        return self.pins | self.summaries | self.request | frozenset(range(self.head))

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and (index >= self.loop_start or index in self.indices)


def protected_part(
    messages: Sequence[Message], options: PinOptions = DEFAULT_PINS, *, include_loop: bool = False
) -> Protected:
    """The protected part of ``messages`` under ``options``. ``include_loop`` (``--include-loop``)
    protects, of the current tool loop, only the request that opened it and the live part (what
    the model has not seen, :func:`~ctxcompact.ir.live_start`), not the whole loop: a
    single-task agent run is all loop."""
    return per_list(
        messages, ("protected", options, include_loop), lambda ms: _protected(ms, options, include_loop)
    )


def _protected(messages: Sequence[Message], options: PinOptions, include_loop: bool) -> Protected:
    head = leading_system_count(messages)
    loop = current_loop_start(messages)
    request: frozenset[int] = frozenset()
    if include_loop:
        if loop < len(messages) and has_user_text(messages[loop]):
            request = widen_to_blocks(messages, {loop})
        loop = max(live_start(messages), head)
    return Protected(
        head=head,
        loop_start=loop,
        pins=pinned_indices(messages, options),
        summaries=widen_to_blocks(messages, summary_indices(messages)),
        request=request,
    )


def message_tokens(messages: Sequence[Message], counter: TokenCounter) -> list[int]:
    """Tokens of each message (content plus the per-message overhead), one counter batch."""
    return message_totals(messages, counter)


def recent_tail_start(messages: Sequence[Message], *, tokens: int, counter: TokenCounter) -> int:
    """Where the newest ``tokens`` tokens of the conversation start (``--keep-recent-tokens``).

    The cut is at a round boundary (a user message with user text), so tool pairs stay whole
    and the tail opens with the user's words: the earliest round start whose tail counts at
    most ``tokens``. ``len(messages)`` when not even the last round fits (or ``tokens`` is 0);
    leading system messages are never part of the tail.
    """
    if tokens <= 0:
        return len(messages)
    sizes = message_tokens(messages, counter)
    head = leading_system_count(messages)
    # A user message that answers a tool use and adds words opens a round inside a block.
    inside = {i for s in tool_interaction_blocks(messages) for i in range(s.start + 1, s.end)}
    best = len(messages)
    for start in reversed(round_starts(messages)):
        if start < head or sum(sizes[start:]) > tokens:
            break
        if start not in inside:
            best = start
    return best
