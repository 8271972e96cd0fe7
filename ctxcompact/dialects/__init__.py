"""Dialect adapters: raw records <-> :mod:`ctxcompact.ir` messages.

Each adapter module exposes ``NAME``, ``parse_records(records) -> Parsed`` and
``render_message(message) -> list[record]``. ``render_message`` is only called for messages a
rewrite changed or created; kept messages are written back from their raw records.
"""

from __future__ import annotations

from types import ModuleType

from ctxcompact.dialects import anthropic, claude_code, codex, openai
from ctxcompact.dialects.common import Parsed

DIALECTS: dict[str, ModuleType] = {
    anthropic.NAME: anthropic,
    openai.NAME: openai,
    claude_code.NAME: claude_code,
    codex.NAME: codex,
}

__all__ = ["DIALECTS", "Parsed"]
