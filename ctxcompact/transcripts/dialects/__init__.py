"""Dialect adapters: raw records <-> :mod:`ctxcompact.ir` messages, behind one protocol.

Each adapter module provides one :class:`Dialect` object (``DIALECT``): its name, how to
recognise its records, how to parse and render them, and the rules its API sets. This
registry lists them explicitly — nothing registers itself on import.

Order matters. The registry runs from the most general dialect to the most specific: the
first is the default for a message list that no dialect claims, and detection asks the
*last* first (a session-log dialect recognises its own entries; OpenAI's shapes are checked
before plain messages fall back to Anthropic's). ``--format`` lists the names in this order.

Adding a dialect: one module with its ``DIALECT``, one entry here, its tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.transcripts.dialects import anthropic, claude_code, codex, openai, text_action
from ctxcompact.transcripts.dialects.common import Dialect, Parsed

#: Every dialect, from the most general to the most specific (see the module docstring).
DIALECTS: tuple[Dialect, ...] = (
    anthropic.DIALECT,
    openai.DIALECT,
    text_action.DIALECT,
    claude_code.DIALECT,
    codex.DIALECT,
)
#: What a message list is read as when nothing in it says otherwise.
DEFAULT_DIALECT: Dialect = DIALECTS[0]
#: The ``--format`` choices.
DIALECT_NAMES: tuple[str, ...] = tuple(d.name for d in DIALECTS)
_BY_NAME: Mapping[str, Dialect] = {d.name: d for d in DIALECTS}


def dialect_named(name: str) -> Dialect:
    """The registered dialect called ``name``; :class:`InputError` for an unknown one."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InputError(f"unknown format {name!r}; expected one of {', '.join(DIALECT_NAMES)}.") from None


def file_dialect(records: Sequence[Any]) -> Dialect | None:
    """The session-log dialect whose entries ``records`` (a whole file's) are, if any."""
    return next((d for d in reversed(DIALECTS) if d.owns_file and d.looks_like(records, None)), None)


def message_dialect(records: Sequence[Any], body: Mapping[str, Any] | None) -> Dialect:
    """The dialect of a list of bare messages (with the request ``body`` holding them, if
    any): the most specific message dialect that claims them, else the default."""
    return next(
        (d for d in reversed(DIALECTS) if not d.owns_file and d.looks_like(records, body)),
        DEFAULT_DIALECT,
    )


__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "DIALECT_NAMES",
    "Dialect",
    "Parsed",
    "dialect_named",
    "file_dialect",
    "message_dialect",
]
