"""The README documents every command and every option the CLI has, its Python examples run
as written and its console examples parse (docs that cannot drift)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest
import typer
from conftest import ROOT, SAMPLES

from ctxcompact.cli import app

README = (ROOT / "README.md").read_text(encoding="utf-8")
GROUP = typer.main.get_command(app)
CTX = typer.Context(GROUP)
COMMANDS = sorted(GROUP.list_commands(CTX))  # type: ignore[attr-defined]


def test_every_command_has_a_section() -> None:
    expected = [
        "count",
        "check",
        "compact",
        "restore-files",
        "offload",
        "export",
        "config",
        "eval",
        "sessions",
        "models",
        "hook",
        "uncompact",
        "mcp",
    ]
    assert sorted(expected) == COMMANDS
    for name in COMMANDS:
        assert f"### `ctxcompact {name}`" in README


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_is_documented(name: str) -> None:
    command = GROUP.get_command(CTX, name)  # type: ignore[attr-defined]
    options = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    missing = [o for o in options if o != "--help" and not re.search(re.escape(o) + r"(?![\w-])", README)]
    assert not missing, f"{name}: undocumented options {missing}"


def test_every_python_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ```python block of the README, run in a folder holding the ``session.jsonl`` it reads."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "claude-code-session.jsonl", tmp_path / "session.jsonl")
    for block in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
        assert printed.getvalue(), block
    assert list((tmp_path / "archive").glob("*.jsonl"))  # where the library example archives


def _console_commands() -> list[list[str]]:
    """Every ``$ ctxcompact …`` of the README's console examples, split at pipes and ``;``,
    ``&&``, ``||`` and comments."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            if not line.startswith("$ "):
                continue
            words = shlex.split(line[2:], comments=True)
            command: list[str] = []
            for word in [*words, ";"]:
                if word in ("|", ";", "&&", "||", ">", "<") or word.endswith(";"):
                    if command[:1] == ["ctxcompact"]:
                        out.append(command)
                    command = []
                else:
                    command.append(word)
    return out


def test_every_console_example_parses() -> None:
    """Each ``ctxcompact`` command line of the README's console examples names a command and
    options it has, with values its options accept (units, choices)."""
    commands = _console_commands()
    assert len(commands) > 40
    for argv in commands:
        if argv[1:2] in (["--version"], ["--help"]):
            continue
        command = GROUP.get_command(CTX, argv[1])  # type: ignore[attr-defined]
        assert command is not None, argv
        parent = typer.Context(GROUP, info_name="ctxcompact")
        try:
            command.make_context(argv[1], [a for a in argv[2:] if a != "$status"], parent=parent)
        except typer.Exit:
            pass
        except Exception as exc:  # a usage error: the example would fail as written
            raise AssertionError(f"{' '.join(argv)}: {exc}") from None
