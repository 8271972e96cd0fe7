"""``compact --strategy selective``: priority-ordered rules per item type.

Each message outside the protected part (:mod:`ctxcompact.compaction.pins`: head, pins, earlier
summaries, the live loop) is an item of one type. The rules run lowest priority number first;
after each one the list is counted again and the run stops as soon as it fits the target.
The defaults (:data:`DEFAULT_RULES`):

=================  ========  ===========  ========
type               action    keep_recent  priority
=================  ========  ===========  ========
tool_result        truncate  5            10
skill_prompt       drop                   20
assistant_message  truncate  5            30
skill_metadata     drop                   40
user_message       truncate  5            50
compaction_summary none                   80
system_prompt      none                   100
memory             none                   100
=================  ========  ===========  ========

``tool_result`` works on tool interaction blocks: the newest ``keep_recent``
blocks stay, older ones are dropped whole (tool use with its results; a result message that
also carries the user's words keeps the words). Inside the kept blocks, tool inputs over
``tool_input_threshold`` (500) tokens and results over ``tool_result_threshold`` (600) become
``preview_tokens`` (200) previews with a visible marker — except items already truncated or
offloaded (never truncated twice). ``truncate`` on text types keeps the newest ``keep_recent``; ``drop`` removes
every unprotected item of the type; ``none`` never touches it. Skill prompts and metadata are
recognised in Claude Code sessions (``isMeta`` entries, skill bodies, command echoes).

Thinking protection: assistant messages of the live tool loop that carry thinking are
never removed (the whole live loop is protected; the stats count them). Phase events
record ``phase``, ``rule``, ``removed``, ``tokens_before``, ``tokens_after``.

The rule table is data: :func:`load_rules` reads a TOML file (``--rules FILE``)::

    [rules.tool_result]
    keep_recent = 3
    [rules.user_message]
    action = "none"
    [fields]
    tool_result_threshold = 800
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxcompact.accounting.tokens import TokenCounter, block_tokens, make_counter
from ctxcompact.compaction.pins import DEFAULT_PINS, PinOptions, Protected, message_tokens, protected_part
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyDetails, StrategyResult
from ctxcompact.compaction.strategies.previews import (
    is_already_truncated,
    preview_tool_result,
    tool_input_text,
)
from ctxcompact.compaction.strategies.previews import preview_tool_input as _preview_input
from ctxcompact.compaction.strategies.selective_rules import (
    DEFAULT_OPTIONS,
    NEVER,
    ItemType,
    Rule,
    SelectiveOptions,
)
from ctxcompact.compaction.strategies.selective_rules import (
    DEFAULT_RULES as DEFAULT_RULES,
)
from ctxcompact.compaction.strategies.selective_rules import load_rules as load_rules
from ctxcompact.ir import Block, Message, has_user_text, text_of, tool_interaction_blocks, tool_result_text

# --- items -------------------------------------------------------------------------------------

_SKILL_PROMPT_OPENINGS = ("Base directory for this skill:",)
_SKILL_METADATA_MARKS = (
    "<command-name>",
    "<local-command-stdout>",
    "<local-command-caveat>",
    "Caveat: The messages below",
)


def _is_meta(message: Message) -> bool:
    records = message.source.records if message.source else ()
    return any(isinstance(r, Mapping) and r.get("isMeta") is True for r in records)


def classify(message: Message) -> ItemType:
    """The item type of a message outside tool interaction blocks."""
    if message.role == "system":
        return "system_prompt"
    if message.role == "assistant":
        return "assistant_message"
    text = text_of(message).lstrip()
    if any(mark in text for mark in _SKILL_METADATA_MARKS):
        return "skill_metadata"
    if text.startswith(_SKILL_PROMPT_OPENINGS) or (_is_meta(message) and text):
        return "skill_prompt"
    return "user_message"


@dataclass(frozen=True, slots=True)
class PhaseEvent:
    """One line of the phase timeline."""

    phase: str
    tokens_before: int
    tokens_after: int
    rule: str | None = None
    removed: int = 0
    previews: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "rule": self.rule,
            "removed": self.removed,
            "previews": self.previews,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


@dataclass(frozen=True, slots=True)
class SelectiveDetails:
    """What ``selective`` did (its ``--stats-json`` step)."""

    events: tuple[PhaseEvent, ...]
    messages_removed: int
    previews: int
    thinking_protected: int
    tokens_before: int
    tokens_after: int
    target_tokens: int

    @property
    def target_met(self) -> bool:
        return self.tokens_after <= self.target_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": [e.to_dict() for e in self.events],
            "messages_removed": self.messages_removed,
            "previews": self.previews,
            "thinking_protected": self.thinking_protected,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "target_tokens": self.target_tokens,
            "target_met": self.target_met,
        }


@dataclass(frozen=True, slots=True)
class SelectiveResult:
    """The rewritten list (kept messages are the very same objects) and the details."""

    messages: tuple[Message, ...]
    changed: bool
    details: SelectiveDetails


@dataclass(slots=True)
class _State:
    """Edits over the original indices: dropped messages, rewritten ones, their sizes, and
    the kept messages' total (kept as they change: the rules ask it once per block)."""

    messages: Sequence[Message]
    sizes: list[int]
    counter: TokenCounter
    dropped: set[int] = field(default_factory=set)
    edited: dict[int, Message] = field(default_factory=dict)
    kept_total: int = 0

    def __post_init__(self) -> None:
        self.kept_total = sum(s for i, s in enumerate(self.sizes) if i not in self.dropped)

    def total(self) -> int:
        return self.kept_total

    def current(self, i: int) -> Message:
        return self.edited.get(i, self.messages[i])

    def drop(self, i: int) -> None:
        if i not in self.dropped:
            self.dropped.add(i)
            self.kept_total -= self.sizes[i]

    def edit(self, i: int, message: Message) -> None:
        self.edited[i] = message
        size = message_tokens([message], self.counter)[0]
        if i not in self.dropped:
            self.kept_total += size - self.sizes[i]
        self.sizes[i] = size

    def output(self) -> tuple[Message, ...]:
        return tuple(self.current(i) for i in range(len(self.messages)) if i not in self.dropped)


def selective_compaction(
    messages: Sequence[Message],
    *,
    target_tokens: int,
    options: SelectiveOptions = DEFAULT_OPTIONS,
    counter: TokenCounter | None = None,
    pins: PinOptions = DEFAULT_PINS,
    protected: Protected | None = None,
) -> SelectiveResult:
    """Apply the rules in priority order until the messages count at most ``target_tokens``.

    ``protected`` (default: :func:`~ctxcompact.compaction.pins.protected_part` under ``pins``) is never
    touched. Never mutates ``messages``. Details: :class:`SelectiveDetails` (the phase
    timeline, messages removed, previews written, tokens before and after).
    """
    counter = counter or make_counter()
    guard = protected or protected_part(messages, pins)
    state = _State(messages, message_tokens(messages, counter), counter)
    before = state.total()
    events = [PhaseEvent("selective_start", before, before)]
    for rule in sorted(options.rules, key=lambda r: r.priority):
        if state.total() <= target_tokens:
            break
        if rule.action == "none" or rule.item_type in NEVER:
            continue
        ahead = state.total()
        if rule.item_type == "tool_result":
            removed, previews = _tool_blocks(state, guard, rule, options, target_tokens)
        else:
            removed, previews = _text_items(state, guard, rule, target_tokens), 0
        events.append(PhaseEvent("selective_rule", ahead, state.total(), rule.item_type, removed, previews))
    after = state.total()
    events.append(PhaseEvent("selective_done", before, after))
    out = state.output()
    thinking = [
        i
        for i in range(guard.loop_start, len(messages))
        if messages[i].role == "assistant"
        and any(b.get("type") in ("thinking", "redacted_thinking") for b in messages[i].content)
    ]
    details = SelectiveDetails(
        events=tuple(events),
        messages_removed=len(state.dropped),
        previews=sum(e.previews for e in events),
        thinking_protected=len(thinking),
        tokens_before=before,
        tokens_after=after,
        target_tokens=target_tokens,
    )
    return SelectiveResult(out, bool(state.dropped or state.edited), details)


def _tool_blocks(
    state: _State, guard: Protected, rule: Rule, options: SelectiveOptions, target: int
) -> tuple[int, int]:
    """Drop tool interaction blocks older than the newest ``keep_recent``, oldest first and only
    until the messages count at most ``target``; preview oversized fields in the kept,
    unprotected ones (likewise). Returns (blocks dropped, fields previewed)."""
    spans = tool_interaction_blocks(state.messages)
    keep_from = max(len(spans) - rule.keep_recent, 0)
    removed = previews = 0
    for n, span in enumerate(spans):
        if state.total() <= target:
            break
        indices = range(span.start, span.end)
        if any(i in guard or i in state.dropped for i in indices):
            continue
        if n < keep_from:
            for i in indices:
                message = state.current(i)
                if i > span.start and has_user_text(message):  # keep the user's words
                    state.edit(
                        i, message.with_content(b for b in message.content if b.get("type") != "tool_result")
                    )
                else:
                    state.drop(i)
            removed += 1
        else:
            previews += _preview_fields(state, indices, options)
    return removed, previews


def _preview_fields(state: _State, indices: range, options: SelectiveOptions) -> int:
    names = {
        b.get("id"): str(b.get("name") or "")
        for b in state.current(indices.start).content
        if b.get("type") == "tool_use"
    }
    previews = 0
    for i in indices:
        message = state.current(i)
        sizes = block_tokens(message.content, state.counter)
        new: list[Block] = []
        for block, tokens in zip(message.content, sizes, strict=True):
            kind = block.get("type")
            if (
                kind == "tool_use"
                and tokens > options.tool_input_threshold
                and not is_already_truncated(tool_input_text(block))
            ):
                block = _preview_input(block, tokens, options.preview_tokens, state.counter)
                previews += 1
            elif (
                kind == "tool_result"
                and tokens > options.tool_result_threshold
                and not is_already_truncated(tool_result_text(block))
            ):
                name = names.get(block.get("tool_use_id"), "tool")
                block = preview_tool_result(block, tokens, options.preview_tokens, state.counter, name)
                previews += 1
            new.append(block)
        if any(a is not b for a, b in zip(new, message.content, strict=True)):
            state.edit(i, message.with_content(new))
    return previews


def _text_items(state: _State, guard: Protected, rule: Rule, target: int) -> int:
    """``drop`` or ``truncate`` the messages of one type outside tool interaction blocks,
    oldest first, until the messages count at most ``target``."""
    in_blocks = {i for s in tool_interaction_blocks(state.messages) for i in range(s.start, s.end)}
    items = [
        i
        for i, m in enumerate(state.messages)
        if i not in in_blocks and i not in state.dropped and classify(m) == rule.item_type
    ]
    older = items if rule.action == "drop" else items[: max(len(items) - rule.keep_recent, 0)]
    victims = 0
    for i in older:
        if state.total() <= target:
            break
        if i not in guard:
            state.drop(i)
            victims += 1
    return victims


# --- the strategy table's entry ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SelectiveRunDetails:
    """``selective``'s step: the rules' details, then the summary fallback's when the rules
    were not enough, or why it was rolled back."""

    local: SelectiveDetails
    summary_events: tuple[PhaseEvent, ...] = ()
    summary: StrategyDetails | None = None
    rolled_back: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.local.to_dict()
        out["events"] += [e.to_dict() for e in self.summary_events]
        if self.summary is not None:
            out["summary_fallback"] = self.summary.to_dict()
        if self.rolled_back is not None:
            out["rolled_back"] = self.rolled_back
        return out


def run_selective(
    messages: Sequence[Message], options: SelectiveOptions, context: StrategyContext
) -> StrategyResult:
    """The rules to the run's target; still over it, a summary of what remains (the live loop
    and the pins kept verbatim). A summary that fails rolls everything back: the input is
    returned unchanged (``--on-failure skip``), or the error is raised (``error``, exit 3).
    With no target (no budget) every rule runs and no summary is written."""
    from ctxcompact.compaction.strategies.full import FullOptions, run_full

    target = context.message_target()
    pins = PinOptions(context.pins.patterns, context.pins.first_pinned(True))
    guard = protected_part(messages, pins, include_loop=context.include_loop)
    result = selective_compaction(
        messages, target_tokens=target or 0, options=options, counter=context.counter, protected=guard
    )
    if target is None or result.details.target_met:
        return StrategyResult(result.messages, result.changed, SelectiveRunDetails(result.details))
    tokens = result.details.tokens_after
    full = run_full(
        result.messages,
        replace(context.options_for(FullOptions), keep_loop=True),
        replace(context, pins=pins),
    )
    failed = getattr(full.details, "summary_error", None)
    if not full.changed and failed is not None:
        details = SelectiveRunDetails(result.details, rolled_back=str(failed))
        warning = f"selective: the summary fallback failed ({failed}); rolled back, transcript unchanged"
        return StrategyResult(tuple(messages), False, details, (warning,))
    after = sum(message_tokens(full.messages, context.counter))
    events = (PhaseEvent("summary_start", tokens, tokens), PhaseEvent("summary_done", tokens, after))
    details = SelectiveRunDetails(result.details, events, full.details)
    return replace(full, changed=full.changed or result.changed, details=details)
