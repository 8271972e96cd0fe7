"""Numbers round-trip exactly (issue 23, defect 5): an integer wider than 64 bits, ``NaN``,
``Infinity``, ``1e400`` and a mantissa longer than a double holds are written back as they
were read — in kept records, in the archive, and after ``offload --undo``."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from cli_helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcompact.transcripts.jsontext import ExactFloat, ExactInt, dumps, loads

#: The literals of the report: each must come back character for character.
ODD_NUMBERS = (
    "123456789012345678901234567890",
    "-123456789012345678901234567890",
    "18446744073709551616",
    "-9223372036854775809",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-2.5E-400",
    "0.1000000000000000055511151231257827",
)


def _numbers(text: str) -> list[Any]:
    """Every number of a JSON text as an exact decimal (NaN and the infinities by name)."""
    found: list[Any] = []

    def keep(value: str) -> Any:
        found.append(value if value in ("NaN", "Infinity", "-Infinity") else Decimal(value))
        return 0

    json.loads(text, parse_int=keep, parse_float=keep, parse_constant=keep)
    return found


INTEGERS = st.integers(min_value=-(10**60), max_value=10**60).map(str)
DECIMALS = st.builds(
    lambda sign, digits, point, exponent: (
        f"{sign}{digits[:point] or '0'}.{digits[point:] or '0'}" + (f"e{exponent}" if exponent else "")
    ),
    st.sampled_from(["", "-"]),
    st.text("0123456789", min_size=1, max_size=30).map(lambda d: d.lstrip("0") or "0"),
    st.integers(0, 30),
    st.integers(-999, 999),
)
LITERALS = st.lists(INTEGERS | DECIMALS | st.sampled_from(ODD_NUMBERS), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(LITERALS)
def test_every_number_reads_and_writes_back_the_same_value(literals: list[str]) -> None:
    text = '[{"n": [' + ", ".join(literals) + "]}]"
    value, error = loads(text.encode())
    assert error is None
    for indent in (False, True):
        assert _numbers(dumps(value, indent=indent).decode()) == _numbers(text)
        # A JSONL line is the same bytes and a newline, from orjson and from the stdlib alike.
        assert dumps(value, indent=indent, newline=True) == dumps(value, indent=indent) + b"\n"
    lone = [value, "\ud800"]  # a lone surrogate: only the stdlib writes it
    assert dumps(lone, newline=True) == dumps(lone) + b"\n"


def test_the_reported_literals_come_back_character_for_character() -> None:
    text = "[" + ",".join(ODD_NUMBERS) + "]"
    value, error = loads(text.encode())
    assert error is None
    assert dumps(value).decode() == text
    # ...and they are still numbers for every computation (a usage sum, a comparison).
    assert isinstance(value[0], ExactInt) and value[0] == 123456789012345678901234567890
    assert isinstance(value[4], ExactFloat) and value[4] != value[4]
    assert value[7] == float("inf")


def _transcript(tmp_path: Path) -> Path:
    """A transcript whose numbers sit in a kept record, a tool input and a tool result, with
    a tool result big enough to be offloaded or pruned."""
    text = (
        '[{"role": "user", "content": "do it", "n": 123456789012345678901234567890},\n'
        '{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash",'
        ' "input": {"cmd": "ls", "z": -123456789012345678901234567890, "f": 0.1000000000000000055511151231257827}}]},\n'
        '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ['
        '{"type": "text", "text": "' + "x " * 400 + '", "score": 1e400, "big": 18446744073709551616}]}]},\n'
        '{"role": "assistant", "content": "done", "meta": {"ratio": NaN, "limit": Infinity}},\n'
        '{"role": "user", "content": "next"}]\n'
    )
    path = tmp_path / "t.json"
    path.write_text(text)
    return path


def _literals(text: str) -> set[str]:
    return set(re.findall(r"-?(?:\d{19,}|NaN|-?Infinity|1e400|0\.1000000000000000055511151231257827)", text))


def test_offload_and_undo_keep_every_number(tmp_path: Path) -> None:
    source = _transcript(tmp_path)
    lean = tmp_path / "lean.json"
    done = run_cli("offload", source, "--out-dir", tmp_path / "off", "-q", "-o", lean)
    assert done.exit_code == 0, done.stderr
    assert "[Content offloaded to:" in lean.read_text()
    assert _literals(lean.read_text()) | _literals((tmp_path / "off/tool-result-t1.md").read_text()) == (
        _literals(source.read_text())
    )
    back = run_cli("offload", "--undo", lean, "--out-dir", tmp_path / "off", "-q")
    assert back.exit_code == 0, back.stderr
    assert _literals(back.stdout) == _literals(source.read_text())
    assert _numbers(back.stdout) == _numbers(source.read_text())


def test_kept_records_and_the_archive_keep_every_number(tmp_path: Path) -> None:
    source = _transcript(tmp_path)
    pruned = run_cli("compact", source, "--strategy", "prune", "--keep", "0", "-q")
    assert pruned.exit_code == 0, pruned.stderr
    assert "[Content offloaded" not in pruned.stdout
    for literal in ("123456789012345678901234567890", "-123456789012345678901234567890", "NaN", "Infinity"):
        assert literal in pruned.stdout
    archive = tmp_path / "archive"
    full = run_cli(
        "compact", source, "--summarizer", "extractive", "--no-restore", "-q", "--archive-dir", archive
    )
    assert full.exit_code == 0, full.stderr
    archived = "".join(p.read_text() for p in archive.iterdir())
    assert _literals(archived) == _literals(source.read_text())


#: What ``_long_exponent`` looks for in a number's shape, written as one pattern: a mantissa
#: (after the start, ``<`` or ``,`` and spaces) with an exponent of three digits or more,
#: then the end, ``|``, ``,`` or a space. The function is a faster scan for the same places.
_LONG_EXPONENT_SHAPE = re.compile(rb"(?:\A|[<,]) *-?0+e-?000+(?=[|, ]|\Z)")


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"<", b",", b"|", b" ", b"-", b"0", b"000", b"e", b"e-", b"x"]), max_size=16
    ).map(b"".join)
)
def test_the_exponent_scan_finds_what_its_pattern_does(shape: bytes) -> None:
    from ctxcompact.transcripts.jsontext import _long_exponent

    assert _long_exponent(shape) == bool(_LONG_EXPONENT_SHAPE.search(shape))
