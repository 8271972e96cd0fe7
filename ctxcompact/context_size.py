"""The real context size: what the model's API recorded, else our count, calibrated.

A transcript that records the API's ``usage`` (Claude Code sessions: ``message.usage`` on
assistant entries; mini-swe-agent trajectories: ``extra.response.usage``) says exactly how many tokens the last request took, system prompt and
tool definitions included — neither of which is in the file. That is the truth ``check`` and
``compact --auto`` decide from: the last recorded usage plus our count of what came after
it. Where nothing is recorded and the model is a Claude model, our offline (cl100k) count is
scaled by a factor measured on real sessions (``bench/calibrate_usage.py``) and the system
prompt and tools are added as ``system_tokens``; the figure is then an *estimate*.

Pure: functions take a conversation and a token report and return frozen results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ctxcompact.tokens import TokenCounter, TokenReport, block_pieces
from ctxcompact.transcript import Conversation

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

SizeSource = Literal["recorded", "estimate", "count"]


@dataclass(frozen=True, slots=True)
class RecordedUsage:
    """One request's token usage as the API reported it, in any dialect.

    ``at_message_index`` is the index (in the conversation's messages) of the response this
    usage belongs to: the request was every message before it; ``output`` is that response.
    ``source`` says where it was read ("message.usage, entry 412").
    """

    input: int
    cache_creation: int
    cache_read: int
    output: int
    at_message_index: int
    source: str

    @property
    def prompt(self) -> int:
        """Tokens the request took: input + cache creation + cache read."""
        return self.input + self.cache_creation + self.cache_read

    @property
    def context(self) -> int:
        """The context after that turn: the request plus the response it produced."""
        return self.prompt + self.output


@dataclass(frozen=True, slots=True)
class ContextSize:
    """How big a conversation's context is, and where the figure comes from.

    ``source`` is ``recorded`` (the last recorded usage + ``after``), ``estimate`` (our
    count × ``factor`` + ``system_tokens``) or ``count`` (our count as is). ``counted`` is our
    own count of the whole conversation, for comparison.
    """

    tokens: int
    source: SizeSource
    counted: int
    recorded: RecordedUsage | None = None
    after: int = 0
    factor: float = 1.0
    system_tokens: int = 0

    @property
    def difference(self) -> float | None:
        """How far our count of what the recorded usage covers (every message up to its
        response) is from it, in percent of the recorded figure (negative: we count fewer).
        None when nothing is recorded."""
        if self.recorded is None or not self.recorded.context:
            return None
        ours = self.counted - self.after
        return (ours - self.recorded.context) / self.recorded.context * 100


# --- extraction ------------------------------------------------------------------------------


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def claude_code_usage(conversation: Conversation) -> RecordedUsage | None:
    """The last ``message.usage`` of the live main thread (the conversation's own messages:
    after the last compact boundary, sidechains excluded). One response is written as
    several entries; the prompt fields come from its last entry with usage and the output
    is the largest any of them records (earlier entries hold streaming snapshots). Synthetic
    responses (API errors, all zeros) are skipped, and so is any usage recorded after a
    message ctxcompact created or changed: that request was not the conversation we have."""
    for index in range(_as_recorded(conversation) - 1, -1, -1):
        message = conversation.messages[index]
        if message.role != "assistant" or message.source is None:
            continue
        found: tuple[Mapping[str, Any], int] | None = None
        output = 0
        for record, position in zip(message.source.records, message.source.indices, strict=True):
            inner = record.get("message") if isinstance(record, Mapping) else None
            usage = inner.get("usage") if isinstance(inner, Mapping) else None
            if not isinstance(usage, Mapping):
                continue
            output = max(output, _int(usage.get("output_tokens")))
            found = (usage, position)
        if found is None:
            continue
        usage, position = found
        recorded = RecordedUsage(
            input=_int(usage.get("input_tokens")),
            cache_creation=_int(usage.get("cache_creation_input_tokens")),
            cache_read=_int(usage.get("cache_read_input_tokens")),
            output=output,
            at_message_index=index,
            source=f"message.usage, entry {position + 1}",
        )
        if recorded.prompt:
            return recorded
    return None


def openai_response_usage(conversation: Conversation) -> RecordedUsage | None:
    """mini-swe-agent trajectories keep each Chat Completions response (with its ``usage``)
    in the assistant message's ``extra.response``: the last one, as for Claude Code."""
    for index in range(_as_recorded(conversation) - 1, -1, -1):
        message = conversation.messages[index]
        if message.role != "assistant" or message.source is None:
            continue
        for record, position in zip(message.source.records, message.source.indices, strict=True):
            extra = record.get("extra") if isinstance(record, Mapping) else None
            response = extra.get("response") if isinstance(extra, Mapping) else None
            usage = response.get("usage") if isinstance(response, Mapping) else None
            if not isinstance(usage, Mapping) or not _int(usage.get("prompt_tokens")):
                continue
            details = usage.get("prompt_tokens_details")
            cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
            prompt = _int(usage.get("prompt_tokens"))
            return RecordedUsage(
                input=max(prompt - cached, 0),
                cache_creation=0,
                cache_read=min(cached, prompt),
                output=_int(usage.get("completion_tokens")),
                at_message_index=index,
                source=f"extra.response.usage, message {position + 1}",
            )
    return None


def _as_recorded(conversation: Conversation) -> int:
    """How many leading messages are as the API saw them: none created or changed by a
    rewrite (in memory) or written by ctxcompact (an entry carrying a ``ctxcompact`` field)."""
    for index, message in enumerate(conversation.messages):
        if message.source is None or message.changed:
            return index
        if any(isinstance(r, Mapping) and "ctxcompact" in r for r in message.source.records):
            return index
    return len(conversation.messages)


#: Usage extraction per dialect name. A dialect that records the API's usage adds its
#: function here (Codex rollouts: their ``token_count`` events).
USAGE_EXTRACTORS: dict[str, Callable[[Conversation], RecordedUsage | None]] = {
    "claude-code": claude_code_usage,
    "openai": openai_response_usage,
}


def recorded_usage(conversation: Conversation) -> RecordedUsage | None:
    """The last usage the transcript records for its live conversation, if its dialect
    records any."""
    extract = USAGE_EXTRACTORS.get(conversation.dialect)
    return extract(conversation) if extract is not None else None


# --- the size --------------------------------------------------------------------------------


def is_claude_model(model: str | None) -> bool:
    return bool(model) and "claude" in str(model).lower()


def context_size(
    conversation: Conversation,
    report: TokenReport,
    *,
    model: str | None,
    system_tokens: int | None = None,
) -> ContextSize:
    """The context size ``check`` and ``compact --auto`` decide from (module docstring).

    ``report`` is our count of ``conversation``; ``model`` the model it is sent to (the
    calibration applies to Claude models, and never to an exact ``count_tokens`` total);
    ``system_tokens`` overrides the dialect's default overhead for an estimate.
    """
    recorded = recorded_usage(conversation)
    claude = is_claude_model(model)
    factor = CLAUDE_TOKEN_FACTOR if claude and not report.exact_total else 1.0
    if recorded is not None:
        after = sum(m.tokens for m in report.messages if m.index > recorded.at_message_index)
        return ContextSize(
            recorded.context + round(after * factor),
            "recorded",
            report.total,
            recorded,
            after=after,
            factor=factor,
        )
    overhead = system_tokens
    if overhead is None:
        overhead = DEFAULT_SYSTEM_TOKENS.get(conversation.dialect, 0) if claude else 0
    tokens = round(report.total * factor) + overhead
    source: SizeSource = "estimate" if factor != 1.0 or overhead else "count"
    return ContextSize(tokens, source, report.total, factor=factor, system_tokens=overhead)


def describe_size(size: ContextSize) -> str:
    """One line saying where a context size comes from ("" for our plain count)."""
    if size.source == "recorded" and size.recorded is not None:
        rec = size.recorded
        after = f" + {size.after:,} counted after it" if size.after else ""
        scaled = f" (×{size.factor:g})" if size.after and size.factor != 1.0 else ""
        diff = size.difference
        ours = f"; our count {size.counted - size.after:,} ({diff:+.1f}%)" if diff is not None else ""
        return f"source: recorded usage {rec.context:,} ({rec.source}){after}{scaled}{ours}"
    if size.source == "estimate":
        system = f" + {size.system_tokens:,} system prompt and tools" if size.system_tokens else ""
        return f"source: estimate, no usage recorded: our count {size.counted:,} × {size.factor:g}{system}"
    return ""


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
