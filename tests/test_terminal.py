"""The run's terminal: detected once, injectable in tests, and the one place that decides
tables or plain text, colours or none, and the width (``ctxcompact.output.terminal``)."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys

from cli_helpers import run_cli
from conftest import ROOT

from ctxcompact.output.table import display_width
from ctxcompact.output.terminal import PIPED_WIDTH, Terminal

SAMPLE = ROOT / "sample_transcripts" / "anthropic-session.json"
#: An SGR sequence that sets a colour (30–37, 90–97, 38;…): bold (1) and dim (2) are not colours.
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|9[0-7])(?:;[0-9;]*)?m")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _detect(environ: dict[str, str], **overrides: object) -> Terminal:
    out, err = io.StringIO(), io.StringIO()
    return Terminal.detect(environ=environ, stdin=io.StringIO(), stdout=out, stderr=err, **overrides)  # type: ignore[arg-type]


def test_a_pipe_gets_plain_text_at_a_stable_width() -> None:
    terminal = _detect({})
    for stream in (terminal.stdout, terminal.stderr):
        assert not stream.is_terminal and not stream.color and stream.width == PIPED_WIDTH
        assert stream.takes_plain
    assert terminal.stdin_piped


def test_a_terminal_is_coloured_unless_no_color_is_set() -> None:
    assert _detect({}, stdout_isatty=True).stdout.color
    assert not _detect({"NO_COLOR": "1"}, stdout_isatty=True).stdout.color
    assert _detect({"NO_COLOR": ""}, stdout_isatty=True).stdout.color  # empty: not set
    drawn = _detect({"NO_COLOR": "1"}, stdout_isatty=True).stdout
    assert drawn.is_terminal and not drawn.takes_plain  # tables stay, colours go


def test_force_color_draws_for_a_terminal_on_a_pipe() -> None:
    forced = _detect({"FORCE_COLOR": "1"})
    assert forced.stdout.is_terminal and forced.stdout.color and forced.stderr.is_terminal
    assert not _detect({"FORCE_COLOR": ""}).stdout.is_terminal
    assert not _detect({"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout.color


def test_the_width_given_wins_then_columns_then_the_pipe_default() -> None:
    assert _detect({"COLUMNS": "72"}).stdout.width == 72
    assert _detect({"COLUMNS": "72"}, width=60).stderr.width == 60
    assert _detect({"COLUMNS": "wide"}).stdout.width == PIPED_WIDTH
    assert _detect({"COLUMNS": "0"}).stdout.width == PIPED_WIDTH


def test_a_report_on_an_injected_terminal_is_a_rich_table_of_that_width() -> None:
    outputs = {}
    for width in (60, 80, 120):
        out = run_cli("count", SAMPLE, "--top", "3", terminal={"stdout_isatty": True, "width": width})
        assert out.exit_code == 0, out.stderr
        assert "┏" in out.stdout and "\x1b[1m" in out.stdout, out.stdout  # bold headers
        # The tables fit (the title line is soft-wrapped: the terminal folds it).
        lines = [line for line in ANSI.sub("", out.stdout).splitlines() if re.search("[┃│┏└┡]", line)]
        assert max(display_width(line) for line in lines) <= width
        outputs[width] = out.stdout
    assert len(set(outputs.values())) == 3  # the previews take the room there is


def test_no_color_on_an_injected_terminal_keeps_the_tables_and_drops_the_colours() -> None:
    out = run_cli(
        "check", SAMPLE, "--model", "gpt-4", env={"NO_COLOR": "1"}, terminal={"stdout_isatty": True}
    )
    assert out.exit_code == 1
    assert "╭─" in out.stdout and "compaction needed" in out.stdout
    assert not COLOUR.search(out.stdout), out.stdout


def test_warnings_on_a_terminal_stderr_are_drawn_by_rich() -> None:
    out = run_cli("check", SAMPLE, "--model", "no-such-model", terminal={"stderr_isatty": True})
    assert "warning:" in out.stderr and COLOUR.search(out.stderr)
    piped = run_cli("check", SAMPLE, "--model", "no-such-model")
    assert "warning:" in piped.stderr and "\x1b" not in piped.stderr


def _run_on_a_pty(*argv: str, env: dict[str, str]) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxcompact", *argv], stdout=slave, stderr=subprocess.DEVNULL, env=env
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
    return proc.wait(timeout=60), b"".join(chunks).decode()


def test_no_color_is_honoured_on_a_real_terminal() -> None:
    """The defect: the console was made with ``no_color=not isatty``, which on a terminal
    overrode Rich's own NO_COLOR check, so ``NO_COLOR=1`` still printed colours."""
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm-256color", "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    status, out = _run_on_a_pty("check", str(SAMPLE), "--model", "gpt-4", env=env)
    assert status == 1
    assert "╭─" in out and "compaction needed" in out
    assert not COLOUR.search(out), out
