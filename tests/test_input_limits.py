"""Hostile inputs (issue 9): special files, endless or huge inputs, integers Python cannot read.

Every one must end in exit 2 with a message naming the file — never a hang, an OOM or exit 70.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cli_helpers import CliOutcome, run_cli

from ctxcompact.errors import InputError
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES, STDIN_NAME, load_transcript, read_bytes

MESSAGES = [
    {"role": "user", "content": "Why does the build fail?"},
    {"role": "assistant", "content": "Let me look at the log."},
]
#: Every command that reads a transcript, with what it needs to run offline in tmp.
COMMANDS = {
    "count": lambda tmp: ["count"],
    "check": lambda tmp: ["check"],
    "compact": lambda tmp: ["compact", "--summarizer", "extractive", "--archive-dir", str(tmp / "a")],
    "offload": lambda tmp: ["offload", "--out-dir", str(tmp / "o")],
    "restore-files": lambda tmp: ["restore-files", "--work-dir", str(tmp)],
}


def run(*args: str | Path, input: bytes | None = None) -> CliOutcome:
    result = run_cli(*args, input=input)
    assert "Traceback" not in result.stderr
    return result


def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps(MESSAGES))
    return path


# --- special files ---------------------------------------------------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_without_writer_is_refused_at_once(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    result = run(*COMMANDS[command](tmp_path), fifo)
    assert result.exit_code == 2
    assert f"{fifo}: is a FIFO (named pipe), not a regular file" in result.stderr


@pytest.mark.timeout(20)
def test_dev_zero_is_refused_not_read_forever() -> None:
    result = run("check", "/dev/zero")
    assert result.exit_code == 2
    assert "/dev/zero: is a character device, not a regular file" in result.stderr


def test_a_directory_path_is_refused_by_the_reader(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_bytes(tmp_path)


def test_a_real_stdin_pipe_is_still_read(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "count", "--json", "--counter", "estimate"],
        input=orjson.dumps(MESSAGES),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["transcripts"][0]["message_count"] == 2


# --- the size cap ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_file_over_max_input_bytes(tmp_path: Path, command: str) -> None:
    path = transcript(tmp_path)
    size = path.stat().st_size
    result = run(*COMMANDS[command](tmp_path), path, "--max-input-bytes", str(size - 1))
    assert result.exit_code == 2
    assert f"{path}: larger than the input limit of {size - 1:,} bytes" in result.stderr
    assert run(*COMMANDS[command](tmp_path), path, "--max-input-bytes", str(size)).exit_code == 0


def test_stdin_over_the_cap_is_refused(tmp_path: Path) -> None:
    result = run("count", "--max-input-bytes", "10", input=orjson.dumps(MESSAGES))
    assert result.exit_code == 2
    assert "<stdin>: larger than the input limit of 10 bytes" in result.stderr


class EndlessStream:
    """A stdin that never ends (``yes | ctxcompact count``): reading it whole never returns."""

    def __init__(self) -> None:
        self.given = 0

    def read(self, n: int = -1) -> bytes:
        assert n >= 0, "read everything from an endless stream"
        self.given += n
        return b" " * n


def test_the_cap_reads_at_most_one_byte_more_than_the_limit() -> None:
    stream = EndlessStream()
    with pytest.raises(InputError, match="larger than the input limit of 1,000 bytes"):
        read_bytes(None, stream, max_bytes=1000)  # type: ignore[arg-type]
    assert stream.given == 1001


@pytest.mark.timeout(20)
def test_a_huge_file_is_refused_by_its_size_without_reading_it(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.jsonl"
    with sparse.open("wb") as f:
        f.truncate(DEFAULT_MAX_INPUT_BYTES + 1)  # sparse: no disk, and reading it would take GBs
    result = run("check", sparse)
    assert result.exit_code == 2
    assert f"{sparse}: larger than the input limit of 536,870,912 bytes" in result.stderr


def test_input_up_to_the_cap_is_read_whole() -> None:
    stream = io.BytesIO(b"x" * 3_000_000)
    assert read_bytes(None, stream, max_bytes=3_000_000) == (STDIN_NAME, b"x" * 3_000_000)


# --- integers beyond Python's 4,300 digits ---------------------------------------------------

HUGE = "9" * 5000


@pytest.mark.parametrize("command", ["count", "check"])
def test_a_5000_digit_integer_is_a_parse_error_with_its_position(tmp_path: Path, command: str) -> None:
    path = tmp_path / "big.json"
    path.write_text('[\n  {"role": "user", "content": "hi", "n": ' + HUGE + "}\n]\n")
    result = run(command, path)
    assert result.exit_code == 2
    assert f"{path}: invalid JSON at line 2, column 42: an integer of 5,000 digits" in result.stderr


def test_a_5000_digit_integer_in_jsonl_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "n": -' + HUGE + "}\n")
    with pytest.raises(
        InputError,
        match=r"invalid JSON on line 2, column 28: an integer of 5,000 digits, over the 4,300-digit limit\.$",
    ):
        load_transcript(path)


def test_a_long_digit_string_is_not_an_integer() -> None:
    """Digits inside a string are text: only a number token is held to the limit."""
    t = load_transcript(data='[{"role": "user", "content": "' + HUGE + '", "n": 18446744073709551616}]')
    assert t.messages[0].content[0]["text"] == HUGE
