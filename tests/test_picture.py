"""``count``'s picture of the real context: categories that add up to the size ``check``
decides by, estimated parts marked, the budget around them; the same numbers in ``--json``;
a bar and legend on a terminal (colours, or glyphs under NO_COLOR), a table on a pipe."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import plain_rows, run_cli
from conftest import CORPUS, SAMPLES
from hypothesis import given
from hypothesis import strategies as st
from session_builders import SessionBuilder

from ctxcompact.accounting.breakdown import _apportion

CC_SESSION = CORPUS / "claude-code" / "codemie-196820da-thinking.jsonl"
ANSI_COLOR = re.compile(r"\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7]|10[0-7])(;[0-9;]*)?m")
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def visible(text: str) -> str:
    """What a terminal shows: the text without its escape codes."""
    return ANSI.sub("", text)


def legend_lines(text: str) -> list[str]:
    """The body rows of the ``Context by …`` table."""
    lines = visible(text).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Context by "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("└"))
    return [line for line in lines[start:end] if line.startswith("│ ")]


def _breakdown(*args: str | Path) -> dict:  # type: ignore[type-arg]
    out = run_cli("count", *args, "--json")
    assert out.exit_code == 0, out.stderr
    [row] = out.json()["transcripts"]
    return row  # type: ignore[no-any-return]


def _check_tokens(path: Path, *args: str) -> int:
    data = run_cli("check", path, "--json", *args).json()
    return int(data["transcripts"][0]["tokens"])


@pytest.mark.skipif(not CC_SESSION.is_file(), reason="corpus not present")
def test_a_corpus_session_s_categories_sum_to_the_real_context() -> None:
    row = _breakdown(CC_SESSION)
    b = row["breakdown"]
    assert b["by"] == "category" and b["context"] == row["context"]["tokens"] == _check_tokens(CC_SESSION)
    assert sum(p["tokens"] for p in b["parts"]) == b["context"]
    names = [p["name"] for p in b["parts"]]
    # Claude Code does not write its system prompt and tools: recorded size less the messages.
    assert names[0] == "system & tools (estimated)" and b["parts"][0]["estimated"]
    assert {"assistant text", "user text", "tool calls", "thinking", "tool results: Read"} <= set(names)
    assert b["context_window"] == 200_000 and b["threshold"] == 100_800
    assert b["free"] == 200_000 - 32_000 - b["context"] and b["output_reserve"] == 32_000
    for view in ("tool", "role", "type"):
        parts = _breakdown(CC_SESSION, "--by", view)["breakdown"]["parts"]
        assert sum(p["tokens"] for p in parts) == b["context"], view


def test_an_estimate_shows_its_system_tokens_and_a_request_body_counts_its_own() -> None:
    session = SessionBuilder().user("fix the bug in app.py").assistant("on it")
    path = session.write(Path(__import__("tempfile").mkdtemp()) / "s.jsonl")
    b = _breakdown(path)["breakdown"]
    assert b["parts"][0] == {"name": "system & tools (estimated)", "tokens": 24_000, "estimated": True}
    assert sum(p["tokens"] for p in b["parts"]) == b["context"]
    body = _breakdown(SAMPLES / "anthropic-request.json")
    parts = {p["name"]: p for p in body["breakdown"]["parts"]}
    assert not any(p["estimated"] for p in parts.values())  # its system and tools are in the file
    assert "tool definitions" in parts and "system prompt" in parts
    assert sum(p["tokens"] for p in parts.values()) == body["breakdown"]["context"]


def test_by_tool_puts_calls_and_results_together() -> None:
    parts = _breakdown(SAMPLES / "anthropic-session.json", "--by", "tool")["breakdown"]["parts"]
    tools = {p["name"] for p in parts if p["name"].startswith("tool ")}
    assert {"tool read_file", "tool run_command"} <= tools
    assert any(p["name"] == "everything else" for p in parts)


@given(
    st.dictionaries(st.text(min_size=1, max_size=5), st.integers(1, 10**7), min_size=1), st.integers(0, 10**8)
)
def test_apportioned_parts_sum_exactly(values: dict[str, int], total: int) -> None:
    parts = _apportion(values, total)
    assert sum(parts.values()) == total and all(v >= 0 for v in parts.values())


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_picture_on_a_terminal_keeps_every_number_whole(width: int) -> None:
    path = SAMPLES / "claude-code-session.jsonl"
    row = _breakdown(path)
    out = run_cli("count", path, terminal={"stdout_isatty": True, "width": width})
    assert out.exit_code == 0, out.stderr
    text = visible(out.stdout)
    bar = next(line for line in text.splitlines() if "░" in line and "▒" in line)
    assert len(bar) <= width
    assert re.search(r"▲ threshold [\d,]+|threshold [\d,]+ ▲", text)
    for part in row["breakdown"]["parts"]:
        assert re.search(rf"│ {re.escape(part['name'])} +│ +{part['tokens']:,} │", text), part
    assert re.search(rf"│ context +│ +{row['breakdown']['context']:,} │", text)
    assert all(len(line) <= width for line in text.splitlines() if line[:1] in "┏┃┡│├└")


def test_no_color_on_a_terminal_draws_glyphs_without_colour_codes() -> None:
    path = SAMPLES / "claude-code-session.jsonl"
    coloured = run_cli("count", path, terminal={"stdout_isatty": True, "width": 100})
    assert ANSI_COLOR.search(coloured.stdout)  # colours on a terminal by default
    plain = run_cli("count", path, env={"NO_COLOR": "1"}, terminal={"stdout_isatty": True, "width": 100})
    assert plain.exit_code == 0 and "┏" in plain.stdout  # still drawn for a terminal
    assert not ANSI_COLOR.search(plain.stdout)
    glyphs = [line[2] for line in legend_lines(plain.stdout) if line[2] != " "]
    assert len(glyphs) == len(set(glyphs)) >= 4  # one glyph a category, told apart without colour


def test_piped_the_picture_is_its_legend_as_a_plain_table() -> None:
    out = run_cli("count", SAMPLES / "claude-code-session.jsonl")
    assert "\x1b[" not in out.stdout and "░" not in out.stdout
    rows = plain_rows(out.stdout, "category ")
    data = json.loads(run_cli("count", SAMPLES / "claude-code-session.jsonl", "--json").stdout)
    parts = data["transcripts"][0]["breakdown"]["parts"]
    assert [r[0] for r in rows[: len(parts)]] == [p["name"] for p in parts]
    assert rows[-1][0] == "context"
