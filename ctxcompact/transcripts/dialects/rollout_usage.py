"""The usage a Codex rollout recorded in its ``token_count`` events, in the Responses API's fields.

Codex's own record, not the dialect-neutral one: a session-log dialect that finds it returns it in
:attr:`~ctxcompact.transcripts.dialects.common.Parsed.recorded`; ``count`` shows them beside our count and
``check`` decides from them through the one dialect-neutral path
(:meth:`RolloutUsage.as_usage` makes the shared :class:`ctxcompact.transcripts.recorded_usage.RecordedUsage`
that :mod:`ctxcompact.accounting.context_size` sizes from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.ir import Message
from ctxcompact.transcripts.recorded_usage import RecordedUsage


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """One ``token_count`` usage record (Responses API fields)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, value: Any) -> TokenUsage | None:
        if not isinstance(value, Mapping):
            return None
        fields = {k: value.get(k) for k in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in fields.items() if isinstance(v, int) and not isinstance(v, bool)})


@dataclass(frozen=True, slots=True)
class RolloutUsage:
    """The usage of the last API call of a rollout, as Codex recorded it."""

    last: TokenUsage
    total: TokenUsage | None
    context_window: int | None
    #: 0-based line of the ``token_count`` event.
    line: int

    @property
    def context_tokens(self) -> int:
        """Tokens in the context after that call: its prompt plus its answer (what Codex's
        "context left" indicator measures)."""
        return self.last.total_tokens or self.last.input_tokens + self.last.output_tokens

    def as_usage(self, messages: Sequence[Message]) -> RecordedUsage:
        """The same figures as the shared record: Responses API ``input_tokens`` include the
        cached ones (cache read here), the context is :attr:`context_tokens`, and the response
        is the last message read from a line before the event (messages from later lines are
        counted after it)."""
        cached = min(self.last.cached_input_tokens, self.last.input_tokens)
        before = [i for i, m in enumerate(messages) if m.source is None or m.source.indices[0] < self.line]
        return RecordedUsage(
            input=self.last.input_tokens - cached,
            cache_creation=0,
            cache_read=cached,
            output=max(self.context_tokens - self.last.input_tokens, 0),
            at_message_index=before[-1] if before else -1,
            source=f"token_count, line {self.line + 1}",
        )
