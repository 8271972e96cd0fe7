"""Escape sequences from transcripts never reach a terminal (issue 23, defect 8): ``count``
previews, ``check`` messages, ``compact`` warnings, the ``restore-files`` table, ``sessions``
and ``eval --show-lost`` — on a terminal (Rich) and on a pipe (plain text). JSON output keeps
the text: its ``\\uXXXX`` spelling decodes to the same string."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from session_builders import SessionBuilder

from ctxcompact.output.safe_text import printable

#: Set the window title, clear the screen, write the clipboard (OSC 52), 8-bit CSI, bidi.
PAYLOAD = "\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\u202eevil\x08\r"
#: What must never come out raw (Rich's own colour codes start with ESC [ and a digit or m).
RAW = re.compile("\x1b\\]|\x1b\\[2J|\x07|\x9b|\u202e|\x08|\r")


def _hostile(tmp_path: Path) -> Path:
    """A Claude Code session whose every text field carries the payload."""
    builder = SessionBuilder(cwd=f"/home/u/{PAYLOAD}proj").user(f"Fix it {PAYLOAD} must always work")
    builder._entry(
        "assistant",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Read",
                    "input": {"file_path": f"/x/{PAYLOAD}.py"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {"command": "ls"},
                },  # a duplicate id
            ],
        },
    )
    builder._entry(
        "user",
        message={
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": f"Error: boom {PAYLOAD}\n" * 30,
                    "is_error": True,
                }
            ],
        },
    )
    builder.assistant(f"Next I will {PAYLOAD} run the tests.").user(f"and {PAYLOAD} again")
    return builder.write(tmp_path / "projects" / "-p" / f"s{PAYLOAD[:4]}.jsonl")


COMMANDS = [
    ["count", "{s}"],
    ["check", "{s}", "-m", "claude-sonnet-4-5"],
    ["compact", "{s}", "--summarizer", "extractive", "-o", "{tmp}/o.jsonl"],
    ["restore-files", "{s}", "-o", "{tmp}/r.jsonl"],
    ["sessions", "{tmp}/projects"],
    ["eval", "{s}", "--strategies", "prune,full", "--show-lost", "20"],
    ["count", "{tmp}/missing{payload}.json"],  # an error message naming a hostile path
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("on_terminal", [False, True])
def test_no_escape_sequence_reaches_the_terminal(
    tmp_path: Path, command: list[str], on_terminal: bool
) -> None:
    session = _hostile(tmp_path)
    args = [a.format(s=session, tmp=tmp_path, payload=PAYLOAD) for a in command]
    terminal: dict[str, Any] = {"stdout_isatty": on_terminal, "stderr_isatty": on_terminal, "width": 200}
    done = run_cli(*args, terminal=terminal)
    assert done.exit_code in (0, 1, 2), done.stderr
    for stream in (done.stdout, done.stderr):
        assert RAW.search(stream) is None, stream[:2000]
    if command[0] != "eval":  # eval's table shows figures; the rest show the text, disarmed
        assert "\\u001b" in done.stdout + done.stderr


@pytest.mark.parametrize("command", [["count", "{s}", "--json"], ["sessions", "{tmp}/projects", "--json"]])
def test_json_keeps_the_text(tmp_path: Path, command: list[str]) -> None:
    session = _hostile(tmp_path)
    done = run_cli(*[a.format(s=session, tmp=tmp_path) for a in command])
    assert done.exit_code == 0, done.stderr
    assert RAW.search(done.stdout) is None
    assert any(PAYLOAD[:8] in text for text in _strings(json.loads(done.stdout)))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_printable_is_safe_and_json_reads_it_back(text: str) -> None:
    shown = printable(text)
    assert not any((ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert json.loads(f'"{printable(json.dumps(text)[1:-1])}"') == text
