"""Dialect adapters: raw records <-> :mod:`ctxcompact.ir` messages, behind one protocol.

Each adapter module provides one :class:`Dialect` object (``DIALECT``): its name, how to
recognise its records, how to parse and render them, and the rules its API sets. This
registry lists them explicitly — nothing registers itself on import — and loads an adapter
only when it is asked for by name or picked by detection: the checks that recognise each
dialect's records are in :mod:`.detect`, apart from the adapters (``DIALECTS`` loads them all).

Order matters. The registry runs from the most general dialect to the most specific: the
first is the default for a message list that no dialect claims, and detection asks the
*last* first (a session-log dialect recognises its own entries; OpenAI's shapes are checked
before plain messages fall back to Anthropic's). ``--format`` lists the names in this order.

Adding a dialect: one module with its ``DIALECT``, its check in :mod:`.detect`, one entry
here, its tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.transcripts.dialects import detect
from ctxcompact.transcripts.dialects.anthropic import DIALECT as DEFAULT_DIALECT
from ctxcompact.transcripts.dialects.common import Dialect, Parsed


@dataclass(frozen=True, slots=True)
class Entry:
    """A dialect as the registry knows it before its adapter is loaded."""

    name: str
    #: The adapter's ``owns_file`` (see :class:`Dialect`).
    owns_file: bool
    #: The adapter's ``looks_like``, from :mod:`.detect`.
    looks_like: Callable[[Sequence[Any], Mapping[str, Any] | None], bool]
    #: The module whose ``DIALECT`` the adapter is.
    module: str


#: Every dialect, from the most general to the most specific (see the module docstring).
ENTRIES: tuple[Entry, ...] = (
    Entry("anthropic", False, detect.looks_like_anthropic, f"{__name__}.anthropic"),
    Entry("openai", False, detect.looks_like_openai, f"{__name__}.openai"),
    Entry("text-action", False, detect.looks_like_text_action, f"{__name__}.text_action"),
    Entry("claude-code", True, detect.looks_like_claude_code, f"{__name__}.claude_code"),
    Entry("codex", True, detect.looks_like_codex, f"{__name__}.codex"),
)
#: The ``--format`` choices.
DIALECT_NAMES: tuple[str, ...] = tuple(e.name for e in ENTRIES)
_BY_NAME: Mapping[str, Entry] = {e.name: e for e in ENTRIES}


def _adapter(entry: Entry) -> Dialect:
    dialect: Dialect = importlib.import_module(entry.module).DIALECT
    return dialect


def dialect_named(name: str) -> Dialect:
    """The registered dialect called ``name``; :class:`InputError` for an unknown one."""
    try:
        entry = _BY_NAME[name]
    except KeyError:
        raise InputError(f"unknown format {name!r}; expected one of {', '.join(DIALECT_NAMES)}.") from None
    return _adapter(entry)


def file_dialect(records: Sequence[Any]) -> Dialect | None:
    """The session-log dialect whose entries ``records`` (a whole file's) are, if any."""
    entry = next((e for e in reversed(ENTRIES) if e.owns_file and e.looks_like(records, None)), None)
    return _adapter(entry) if entry is not None else None


def message_dialect(records: Sequence[Any], body: Mapping[str, Any] | None) -> Dialect:
    """The dialect of a list of bare messages (with the request ``body`` holding them, if
    any): the most specific message dialect that claims them, else the default."""
    entry = next((e for e in reversed(ENTRIES) if not e.owns_file and e.looks_like(records, body)), None)
    return _adapter(entry) if entry is not None else DEFAULT_DIALECT


def __getattr__(name: str) -> Any:
    if name == "DIALECTS":  # every adapter, loaded: for a caller that goes through them all
        return tuple(_adapter(e) for e in ENTRIES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DIALECTS: tuple[Dialect, ...]  # (module __getattr__)

__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "DIALECT_NAMES",
    "ENTRIES",
    "Dialect",
    "Entry",
    "Parsed",
    "dialect_named",
    "file_dialect",
    "message_dialect",
]
