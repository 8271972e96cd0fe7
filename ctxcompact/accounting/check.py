"""Context usage: how many tokens a conversation takes and whether it is due for compaction.

The pure core behind ``count`` and ``check``. Functions take
a conversation (or a plain list of message dicts) and return frozen result objects; nothing
here prints or exits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ctxcompact.accounting.context_size import ContextSize, context_size, recorded_usage, with_size_note
from ctxcompact.accounting.tokens import (
    CachedCounter,
    TokenCounter,
    TokenReport,
    count_tokens,
    count_totals,
    make_counter,
    scale_report,
    total_tokens,
)
from ctxcompact.accounting.windows import (
    DEFAULT_RATIO,
    Budget,
    BudgetCheck,
    ModelInfo,
    make_budget,
    resolve_model,
    validate_context_window,
    validate_ratio,
)
from ctxcompact.errors import OptionError
from ctxcompact.ir import Message
from ctxcompact.transcripts.dialects import DEFAULT_DIALECT
from ctxcompact.transcripts.dialects.rollout_usage import RolloutUsage
from ctxcompact.transcripts.io import Conversation, load_messages
from ctxcompact.transcripts.recorded_usage import rewrite_mark
from ctxcompact.transcripts.validate import Violation, errors_only, validate_messages

MessagesLike = Conversation | Sequence[Message] | Sequence[Mapping[str, Any]]


def as_conversation(messages: MessagesLike, *, dialect: str | None = None) -> Conversation:
    """Accept what library callers have: a Conversation, IR messages, or raw message dicts."""
    if isinstance(messages, Conversation):
        return messages
    items = list(messages)
    if items and all(isinstance(m, Message) for m in items):
        return Conversation("messages", dialect or DEFAULT_DIALECT.name, (), tuple(items))  # type: ignore[arg-type]
    return load_messages(items, dialect=dialect)  # type: ignore[arg-type]


def conversation_model(conversation: Conversation) -> str | None:
    """The model a transcript names: a request body's ``model``, else the model of the last
    assistant message that records one (Claude Code entries' ``message.model``,
    mini-swe-agent's ``extra.response.model``)."""
    if conversation.model:
        return conversation.model
    for message in reversed(conversation.messages):
        if message.role != "assistant" or message.source is None:
            continue
        for record in message.source.records:
            model = _record_model(record)
            if model:
                return model
    # A session just compacted (its live part a boundary and a summary) still ran on the
    # model its history names.
    for record in reversed(conversation.records):
        model = _record_model(record)
        if model:
            return model
    return None


def _record_model(record: Any) -> str | None:
    # ``type(x) is dict`` first: the Mapping check (an ABC) costs more than the rest of the
    # look-up, and it runs on every record of a transcript that names no model.
    if type(record) is not dict and not isinstance(record, Mapping):
        return None
    for outer, key in (("message", "model"), ("extra", "response")):
        inner = record.get(outer)
        if inner is None:
            continue
        value = inner.get(key) if type(inner) is dict or isinstance(inner, Mapping) else None
        if value is not None and type(value) is not str and isinstance(value, Mapping):
            value = value.get("model")  # mini-swe-agent: extra.response is the API response
        if isinstance(value, str) and value and not value.startswith("<"):
            return value
    return None


def budget_for(
    conversation: Conversation,
    *,
    model: str | None = None,
    context_window: int | None = None,
    output_reserve: int | None = None,
    ratio: float = DEFAULT_RATIO,
    registry: Mapping[str, int] | None = None,
) -> Budget:
    """The budget for a conversation: ``model`` or, failing that, the model the transcript
    names; ``budget.model.known`` says whether the window came from the registry."""
    recorded = conversation.recorded
    if model is None and context_window is None and recorded is not None and recorded.context_window:
        # The agent recorded the window it used (Codex's model_context_window): take it.
        context_window = recorded.context_window
    info = resolve_model(
        model or conversation_model(conversation), context_window=context_window, registry=registry
    )
    return make_budget(info, output_reserve=output_reserve, ratio=ratio)


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """How to size a budget, as ``check``, ``compact`` and ``sessions`` are told: the model
    (None: each conversation's own), a context-window override, the output reserve (None: the
    model's default), the threshold ratio and extra models (id -> window). Checked once, when
    made, so a bad value fails before any file is read."""

    model: str | None = None
    context_window: int | None = None
    output_reserve: int | None = None
    threshold: float = DEFAULT_RATIO
    registry: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        validate_ratio(self.threshold)
        if self.context_window is not None:
            validate_context_window(self.context_window)
        if self.output_reserve is not None and self.output_reserve < 0:
            raise OptionError.about(
                "output_reserve", "must not be negative, got {value}.", value=self.output_reserve
            )

    @property
    def given(self) -> bool:
        """Whether a model or a window was named (else each conversation's own model decides)."""
        return bool(self.model) or bool(self.context_window)

    def for_model(self, own: str | None) -> Budget:
        """The budget of the named model, else of ``own`` (a session's model, read elsewhere)."""
        info = resolve_model(self.model or own, context_window=self.context_window, registry=self.registry)
        return make_budget(info, output_reserve=self.output_reserve, ratio=self.threshold)

    def resolve(self, conversation: Conversation) -> tuple[Budget, tuple[str, ...]]:
        """The conversation's budget, and the warnings about it (an unknown model)."""
        budget = budget_for(
            conversation,
            model=self.model,
            context_window=self.context_window,
            output_reserve=self.output_reserve,
            ratio=self.threshold,
            registry=self.registry,
        )
        warning = unknown_model_warning(budget.model)
        return budget, (warning,) if warning else ()


def unknown_model_warning(info: ModelInfo) -> str | None:
    """The one warning ``count``, ``check`` and ``compact`` show when a model's window is the
    default, not the model's own (``budget.model`` for a budget)."""
    if info.known:
        return None
    name = info.model or "no --model given"
    near = f" (nearest known: {', '.join(info.nearest)})" if info.nearest else ""
    return (
        f"unknown model ({name}){near}: assuming a {info.context_window:,}-token window; "
        "pass --model or --context-window, or add it with --models-file."
    )


def measure(
    conversation: Conversation, counter: TokenCounter | Any, *, previews: bool = True, breakdown: bool = True
) -> TokenReport:
    """Count a conversation. An exact request counter (``count_request``) gives the total;
    the breakdown then comes from tiktoken, scaled to it and marked approximate.
    ``previews=False``: no message previews (a compaction shows none). ``breakdown=False``:
    with a local counter, the total, the roles and each message's total only
    (:func:`~ctxcompact.accounting.tokens.count_totals`: what a compaction decides by)."""
    count: Callable[..., TokenReport] = count_totals
    if breakdown or hasattr(counter, "count_request"):
        count = partial(count_tokens, previews=previews)
    else:
        previews = False
    if isinstance(counter, CachedCounter) and counter.shared:
        # The compactions sharing this cache (``eval``'s strategies) count the same
        # conversation object: counted once. A report with the breakdown serves one without.
        key = (id(conversation), previews, breakdown)
        fuller = [] if breakdown else [(id(conversation), False, True), (id(conversation), True, True)]
        for held in (key, *fuller):
            known = counter.reports.get(held)
            if known is not None and known[0] is conversation:
                return known[1]
        report = count(
            conversation.messages, counter=counter, system=conversation.system, tools=conversation.tools
        )
        counter.reports[key] = (conversation, report)
        return report
    if hasattr(counter, "count_request"):
        local = count_tokens(
            conversation.messages, system=conversation.system, tools=conversation.tools, previews=previews
        )
        exact = counter.count_request(
            conversation.messages, system=conversation.system, tools=conversation.tools
        )
        return scale_report(local, exact, counter.name)
    return count(conversation.messages, counter=counter, system=conversation.system, tools=conversation.tools)


def measure_total(conversation: Conversation, counter: TokenCounter | Any) -> int:
    """``measure(conversation, counter).total``, without building the per-message report
    when the counter is local (a compaction's before and after figures)."""
    if hasattr(counter, "count_request"):
        return measure(conversation, counter).total
    return total_tokens(
        conversation.messages, counter=counter, system=conversation.system, tools=conversation.tools
    )


def carry_size(
    original: Conversation,
    rewritten: Conversation,
    counter: TokenCounter | Any,
    *,
    model: str | None = None,
    system_tokens: int | None = None,
) -> Conversation:
    """``rewritten`` carrying its size for the next reader
    (:func:`~ctxcompact.accounting.context_size.with_size_note`), for a rewrite that did not
    size its input (``offload``, ``restore-files``). Counts both only when the input records
    usage or an earlier rewrite's note: otherwise the next reader's own count is the size."""
    if recorded_usage(original) is None and rewrite_mark(original.messages) is None:
        return rewritten
    model = model or conversation_model(original)
    size = context_size(original, measure(original, counter), model=model, system_tokens=system_tokens)
    return with_size_note(rewritten, size, size.resized(measure_total(rewritten, counter)))


@dataclass(frozen=True, slots=True)
class CheckResult:
    """``check``'s answer for one conversation."""

    label: str
    report: TokenReport
    status: BudgetCheck
    violations: tuple[Violation, ...] = ()
    #: The figure ``status`` was decided from and its source (recorded usage, estimate, count).
    size: ContextSize | None = None
    #: The agent's recorded usage the decision was made from (Codex), if any.
    recorded: RolloutUsage | None = None

    @property
    def errors(self) -> list[Violation]:
        return errors_only(self.violations)

    @property
    def needs_compaction(self) -> bool:
        return self.status.needs_compaction


def check_conversation(
    conversation: Conversation,
    *,
    budget: Budget,
    counter: TokenCounter | Any,
    validate: bool = True,
    system_tokens: int | None = None,
) -> CheckResult:
    """Measure, size (recorded usage when the transcript has it, see
    :func:`~ctxcompact.accounting.context_size.context_size`) and validate one conversation."""
    report = measure(conversation, counter)
    size = context_size(conversation, report, model=budget.model.model, system_tokens=system_tokens)
    violations: tuple[Violation, ...] = ()
    if validate:
        found = validate_messages(
            conversation.messages, dialect=conversation.dialect, thinking=conversation.thinking
        )
        chain = (Violation("resume_chain", "error", 0, problem) for problem in conversation.problems)
        violations = (*chain, *found)
    status = BudgetCheck(size.tokens, budget)
    return CheckResult(
        conversation.label, report, status, violations, size=size, recorded=conversation.recorded
    )


# --- library facade --------------------------------------------------------------------------


def count_message_tokens(
    messages: MessagesLike,
    *,
    counter: str | TokenCounter = "tiktoken",
    encoding: str = "cl100k_base",
    dialect: str | None = None,
) -> TokenReport:
    """Token report for a message list (raw dicts in either dialect, IR messages, or a
    :class:`Conversation`). ``counter`` is ``"tiktoken"``, ``"estimate"`` or a counter object."""
    conv = as_conversation(messages, dialect=dialect)
    chosen = make_counter(counter, encoding=encoding) if isinstance(counter, str) else counter
    return measure(conv, chosen)


def check_budget(
    messages: MessagesLike,
    *,
    model: str | None = None,
    context_window: int | None = None,
    output_reserve: int | None = None,
    threshold: float = DEFAULT_RATIO,
    counter: str | TokenCounter = "tiktoken",
    registry: Mapping[str, int] | None = None,
    validate: bool = True,
    dialect: str | None = None,
) -> CheckResult:
    """Is this message list due for compaction on ``model``?

    >>> result = check_budget([{"role": "user", "content": "hi"}], model="gpt-4o")
    >>> result.needs_compaction
    False
    """
    conv = as_conversation(messages, dialect=dialect)
    spec = BudgetSpec(model, context_window, output_reserve, threshold, registry)
    budget, _warnings = spec.resolve(conv)
    chosen = make_counter(counter) if isinstance(counter, str) else counter
    return check_conversation(conv, budget=budget, counter=chosen, validate=validate)
