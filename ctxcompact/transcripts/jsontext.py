"""JSON text <-> values: orjson for speed, the stdlib where only it can help, positions always.

Every parse error comes back as a :class:`JsonError` naming the spot (``str()`` gives
``"line L, column C: what"``); nothing here raises for bad input.

**Numbers round-trip exactly.** orjson reads an integer wider than 64 bits as a float
(``123456789012345678901234567890`` → ``1.2345678901234568e+29``), and a float with more
digits than a double holds as the nearest double; the stdlib reads ``NaN``, ``Infinity`` and
``1e400`` as floats that orjson writes as ``null``. A number that would not come back as it
was written is read as :class:`ExactInt` / :class:`ExactFloat` — an ``int`` / ``float`` for
every computation, carrying its original text — and :func:`dumps` writes that text back. A
document with no run of 18 digits (or dots) cannot hold such a number and takes orjson's fast
path; one that has such a run is read by the stdlib with number hooks (a few times slower,
still milliseconds for a large session).

**Depth is bounded.** A document nested deeper than :data:`MAX_DEPTH` levels is refused like
a syntax error: orjson cannot write it back, and the stdlib and our own code would recurse
out of stack on it.
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
#: The deepest nesting read (orjson's own limit when writing: 254 arrays/objects).
MAX_DEPTH = 254
#: A number's shape: digits and dots become "0", "E" "e", "+" "-", white space " ", what may
#: come before a number "<" (and ","), what may come after it "|" (and ",", " ").
_NUMBER_SHAPE = bytes.maketrans(b"0123456789.E+:[]}\t\r\n", b"0" * 11 + b"e-<<||   ")
_ZERO, _MINUS, _SPACE = ord("0"), ord("-"), ord(" ")
_BEFORE = frozenset(b"<,")
_AFTER = frozenset(b"|, ")
_RUN = b"0" * 17
#: In the shape: a mantissa's last digit, ``e`` and an exponent of three digits (or more).
_EXPONENT = re.compile(rb"0e-?000")
_SCAN_CHUNK = 1 << 20
_SCAN_OVERLAP = 64
_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1
_EXACT_DIGITS = 15  # a decimal of at most 15 significant digits survives a double
_NORMAL_MIN = 2.2250738585072014e-308


class ExactInt(int):
    """An integer orjson cannot write (wider than 64 bits), with the text it was read from."""

    text: str

    def __new__(cls, text: str) -> ExactInt:
        value = super().__new__(cls, text)
        value.text = text
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (ExactInt, (self.text,))


class ExactFloat(float):
    """A number a double does not hold as written (``NaN``, ``Infinity``, ``1e400``, a
    mantissa of 18 digits): the nearest float for computations, the text for writing back."""

    text: str

    def __new__(cls, text: str) -> ExactFloat:
        value = super().__new__(cls, text)
        value.text = text
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (ExactFloat, (self.text,))


@dataclass(frozen=True, slots=True)
class JsonError:
    """Where a JSON text is wrong (``"line 2, column 5"``, or ``"byte 17"``) and what is wrong."""

    where: str
    detail: str
    column: int = 1
    #: The text is well-formed JSON that cannot be taken (a lone surrogate, a huge integer,
    #: nesting too deep), so it was not cut off.
    whole: bool = False

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def loads(raw: bytes | str) -> tuple[Any, JsonError | None]:
    """``(value, None)``, or ``(None, what is wrong and where)``.

    Fast with orjson; on failure the stdlib gives the line and column. What only the stdlib
    accepts is kept (a BOM, ``NaN``), numbers exactly as written (see the module docstring),
    except lone surrogate escapes (``"\\ud800"`` without its pair): they are not text, no API
    accepts them, and they could not be written back as UTF-8, so they are refused with their
    position. So are integers of more digits than Python converts (4,300), which no API
    sends either, and nesting deeper than :data:`MAX_DEPTH`.
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if not _may_hold_inexact_numbers(data):
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if "recursion" in str(exc).lower():
                return None, _too_deep_at(data)
        else:
            return (None, _too_deep_at(data)) if _too_deep(value) else (value, None)
    return _stdlib_loads(data)


def _stdlib_loads(raw: bytes) -> tuple[Any, JsonError | None]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, JsonError(f"byte {exc.start}", "not valid UTF-8")
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=ExactFloat)
    except json.JSONDecodeError as exc:
        # The stdlib says "Unterminated string starting at" and gives the position apart.
        msg = exc.msg[:-3] + " here" if exc.msg.endswith(" at") else exc.msg
        return None, JsonError(f"line {exc.lineno}, column {exc.colno}", msg, exc.colno)
    except RecursionError:
        return None, _too_deep_at(raw)
    except ValueError:
        # "Exceeds the limit (4300 digits) for integer string conversion": no position given.
        return None, _long_int_position(text)
    try:
        _probe(value)
    except orjson.JSONEncodeError as exc:
        if "surrogate" in str(exc):
            return None, _surrogate_position(text)
        if "recursion" in str(exc).lower():
            return None, _too_deep_at(raw)
    return value, None


def _may_hold_inexact_numbers(raw: bytes) -> bool:
    """Whether ``raw`` may hold a number orjson would not keep exactly: a run of 17 digits or
    dots (an integer past 64 bits, a mantissa past what a double holds) or an exponent of three
    digits or more (``1e-400`` reads as 0). A cheap byte scan, in chunks so that a large input
    costs no second copy of itself; it errs on the side of the exact (slower) reader."""
    if len(raw) <= _SCAN_CHUNK:
        shape = raw.translate(_NUMBER_SHAPE)
        return _RUN in shape or _long_exponent(shape)
    view = memoryview(raw)
    for start in range(0, len(raw), _SCAN_CHUNK):
        chunk = bytes(view[max(0, start - _SCAN_OVERLAP) : start + _SCAN_CHUNK]).translate(_NUMBER_SHAPE)
        if _RUN in chunk or _long_exponent(chunk):
            return True
    return False


def _long_exponent(shape: bytes) -> bool:
    """A number with an exponent of 3+ digits: in the shape, ``<`` or ``,`` (white space
    allowed), a mantissa, ``e000`` or ``e-000``, then ``|`` or ``,`` — so a git hash such as
    ``7e96606`` inside a string does not count. Each place :data:`_EXPONENT` finds is checked
    around (a later place that overlaps one found has an ``e`` in its mantissa: never one)."""
    for match in _EXPONENT.finditer(shape):
        end = match.end()
        while end < len(shape) and shape[end] == _ZERO:
            end += 1
        if end < len(shape) and shape[end] not in _AFTER:
            continue
        start = match.start()
        while start > 0 and shape[start - 1] == _ZERO:
            start -= 1
        if start > 0 and shape[start - 1] == _MINUS:
            start -= 1
        while start > 0 and shape[start - 1] == _SPACE:
            start -= 1
        if start == 0 or shape[start - 1] in _BEFORE:
            return True
    return False


def _int(text: str) -> int:
    value = int(text)
    return value if _INT64_MIN <= value <= _UINT64_MAX else ExactInt(text)


def _float(text: str) -> float:
    value = float(text)
    if value - value == 0 and _same_number(text, value):  # finite, and written back the same
        return value
    return ExactFloat(text)


def _same_number(text: str, value: float) -> bool:
    digits = text.lower().partition("e")[0].lstrip("-+").replace(".", "").strip("0")
    if not digits:
        return True  # a zero
    if len(digits) <= _EXACT_DIGITS and abs(value) >= _NORMAL_MIN:
        return True  # a double holds 15 significant digits exactly, above the subnormals
    from decimal import Decimal, InvalidOperation  # rarely reached: loaded when it is

    try:
        return Decimal(text) == Decimal(repr(value))
    except InvalidOperation:
        return False


def _too_deep(value: Any) -> bool:
    """Whether ``value`` is nested deeper than orjson writes (it refuses, so we do at read)."""
    if not isinstance(value, (list, dict)):
        return False
    try:
        _probe(value)
    except orjson.JSONEncodeError as exc:
        return "recursion" in str(exc).lower()
    return False


def _probe(value: Any) -> None:
    orjson.dumps(value, default=_exact_default, option=orjson.OPT_PASSTHROUGH_SUBCLASS)


def _too_deep_at(raw: bytes) -> JsonError:
    """Where the nesting first goes past :data:`MAX_DEPTH` (strings skipped)."""
    depth = 0
    for match in _BRACKETS.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                text = raw[: match.start()].decode("utf-8", "replace")
                return _error_at(text, len(text), f"nested more than {MAX_DEPTH} levels deep")
        elif token in (b"]", b"}"):
            depth -= 1
    return JsonError("line 1, column 1", f"nested more than {MAX_DEPTH} levels deep", whole=True)


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


def _exact_default(value: Any) -> Any:
    """orjson's ``default`` under ``OPT_PASSTHROUGH_SUBCLASS``: our exact numbers as their
    text; any other subclass of a JSON type (a ``StrEnum``) as its plain value."""
    if isinstance(value, (ExactInt, ExactFloat)):
        return orjson.Fragment(value.text)
    for base in (str, int, float, dict, list):
        if isinstance(value, base):
            return base(value)  # type: ignore[arg-type]
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def dumps(value: Any, *, indent: bool = False, newline: bool = False) -> bytes:
    """JSON bytes: orjson, every number as it was read (:class:`ExactInt`,
    :class:`ExactFloat`); the stdlib for what orjson refuses (lone surrogates from a caller,
    nesting a little past its limit). ``newline``: ending with ``\n`` (a JSONL line)."""
    option = (
        orjson.OPT_PASSTHROUGH_SUBCLASS
        | (orjson.OPT_INDENT_2 if indent else 0)
        | (orjson.OPT_APPEND_NEWLINE if newline else 0)
    )
    try:
        return orjson.dumps(value, default=_exact_default, option=option)
    except (TypeError, orjson.JSONEncodeError):
        text = json.dumps(value, indent=2 if indent else None, ensure_ascii=True, cls=_ExactEncoder)
        return (text + "\n" if newline else text).encode()


class _ExactEncoder(json.JSONEncoder):
    """The stdlib's encoder writing :class:`ExactFloat` as its text (it writes ints exactly)."""

    def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
        # The C encoder formats float subclasses itself; the pure-Python one asks floatstr,
        # which the module-level hook below replaces for exact floats.
        return json.encoder._make_iterencode(  # type: ignore[attr-defined]
            {} if self.check_circular else None,
            self.default,
            json.encoder.py_encode_basestring_ascii,
            self.indent if self.indent is None or isinstance(self.indent, str) else " " * self.indent,
            _floatstr,
            self.key_separator,
            self.item_separator,
            self.sort_keys,
            self.skipkeys,
            _one_shot,
        )(o, 0)


def _floatstr(value: float) -> str:
    if isinstance(value, ExactFloat):
        return value.text
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)
