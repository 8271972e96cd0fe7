"""Reports on a pipe are plain text for grep and awk; on a terminal they are Rich tables.

``count``, ``check``, ``sessions`` and ``config`` build their report once (title lines and
tables of strings, :mod:`ctxcompact.output.text`); piped, it is one line per row, never
wrapped, no box characters or ANSI codes, columns aligned.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import plain_rows, run_cli
from conftest import ROOT

from ctxcompact.output.table import Column, Line, Panel, Table, display_width, plain_table, plain_text

SAMPLE = ROOT / "sample_transcripts" / "anthropic-session.json"
#: Box drawing (U+2500–U+257F): Rich's table and panel frames.
BOX = re.compile("[\u2500-\u257f]")


def _plain(stdout: str) -> None:
    assert not BOX.search(stdout), stdout
    assert "\x1b" not in stdout


def _aligned(lines: list[str], header: str, *, right: bool) -> None:
    """Every non-empty cell of the ``header`` column starts (left) or ends (right) under it."""
    start = lines[0].index(header)
    end = start + len(header)
    for line in lines[1:]:
        if not line[start:end].strip():
            continue  # an empty cell (a total row)
        if right:
            assert line[end - 1] != " " and line[end : end + 1] in ("", " "), (header, line)
        else:
            assert line[start - 2 : start] == "  " and line[start] != " ", (header, line)


def _table_lines(stdout: str, header: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


@pytest.fixture
def long_path(tmp_path: Path) -> Path:
    """A transcript whose path is 150 characters long (Rich folded it over three lines)."""
    path = tmp_path / ("s" * (150 - len(str(tmp_path)) - len("/.json")) + ".json")
    path.write_bytes(SAMPLE.read_bytes())
    assert len(str(path)) == 150
    return path


def test_piped_count_is_one_line_per_row_with_aligned_columns() -> None:
    out = run_cli("count", SAMPLE, "--top", "3").stdout
    _plain(out)
    lines = out.splitlines()
    assert lines[0].startswith(f"{SAMPLE}  anthropic · 45 messages")
    # A title line above each table, then its one header line.
    for title, header in (
        ("By role", "role "),
        ("By block type", "block type "),
        ("Largest messages (top 3)", " #"),
    ):
        assert lines[lines.index(title) + 1].startswith(header)
    roles = _table_lines(out, "role ")
    assert [r.split()[0] for r in roles] == ["role", "user", "assistant", "system"]
    _aligned(roles, "tokens", right=True)
    _aligned(roles, "share", right=True)
    results = _table_lines(out, " #  tool")
    assert len(results) == 4
    _aligned(results, "tokens", right=True)
    _aligned(results, "preview", right=False)


def test_a_long_path_stays_on_one_line(long_path: Path) -> None:
    single = run_cli("count", long_path).stdout
    _plain(single)
    assert single.splitlines()[0].startswith(f"{long_path}  anthropic")

    several = run_cli("count", long_path, SAMPLE).stdout
    _plain(several)
    assert several.splitlines()[0] == "Tokens per transcript"
    rows = plain_rows(several, "transcript ")
    assert [r[0] for r in rows] == [str(long_path), str(SAMPLE), "total"]
    table = _table_lines(several, "transcript ")
    _aligned(table, "dialect", right=False)
    _aligned(table, "tokens", right=True)

    panel = run_cli("check", long_path, "--model", "gpt-4")
    assert panel.exit_code == 1
    _plain(panel.stdout)
    lines = panel.stdout.splitlines()
    assert lines[2] == str(long_path)  # the panel's title, on its own line
    assert lines[3].startswith("[") and lines[3].endswith("compaction needed")
    assert lines[4].startswith("15,654 tokens = ") and lines[4].endswith("(counter: tiktoken)")


def test_piped_check_of_many_is_one_row_each(long_path: Path) -> None:
    files = [long_path, *(ROOT / "sample_transcripts").glob("*.json")]
    result = run_cli("check", *files, "--model", "gpt-4o")
    assert result.exit_code == 0, result.stderr
    _plain(result.stdout)
    table = _table_lines(result.stdout, "transcript ")
    assert len(table) == len(files) + 2  # header, one row per file, the total
    assert table[1].startswith(f"{long_path}  ")
    for header in ("tokens", "of threshold", "left", "errors"):
        _aligned(table, header, right=True)
    assert table[-1].split("  ")[0] == f"{len(files)} transcripts"


def test_piped_config_lists_every_setting_whole(tmp_path: Path) -> None:
    (tmp_path / "ctxcompact.toml").write_text('model = "gpt-4o"\n')
    result = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "config"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("CTXCOMPACT_")},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    _plain(result.stdout)
    rows = {r[0]: r for r in plain_rows(result.stdout, "setting ") if len(r) == 4}
    assert rows["model"][1] == '"gpt-4o"' and rows["model"][2].endswith("ctxcompact.toml")
    # No folding: the longest commands cell is whole on its line.
    assert any(r[3].count(",") >= 6 for r in rows.values())


def test_plain_table_aligns_by_display_width() -> None:
    table = Table(
        (Column("name"), Column("n", justify="right")),
        (("中文", "1"), ("abc", "22")),
        footer=(("total", "23"),),
    )
    assert plain_table(table).splitlines() == ["name    n", "中文    1", "abc    22", "total  23"]
    assert display_width("中文") == 4
    assert plain_table(Table((Column("a"), Column("b")), (("x\ny", "z"),))) == "a    b\nx y  z"


def test_plain_text_keeps_lines_together_and_sets_blocks_apart() -> None:
    blocks = [
        Line.of("head"),
        Line((("total ", ""), ("3", "bold"))),
        Table((Column("k"),), (("v",),), title="T"),
        Panel("p", (Line.of("one"),)),
    ]
    assert plain_text(blocks) == "head\ntotal 3\n\nT\nk\nv\n\np\none"


def test_on_a_terminal_the_report_is_a_rich_table() -> None:
    """stdout a terminal (a pty): the framed tables people read, with colours."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxcompact", "check", str(SAMPLE), "--model", "gpt-4"],
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 1
    out = b"".join(chunks).decode()
    assert "╭─" in out and "compaction needed" in out and "\x1b[" in out


def test_piped_restore_files_table_is_plain_on_stderr(tmp_path: Path) -> None:
    """restore-files' table goes to stderr (stdout is the transcript): plain on a pipe or log."""
    out = run_cli(
        "restore-files",
        SAMPLE,
        "--work-dir",
        ROOT / "sample_transcripts" / "workspace",
        "-o",
        tmp_path / "o.json",
    )
    assert out.exit_code == 0, out.stderr
    _plain(out.stderr)
    lines = _table_lines(out.stderr, "path")
    assert lines[0].split() == ["path", "tokens", "status"]
    assert "src/invoice/legacy.py" in lines[-1] and lines[-1].endswith("skipped: missing")
    _aligned(lines, "tokens", right=True)
    assert out.stderr.splitlines()[0] == "restore-files"
