"""Sizes on the command line: ``1MiB``, ``512 MiB``, ``500k``, ``1.5M``, ``200,000``.

A parser for every option that takes a size in bytes, characters or tokens, so
the help's own ``512 MiB`` is accepted as typed, and a config file's ``"1MiB"`` too. Decimal
suffixes are powers of 1,000 (``k``, ``M``, ``G``), binary ones of 1,024 (``Ki``, ``Mi``,
``Gi``); a trailing ``B`` is allowed.
"""

from __future__ import annotations

import re
from typing import Any

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
#: Compiled on first use (through re's cache): most runs parse no size.
_SIZE = r"(?i)(?P<number>\d+(?:[.,_]\d+)*)\s*(?P<unit>[kmg]i?)?b?"


def parse_size(text: str) -> int:
    """``text`` as a whole number; ValueError when it is not a size."""
    match = re.fullmatch(_SIZE, text.strip())
    if match is None:
        raise ValueError(text)
    number = match["number"].replace("_", "")
    # A comma between groups of three digits is a thousands separator; else a decimal mark.
    number = (
        number.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+", number) else number.replace(",", ".")
    )
    unit = _UNITS[(match["unit"] or "").lower()]
    if "." not in number:
        return int(number) * unit  # exact, however many digits (the option says if too large)
    value = float(number) * unit
    if value < 1:
        raise ValueError(text)
    return round(value)


def size_of(value: Any, *, minimum: int = 0) -> int:
    """A size option's value (an integer as is, else :func:`parse_size`), at least
    ``minimum``; ValueError saying what is wrong otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        try:
            size = parse_size(str(value))
        except ValueError:
            raise ValueError(
                f"{value!r} is not a size (a number, optionally with a unit: 500k, 1.5M, 1MiB)."
            ) from None
    if size < minimum:
        raise ValueError(f"{value!r} is below {minimum:,}.")
    return size


class Size:
    """A size option's parser (``typer.Option(parser=…)``): :func:`size_of`, a refused value
    a usage error naming the option."""

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum
        self.__name__ = "SIZE"  # the metavar typer shows

    def __call__(self, value: Any) -> int:
        try:
            return size_of(value, minimum=self.minimum)
        except ValueError as exc:
            import typer  # only the Typer app converts a refused size (the fast path hands it over)

            raise typer.BadParameter(str(exc)) from None


#: Sizes of 1 and more (a byte limit, a window), and of 0 and more (token and character counts).
POSITIVE_SIZE = Size(minimum=1)
SIZE = Size(minimum=0)
