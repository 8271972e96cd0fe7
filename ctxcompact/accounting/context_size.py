"""The real context size: what the model's API recorded, else our count, calibrated.

A transcript that records the API's ``usage`` (Claude Code sessions: ``message.usage`` on
assistant entries; mini-swe-agent trajectories: ``extra.response.usage``; Codex rollouts:
``token_count`` events) says exactly how many tokens the last request took, system prompt and
tool definitions included — neither of which is in the file. That is the truth ``check`` and
``compact --auto`` decide from: the last recorded usage plus our count of what came after
it. Where nothing is recorded and the model is a Claude model, our offline (cl100k) count is
scaled by a factor measured on real sessions (``bench/calibrate_usage.py``) and the system
prompt and tools are added as ``system_tokens``; the figure is then an *estimate*.

A rewrite (compact, offload, prune…) changes the messages a recorded usage describes: that
usage is then stale. The rewrite writes down the size it measured for its output (a
``SizeNote`` on the records it wrote); the next reader sizes from it (*rescaled*: the same
overhead outside the messages, our count of the messages now) until the agent records a
fresh usage after the rewrite. So ``compact --auto``, ``check``, ``count`` and ``sessions``
give one figure for the same file: one size decides.

Pure: functions take a conversation and a token report and return frozen results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ctxcompact.accounting.tokens import TokenCounter, TokenReport, block_pieces
from ctxcompact.transcripts.dialects import dialect_named
from ctxcompact.transcripts.io import Conversation
from ctxcompact.transcripts.recorded_usage import RecordedUsage as RecordedUsage  # re-exported
from ctxcompact.transcripts.recorded_usage import SizeNote, rewrite_mark

#: Claude tokens per cl100k token, measured on the real Claude Code sessions of the corpus
#: (``bench/calibrate_usage.py``: the slope of recorded prompt tokens against our count over
#: consecutive turns of each session, so the unrecorded system prompt cancels out).
CLAUDE_TOKEN_FACTOR = 1.28
#: The system prompt and tool definitions Claude Code sends but does not write to the file:
#: the median, over the corpus sessions, of the first recorded prompt minus our calibrated
#: count of the messages before it.
CLAUDE_CODE_SYSTEM_TOKENS = 24_000
#: ``--system-tokens`` default per dialect; 0 where the transcript holds its own system
#: prompt and tools (a request body) or holds none we could know of.
DEFAULT_SYSTEM_TOKENS: Mapping[str, int] = {"claude-code": CLAUDE_CODE_SYSTEM_TOKENS}

SizeSource = Literal["recorded", "rescaled", "estimate", "count"]


@dataclass(frozen=True, slots=True)
class ContextSize:
    """How big a conversation's context is, and where the figure comes from.

    ``source`` is ``recorded`` (the last recorded usage + ``after``), ``rescaled`` (a
    ctxcompact rewrite came after the last recorded usage: the overhead the rewrite measured,
    ``note``, + our count × ``factor``), ``estimate`` (our count × ``factor`` +
    ``system_tokens``) or ``count`` (our count as is). ``counted`` is our own count of the
    whole conversation, for comparison; ``stale`` the usage a rewrite made stale, if any.
    """

    tokens: int
    source: SizeSource
    counted: int
    recorded: RecordedUsage | None = None
    after: int = 0
    factor: float = 1.0
    system_tokens: int = 0
    note: SizeNote | None = None
    stale: RecordedUsage | None = None

    @property
    def difference(self) -> float | None:
        """How far our count of what the recorded usage covers (every message up to its
        response) is from it, in percent of the recorded figure (negative: we count fewer).
        None when nothing is recorded."""
        if self.recorded is None or not self.recorded.context:
            return None
        ours = self.counted - self.after
        return (ours - self.recorded.context) / self.recorded.context * 100

    @property
    def overhead(self) -> int:
        """The part of ``tokens`` outside our count × ``factor``: the system prompt and tools a
        session file does not hold, and what our count misses of what the API counts."""
        return self.tokens - round(self.counted * self.factor)

    def resized(self, counted: int) -> int:
        """The size of a rewrite of this conversation that our count puts at ``counted``: the
        same overhead, the messages scaled as here. The one measure a compaction decides by,
        aims at and writes down (:class:`SizeNote`)."""
        return self.overhead + round(counted * self.factor)

    def counted_for(self, tokens: int) -> int:
        """The inverse of :meth:`resized`: the largest count whose size is at most ``tokens``."""
        return max(int((tokens - self.overhead) / self.factor), 0)


# --- the size --------------------------------------------------------------------------------


#: Below this share of a session log's recorded input, our count of the same messages says a
#: rewrite (prune, offload in place) shrank them since the call was recorded: the record is
#: stale and our count decides.
STALE_RECORD_RATIO = 0.75


def recorded_usage(
    conversation: Conversation, report: TokenReport | None = None, *, before: int | None = None
) -> RecordedUsage | None:
    """The last usage the transcript records for its live conversation (on a message before
    index ``before``, when given), if its dialect records any: each dialect extracts its own
    from the messages (:meth:`Dialect.recorded_usage`); a session log's usage line (Codex's
    ``token_count``, ``Conversation.recorded``) is converted to the same record. With
    ``report`` (our count), a log record our count of the messages it covers falls far short
    of is stale: None. Whether a rewrite made it stale is :func:`context_size`'s to decide."""
    messages = conversation.messages if before is None else conversation.messages[:before]
    usage = dialect_named(conversation.dialect).recorded_usage(messages)
    if usage is not None or conversation.recorded is None:
        return usage
    usage = conversation.recorded.as_usage(conversation.messages)
    if before is not None and usage.at_message_index >= before:
        return None
    if report is not None:
        after = sum(m.tokens for m in report.messages if m.index > usage.at_message_index)
        if report.total - after < STALE_RECORD_RATIO * conversation.recorded.last.input_tokens:
            return None
    return usage


def is_claude_model(model: str | None) -> bool:
    return bool(model) and "claude" in str(model).lower()


def context_size(
    conversation: Conversation,
    report: TokenReport,
    *,
    model: str | None,
    system_tokens: int | None = None,
) -> ContextSize:
    """The context size ``count``, ``check``, ``sessions`` and ``compact`` decide from (module
    docstring).

    ``report`` is our count of ``conversation``; ``model`` the model it is sent to (the
    calibration applies to Claude models, and never to an exact ``count_tokens`` total);
    ``system_tokens`` overrides the dialect's default overhead for an estimate.

    Recorded usage holds for the messages it describes: usage recorded before a ctxcompact
    rewrite of the messages it covers (:func:`~ctxcompact.transcripts.recorded_usage.rewrite_mark`)
    is stale. The size is then the one the rewrite measured and wrote down (``rescaled``:
    its overhead + our count now), or, when it wrote none, the usage recorded before the
    first message it touched plus our count after it, or the calibrated estimate. Usage
    recorded after the rewrite (an agent resumed the compacted session) is the truth again.
    """
    claude = is_claude_model(model)
    factor = CLAUDE_TOKEN_FACTOR if claude and not report.exact_total else 1.0
    mark = rewrite_mark(conversation.messages)
    recorded = recorded_usage(conversation, report)
    stale = None
    if recorded is not None and mark is not None and recorded.at_message_index < mark.horizon:
        stale, recorded = recorded, None
    if recorded is None and mark is not None and mark.note is not None:
        tokens = mark.note.overhead + round(report.total * factor)
        return ContextSize(tokens, "rescaled", report.total, factor=factor, note=mark.note, stale=stale)
    if recorded is None and mark is not None:
        recorded = recorded_usage(conversation, report, before=mark.first)
    if recorded is not None:
        after = sum(m.tokens for m in report.messages if m.index > recorded.at_message_index)
        return ContextSize(
            recorded.context + round(after * factor),
            "recorded",
            report.total,
            recorded,
            after=after,
            factor=factor,
            stale=stale,
        )
    overhead = system_tokens
    if overhead is None:
        overhead = DEFAULT_SYSTEM_TOKENS.get(conversation.dialect, 0) if claude else 0
    tokens = round(report.total * factor) + overhead
    source: SizeSource = "estimate" if factor != 1.0 or overhead else "count"
    return ContextSize(tokens, source, report.total, factor=factor, system_tokens=overhead, stale=stale)


def with_size_note(rewritten: Conversation, size: ContextSize, after: int) -> Conversation:
    """``rewritten`` carrying its size (``after``, measured as ``size`` measures its input) for
    the next reader, when the input's recorded usage does not describe it any more: every
    record the rewrite writes carries the note (:class:`SizeNote`)."""
    if size.source in ("recorded", "rescaled") or size.stale is not None:
        return replace(rewritten, note=SizeNote(after, size.overhead))
    return rewritten


def describe_size(size: ContextSize) -> str:
    """One line saying where a context size comes from ("" for our plain count)."""
    stale = (
        f"; usage {size.stale.context:,} ({size.stale.source}) predates a ctxcompact rewrite"
        if size.stale is not None
        else ""
    )
    if size.source == "recorded" and size.recorded is not None:
        rec = size.recorded
        after = f" + {size.after:,} counted after it" if size.after else ""
        scaled = f" (×{size.factor:g})" if size.after and size.factor != 1.0 else ""
        diff = size.difference
        ours = f"; our count {size.counted - size.after:,} ({diff:+.1f}%)" if diff is not None else ""
        return f"source: recorded usage {rec.context:,} ({rec.source}){after}{scaled}{ours}{stale}"
    if size.source == "rescaled":
        scaled = f" × {size.factor:g}" if size.factor != 1.0 else ""
        return (
            f"source: rescaled after a ctxcompact rewrite: our count {size.counted:,}{scaled} + "
            f"{size.overhead:,} outside the messages, as the rewrite measured them{stale}"
        )
    if size.source == "estimate":
        system = f" + {size.system_tokens:,} system prompt and tools" if size.system_tokens else ""
        what = "no usage recorded" if size.stale is None else "no usage recorded since a ctxcompact rewrite"
        return f"source: estimate, {what}: our count {size.counted:,} × {size.factor:g}{system}{stale}"
    return f"source: our count{stale}" if stale else ""


# --- what the live count leaves out ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SideEntries:
    """Claude Code entries reported apart from the live conversation: inline subagent
    (``isSidechain``) entries the main thread does not send, and ``isMeta`` entries (local
    command caveats and the like) that are part of it, counted by our counter."""

    sidechain_entries: int = 0
    sidechain_tokens: int = 0
    meta_entries: int = 0
    meta_tokens: int = 0


def side_entries(conversation: Conversation, counter: TokenCounter) -> SideEntries | None:
    """Sidechain and meta entries of a Claude Code conversation (None for other dialects)."""
    if conversation.dialect != "claude-code":
        return None
    live = {i for m in conversation.messages if m.source is not None for i in m.source.indices}
    side: list[Mapping[str, Any]] = []
    meta: list[Mapping[str, Any]] = []
    for position, record in enumerate(conversation.records):
        if not isinstance(record, Mapping) or not isinstance(record.get("message"), Mapping):
            continue
        if record.get("type") not in ("user", "assistant"):
            continue
        if position in live and record.get("isMeta"):
            meta.append(record)
        elif position not in live and record.get("isSidechain"):
            side.append(record)
    return SideEntries(len(side), entries_tokens(side, counter), len(meta), entries_tokens(meta, counter))


def entries_tokens(entries: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    """Our count of the message content of raw Claude Code entries (no per-message overhead)."""
    texts: list[str] = []
    fixed = 0
    for entry in entries:
        inner = entry.get("message")
        content = inner.get("content") if isinstance(inner, Mapping) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks if isinstance(blocks, list) else ():
            if isinstance(block, Mapping):
                pieces, extra = block_pieces(block)
                texts.extend(pieces)
                fixed += extra
    return (sum(counter.count_batch(texts)) if texts else 0) + fixed


def describe_side(side: SideEntries) -> str:
    """One line on the entries a Claude Code count reports apart."""
    return (
        f"apart: {side.sidechain_entries} sidechain entries ({side.sidechain_tokens:,} tokens, not sent "
        f"with the main thread); {side.meta_entries} meta entries ({side.meta_tokens:,} tokens, included)"
    )
