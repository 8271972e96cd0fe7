"""``compact --strategy key-messages``: scored selection to a token target.

The seed's ``KeyMessageExtractionStrategy`` on the IR (``docs/decisions/0001-reference-designs.md``):

* **Score** (:func:`score_message`): recent ``min_recent_messages`` (10) messages +1000; base
  user 100, ``ARTIFACT_SAVED`` 90, ``NODE_COMPLETE`` 85, assistant with tool calls 80, tool
  result 79, assistant 50; plus ``0.01 × index``. A user message holding only tool results is
  a ``tool`` message. The explainable weights are small enough never to reorder its categories (at most +4.5, the gap between
  ``NODE_COMPLETE`` and ``ARTIFACT_SAVED`` being 5): a file path +1.5, a code block +1.5, a
  must/should/need/必须/需要 keyword +1.0, a number +0.5; a tool result over 600 tokens −2, one
  repeating an earlier result's text −3.
* **Select**: the protected part (:mod:`ctxcompact.compaction.pins`: head, pins, earlier summaries, the
  live loop) and the recent messages are always kept; then the rest greedily by score while it
  fits ``target_tokens`` (``token_budget × target_usage``, 0.5 by default; the trigger, 0.8 by default,
  is ``--threshold``'s). A tool interaction block is taken or left whole. Output in original order.
* **Over budget**, in order, each recorded in ``stats["fallbacks"]``: tool results
  become previews (tool name, status, first and last lines); long user/assistant texts are
  clipped to their first paragraph, bullets and conclusion; then only the last K=4 rounds
  (with their tool results) stay, besides the protected part.

Stats (a ``CompressionResult.metadata``): ``input_count``, ``output_count``,
``dropped_count``, ``dropped_indexes``, ``input_tokens``, ``output_tokens``,
``strategy_used``; plus ``target_tokens``, ``target_met`` and ``fallbacks``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxcompact.accounting.tokens import TokenCounter, block_tokens, make_counter
from ctxcompact.compaction.pins import (
    DEFAULT_PINS,
    PinOptions,
    Protected,
    message_tokens,
    protected_part,
    widen_to_blocks,
)
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyResult
from ctxcompact.compaction.strategies.options import DEFAULT_FALLBACK_ROUNDS as DEFAULT_FALLBACK_ROUNDS
from ctxcompact.compaction.strategies.options import DEFAULT_MIN_RECENT as DEFAULT_MIN_RECENT
from ctxcompact.compaction.strategies.options import DEFAULT_TARGET_USAGE as DEFAULT_TARGET_USAGE
from ctxcompact.compaction.strategies.options import DEFAULT_TOKEN_BUDGET as DEFAULT_TOKEN_BUDGET
from ctxcompact.compaction.strategies.options import LONG_RESULT_TOKENS as LONG_RESULT_TOKENS
from ctxcompact.compaction.strategies.options import TRIGGER_THRESHOLD as TRIGGER_THRESHOLD
from ctxcompact.compaction.strategies.options import KeyMessageOptions as KeyMessageOptions
from ctxcompact.compaction.strategies.previews import (
    clip_long_text,
    is_already_truncated,
    preview_tool_result,
)
from ctxcompact.ir import (
    Block,
    Message,
    has_user_text,
    round_starts,
    text_of,
    tool_interaction_blocks,
    tool_result_text,
    tool_uses,
)

STRATEGY_USED = "KeyMessageExtraction"
RECENT_BONUS = 1000.0
BASE_USER, BASE_ARTIFACT, BASE_NODE_COMPLETE = 100.0, 90.0, 85.0
BASE_TOOL_CALLS, BASE_TOOL, BASE_ASSISTANT = 80.0, 79.0, 50.0
POSITION_WEIGHT = 0.01
WEIGHT_PATH, WEIGHT_CODE, WEIGHT_KEYWORD, WEIGHT_NUMBER = 1.5, 1.5, 1.0, 0.5
PENALTY_LONG_RESULT, PENALTY_REPEATED_RESULT = 2.0, 3.0

_EXTENSION = r"\.(?:py|ts|js|tsx|jsx|go|rs|java|c|h|cpp|md|json|toml|ya?ml|txt|sh)\b"
#: A path: a slashed one (``src/app.py``, ``~/x``, ``../y``), or a file name with a known
#: extension. Looked for in two parts (:func:`has_path`); ``++``: a run that is not followed by
#: the slash never is when shorter, so the scan never backtracks into it.
_SLASHED = re.compile(r"(?:^|[\s\"'`(])(?:~|\.{1,2})?/?[\w.-]++/[\w./-]+")
_FILE_NAME = re.compile(r"\b[\w-]++" + _EXTENSION)
_EXTENSION_AT = re.compile(_EXTENSION)
_PATH = re.compile(f"{_SLASHED.pattern}|{_FILE_NAME.pattern}")
_KEYWORD = re.compile(r"\b(must|should|need)\b|必须|需要", re.I)
_KEYWORD_WORDS = ("must", "should", "need", "必须", "需要")
_NUMBER = re.compile(r"\d")

#: The seed's defaults, as :func:`key_message_extraction` takes them.
DEFAULT_KEY_MESSAGE_OPTIONS = KeyMessageOptions()


def base_score(message: Message, text: str | None = None) -> float:
    """The seed's category score of one message (``text``: its text with tool results, when
    the caller has it)."""
    if has_user_text(message):
        return BASE_USER
    text = text_of(message, include_tool_results=True) if text is None else text
    if "ARTIFACT_SAVED" in text:
        return BASE_ARTIFACT
    if "NODE_COMPLETE" in text:
        return BASE_NODE_COMPLETE
    if message.role == "assistant" and tool_uses(message):
        return BASE_TOOL_CALLS
    if message.role == "user":
        return BASE_TOOL
    return BASE_ASSISTANT if message.role == "assistant" else 0.0


def content_weight(text: str) -> float:
    """The seed's "含文件路径/代码块/数值/关键词 加分", one weight per kind present.

    Each kind is looked for where a substring scan says it can be (a tool result can be
    megabytes, and a regex over all of it for a kind it lacks is most of the strategy's time):
    the regex confirms, so the answer is the regex's."""
    weight = 0.0
    if has_path(text):
        weight += WEIGHT_PATH
    if "```" in text:
        weight += WEIGHT_CODE
    folded = text.casefold()  # every case-insensitive match of a keyword holds it folded
    if any(w in folded for w in _KEYWORD_WORDS) and _KEYWORD.search(text):
        weight += WEIGHT_KEYWORD
    if _NUMBER.search(text):
        weight += WEIGHT_NUMBER
    return weight


def has_path(text: str) -> bool:
    """Whether ``text`` holds a path (:data:`_PATH`): a slashed one where there is a slash;
    a file name at each known extension whose dot follows a word character (else by the
    regex itself, from there)."""
    if "/" in text and _SLASHED.search(text):
        return True
    for match in _EXTENSION_AT.finditer(text):
        at = match.start()
        before = text[at - 1] if at else ""
        if before.isalnum() or before == "_":
            return True
        if before == "-":  # ``x-.py``: the name may start further back
            return _FILE_NAME.search(text, max(0, _run_start(text, at))) is not None
    return False


def _run_start(text: str, end: int) -> int:
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    return start


def score_message(
    message: Message, index: int, total: int, *, min_recent: int, tokens: int, repeated: bool = False
) -> float:
    """The priority of ``message`` at ``index`` of ``total``."""
    recent = RECENT_BONUS if index >= total - min_recent else 0.0
    text = text_of(message, include_tool_results=True)
    base = base_score(message, text)
    score = base + recent + POSITION_WEIGHT * index + content_weight(text)
    if base == BASE_TOOL:
        if tokens > LONG_RESULT_TOKENS:
            score -= PENALTY_LONG_RESULT
        if repeated:
            score -= PENALTY_REPEATED_RESULT
    return score


def score_messages(messages: Sequence[Message], sizes: Sequence[int], *, min_recent: int) -> list[float]:
    """The score of every message; a tool result repeating an earlier one's text is penalised."""
    seen: set[str] = set()
    scores: list[float] = []
    for i, message in enumerate(messages):
        results = "\n".join(tool_result_text(b) for b in message.content if b.get("type") == "tool_result")
        repeated = bool(results) and results in seen
        if results:
            seen.add(results)
        scores.append(
            score_message(
                message, i, len(messages), min_recent=min_recent, tokens=sizes[i], repeated=repeated
            )
        )
    return scores


def select_messages(
    messages: Sequence[Message],
    sizes: Sequence[int],
    must: frozenset[int],
    *,
    target_tokens: int,
    min_recent: int,
) -> set[int]:
    """``must`` plus a greedy fill by score to ``target_tokens``, tool blocks whole."""
    group_of: dict[int, range] = {}
    for span in tool_interaction_blocks(messages):
        for i in range(span.start, span.end):
            group_of[i] = range(span.start, span.end)
    selected = set(must)
    used = sum(sizes[i] for i in selected)
    scores = score_messages(messages, sizes, min_recent=min_recent)
    for i in sorted(range(len(messages)), key=lambda k: scores[k], reverse=True):
        if i in selected:
            continue
        members = group_of.get(i, range(i, i + 1))
        cost = sum(sizes[k] for k in members)
        if used + cost <= target_tokens:
            selected.update(members)
            used += cost
    return selected


def key_message_extraction(
    messages: Sequence[Message],
    *,
    target_tokens: int | None = None,
    options: KeyMessageOptions = DEFAULT_KEY_MESSAGE_OPTIONS,
    counter: TokenCounter | None = None,
    pins: PinOptions = DEFAULT_PINS,
    protected: Protected | None = None,
) -> KeyMessagesResult:
    """Keep the key messages within ``target_tokens`` (default ``options.target_tokens()``).
    ``protected`` (default: :func:`~ctxcompact.compaction.pins.protected_part` under ``pins``) is kept
    verbatim. Never mutates ``messages``; see the module docstring."""
    counter = counter or make_counter()
    target = options.target_tokens() if target_tokens is None else target_tokens
    guard = protected or protected_part(messages, pins)
    sizes = message_tokens(messages, counter)
    n = len(messages)
    recent = {i for i in range(max(n - options.min_recent_messages, 0), n)}
    must = widen_to_blocks(messages, guard.indices | recent | set(range(guard.loop_start, n)))
    selected = select_messages(
        messages, sizes, must, target_tokens=target, min_recent=options.min_recent_messages
    )
    work = _Work(messages, sizes, selected, counter)
    fallbacks: list[FallbackStep] = []
    steps: tuple[tuple[str, Callable[[], None]], ...] = (
        ("tool_result_previews", lambda: _preview_results(work, guard, options)),
        ("clip_long_texts", lambda: _clip_texts(work, guard, options)),
        (
            f"last_{options.fallback_rounds}_rounds",
            lambda: _last_rounds(work, guard, options.fallback_rounds),
        ),
        # Beyond the seed: still over, fewer rounds, down to the live round (and the pins).
        *(
            (f"last_{k}_rounds", lambda k=k: _last_rounds(work, guard, k))
            for k in range(options.fallback_rounds - 1, 0, -1)
        ),
    )
    for name, step in steps:
        if work.total() <= target:
            break
        ahead = work.total()
        step()
        fallbacks.append(FallbackStep(name, ahead, work.total()))
    out = work.output()
    dropped = [i for i in range(n) if i not in work.selected]
    details = KeyMessagesDetails(
        input_count=n,
        output_count=len(out),
        dropped_indexes=tuple(dropped),
        input_tokens=sum(sizes),
        output_tokens=work.total(),
        target_tokens=target,
        fallbacks=tuple(fallbacks),
    )
    return KeyMessagesResult(out, bool(dropped or work.edited), details)


@dataclass(frozen=True, slots=True)
class FallbackStep:
    """One over-budget fallback that ran, with the tokens before and after it."""

    step: str
    tokens_before: int
    tokens_after: int

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "tokens_before": self.tokens_before, "tokens_after": self.tokens_after}


@dataclass(frozen=True, slots=True)
class KeyMessagesDetails:
    """``CompressionResult.metadata`` (snake_case), plus the target and fallbacks."""

    input_count: int
    output_count: int
    dropped_indexes: tuple[int, ...]
    input_tokens: int
    output_tokens: int
    target_tokens: int
    fallbacks: tuple[FallbackStep, ...] = ()
    strategy_used: str = STRATEGY_USED

    @property
    def target_met(self) -> bool:
        return self.output_tokens <= self.target_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy_used": self.strategy_used,
            "input_count": self.input_count,
            "output_count": self.output_count,
            "dropped_count": len(self.dropped_indexes),
            "dropped_indexes": list(self.dropped_indexes),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "target_tokens": self.target_tokens,
            "target_met": self.target_met,
            "fallbacks": [f.to_dict() for f in self.fallbacks],
        }


@dataclass(frozen=True, slots=True)
class KeyMessagesResult:
    """The messages ``key-messages`` kept, whether it changed anything, and its details."""

    messages: tuple[Message, ...]
    changed: bool
    details: KeyMessagesDetails


@dataclass(slots=True)
class _Work:
    """The selection being built: each message's size, the indices kept, the edited ones."""

    messages: Sequence[Message]
    sizes: list[int]
    selected: set[int]
    counter: TokenCounter
    edited: dict[int, Message] = field(default_factory=dict)

    def total(self) -> int:
        return sum(self.sizes[i] for i in self.selected)

    def current(self, i: int) -> Message:
        return self.edited.get(i, self.messages[i])

    def edit(self, i: int, blocks: Sequence[Block]) -> None:
        message = self.current(i).with_content(blocks)
        self.edited[i] = message
        self.sizes[i] = message_tokens([message], self.counter)[0]

    def output(self) -> tuple[Message, ...]:
        return tuple(self.current(i) for i in sorted(self.selected))

    def editable(self, guard: Protected) -> list[int]:
        return [i for i in sorted(self.selected) if i not in guard]


def _preview_results(work: _Work, guard: Protected, options: KeyMessageOptions) -> None:
    limit = options.result_preview_tokens
    names = {b.get("id"): str(b.get("name") or "") for m in work.messages for b in tool_uses(m)}
    for i in work.editable(guard):
        content = work.current(i).content
        sizes = block_tokens(content, work.counter)
        new = list(content)
        for j, (block, tokens) in enumerate(zip(content, sizes, strict=True)):
            if block.get("type") != "tool_result" or tokens <= limit:
                continue
            if is_already_truncated(tool_result_text(block)):
                continue
            name = names.get(block.get("tool_use_id"), "tool")
            candidate = preview_tool_result(block, tokens, limit, work.counter, name)
            if block_tokens([candidate], work.counter)[0] < tokens:
                new[j] = candidate
        if any(a is not b for a, b in zip(new, content, strict=True)):
            work.edit(i, new)


def _clip_texts(work: _Work, guard: Protected, options: KeyMessageOptions) -> None:
    for i in work.editable(guard):
        content = work.current(i).content
        sizes = block_tokens(content, work.counter)
        new = list(content)
        for j, (block, tokens) in enumerate(zip(content, sizes, strict=True)):
            if block.get("type") != "text" or tokens <= options.long_text_tokens:
                continue
            text = str(block.get("text", ""))
            if is_already_truncated(text):
                continue
            clipped = dict(block)
            clipped["text"] = clip_long_text(text, tokens, options.result_preview_tokens, work.counter)
            new[j] = clipped
        if any(a is not b for a, b in zip(new, content, strict=True)):
            work.edit(i, new)


def _last_rounds(work: _Work, guard: Protected, k: int) -> None:
    cut = last_rounds_start(work.messages, k, guard)
    work.selected = {i for i in work.selected if i >= cut or i in guard}


def last_rounds_start(messages: Sequence[Message], k: int, guard: Protected) -> int:
    """Where the last ``k`` rounds start (the live request's round is the last one): a round
    start, moved back to the start of a tool block that would otherwise be cut. 0 when there
    are no more than ``k`` rounds."""
    starts = round_starts(messages)
    if len(starts) <= k:
        return 0
    cut = starts[-k] if k else guard.loop_start
    for span in tool_interaction_blocks(messages):
        if span.start < cut < span.end:
            cut = span.start
    return cut


def keep_last_rounds(
    messages: Sequence[Message], k: int = DEFAULT_FALLBACK_ROUNDS, *, protected: Protected
) -> tuple[Message, ...]:
    """The last resort on its own: the last ``k`` rounds and the protected part."""
    cut = last_rounds_start(messages, k, protected)
    return tuple(m for i, m in enumerate(messages) if i >= cut or i in protected)


def run_key_messages(
    messages: Sequence[Message], options: KeyMessageOptions, context: StrategyContext
) -> StrategyResult:
    """The strategy table's entry. The target is ``target_usage`` × the model's budget (its
    window minus the output reserve; 128,000 without one), less the system prompt
    and tool definitions, and never above the run's target (the run's target itself where
    the system prompt and tools alone take that share)."""
    model_budget = context.budget.usable if context.budget is not None else None
    target = options.target_tokens(model_budget) - context.fixed_tokens
    threshold = context.message_target()
    if threshold is not None:
        # Never above the run's target; where the system prompt and tools alone take the
        # share target_usage gives, the run's target (no share left would keep nothing).
        target = min(target, threshold) if target > 0 else threshold
    pins = PinOptions(context.pins.patterns, context.pins.first_pinned(True))
    guard = protected_part(messages, pins, include_loop=context.include_loop)
    result = key_message_extraction(
        messages, target_tokens=max(target, 0), options=options, counter=context.counter, protected=guard
    )
    warnings = (
        ()
        if result.details.target_met
        else (
            f"key-messages: {result.details.output_tokens:,} tokens left, over the target of "
            f"{result.details.target_tokens:,}: the protected part (system prompt, pins, the live request "
            "and its tool loop) is too large",
        )
    )
    return StrategyResult(result.messages, result.changed, result.details, warnings)
