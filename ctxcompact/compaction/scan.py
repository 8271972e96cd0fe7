"""Exact scans of long texts, faster than the obvious ones: case-insensitive patterns, lines.

*Case-insensitive patterns* (:class:`Caseless`, :func:`lowered_pattern`): CPython's regex
engine folds the case of every character it compares under ``IGNORECASE``; the summary's
statement and error-line patterns ran ~3× slower than the same pattern without the flag. On
ASCII text the fold is exactly ``str.lower`` (A–Z ↔ a–z, nothing else: the non-ASCII letters
``IGNORECASE`` also folds, such as the Kelvin sign or the long s, are not in it), so there the
pattern is searched, without the flag, in the lowered text; any other text gets the flagged
pattern. Same answers, by construction (a test compares them on generated text).

*Lines* (:func:`lines_of`): ``str.splitlines`` cut lazily, for a reader that wants the first
line of a tool's output, not a list of all its lines.

*Line patterns* (:class:`LinePattern`): a ``MULTILINE`` pattern whose every match starts a
line is tried where a line starts — after a line break the engine finds by a scan for that
one character — instead of at every position of a test run's output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: An escape (kept as written: ``\S`` is not ``\s``) or an ASCII capital (lowered).
_ESCAPE_OR_CAPITAL = re.compile(r"\\.|[A-Z]", re.DOTALL)


def lowered_pattern(source: str, flags: int = 0) -> re.Pattern[str]:
    """``source`` compiled for ASCII text that was lowered first: its ASCII capitals (outside
    escapes) lowered, ``IGNORECASE`` left out. ``source`` may hold no non-ASCII letter that has
    a case (one could match ASCII text under ``IGNORECASE``: ``K``, Kelvin, matches ``k``)."""
    refuse_cased_non_ascii(source)
    lowered = _ESCAPE_OR_CAPITAL.sub(
        lambda m: m.group().lower() if len(m.group()) == 1 else m.group(), source
    )
    return re.compile(lowered, flags & ~re.IGNORECASE)


def refuse_cased_non_ascii(source: str) -> None:
    """ValueError when ``source`` holds a non-ASCII letter that has a case."""
    if any(c.lower() != c or c.upper() != c for c in source if not c.isascii()):
        raise ValueError(f"a cased non-ASCII letter in {source!r}")


#: A pattern that matches nothing.
NEVER = "(?!)"
#: What an alternative that only matches non-ASCII text may hold besides non-ASCII characters.
_GROUPING = frozenset("()?:|")


def top_level_alternatives(source: str) -> list[str]:
    """``source`` cut at its ``|``s outside groups and character classes (``"|".join`` of
    the parts gives it back)."""
    parts: list[str] = []
    start = depth = i = 0
    in_class = False
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1 if source[i + 1 : i + 2] == "^" else 0
            i += 1 if source[i + 1 : i + 2] == "]" else 0  # a "]" first in a class is itself
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    parts.append(source[start:])
    return parts


def ascii_alternatives(source: str) -> list[str]:
    """The top-level alternatives of ``source`` that may match ASCII text: all but those
    written with non-ASCII characters and grouping alone (``问题(?:是|在于)``, ``必须``), which
    match nothing but non-ASCII characters (for :class:`Caseless`, whose patterns hold no
    cased non-ASCII letter) — unless one can match the empty string, when every alternative
    is kept."""
    parts = top_level_alternatives(source)
    kept = [p for p in parts if not (p and all(not c.isascii() or c in _GROUPING for c in p))]
    dropped = [p for p in parts if p not in kept]
    if dropped and re.compile("|".join(dropped)).search("x") is not None:  # an empty match
        return parts
    return kept


class Caseless:
    """A regex searched case-insensitively; :meth:`search` and :meth:`match` say whether it
    matches (:attr:`pattern` is the flagged pattern itself, compiled when first needed: ASCII
    text never needs it)."""

    __slots__ = ("_flagged", "_flags", "_lowered", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags | re.IGNORECASE
        # ASCII text is searched without the alternatives that only match other text (the
        # Chinese words of the statement patterns): each is one more try at every position.
        # None of them may hold a cased letter (under IGNORECASE, the Kelvin sign matches "k").
        refuse_cased_non_ascii(source)
        self._lowered = lowered_pattern("|".join(ascii_alternatives(source)) or NEVER, flags)
        self._flagged: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._flagged is None:
            self._flagged = re.compile(self._source, self._flags)
        return self._flagged

    def search(self, text: str) -> bool:
        if text.isascii():
            return self._lowered.search(text.lower()) is not None
        return self.pattern.search(text) is not None

    def match(self, text: str) -> bool:
        if text.isascii():
            return self._lowered.match(text.lower()) is not None
        return self.pattern.match(text) is not None


#: The first piece of a text :func:`lines_of` cuts (doubled while one line is longer).
_FIRST_PIECE = 4096


def lines_of(text: str) -> Iterator[str]:
    """``text.splitlines()``, one line at a time: a piece of the text is cut at a time, so a
    reader that stops at the first lines it wants does not split a megabyte of output."""
    start, piece = 0, _FIRST_PIECE
    while start + piece < len(text):
        # The last line of a piece may go on in the next one (or be a "\r" of a "\r\n"):
        # only the lines before it are whole.
        *whole, _ = text[start : start + piece].splitlines(keepends=True)
        if not whole:
            piece *= 2
            continue
        for line in whole:
            start += len(line)
            yield line[:-2] if line.endswith("\r\n") else line[:-1]
    yield from text[start:].splitlines()


class LinePattern:
    """A ``MULTILINE`` pattern each alternative of which starts with ``^`` and none of whose
    matches ends with a line break: :meth:`groups_of` gives the groups of
    ``pattern.finditer(text)``, from the match at the text's start and then from
    ``\\n(?:pattern)`` — whose leading literal the engine scans for in C — from where the
    last match ended (a match after a ``\\n`` is a match at a line's start; none ends with
    one, so none swallows the break the next one starts after)."""

    __slots__ = ("_after_break", "pattern")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.pattern = re.compile(source, flags | re.MULTILINE)
        self._after_break = re.compile(f"\\n(?:{source})", flags | re.MULTILINE)

    def search(self, text: str) -> bool:
        """Whether ``pattern.search(text)`` finds a match."""
        return self.pattern.match(text) is not None or self._after_break.search(text) is not None

    def groups_of(self, text: str) -> Iterator[tuple[str | Any, ...]]:
        first = self.pattern.match(text)
        if first is not None:
            yield first.groups()
        for match in self._after_break.finditer(text, first.end() if first is not None else 0):
            yield match.groups()
