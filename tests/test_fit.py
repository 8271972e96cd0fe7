"""Tables that fit: every command's report drawn on a terminal of 60, 80 and 120 columns (the
injected terminal) stays within the width, keeps every number whole — none cut, none left
half-visible — and shows the figures that matter; a left-out column is named in a caption."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_helpers import CliOutcome, run_cli
from conftest import SAMPLES
from session_builders import SessionBuilder

WIDTHS = [60, 80, 120]
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")
NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?%?(?![\w,])")
FRAME = "┏┃┡│├└┗━─"


def visible(text: str) -> str:
    return ANSI.sub("", text).replace("\r", "\n")


def _on_terminal(*args: str | Path, width: int, stream: str = "stdout", **kwargs: object) -> str:
    terminal = {f"{stream}_isatty": True, "width": width}
    out: CliOutcome = run_cli(*args, terminal=terminal, **kwargs)  # type: ignore[arg-type]
    assert out.exit_code in (0, 1), out.stderr
    return visible(out.stdout if stream == "stdout" else out.stderr)


def _piped(*args: str | Path, stream: str = "stdout", **kwargs: object) -> str:
    out = run_cli(*args, **kwargs)  # type: ignore[arg-type]
    return out.stdout if stream == "stdout" else out.stderr


def assert_fits(drawn: str, piped: str, width: int, *, must: list[str]) -> None:
    """Table lines within ``width``; every number drawn is a whole number of the piped report
    (a cut one would not be) unless it is a preview's last word before ``…``; ``must`` shown."""
    table_lines = [line for line in drawn.splitlines() if line[:1] in FRAME]
    assert table_lines, drawn
    too_wide = [line for line in table_lines if len(line) > width]
    assert not too_wide, "\n".join(too_wide)
    whole = set(NUMBER.findall(piped))
    for line in table_lines:
        for match in NUMBER.finditer(line):
            if line[match.end() : match.end() + 1] == "…":
                continue  # a preview's text, cut at the end
            assert match.group() in whole, f"{match.group()!r} is not a whole number of the report: {line}"
    for figure in must:
        assert re.search(rf"(?<![\d,]){re.escape(figure)}(?![\d,])", drawn), f"{figure} not shown at {width}"


def _session(root: Path, name: str, *, tokens: int, cwd: str) -> Path:
    s = SessionBuilder(cwd=cwd).user("fix the failing test in the parser module, please")
    s.assistant("looking", usage=(3, 1_000, tokens, 456))
    return s.write(root / cwd.strip("/").replace("/", "-") / f"{name}.jsonl")


@pytest.mark.parametrize("width", WIDTHS)
def test_count_one_transcript(width: int) -> None:
    path = SAMPLES / "anthropic-session.json"
    data = json.loads(_piped("count", path, "--json"))["transcripts"][0]
    top = [f"{m['tokens']:,}" for m in data["largest_messages"]]
    drawn = _on_terminal("count", path, width=width)
    assert_fits(drawn, _piped("count", path), width, must=[f"{data['total']:,}", *top])


@pytest.fixture(name="here")
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder, so labels are short relative paths without digits (a path's digits,
    folded on a narrow terminal, are no number)."""
    monkeypatch.chdir(tmp_path)
    return Path("transcripts-of-the-week")


@pytest.mark.parametrize("width", WIDTHS)
def test_count_several(width: int, here: Path) -> None:
    here.mkdir()
    for sample in ("anthropic-session.json", "claude-code-session.jsonl", "openai-chat.json"):
        shutil.copy(SAMPLES / sample, here / sample)
    rows = json.loads(_piped("count", here, "--json"))["transcripts"]
    drawn = _on_terminal("count", here, width=width)
    assert_fits(drawn, _piped("count", here), width, must=[f"{r['context']['tokens']:,}" for r in rows])


@pytest.mark.parametrize("width", WIDTHS)
def test_check_many(width: int, here: Path) -> None:
    here.mkdir()
    for name in ("alpha", "beta", "gamma", "delta"):
        shutil.copy(SAMPLES / "anthropic-session.json", here / f"{name}.json")
    drawn = _on_terminal("check", here, "-m", "gpt-4o", width=width)
    assert_fits(drawn, _piped("check", here, "-m", "gpt-4o"), width, must=["15,654"])


@pytest.mark.parametrize("width", WIDTHS)
def test_sessions(width: int, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    _session(root, "a", tokens=140_000, cwd="/home/someone/work/a-project-with-a-long-name")
    _session(root, "b", tokens=20_000, cwd="/home/someone/lib")
    drawn = _on_terminal("sessions", root, width=width)
    assert_fits(drawn, _piped("sessions", root), width, must=["141,459", "21,459"])


@pytest.mark.parametrize("width", WIDTHS)
def test_models(width: int) -> None:
    drawn = _on_terminal("models", width=width)
    assert_fits(drawn, _piped("models"), width, must=["1,047,576", "200,000"])


@pytest.mark.parametrize("width", WIDTHS)
def test_config(width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxcompact.toml").write_text('model = "claude-sonnet-4-5"\nthreshold = 0.7\n')
    out = run_cli("config", terminal={"stdout_isatty": True, "width": width})
    assert out.exit_code == 0
    text = visible(out.stdout)
    assert all(len(line) <= width for line in text.splitlines() if line[:1] in FRAME)
    assert "setting" in text and "value" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_eval_fits_80_columns_in_its_compact_layout(width: int) -> None:
    args = ("eval", SAMPLES / "anthropic-session.json", "--jobs", "1")
    data = json.loads(_piped(*args, "--json"))
    ratios = [f"{s['ratio']:.0%}" for s in data["strategies"] if s.get("ratio") is not None]
    drawn = _on_terminal(*args, width=width)
    lines = [line for line in drawn.splitlines() if line.strip()]
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    assert all(re.search(rf"(?<!\d){r}", drawn) for r in ratios)
    assert not re.search(r"\d…", drawn)
    if width >= 80:
        assert "tokens" in drawn  # the token figures still fit at 80


@pytest.mark.parametrize("width", WIDTHS)
def test_batch_table_on_a_terminal(width: int, here: Path) -> None:
    here.mkdir()
    shutil.copy(SAMPLES / "anthropic-session.json", here / "big.json")
    shutil.copy(SAMPLES / "openai-chat.json", here / "chat.json")
    args = ("compact", here, "--out-dir", "out", "--summarizer", "extractive", "--no-restore", "--dry-run")
    drawn = _on_terminal(*args, width=width, stream="stderr")
    piped = _piped(*args, stream="stderr")
    figures = re.search(r"([\d,]+ → [\d,]+)", piped)
    assert figures
    table = drawn[drawn.index("Batch compaction") :]
    assert_fits(table, piped, width, must=figures.group(1).split(" → "))


@pytest.mark.parametrize("width", WIDTHS)
def test_timeline_chart(width: int, tmp_path: Path) -> None:
    s = SessionBuilder().user("go")
    for i in range(30):
        s.assistant(f"step {i}", usage=(3, 1_000, 10_000 + 3_000 * i, 50)).user("next")
    s.boundary(pre_tokens=100_000).user("go on").assistant("ok", usage=(3, 500, 20_000, 10))
    path = s.write(tmp_path / "s.jsonl")
    drawn = _on_terminal("count", path, "--timeline", width=width)
    chart = [line for line in drawn.splitlines() if "┤" in line or "└" in line]
    assert chart and all(len(line) <= width for line in chart)
    assert "▲" in chart[-1] and "100,000 → 20,513" in drawn
