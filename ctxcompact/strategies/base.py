"""What every compaction strategy returns.

A strategy is a pure function ``(messages, *, options) -> StrategyResult``. It returns the very
same :class:`~ctxcompact.ir.Message` objects for what it keeps, changed copies (built with
``Message.with_content``) for what it rewrites, and never mutates its input. Every output must
pass :func:`ctxcompact.validate.validate_messages` with no new errors; the current tool loop
(:func:`ctxcompact.ir.current_loop_start` onward) is never touched by local strategies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxcompact.ir import Message


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """``messages``: the rewritten list. ``changed``: whether anything differs from the input.

    ``stats`` holds strategy-specific counters with snake_case keys (for example
    ``tool_uses_cleared``, ``thinking_turns_cleared``, ``tokens_freed``); ``warnings`` are
    sentences for the user ("could not free 5,000 tokens; nothing changed").
    """

    messages: tuple[Message, ...]
    changed: bool
    stats: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
