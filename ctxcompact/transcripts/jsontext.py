"""JSON text <-> values: orjson for speed, the stdlib where only it can help, positions always.

Every parse error comes back as a :class:`JsonError` naming the spot (``str()`` gives
``"line L, column C: what"``); nothing here raises for bad input.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

import orjson

_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
#: A JSON string (skipped) or a run of digits longer than the stdlib turns into an int.
_INT_LIMIT = sys.get_int_max_str_digits() or 4300
_LONG_INT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?\d{' + str(_INT_LIMIT + 1) + ",})")


@dataclass(frozen=True, slots=True)
class JsonError:
    """Where a JSON text is wrong (``"line 2, column 5"``, or ``"byte 17"``) and what is wrong."""

    where: str
    detail: str
    column: int = 1
    #: The text is well-formed JSON that cannot be taken (a lone surrogate, a huge integer),
    #: so it was not cut off.
    whole: bool = False

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


def loads(raw: bytes) -> tuple[Any, JsonError | None]:
    """``(value, None)``, or ``(None, what is wrong and where)``.

    Fast with orjson; on failure the stdlib gives the line and column. What only the stdlib
    accepts is kept (integers beyond 64 bits, a BOM), except lone surrogate escapes
    (``"\\ud800"`` without its pair): they are not text, no API accepts them, and they could
    not be written back as UTF-8, so they are refused with their position. So are integers
    of more digits than Python converts (4,300), which no API sends either.
    """
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        pass
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, JsonError(f"byte {exc.start}", "not valid UTF-8")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # The stdlib says "Unterminated string starting at" and gives the position apart.
        msg = exc.msg[:-3] + " here" if exc.msg.endswith(" at") else exc.msg
        return None, JsonError(f"line {exc.lineno}, column {exc.colno}", msg, exc.colno)
    except RecursionError:
        return None, JsonError("line 1, column 1", "nested too deeply (more than ~1,000 levels)")
    except ValueError:
        # "Exceeds the limit (4300 digits) for integer string conversion": no position given.
        return None, _long_int_position(text)
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        if "surrogate" in str(exc):
            return None, _surrogate_position(text)
    return value, None


def _error_at(text: str, offset: int, detail: str) -> JsonError:
    before = text[:offset]
    column = offset - (before.rfind("\n") + 1) + 1
    return JsonError(f"line {before.count(chr(10)) + 1}, column {column}", detail, column, whole=True)


def _surrogate_position(text: str) -> JsonError:
    for match in _LONE_SURROGATE.finditer(text):
        detail = f"{match.group(0)} is a lone surrogate escape, not valid Unicode text"
        return _error_at(text, match.start(), detail)
    return _error_at(text, 0, "a lone surrogate escape, not valid Unicode text")


def _long_int_position(text: str) -> JsonError:
    for match in _LONG_INT.finditer(text):
        if match.group(1) is not None:
            digits = len(match.group(1).lstrip("-"))
            detail = f"an integer of {digits:,} digits, over the {_INT_LIMIT:,}-digit limit"
            return _error_at(text, match.start(1), detail)
    return _error_at(text, 0, f"an integer over the {_INT_LIMIT:,}-digit limit")


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """JSON bytes: orjson, or the stdlib for what only it read (integers beyond 64 bits)."""
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(value, option=option)
    except (TypeError, orjson.JSONEncodeError):
        # Lone surrogates or integers beyond 64 bits that only the stdlib reader accepted.
        return json.dumps(value, indent=2 if indent else None, ensure_ascii=True).encode()
